//! [`BloomFilter`]'s operations on many keys per call (`_many`), the blocks of the key 16
//! ahead (`PREFETCH_DISTANCE`) prefetched, so that the cache misses of several keys overlap;
//! and on keys hashed once (`key_hash`) to be probed later (`_hash`, `_hashes`). The names
//! are the family's ([`Filter`](crate::Filter), docs/API.md).

use core::hash::Hash;

use super::{BloomFilter, PREFETCH_DISTANCE};
use crate::hash::KeyHash;
use crate::storage::{prefetch_read, prefetch_write};

impl BloomFilter {
    /// [`insert_if_absent`](Self::insert_if_absent) for every key of `keys`, answers in
    /// `out[i]`, faster on large filters: the keys are hashed 16 ahead of
    /// their probe and their blocks prefetched (with write intent, `prefetchw`, where the CPU
    /// has it), so up to that many cache misses are in flight at once instead of one.
    ///
    /// The answers are exactly those of calling `insert_if_absent` on each key in order
    /// (a key repeated within the batch gets `true` at most once), and the concurrency
    /// contract is the same: each key goes through the same protocol.
    ///
    /// # Panics
    /// If `out.len() != keys.len()`.
    ///
    /// # Examples
    /// ```
    /// use blockbloom::BloomFilter;
    /// let seen = BloomFilter::builder().capacity(1000).fpr(0.001).seed(3).build()?;
    /// let links = ["https://a.example/", "https://b.example/", "https://a.example/"];
    /// let mut fresh = [false; 3];
    /// seen.insert_if_absent_many(&links, &mut fresh);
    /// assert_eq!(fresh, [true, true, false]);
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn insert_if_absent_many<K: Hash>(&self, keys: &[K], out: &mut [bool]) {
        assert_eq!(keys.len(), out.len(), "one answer slot per key");
        self.pipelined(keys, true, |i, h| out[i] = self.insert_if_absent_u64(h));
    }

    /// [`contains`](Self::contains) for every key of `keys`, answers in `out[i]`, with the
    /// hashing and prefetching of [`insert_if_absent_many`](Self::insert_if_absent_many).
    ///
    /// # Panics
    /// If `out.len() != keys.len()`.
    ///
    /// # Examples
    /// ```
    /// use blockbloom::BloomFilter;
    /// let f = BloomFilter::builder().capacity(1000).fpr(0.001).seed(3).build()?;
    /// f.insert_many(&[1u64, 2, 3]);
    /// let mut found = [false; 2];
    /// f.contains_many(&[3u64, 4], &mut found);
    /// assert_eq!(found, [true, false]);
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn contains_many<K: Hash>(&self, keys: &[K], out: &mut [bool]) {
        assert_eq!(keys.len(), out.len(), "one answer slot per key");
        self.pipelined(keys, false, |i, h| out[i] = self.contains_u64(h));
    }

    /// [`insert`](Self::insert) for every key of `keys`, with the hashing and prefetching of
    /// [`insert_if_absent_many`](Self::insert_if_absent_many) (example at
    /// [`contains_many`](Self::contains_many)).
    pub fn insert_many<K: Hash>(&self, keys: &[K]) {
        self.pipelined(keys, true, |_, h| self.insert_u64(h));
    }

    /// The keyed hash of `key` in this filter: step one of every operation, taken out so
    /// that a caller can hash keys where they are cheap to read and probe the filter later,
    /// e.g. a Python binding that must read its keys while holding the interpreter lock but
    /// can probe without it. A [`KeyHash`] depends only on the seed: it gives the same
    /// answers as its key in every filter with this filter's [`seed`](Self::seed) (in another
    /// filter it is the hash of some other key, harmless but meaningless).
    ///
    /// ```
    /// use blockbloom::BloomFilter;
    /// let f = BloomFilter::builder().capacity(1000).seed(5).build()?;
    /// let hs: Vec<_> = ["a", "b", "a"].iter().map(|k| f.key_hash(k)).collect();
    /// let mut fresh = [false; 3];
    /// f.insert_if_absent_hashes(&hs, &mut fresh);
    /// assert_eq!(fresh, [true, true, false]);
    /// assert!(f.contains("b"));
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    #[inline]
    pub fn key_hash<K: Hash + ?Sized>(&self, key: &K) -> KeyHash {
        KeyHash(self.layout.hasher.hash(key))
    }

