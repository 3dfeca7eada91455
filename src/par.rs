//! Bulk operations over rayon (feature `rayon`, on by default).
//!
//! The filter is `Send + Sync`, so plain rayon code works without these helpers
//! (`urls.par_iter().filter(|u| seen.insert_if_absent(u))`); they only save the boilerplate of
//! the common "which of these keys are new?" call and keep the answers in input order.

use core::hash::Hash;
use rayon::prelude::*;

use crate::BloomFilter;

/// Keys per rayon task in [`BloomFilter::par_insert_if_absent`] and
/// [`BloomFilter::par_contains`]: large enough that the prefetch pipeline's warm-up and
/// rayon's per-task cost vanish, small enough to balance the load across threads.
pub const PAR_CHUNK: usize = 4096;

impl BloomFilter {
    /// Calls [`insert_if_absent`](Self::insert_if_absent) for every key, in parallel on
    /// rayon's pool, and returns the answers in the order of `keys`.
    ///
    /// Each rayon task takes a chunk of 4,096 keys (`PAR_CHUNK`) through
    /// [`insert_if_absent_batch`](Self::insert_if_absent_batch), so the hashing and prefetching
    /// pipeline runs on every core.
    ///
    /// The contract is the one-at-a-time contract: if `keys` holds the same new key twice,
    /// exactly one of its answers is `true` (at most one, if another key races it for a bit).
    ///
    /// ```
    /// use blockbloom::BloomFilter;
    /// let seen = BloomFilter::with_capacity(1000, 0.001)?;
    /// let links = ["https://a.example/", "https://b.example/", "https://a.example/"];
    /// let fresh = seen.par_insert_if_absent(&links);
    /// assert_eq!(fresh.iter().filter(|&&b| b).count(), 2);
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn par_insert_if_absent<K: Hash + Sync>(&self, keys: &[K]) -> Vec<bool> {
        let mut out = vec![false; keys.len()];
        keys.par_chunks(PAR_CHUNK)
            .zip(out.par_chunks_mut(PAR_CHUNK))
            .for_each(|(k, o)| self.insert_if_absent_batch(k, o));
        out
    }

    /// Calls [`contains`](Self::contains) for every key, in parallel chunks through
    /// [`contains_batch`](Self::contains_batch), and returns the answers in the order of
    /// `keys`.
    ///
    /// ```
    /// use blockbloom::BloomFilter;
    /// let seen = BloomFilter::with_capacity(1000, 0.001)?;
    /// seen.insert("https://a.example/");
    /// let known = seen.par_contains(&["https://a.example/", "https://b.example/"]);
    /// assert_eq!(known, [true, false]);
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn par_contains<K: Hash + Sync>(&self, keys: &[K]) -> Vec<bool> {
        let mut out = vec![false; keys.len()];
        keys.par_chunks(PAR_CHUNK)
            .zip(out.par_chunks_mut(PAR_CHUNK))
            .for_each(|(k, o)| self.contains_batch(k, o));
        out
    }

    /// Inserts every key of a parallel iterator.
    ///
    /// ```
    /// use blockbloom::BloomFilter;
    /// use rayon::prelude::*;
    /// let f = BloomFilter::with_capacity(10_000, 0.01)?;
    /// f.par_insert((0..10_000u64).into_par_iter());
    /// assert!((0..10_000u64).all(|i| f.contains(&i)));
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn par_insert<K, I>(&self, keys: I)
    where
        K: Hash,
        I: IntoParallelIterator<Item = K>,
    {
        keys.into_par_iter().for_each(|k| self.insert(&k));
    }
}
