//! The family's vocabulary as traits: [`Filter`], what every member does with keys, and
//! [`HashedFilter`], the members whose keys can be hashed once and probed later. Code that
//! works with any member (the command line's `dedup`, the Python binding) is written once
//! against these instead of matching on the types. The table of every operation on every
//! member and surface is docs/API.md.

use core::hash::Hash;

use crate::{
    AtomicBitSet, BloomFilter, CountingBloomFilter, Error, ExpiringBloomFilter,
    GrowableBloomFilter, KeyHash,
};

/// What every filter of the family does with keys of type `K`, under one name and shape:
/// the methods of the same names on each type, which they call.
///
/// The `_many` forms answer in `out[i]` for `keys[i]` (the same answers as one call at a time,
/// in order) and panic if the lengths differ; members with a faster batched path
/// (prefetching) use it. Dyn-compatible: `&dyn Filter<K>` holds any member.
///
/// ```
/// use blockbloom::{BloomFilter, Filter, GrowableBloomFilter};
///
/// /// The new lines of a batch, whatever filter remembers them.
/// fn fresh<'a>(seen: &dyn Filter<str>, lines: &[&'a str]) -> Vec<&'a str> {
///     lines.iter().copied().filter(|l| seen.insert_if_absent(l)).collect()
/// }
/// let fixed = BloomFilter::with_capacity(1000, 0.01)?;
/// let growing = GrowableBloomFilter::new(10, 0.01)?;
/// for f in [&fixed as &dyn Filter<str>, &growing] {
///     assert_eq!(fresh(f, &["a", "b", "a"]), ["a", "b"]);
///     assert!(f.contains("b") && f.estimated_fpr() < f.target_fpr());
/// }
/// # Ok::<(), blockbloom::Error>(())
/// ```
pub trait Filter<K: Hash + ?Sized>: Send + Sync {
    /// Adds `key`.
    fn insert(&self, key: &K);
    /// Whether `key` may have been inserted: `false` is certain.
    fn contains(&self, key: &K) -> bool;
    /// Adds `key`; `true` iff it was absent (of racing calls with one new key, at most one
    /// gets `true`).
    fn insert_if_absent(&self, key: &K) -> bool;

    /// [`insert`](Self::insert) for every key.
    fn insert_many(&self, keys: &[K])
    where
        K: Sized,
    {
        keys.iter().for_each(|k| self.insert(k));
    }
    /// [`contains`](Self::contains) for every key, answers in `out`.
    fn contains_many(&self, keys: &[K], out: &mut [bool])
    where
        K: Sized,
    {
        assert_eq!(keys.len(), out.len(), "one answer slot per key");
        for (k, o) in keys.iter().zip(out) {
            *o = self.contains(k);
        }
    }
    /// [`insert_if_absent`](Self::insert_if_absent) for every key, answers in `out`.
    fn insert_if_absent_many(&self, keys: &[K], out: &mut [bool])
    where
        K: Sized,
    {
        assert_eq!(keys.len(), out.len(), "one answer slot per key");
        for (k, o) in keys.iter().zip(out) {
            *o = self.insert_if_absent(k);
        }
    }

    /// Room for `additional` more new keys at the target rate: a growing filter adds its next
    /// layer now if it must ([`GrowableBloomFilter::try_reserve`]); the others have a fixed
    /// capacity and answer `Ok`.
    fn try_reserve(&self, additional: u64) -> Result<(), Error> {
        let _ = additional;
        Ok(())
    }
    /// The false-positive rate the filter was sized for (0 for an exact set).
    fn target_fpr(&self) -> f64;
    /// The false-positive rate at the current fill.
    fn estimated_fpr(&self) -> f64;
    /// Estimated number of distinct keys inserted.
    fn estimated_len(&self) -> u64;
    /// The expected number of new keys taken for repeats so far (0 for an exact set).
    fn estimated_false_positives(&self) -> f64;
    /// Bytes of memory the filter occupies.
    fn memory_bytes(&self) -> usize;
}

/// The members whose keys can be hashed once ([`key_hash`](Self::key_hash)) and probed
/// later: e.g. a binding that must read its keys under an interpreter lock but can probe
/// without it. A [`KeyHash`] depends only on the seed.
///
/// ```
/// use blockbloom::{GrowableBloomFilter, HashedFilter};
/// fn probe_later<F: HashedFilter>(f: &F, keys: &[&str]) -> Vec<bool> {
///     let hs: Vec<_> = keys.iter().map(|k| f.key_hash(k)).collect();
///     let mut out = vec![false; hs.len()];
///     f.insert_if_absent_hashes(&hs, &mut out);
///     out
/// }
/// let g = GrowableBloomFilter::new(1000, 0.01)?;
/// assert_eq!(probe_later(&g, &["a", "b", "a"]), [true, true, false]);
/// # Ok::<(), blockbloom::Error>(())
/// ```
pub trait HashedFilter: Send + Sync {
    /// The keyed hash of `key` in this filter.
    fn key_hash<K: Hash + ?Sized>(&self, key: &K) -> KeyHash;
    /// `insert` of a hashed key.
    fn insert_hash(&self, h: KeyHash);
    /// `contains` of a hashed key.
    fn contains_hash(&self, h: KeyHash) -> bool;
    /// `insert_if_absent` of a hashed key.
    fn insert_if_absent_hash(&self, h: KeyHash) -> bool;
    /// `insert_many` of hashed keys.
    fn insert_hashes(&self, hashes: &[KeyHash]);
    /// `contains_many` of hashed keys.
    fn contains_hashes(&self, hashes: &[KeyHash], out: &mut [bool]);
    /// `insert_if_absent_many` of hashed keys.
    fn insert_if_absent_hashes(&self, hashes: &[KeyHash], out: &mut [bool]);
}

