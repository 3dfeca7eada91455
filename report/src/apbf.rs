//! An Age-Partitioned Bloom Filter (Shtul, Baquero, Almeida, "Age-Partitioned Bloom
//! Filters", 2020), written here as the expiring filter's public anchor for the report.
//!
//! `k + l` slices of `m` bits in a ring. A key sets one bit in each of the `k` slices from
//! the newest on; a key is present when `k` consecutive slices hold its bits. Every `g`
//! keys (a generation) the ring turns: the oldest slice is cleared and becomes the newest.
//! A key is remembered for at least its `l` following generations (`l · g` keys: the window),
//! and a slice holds `k · g` keys' bits at most, so `m = k · g / ln 2` bits keep it at most
//! half full. Its rate at the worst moment is [`rate`]'s, the paper's recurrence.
//!
//! One bit per slice means `k` cache lines per insert and up to `k + l` per query (the
//! cost the report compares). The bits are atomic words (`Relaxed`), the generation count an
//! atomic, but the ring turns on the inserting thread: one writer at a time (the report's
//! single-thread sections), as the paper's algorithm.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use xxhash_rust::xxh3::xxh3_128_with_seed;

/// The false-positive rate of an APBF with `k` and `l` at the worst moment (every slice
/// at its fill of 1/2 or, for the `k` newest, less): the paper's recurrence over slices.
pub fn rate(k: usize, l: usize) -> f64 {
    // p[a] after slice i: the probability of a run of `a` matches ending there, none of `k`
    // before it. Slice i (0 newest) is `(i + 1) / 2k` full for i < k, then 1/2.
    let mut runs = vec![0.0f64; k];
    runs[0] = 1.0;
    let mut hit = 0.0;
    for i in 0..k + l {
        let fill = if i < k {
            (i + 1) as f64 / (2 * k) as f64
        } else {
            0.5
        };
        let mut next = vec![0.0f64; k];
        for (a, &p) in runs.iter().enumerate() {
            if a + 1 == k {
                hit += p * fill;
            } else {
                next[a + 1] += p * fill;
            }
            next[0] += p * (1.0 - fill);
        }
        runs = next;
    }
    hit
}

/// The `(k, l)` with the fewest bits per key of the window at a rate of at most `fpr`.
pub fn least_memory(fpr: f64) -> (usize, usize) {
    let mut best = (f64::INFINITY, (1, 1));
    for k in 1..=24 {
        for l in 1..=96 {
            let bits = (k + l) as f64 * k as f64 / l as f64;
            if bits < best.0 && rate(k, l) <= fpr {
                best = (bits, (k, l));
            }
        }
    }
    best.1
}

/// An APBF for `capacity` keys per window.
pub struct Apbf {
    k: usize,
    slices: usize,
    /// Bits per slice, and its words.
    m: u64,
    words: usize,
    /// Keys per generation.
    g: usize,
    bits: Vec<AtomicU64>,
    /// The newest slice, and the keys inserted in the current generation.
    base: AtomicUsize,
    count: AtomicUsize,
    seed: u64,
}

impl Apbf {
    /// The least memory at `fpr` ([`least_memory`]) for a window of `capacity` keys.
    pub fn new(capacity: u64, fpr: f64) -> Apbf {
        let (k, l) = least_memory(fpr);
        Apbf::with_params(k, l, (capacity as usize).div_ceil(l))
    }

    /// [`new`](Self::new)'s `k` and `l`, given `bytes` of bits in all (at least its least
    /// memory): a filter of equal memory to another, at a lower rate than `fpr`.
    pub fn with_bytes(capacity: u64, fpr: f64, bytes: usize) -> Apbf {
        let (k, l) = least_memory(fpr);
        let g = (capacity as usize).div_ceil(l);
        let least = ((k * g) as f64 / std::f64::consts::LN_2).ceil() as u64;
        let m = (bytes as u64 * 8 / (k + l) as u64).max(least);
        Apbf::with_slice_bits(k, l, g, m)
    }

    /// `k + l` slices for generations of `g` keys.
    pub fn with_params(k: usize, l: usize, g: usize) -> Apbf {
        let m = ((k * g) as f64 / std::f64::consts::LN_2).ceil() as u64;
        Apbf::with_slice_bits(k, l, g, m)
    }

    /// `k + l` slices of `m` bits for generations of `g` keys.
    fn with_slice_bits(k: usize, l: usize, g: usize, m: u64) -> Apbf {
        let words = m.div_ceil(64) as usize;
        let slices = k + l;
        Apbf {
            k,
            slices,
            m,
            words,
            g,
            bits: (0..slices * words).map(|_| AtomicU64::new(0)).collect(),
            base: AtomicUsize::new(0),
            count: AtomicUsize::new(0),
            seed: 0x0A9B_F000,
        }
    }

    /// `k` and `l`.
    pub fn params(&self) -> (usize, usize) {
        (self.k, self.slices - self.k)
    }

    /// Keys per window (`l · g`).
    pub fn window(&self) -> usize {
        (self.slices - self.k) * self.g
    }

    /// Bytes of the bits.
    pub fn bytes(&self) -> usize {
        self.bits.len() * 8
    }