    /// [`insert_if_absent`](Self::insert_if_absent) of the key hashed to `h` by
    /// [`key_hash`](Self::key_hash).
    ///
    /// ```
    /// use blockbloom::BloomFilter;
    /// let f = BloomFilter::with_capacity(1000, 0.01)?;
    /// let h = f.key_hash("https://example.com/");
    /// assert!(f.insert_if_absent_hash(h));
    /// assert!(f.contains_hash(h) && f.contains("https://example.com/"));
    /// f.insert_hash(f.key_hash("b"));
    /// assert!(!f.insert_if_absent("b"));
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    #[inline]
    pub fn insert_if_absent_hash(&self, h: KeyHash) -> bool {
        self.insert_if_absent_u64(h.0)
    }

    /// [`contains`](Self::contains) of the key hashed to `h` (see
    /// [`insert_if_absent_hash`](Self::insert_if_absent_hash)).
    ///
    /// Example at [`insert_if_absent_hash`](Self::insert_if_absent_hash).
    #[inline]
    pub fn contains_hash(&self, h: KeyHash) -> bool {
        self.contains_u64(h.0)
    }

    /// [`insert`](Self::insert) of the key hashed to `h` (see
    /// [`insert_if_absent_hash`](Self::insert_if_absent_hash)).
    ///
    /// Example at [`insert_if_absent_hash`](Self::insert_if_absent_hash).
    #[inline]
    pub fn insert_hash(&self, h: KeyHash) {
        self.insert_u64(h.0)
    }

    /// [`insert_if_absent_many`](Self::insert_if_absent_many) on keys hashed by
    /// [`key_hash`](Self::key_hash): the same answers, the same prefetching (example at
    /// [`key_hash`](Self::key_hash)).
    ///
    /// # Panics
    /// If `out.len() != hashes.len()`.
    pub fn insert_if_absent_hashes(&self, hashes: &[KeyHash], out: &mut [bool]) {
        assert_eq!(hashes.len(), out.len(), "one answer slot per key");
        self.pipelined_hashes(hashes, true, |i, h| out[i] = self.insert_if_absent_u64(h));
    }

    /// [`contains_many`](Self::contains_many) on keys hashed by [`key_hash`](Self::key_hash)
    /// (example at [`insert_hashes`](Self::insert_hashes)).
    ///
    /// # Panics
    /// If `out.len() != hashes.len()`.
    pub fn contains_hashes(&self, hashes: &[KeyHash], out: &mut [bool]) {
        assert_eq!(hashes.len(), out.len(), "one answer slot per key");
        self.pipelined_hashes(hashes, false, |i, h| out[i] = self.contains_u64(h));
    }

    /// [`insert_many`](Self::insert_many) on keys hashed by [`key_hash`](Self::key_hash).
    ///
    /// ```
    /// use blockbloom::BloomFilter;
    /// let f = BloomFilter::with_capacity(1000, 0.01)?;
    /// let hs = [f.key_hash("a"), f.key_hash("b")];
    /// f.insert_hashes(&hs);
    /// let mut found = [false; 2];
    /// f.contains_hashes(&hs, &mut found);
    /// assert_eq!(found, [true, true]);
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn insert_hashes(&self, hashes: &[KeyHash]) {
        self.pipelined_hashes(hashes, true, |_, h| self.insert_u64(h));
    }

    /// Prefetches the block of hash `h` (with write intent for the inserting operations).
    #[inline(always)]
    pub(crate) fn prefetch(&self, h: u64, write: bool) {
        let b = &self.lines()[self.line_of(h)];
        if write {
            prefetch_write(b);
        } else {
            prefetch_read(b);
        }
    }

    /// [`pipeline`] on hashes already taken.
    #[inline(always)]
    fn pipelined_hashes(&self, hashes: &[KeyHash], write: bool, op: impl FnMut(usize, u64)) {
        let bytes = self.memory_bytes();
        pipeline(hashes, bytes, |h| h.0, |h| self.prefetch(h, write), op)
    }

    /// [`pipeline`] with this filter's hash and blocks.
    #[inline(always)]
    fn pipelined<K: Hash>(&self, keys: &[K], write: bool, op: impl FnMut(usize, u64)) {
        pipeline(
            keys,
            self.memory_bytes(),
            |k| self.layout.hasher.hash(k),
            |h| self.prefetch(h, write),
            op,
        )
    }
}

/// From how many bytes of lines a batch prefetches its lines a group at a time
/// ([`pipeline`]): past the caches, where the page walks are what a batch waits for; below
/// it a group's prefetches cost up to 7 ns a key (a filter of 10^5 keys on an AMD EPYC Zen
/// 4: 28 → 35 ns) where one per key costs nothing.
pub(crate) const GROUPED_FROM_BYTES: usize = 64 << 20;