/// `impl Filter<K>` for a member whose inherent methods have the family's names;
/// `batched`: it has its own `_many` forms, and `try_reserve`.
macro_rules! filter_impl {
    ($t:ty $(, $batched:ident)?) => {
        impl<K: Hash + ?Sized> Filter<K> for $t {
            #[inline]
            fn insert(&self, key: &K) {
                <$t>::insert(self, key)
            }
            #[inline]
            fn contains(&self, key: &K) -> bool {
                <$t>::contains(self, key)
            }
            #[inline]
            fn insert_if_absent(&self, key: &K) -> bool {
                <$t>::insert_if_absent(self, key)
            }
            $(filter_impl!(@$batched $t);)?
            fn target_fpr(&self) -> f64 {
                <$t>::target_fpr(self)
            }
            fn estimated_fpr(&self) -> f64 {
                <$t>::estimated_fpr(self)
            }
            fn estimated_len(&self) -> u64 {
                <$t>::estimated_len(self)
            }
            fn estimated_false_positives(&self) -> f64 {
                <$t>::estimated_false_positives(self)
            }
            fn memory_bytes(&self) -> usize {
                <$t>::memory_bytes(self)
            }
        }
    };
    (@batched $t:ty) => {
        fn insert_many(&self, keys: &[K]) where K: Sized {
            <$t>::insert_many(self, keys)
        }
        fn contains_many(&self, keys: &[K], out: &mut [bool]) where K: Sized {
            <$t>::contains_many(self, keys, out)
        }
        fn insert_if_absent_many(&self, keys: &[K], out: &mut [bool]) where K: Sized {
            <$t>::insert_if_absent_many(self, keys, out)
        }
    };
    (@growing $t:ty) => {
        filter_impl!(@batched $t);
        fn try_reserve(&self, additional: u64) -> Result<(), Error> {
            <$t>::try_reserve(self, additional)
        }
    };
}

filter_impl!(BloomFilter, batched);
filter_impl!(GrowableBloomFilter, growing);
filter_impl!(CountingBloomFilter);
filter_impl!(ExpiringBloomFilter, batched);

/// `impl HashedFilter` for a member with the hashed forms as inherent methods.
macro_rules! hashed_impl {
    ($($t:ty),*) => {$(
        impl HashedFilter for $t {
            #[inline]
            fn key_hash<K: Hash + ?Sized>(&self, key: &K) -> KeyHash {
                <$t>::key_hash(self, key)
            }
            #[inline]
            fn insert_hash(&self, h: KeyHash) {
                <$t>::insert_hash(self, h)
            }
            #[inline]
            fn contains_hash(&self, h: KeyHash) -> bool {
                <$t>::contains_hash(self, h)
            }
            #[inline]
            fn insert_if_absent_hash(&self, h: KeyHash) -> bool {
                <$t>::insert_if_absent_hash(self, h)
            }
            fn insert_hashes(&self, hashes: &[KeyHash]) {
                <$t>::insert_hashes(self, hashes)
            }
            fn contains_hashes(&self, hashes: &[KeyHash], out: &mut [bool]) {
                <$t>::contains_hashes(self, hashes, out)
            }
            fn insert_if_absent_hashes(&self, hashes: &[KeyHash], out: &mut [bool]) {
                <$t>::insert_if_absent_hashes(self, hashes, out)
            }
        }
    )*};
}

hashed_impl!(BloomFilter, GrowableBloomFilter);

/// An exact set of ids: its keys are the ids themselves (`u64`, below
/// [`universe`](AtomicBitSet::universe); one out of range panics as in
/// [`insert_if_absent`](AtomicBitSet::insert_if_absent)), with no false positives.
impl Filter<u64> for AtomicBitSet {
    fn insert(&self, key: &u64) {
        AtomicBitSet::insert(self, *key)
    }
    fn contains(&self, key: &u64) -> bool {
        AtomicBitSet::contains(self, *key)
    }
    fn insert_if_absent(&self, key: &u64) -> bool {
        AtomicBitSet::insert_if_absent(self, *key)
    }
    fn target_fpr(&self) -> f64 {
        0.0
    }
    fn estimated_fpr(&self) -> f64 {
        0.0
    }
    fn estimated_len(&self) -> u64 {
        self.len()
    }
    fn estimated_false_positives(&self) -> f64 {
        0.0
    }
    fn memory_bytes(&self) -> usize {
        AtomicBitSet::memory_bytes(self)
    }
}
