//! Bulk operations over rayon (feature `rayon`, on by default).
//!
//! The filter is `Send + Sync`, so plain rayon code works without these helpers
//! (`urls.par_iter().filter(|u| seen.insert_if_absent(u))`); they only save the boilerplate of
//! the common "which of these keys are new?" call and keep the answers in input order.

use core::hash::Hash;
use rayon::prelude::*;

use crate::BloomFilter;

/// Keys per rayon task in the `par_` operations: large enough that the prefetch pipeline's warm-up and
/// rayon's per-task cost vanish, small enough to balance the load across threads.
pub const PAR_CHUNK: usize = 4096;

impl BloomFilter {
    /// [`insert_if_absent_many`](Self::insert_if_absent_many) on rayon's pool: answers in
    /// `out[i]`, in the order of `keys`.
    ///
    /// Each rayon task takes a chunk of 4,096 keys through `insert_if_absent_many`, so the
    /// hashing and prefetching pipeline runs on every core. The contract is the
    /// one-at-a-time contract: if `keys` holds the same new key twice, exactly one of its
    /// answers is `true` (at most one, if another key races it for a bit).
    ///
    /// # Panics
    /// If `out.len() != keys.len()`.
    ///
    /// ```
    /// use blockbloom::BloomFilter;
    /// let seen = BloomFilter::with_capacity(1000, 0.001)?;
    /// let links = ["https://a.example/", "https://b.example/", "https://a.example/"];
    /// let mut fresh = [false; 3];
    /// seen.par_insert_if_absent_many(&links, &mut fresh);
    /// assert_eq!(fresh.iter().filter(|&&b| b).count(), 2);
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn par_insert_if_absent_many<K: Hash + Sync>(&self, keys: &[K], out: &mut [bool]) {
        assert_eq!(keys.len(), out.len(), "one answer slot per key");
        keys.par_chunks(PAR_CHUNK)
            .zip(out.par_chunks_mut(PAR_CHUNK))
            .for_each(|(k, o)| self.insert_if_absent_many(k, o));
    }

    /// [`contains_many`](Self::contains_many) on rayon's pool, answers in `out[i]`.
    ///
    /// # Panics
    /// If `out.len() != keys.len()`.
    ///
    /// ```
    /// use blockbloom::BloomFilter;
    /// let seen = BloomFilter::with_capacity(1000, 0.001)?;
    /// seen.par_insert_many(&["https://a.example/"]);
    /// let mut known = [false; 2];
    /// seen.par_contains_many(&["https://a.example/", "https://b.example/"], &mut known);
    /// assert_eq!(known, [true, false]);
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn par_contains_many<K: Hash + Sync>(&self, keys: &[K], out: &mut [bool]) {
        assert_eq!(keys.len(), out.len(), "one answer slot per key");
        keys.par_chunks(PAR_CHUNK)
            .zip(out.par_chunks_mut(PAR_CHUNK))
            .for_each(|(k, o)| self.contains_many(k, o));
    }

    /// [`insert_many`](Self::insert_many) on rayon's pool (example at
    /// [`par_contains_many`](Self::par_contains_many)).
    pub fn par_insert_many<K: Hash + Sync>(&self, keys: &[K]) {
        keys.par_chunks(PAR_CHUNK).for_each(|k| self.insert_many(k));
    }
}