    /// Where the key with hashes `(h1, h2)` lies in slice `s`: its word and bit.
    #[inline(always)]
    fn at(&self, s: usize, (h1, h2): (u64, u64)) -> (usize, u64) {
        let x = h1.wrapping_add((s as u64).wrapping_mul(h2));
        let bit = ((x as u128 * self.m as u128) >> 64) as u64;
        (s * self.words + (bit / 64) as usize, 1 << (bit % 64))
    }

    #[inline(always)]
    fn hashes(&self, key: &str) -> (u64, u64) {
        let h = xxh3_128_with_seed(key.as_bytes(), self.seed);
        (h as u64, (h >> 64) as u64 | 1)
    }

    /// Whether `k` consecutive slices, from the newest, hold the key's bits.
    pub fn contains(&self, key: &str) -> bool {
        let h = self.hashes(key);
        let base = self.base.load(Relaxed);
        let mut run = 0;
        for i in 0..self.slices {
            // Not enough slices left for a run of k.
            if self.slices - i + run < self.k {
                return false;
            }
            let s = (base + i) % self.slices;
            let (w, mask) = self.at(s, h);
            if self.bits[w].load(Relaxed) & mask != 0 {
                run += 1;
                if run == self.k {
                    return true;
                }
            } else {
                run = 0;
            }
        }
        false
    }

    /// Inserts the key, turning the ring first when the generation is full.
    pub fn insert(&self, key: &str) {
        let h = self.hashes(key);
        if self.count.load(Relaxed) >= self.g {
            self.next_generation();
        }
        let base = self.base.load(Relaxed);
        for i in 0..self.k {
            let (w, mask) = self.at((base + i) % self.slices, h);
            self.bits[w].fetch_or(mask, Relaxed);
        }
        self.count.fetch_add(1, Relaxed);
    }

    /// `contains`, then `insert` if absent (one writer: no claim protocol).
    pub fn insert_if_absent(&self, key: &str) -> bool {
        if self.contains(key) {
            return false;
        }
        self.insert(key);
        true
    }

    /// Turns the ring: the oldest slice, cleared, becomes the newest.
    pub fn next_generation(&self) {
        let base = (self.base.load(Relaxed) + self.slices - 1) % self.slices;
        for w in &self.bits[base * self.words..(base + 1) * self.words] {
            w.store(0, Relaxed);
        }
        self.base.store(base, Relaxed);
        self.count.store(0, Relaxed);
    }

    /// Back to empty.
    pub fn clear(&self) {
        self.bits.iter().for_each(|w| w.store(0, Relaxed));
        self.base.store(0, Relaxed);
        self.count.store(0, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The paper's recurrence as written there, from the newest slice back.
    fn paper(k: usize, l: usize, a: usize, i: usize) -> f64 {
        if a == k {
            return 1.0;
        }
        if i > l + a {
            return 0.0;
        }
        let r = if i < k {
            (i + 1) as f64 / (2 * k) as f64
        } else {
            0.5
        };
        r * paper(k, l, a + 1, i + 1) + (1.0 - r) * paper(k, l, 0, i + 1)
    }

    #[test]
    fn the_rate_is_the_papers_recurrence() {
        for (k, l) in [(4, 3), (7, 5), (10, 7), (6, 8)] {
            let (ours, theirs) = (rate(k, l), paper(k, l, 0, 0));
            assert!(
                (ours - theirs).abs() < 1e-12 * theirs,
                "{k} {l}: {ours} {theirs}"
            );
        }
        // Table 1 of the paper: k = 10, l = 7 is about 0.1%.
        assert!((rate(10, 7) - 0.00121).abs() < 0.00001);
        let (k, l) = least_memory(0.01);
        assert!(rate(k, l) <= 0.01 && (k + l) * k / l < 21, "{k} {l}");
    }

    #[test]
    fn keys_are_remembered_for_the_window_and_forgotten_after() {
        let f = Apbf::with_params(6, 8, 500);
        let keys: Vec<String> = (0..500 * 30).map(|i| format!("key {i}")).collect();
        for (i, key) in keys.iter().enumerate() {
            f.insert(key);
            // Every key of the last l generations (the window) is still there.
            if i % 250 == 0 {
                let from = i.saturating_sub(f.window() - 1);
                assert!(keys[from..=i].iter().all(|k| f.contains(k)), "at {i}");
            }
        }
        // Keys older than k + l generations are forgotten (but for false positives).
        let old = keys[..500].iter().filter(|k| f.contains(k)).count();
        assert!(
            old as f64 <= 1000.0 * rate(6, 8),
            "{old} of 500 old keys still answered"
        );
    }

    #[test]
    fn the_worst_moment_rate_is_within_the_target() {
        let f = Apbf::new(20_000, 0.01);
        let (k, l) = f.params();
        // Steady arrival for a few windows, then measured just before the ring turns.
        let n = 4 * f.window() + f.g - 1;
        (0..n).for_each(|i| f.insert(&format!("in {i}")));
        let probes = 100_000;
        let fp = (0..probes)
            .filter(|i| f.contains(&format!("out {i}")))
            .count();
        let measured = fp as f64 / probes as f64;
        assert!(measured <= 0.0125, "k {k} l {l}: {measured}");
        let bits_per_key = f.bytes() as f64 * 8.0 / f.window() as f64;
        assert!(bits_per_key < 24.0, "{bits_per_key}");
    }
}