/// The software pipeline of every batched path, of every filter (on keys, or on hashes
/// taken earlier: `hash` is then `|h| h.0`), whose lines take `bytes`: each key's hash
/// taken and its line prefetched `PREFETCH_DISTANCE` keys before `op` runs on it, one
/// prefetch per key below [`GROUPED_FROM_BYTES`], and above it a group of
/// `PREFETCH_DISTANCE` prefetches one after another before each group of keys.
///
/// Out of the caches a prefetch whose page translation misses holds the core's retirement
/// until its page walk is done, so one prefetch among each key's work exposes a walk per
/// key where a group overlaps sixteen: at 10^9 keys, batches of the plain and the expiring
/// filter alike take about half the time (docs/PERFORMANCE.md, "Batches past the caches").
#[inline(always)]
pub(crate) fn pipeline<K: Hash>(
    keys: &[K],
    bytes: usize,
    hash: impl Fn(&K) -> u64,
    prefetch: impl Fn(u64),
    mut op: impl FnMut(usize, u64),
) {
    const D: usize = PREFETCH_DISTANCE;
    if bytes < GROUPED_FROM_BYTES {
        let mut ring = [0u64; D];
        for (slot, key) in ring.iter_mut().zip(keys) {
            *slot = hash(key);
            prefetch(*slot);
        }
        for i in 0..keys.len() {
            let slot = &mut ring[i % D];
            let h = *slot;
            if let Some(ahead) = keys.get(i + D) {
                *slot = hash(ahead);
                prefetch(*slot);
            }
            op(i, h);
        }
        return;
    }
    // Key `i`'s hash in `ring[i % RING]`, taken `2 * D` keys before its `op`; the lines of
    // keys `i + D .. i + 2 * D` prefetched at each `i` that starts a group.
    const RING: usize = 4 * D;
    let mut ring = [0u64; RING];
    for (slot, key) in ring.iter_mut().zip(keys.iter().take(2 * D)) {
        *slot = hash(key);
    }
    ring[..keys.len().min(D)].iter().for_each(|&h| prefetch(h));
    for i in 0..keys.len() {
        if i % D == 0 {
            let next = keys.len().saturating_sub(i + D).min(D);
            (i + D..i + D + next).for_each(|j| prefetch(ring[j % RING]));
        }
        if let Some(key) = keys.get(i + 2 * D) {
            ring[(i + 2 * D) % RING] = hash(key);
        }
        op(i, ring[i % RING]);
    }
}

#[cfg(all(test, not(blockbloom_loom)))]
mod tests {
    use super::{pipeline, GROUPED_FROM_BYTES, PREFETCH_DISTANCE};
    use std::cell::RefCell;

    /// Both ways of prefetching run `op` on every key once, in order, with its own hash,
    /// after its line was prefetched; every prefetch is of a key of the batch.
    #[test]
    fn both_pipelines_run_every_key_in_order_after_its_prefetch() {
        let d = PREFETCH_DISTANCE;
        for bytes in [0, GROUPED_FROM_BYTES] {
            for len in [
                0,
                1,
                d - 1,
                d,
                d + 1,
                2 * d - 1,
                2 * d,
                2 * d + 1,
                3 * d + 5,
                1000,
            ] {
                let keys: Vec<u64> = (0..len as u64).map(|i| i * 7 + 3).collect();
                let hash = |k: &u64| k * 1_000_003;
                // (the key's index for an `op`, none for a prefetch; the hash)
                let events = RefCell::new(Vec::new());
                pipeline(
                    &keys,
                    bytes,
                    hash,
                    |h| events.borrow_mut().push((None, h)),
                    |i, h| events.borrow_mut().push((Some(i), h)),
                );
                let events = events.into_inner();
                let ops: Vec<(usize, u64)> =
                    events.iter().filter_map(|&(i, h)| Some((i?, h))).collect();
                let want: Vec<u64> = keys.iter().map(hash).collect();
                let in_order: Vec<(usize, u64)> = want.iter().copied().enumerate().collect();
                assert_eq!(ops, in_order, "bytes {bytes}, len {len}");
                let mut prefetched = std::collections::HashSet::new();
                for &(op, h) in &events {
                    if op.is_some() {
                        assert!(prefetched.contains(&h), "bytes {bytes}, len {len}");
                    } else {
                        assert!(want.contains(&h), "a prefetch of a key not in the batch");
                        prefetched.insert(h);
                    }
                }
            }
        }
    }
}
