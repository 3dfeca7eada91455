//! [`GrowableBloomFilter`]'s operations on many keys per call (`_many`) and on keys hashed
//! once (`_hash`, `_hashes`): the names and shapes of [`BloomFilter`](crate::BloomFilter)'s,
//! each key through the one-at-a-time protocol of
//! [`insert_if_absent`](GrowableBloomFilter::insert_if_absent), the blocks of the key 16
//! ahead prefetched in every layer.

use core::hash::Hash;

use super::GrowableBloomFilter;
use crate::filter::pipeline;
use crate::KeyHash;

/// Keys hashed per step of the `_many` operations (on the stack).
const HASHED_AHEAD: usize = 512;

impl GrowableBloomFilter {
    /// [`insert`](Self::insert) for a key hashed by [`key_hash`](Self::key_hash).
    ///
    /// ```
    /// use blockbloom::GrowableBloomFilter;
    /// let g = GrowableBloomFilter::new(1000, 0.01)?;
    /// g.insert_hash(g.key_hash("a"));
    /// assert!(g.contains("a"));
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn insert_hash(&self, h: KeyHash) {
        self.insert_if_absent_hash(h);
    }

    /// [`insert_if_absent`](Self::insert_if_absent) for every key of `keys`, answers in
    /// `out[i]`: the same answers as one call at a time, in order, with the blocks of the
    /// key 16 ahead prefetched in every layer, so that the cache misses of several keys
    /// overlap.
    ///
    /// # Panics
    /// If `out.len() != keys.len()`.
    ///
    /// ```
    /// use blockbloom::GrowableBloomFilter;
    /// let g = GrowableBloomFilter::new(2, 0.01)?; // grows on the way
    /// let links = ["a", "b", "c", "a", "d", "b"];
    /// let mut fresh = [false; 6];
    /// g.insert_if_absent_many(&links, &mut fresh);
    /// assert_eq!(fresh, [true, true, true, false, true, false]);
    /// let mut found = [false; 2];
    /// g.contains_many(&["d", "e"], &mut found);
    /// assert_eq!(found, [true, false]);
    /// g.insert_many(&["e"]);
    /// assert!(g.contains("e"));
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn insert_if_absent_many<K: Hash>(&self, keys: &[K], out: &mut [bool]) {
        assert_eq!(keys.len(), out.len(), "one answer slot per key");
        self.hashed(keys, out, |hs, o| self.insert_if_absent_hashes(hs, o));
    }

    /// [`contains`](Self::contains) for every key of `keys`, answers in `out[i]` (example
    /// at [`insert_if_absent_many`](Self::insert_if_absent_many)).
    ///
    /// # Panics
    /// If `out.len() != keys.len()`.
    pub fn contains_many<K: Hash>(&self, keys: &[K], out: &mut [bool]) {
        assert_eq!(keys.len(), out.len(), "one answer slot per key");
        self.hashed(keys, out, |hs, o| self.contains_hashes(hs, o));
    }

    /// [`insert`](Self::insert) for every key of `keys` (example at
    /// [`insert_if_absent_many`](Self::insert_if_absent_many)).
    pub fn insert_many<K: Hash>(&self, keys: &[K]) {
        let mut scratch = [false; HASHED_AHEAD];
        for chunk in keys.chunks(HASHED_AHEAD) {
            let out = &mut scratch[..chunk.len()];
            self.hashed(chunk, out, |hs, o| self.insert_if_absent_hashes(hs, o));
        }
    }

    /// [`insert`](Self::insert) for every hash (see [`insert_hash`](Self::insert_hash)).
    ///
    /// Example at [`insert_hash`](Self::insert_hash).
    pub fn insert_hashes(&self, hashes: &[KeyHash]) {
        self.pipelined(hashes, true, |_, h| self.insert_hash(h));
    }

    /// Runs `op` on the keys' hashes, [`HASHED_AHEAD`] at a time, and the matching part of
    /// `out`.
    #[inline(always)]
    fn hashed<K: Hash>(
        &self,
        keys: &[K],
        out: &mut [bool],
        mut op: impl FnMut(&[KeyHash], &mut [bool]),
    ) {
        let mut hs = [KeyHash(0); HASHED_AHEAD];
        for (chunk, o) in keys.chunks(HASHED_AHEAD).zip(out.chunks_mut(HASHED_AHEAD)) {
            for (h, k) in hs.iter_mut().zip(chunk) {
                *h = self.key_hash(k);
            }
            op(&hs[..chunk.len()], o);
        }
    }

    /// [`insert_if_absent_hash`](Self::insert_if_absent_hash) for every hash, in order, as
    /// [`insert_if_absent_many`](Self::insert_if_absent_many).
    ///
    /// # Panics
    /// If `out.len() != hashes.len()`.
    ///
    /// Example at [`HashedFilter`](crate::HashedFilter).
    pub fn insert_if_absent_hashes(&self, hashes: &[KeyHash], out: &mut [bool]) {
        assert_eq!(hashes.len(), out.len(), "one answer slot per key");
        self.pipelined(hashes, true, |i, h| out[i] = self.insert_if_absent_hash(h));
    }

    /// [`contains_hash`](Self::contains_hash) for every hash, prefetching as
    /// [`insert_if_absent_hashes`](Self::insert_if_absent_hashes) does.
    ///
    /// # Panics
    /// If `out.len() != hashes.len()`.
    ///
    /// Example at [`HashedFilter`](crate::HashedFilter).
    pub fn contains_hashes(&self, hashes: &[KeyHash], out: &mut [bool]) {
        assert_eq!(hashes.len(), out.len(), "one answer slot per key");
        self.pipelined(hashes, false, |i, h| out[i] = self.contains_hash(h));
    }

    /// Prefetches the blocks of hash `i + PREFETCH_DISTANCE` in every layer mapped so far
    /// (the newest with write intent when inserting), then runs `op` on hash `i`. A prefetch
    /// is only a hint: a layer installed meanwhile is simply not prefetched.
    #[inline(always)]
    fn pipelined(&self, hashes: &[KeyHash], write: bool, mut op: impl FnMut(usize, KeyHash)) {
        let prefetch = |h: u64| {
            let mut i = 0;
            while let Some(layer) = self.layers.get(i) {
                let newest = self.layers.get(i + 1).is_none();
                layer.filter.prefetch(h, write && newest);
                i += 1;
            }
        };
        let bytes = self.memory_bytes();
        pipeline(hashes, bytes, |h| h.0, prefetch, |i, h| op(i, KeyHash(h)));
    }
}
