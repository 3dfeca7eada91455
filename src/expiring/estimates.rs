//! [`ExpiringBloomFilter`]'s estimates: the rate, the keys remembered and the false
//! positives, from the bits live at a time in each line's planes (each reads the whole
//! filter), and the line formulas they sum (`live_bits`, `line_fpr`; the Redis module's
//! census sums the same).

use std::time::SystemTime;

use super::in_place::PlanesCensus;
use super::planes::PLANES;
use super::ExpiringBloomFilter;
use crate::line::WORDS;
use crate::sync::Ordering::{Acquire, Relaxed};

impl ExpiringBloomFilter {
    /// The false-positive rate now: [`estimated_fpr_at`](Self::estimated_fpr_at) with
    /// [`SystemTime::now`].
    ///
    /// Example at [`memory_bytes`](Self::memory_bytes).
    pub fn estimated_fpr(&self) -> f64 {
        self.estimated_fpr_at(SystemTime::now())
    }

    /// The false-positive rate at `t`, from the bits live then (reads the whole filter): the
    /// mean over lines of `1 − Π (1 − f^k)`, `f` the share of a plane's 120 bits set under
    /// a live label. It changes nothing, the filter's clock included: for a `t` before the
    /// newest epoch any call has used, the rate in it (where every call works); past it,
    /// the rate of what is still live then, and 0 once `t` is a whole window past it.
    ///
    /// Example at [`memory_bytes`](Self::memory_bytes).
    pub fn estimated_fpr_at(&self, t: SystemTime) -> f64 {
        self.census(t).fpr()
    }

    /// Estimated number of distinct keys remembered now (offered in the last three to four
    /// epochs: past its capacity, the filter's false positives among them count too, as
    /// they set no bit), from each plane's count of live bits. Reads the whole filter.
    ///
    /// Example at [`memory_bytes`](Self::memory_bytes).
    pub fn estimated_len(&self) -> u64 {
        self.census(SystemTime::now())
            .len(self.num_hashes())
            .round() as u64
    }

    /// The epoch an estimate at `t` reads in: the newest, or `t`'s if later; `None` once
    /// every epoch written is forgotten at `t`.
    fn estimate_epoch(&self, t: SystemTime) -> Option<u64> {
        let newest = self.clock(super::NEWEST).load(Acquire);
        let n = self.window.epoch_of(t).max(newest);
        (n < newest + PLANES).then_some(n)
    }

    /// The census of the lines as a caller at `t` reads them (empty once everything
    /// written is forgotten).
    fn census(&self, t: SystemTime) -> PlanesCensus {
        let mut c = PlanesCensus::default();
        if let Some(n) = self.estimate_epoch(t) {
            for line in self.key_lines() {
                c.add_line(&words(line), n, self.num_hashes());
            }
        }
        c
    }

    /// The expected number of new keys taken for repeats while the keys remembered now
    /// were offered (the last three to four epochs), from the live bits: each plane's keys
    /// arrived while it filled (a key taken for a repeat sets no bit, so the fill counts
    /// every key offered) and the older live planes were as they are now. Epochs already
    /// forgotten are not counted.
    ///
    /// ```
    /// use blockbloom::ExpiringBloomFilter;
    /// use std::time::Duration;
    /// let f = ExpiringBloomFilter::builder()
    ///     .expire_after(Duration::from_secs(86_400))
    ///     .capacity(100_000)
    ///     .fpr(0.01)
    ///     .build()?;
    /// let lost = (0..100_000u64).filter(|i| !f.insert_if_absent(i)).count() as f64;
    /// let estimate = f.estimated_false_positives();
    /// assert!((0.7 * lost..1.3 * lost).contains(&estimate), "{estimate} for {lost}");
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn estimated_false_positives(&self) -> f64 {
        self.census(SystemTime::now())
            .false_positives(self.num_hashes())
    }
}

/// A line's words (Relaxed: an estimate).
fn words(line: &crate::line::Line) -> [u64; WORDS] {
    core::array::from_fn(|i| line.word(i).load(Relaxed))
}

/// The bits each plane of a line holds under a label live in epoch `n`, from its words
/// (the live label with more bits, where a plane holds `n − 3 ..= n`'s and a newer one's),
/// indexed by age: `[0]` the plane of `n`, `[3]` that of `n − 3`.
pub(crate) fn live_bits(words: &[u64; WORDS], n: u64) -> [u32; PLANES as usize] {
    use crate::line::{DATA, LABEL_SHIFT};
    let e = super::planes::PlaneEpoch::at(n);
    core::array::from_fn(|age| {
        let q = ((n + PLANES - age as u64) % PLANES) as usize;
        let ones = |l: u64| -> u32 {
            (0..2)
                .map(|w| words[2 * q + w])
                .filter(|v| v >> LABEL_SHIFT == l)
                .map(|v| (v & DATA).count_ones())
                .sum()
        };
        ones(e.live[q][0]).max(ones(e.live[q][1]))
    })
}

/// The false-positive rate of a line for a caller in epoch `n`, from its words: a query
/// tests each plane under its live labels, so the line's rate is `1 − Π (1 − f_q^k)`, `f_q`
/// the share of plane `q`'s 120 bits set under one live label (a word under another label
/// holds none of the plane's keys).
pub(crate) fn line_fpr(words: &[u64; WORDS], n: u64, k: u32) -> f64 {
    let none: f64 = live_bits(words, n)
        .iter()
        .map(|&ones| 1.0 - (f64::from(ones) / f64::from(crate::layout::PLANE_BITS)).powi(k as i32))
        .product();
    1.0 - none
}

#[cfg(all(test, not(blockbloom_loom)))]
mod tests {
    use super::super::planes::{contains, insert_if_absent};
    use super::*;
    use crate::line::Line;
    use crate::sync::{AtomicU64, Ordering::SeqCst};

    #[test]
    fn the_estimated_rate_is_the_measured_one() {
        let hasher = crate::hash::KeyHasher::new(3);
        let k = 7;
        let (lines, per_plane) = (2_000usize, 8usize);
        let store: Vec<Line> = (0..lines).map(|_| Line::new()).collect();
        let newest = AtomicU64::new(0);
        let mut key = 0u64;
        for n in 100..104u64 {
            newest.store(n, SeqCst);
            for line in &store {
                for _ in 0..per_plane {
                    let mask = crate::layout::plane_mask(hasher.hash(&key), k);
                    insert_if_absent(line, &newest, n, mask);
                    key += 1;
                }
            }
        }
        let estimated: f64 = store
            .iter()
            .map(|l| line_fpr(&core::array::from_fn(|i| l.word(i).load(SeqCst)), 103, k))
            .sum::<f64>()
            / lines as f64;
        let probes = 200_000u64;
        let fp = (0..probes)
            .filter(|i| {
                let h = hasher.hash(&(u64::MAX - i));
                let line = &store[(*i as usize) % lines];
                contains(line, 103, crate::layout::plane_mask(h, k))
            })
            .count() as f64
            / probes as f64;
        eprintln!("estimated {estimated}, measured {fp}");
        assert!(
            (fp * 0.85..fp * 1.15).contains(&estimated),
            "{estimated} vs {fp}"
        );
    }
}
