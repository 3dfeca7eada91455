//! [`ExpiringBloomFilter`]'s operations on many keys per call: the clock read once for the
//! batch (every key at the same time), the lines of the keys 16 ahead prefetched, as in the
//! plain filter's batched path (`filter/batch.rs`, whose pipeline this is).

use core::hash::Hash;
use std::time::SystemTime;

use super::ExpiringBloomFilter;
use crate::filter::pipeline;
use crate::storage::{prefetch_read, prefetch_write};

impl ExpiringBloomFilter {
    /// [`insert_if_absent`](Self::insert_if_absent) for every key of `keys`, now (one
    /// clock read for the batch), answers in `out[i]`:
    /// [`insert_if_absent_many_at`](Self::insert_if_absent_many_at) with
    /// [`SystemTime::now`].
    ///
    /// # Panics
    /// If `out.len() != keys.len()`.
    ///
    /// Example at [`insert_if_absent_many_at`](Self::insert_if_absent_many_at).
    pub fn insert_if_absent_many<K: Hash>(&self, keys: &[K], out: &mut [bool]) {
        self.insert_if_absent_many_at(keys, SystemTime::now(), out)
    }

    /// [`insert_if_absent_at`](Self::insert_if_absent_at) for every key of `keys` at `t`,
    /// answers in `out[i]`: exactly the answers, bits and contract of calling it on each
    /// key in order (a key repeated within the batch gets `true` at most once), faster on
    /// large filters — the keys are hashed 16 ahead of their probe and their lines
    /// prefetched, so that many cache misses overlap.
    ///
    /// # Panics
    /// If `out.len() != keys.len()`.
    ///
    /// ```
    /// use blockbloom::ExpiringBloomFilter;
    /// use std::time::{Duration, SystemTime};
    /// let day = Duration::from_secs(86_400);
    /// let seen = ExpiringBloomFilter::builder().expire_after(day).capacity(1000).build()?;
    /// let links = ["https://a.example/", "https://b.example/", "https://a.example/"];
    /// // A replay of a log (times at most this machine's clock: guarantee 6).
    /// let (t, mut fresh) = (SystemTime::now() - 2 * day, [false; 3]);
    /// seen.insert_if_absent_many_at(&links, t, &mut fresh);
    /// assert_eq!(fresh, [true, true, false]);
    /// seen.insert_if_absent_many_at(&links, t + day / 2, &mut fresh); // all seen
    /// assert_eq!(fresh, [false; 3]);
    /// let mut found = [false; 2];
    /// seen.contains_many_at(&links[..2], t + 2 * day, &mut found); // forgotten
    /// assert_eq!(found, [false, false]);
    /// seen.insert_many_at(&links[..2], t + 2 * day);
    /// seen.contains_many(&["https://a.example/"], &mut found[..1]);
    /// seen.insert_many(&["https://c.example/"]);
    /// assert!(found[0] && seen.contains("https://c.example/"));
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn insert_if_absent_many_at<K: Hash>(&self, keys: &[K], t: SystemTime, out: &mut [bool]) {
        assert_eq!(keys.len(), out.len(), "one answer slot per key");
        let e = self.epoch_at(t);
        pipeline(
            keys,
            self.memory_bytes(),
            |k| hash_of(self, k),
            |h| prefetch_write(self.line_of(h)),
            |i, h| out[i] = self.insert_if_absent_in(h, self.line_of(h), &e),
        );
    }

    /// [`contains`](Self::contains) for every key of `keys`, now, answers in `out[i]`.
    ///
    /// # Panics
    /// If `out.len() != keys.len()`.
    ///
    /// Example at [`insert_if_absent_many_at`](Self::insert_if_absent_many_at).
    pub fn contains_many<K: Hash>(&self, keys: &[K], out: &mut [bool]) {
        self.contains_many_at(keys, SystemTime::now(), out)
    }

    /// [`contains_at`](Self::contains_at) for every key of `keys` at `t`, answers in
    /// `out[i]`, with the prefetching of
    /// [`insert_if_absent_many_at`](Self::insert_if_absent_many_at).
    ///
    /// # Panics
    /// If `out.len() != keys.len()`.
    ///
    /// Example at [`insert_if_absent_many_at`](Self::insert_if_absent_many_at).
    pub fn contains_many_at<K: Hash>(&self, keys: &[K], t: SystemTime, out: &mut [bool]) {
        assert_eq!(keys.len(), out.len(), "one answer slot per key");
        let e = self.epoch_at(t);
        pipeline(
            keys,
            self.memory_bytes(),
            |k| hash_of(self, k),
            |h| prefetch_read(self.line_of(h)),
            |i, h| out[i] = self.contains_in(h, self.line_of(h), &e),
        );
    }

    /// [`insert`](Self::insert) for every key of `keys`, now.
    ///
    /// Example at [`insert_if_absent_many_at`](Self::insert_if_absent_many_at).
    pub fn insert_many<K: Hash>(&self, keys: &[K]) {
        self.insert_many_at(keys, SystemTime::now())
    }

    /// [`insert_at`](Self::insert_at) for every key of `keys` at `t`, with the prefetching
    /// of [`insert_if_absent_many_at`](Self::insert_if_absent_many_at).
    ///
    /// Example at [`insert_if_absent_many_at`](Self::insert_if_absent_many_at).
    pub fn insert_many_at<K: Hash>(&self, keys: &[K], t: SystemTime) {
        let e = self.epoch_at(t);
        pipeline(
            keys,
            self.memory_bytes(),
            |k| hash_of(self, k),
            |h| prefetch_write(self.line_of(h)),
            |_, h| self.insert_in(h, self.line_of(h), &e),
        );
    }
}

/// The hash of `key`, in a function of its own, as the plain filter's pipeline gets it:
/// inlined into the expiring filter's larger loop, the hasher's state goes through the
/// stack around a call (more instructions per key: `examples/hot_path expiring_batch`
/// counts them under callgrind).
#[inline(never)]
fn hash_of<K: Hash>(f: &ExpiringBloomFilter, key: &K) -> u64 {
    f.layout.hasher.hash(key)
}
