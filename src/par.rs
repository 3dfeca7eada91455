//! Bulk operations over rayon (feature `rayon`, on by default).
//!
//! The filter is `Send + Sync`, so plain rayon code works without these helpers
//! (`urls.par_iter().filter(|u| seen.insert_if_absent(u))`); they only save the boilerplate of
//! the common "which of these keys are new?" call and keep the answers in input order.

use core::hash::Hash;
use rayon::prelude::*;

use crate::BloomFilter;

impl BloomFilter {
    /// Calls [`insert_if_absent`](Self::insert_if_absent) for every key, in parallel on
    /// rayon's pool, and returns the answers in the order of `keys`.
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
        keys.par_iter().map(|k| self.insert_if_absent(k)).collect()
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
