//! [`LocalFront`]: an in-process filter in front of the Redis one, for callers that ask one
//! key at a time (a Scrapy dupefilter asks once per request, most of them repeats).

use std::hash::Hash;

use blockbloom::GrowableBloomFilter;

use crate::{RedisBloomFilter, Result};

/// A [`RedisBloomFilter`] with an in-process "seen by this process" filter in front of it.
///
/// A key the local filter has is answered `false` at once, without a round trip: this
/// process has already been told about it (it fetched it, or learned that another process
/// had). Only keys new to this process go to Redis, which alone decides who wins — so at
/// most one process wins a key, as without the front. A key enters the local filter only
/// after Redis answered for it, so an error leaves no trace locally (the next call asks
/// Redis again).
///
/// **Rate.** A new key is wrongly answered "seen" if the local filter or the Redis filter
/// mistakes it: at most `local_fpr + redis_fpr` (e.g. 0.1% + 1% = 1.1%). The local filter
/// grows with this process's distinct keys (a [`GrowableBloomFilter`]), so its rate holds
/// however many come.
///
/// **After [`Error::StateLost`](crate::Error::StateLost)** the local filter is kept: the keys
/// in it were handled by this process and stay "seen" here, while other processes may fetch
/// them again.
///
/// ```no_run
/// use blockbloom_redis::RedisBloomFilter;
/// let remote = RedisBloomFilter::open_or_create("redis://127.0.0.1/", "crawl:seen", 10_000_000, 0.01)?;
/// let mut seen = remote.with_local_front(100_000, 0.001)?;
/// for url in ["https://a.example/", "https://a.example/"] {
///     if seen.insert_if_absent(url)? { /* fetch it */ }
/// }
/// assert_eq!(seen.round_trips(), 1); // the repeat was answered in-process
/// assert_eq!(seen.insert_if_absent_many(&["https://a.example/", "https://b.example/"])?, [false, true]);
/// assert_eq!(seen.contains_many(&["https://b.example/", "https://c.example/"])?, [true, false]);
/// assert!(seen.contains("https://b.example/")?);
/// assert!(seen.local().contains("https://b.example/")); // this process handled it
/// assert_eq!(seen.remote().name(), "crawl:seen");
/// # Ok::<(), blockbloom_redis::Error>(())
/// ```
pub struct LocalFront {
    local: GrowableBloomFilter,
    remote: RedisBloomFilter,
    round_trips: u64,
}

impl RedisBloomFilter {
    /// Puts an in-process filter in front of this one (see [`LocalFront`]): its first layer
    /// holds `initial_capacity` keys, and its own rate is `local_fpr`.
    ///
    /// # Errors
    /// [`Error::Filter`](crate::Error::Filter) for invalid local parameters.
    ///
    /// Example at [`LocalFront`].
    pub fn with_local_front(self, initial_capacity: u64, local_fpr: f64) -> Result<LocalFront> {
        Ok(LocalFront {
            local: GrowableBloomFilter::new(initial_capacity, local_fpr)?,
            remote: self,
            round_trips: 0,
        })
    }
}

impl LocalFront {
    /// `true` iff `key` was new to every process (Redis decided): the caller should fetch
    /// it. A key this process has seen is answered `false` without a round trip.
    ///
    /// # Errors
    /// As [`RedisBloomFilter::insert_if_absent`]; the key is then not recorded locally.
    ///
    /// Example at [`LocalFront`].
    pub fn insert_if_absent<K: Hash + ?Sized>(&mut self, key: &K) -> Result<bool> {
        if self.local.contains(key) {
            return Ok(false);
        }
        self.round_trips += 1;
        let new = self.remote.insert_if_absent(key)?;
        self.local.insert(key);
        Ok(new)
    }

    /// [`insert_if_absent`](Self::insert_if_absent) for a batch: the keys new to this
    /// process go to Redis in one call.
    ///
    /// # Errors
    /// As [`RedisBloomFilter::insert_if_absent_many`]; no key of the batch is then recorded
    /// locally.
    ///
    /// Example at [`LocalFront`].
    pub fn insert_if_absent_many<K: Hash>(&mut self, keys: &[K]) -> Result<Vec<bool>> {
        let ask: Vec<usize> = (0..keys.len())
            .filter(|&i| !self.local.contains(&keys[i]))
            .collect();
        let mut out = vec![false; keys.len()];
        if ask.is_empty() {
            return Ok(out);
        }
        self.round_trips += 1;
        let sub: Vec<&K> = ask.iter().map(|&i| &keys[i]).collect();
        let answers = self.remote.insert_if_absent_many(&sub)?;
        for (&i, new) in ask.iter().zip(answers) {
            self.local.insert(&keys[i]);
            out[i] = new;
        }
        Ok(out)
    }

    /// [`contains`](Self::contains) for a batch: the keys this process has not seen go to
    /// Redis in one call.
    ///
    /// # Errors
    /// As [`RedisBloomFilter::contains_many`].
    ///
    /// Example at [`LocalFront`].
    pub fn contains_many<K: Hash>(&mut self, keys: &[K]) -> Result<Vec<bool>> {
        let ask: Vec<usize> = (0..keys.len())
            .filter(|&i| !self.local.contains(&keys[i]))
            .collect();
        let mut out = vec![true; keys.len()];
        if ask.is_empty() {
            return Ok(out);
        }
        self.round_trips += 1;
        let sub: Vec<&K> = ask.iter().map(|&i| &keys[i]).collect();
        for (&i, found) in ask.iter().zip(self.remote.contains_many(&sub)?) {
            out[i] = found;
        }
        Ok(out)
    }

    /// Whether `key` may have been inserted by any process (in-process first).
    ///
    /// # Errors
    /// As [`RedisBloomFilter::contains`].
    ///
    /// Example at [`LocalFront`].
    pub fn contains<K: Hash + ?Sized>(&mut self, key: &K) -> Result<bool> {
        if self.local.contains(key) {
            return Ok(true);
        }
        self.round_trips += 1;
        self.remote.contains(key)
    }

    /// Calls that went to Redis so far.
    ///
    /// Example at [`LocalFront`].
    pub fn round_trips(&self) -> u64 {
        self.round_trips
    }

    /// The in-process filter.
    ///
    /// Example at [`LocalFront`].
    pub fn local(&self) -> &GrowableBloomFilter {
        &self.local
    }

    /// The Redis filter behind it.
    ///
    /// Example at [`LocalFront`].
    pub fn remote(&mut self) -> &mut RedisBloomFilter {
        &mut self.remote
    }
}

/// A filter in Redis, with or without a [`LocalFront`]: the family's key operations (the
/// names of [`blockbloom::Filter`]) as round trips, each a [`Result`], so that code taking
/// either (the Python binding) is written once. Dyn-compatible: `Box<dyn SharedFilter<K>>`
/// holds either.
///
/// ```no_run
/// use blockbloom_redis::{RedisBloomFilter, SharedFilter};
/// fn fresh(seen: &mut dyn SharedFilter<str>, urls: &[&str]) -> blockbloom_redis::Result<usize> {
///     let mut n = 0;
///     for u in urls {
///         n += seen.insert_if_absent(u)? as usize;
///     }
///     Ok(n)
/// }
/// let mut direct = RedisBloomFilter::open_or_create("redis://127.0.0.1/", "a", 1000, 0.01)?;
/// fresh(&mut direct, &["https://a.example/"])?;
/// let mut fronted = RedisBloomFilter::open_or_create("redis://127.0.0.1/", "b", 1000, 0.01)?
///     .with_local_front(1000, 0.001)?;
/// fresh(&mut fronted, &["https://a.example/"])?;
/// # Ok::<(), blockbloom_redis::Error>(())
/// ```
pub trait SharedFilter<K: Hash + ?Sized>: Send {
    /// `Ok(true)` iff `key` was new to every process sharing the filter.
    fn insert_if_absent(&mut self, key: &K) -> Result<bool>;
    /// Whether `key` may have been inserted by any process.
    fn contains(&mut self, key: &K) -> Result<bool>;
    /// [`insert_if_absent`](Self::insert_if_absent) for a batch, in one round trip.
    fn insert_if_absent_many(&mut self, keys: &[K]) -> Result<Vec<bool>>
    where
        K: Sized;
    /// [`contains`](Self::contains) for a batch, in one round trip.
    fn contains_many(&mut self, keys: &[K]) -> Result<Vec<bool>>
    where
        K: Sized;
    /// The filter in Redis itself (for the operations on the whole filter).
    fn shared(&mut self) -> &mut RedisBloomFilter;
    /// Calls that went to Redis, with a local front; `None` without.
    fn round_trips(&self) -> Option<u64>;
}

impl<K: Hash + ?Sized> SharedFilter<K> for RedisBloomFilter {
    fn insert_if_absent(&mut self, key: &K) -> Result<bool> {
        RedisBloomFilter::insert_if_absent(self, key)
    }
    fn contains(&mut self, key: &K) -> Result<bool> {
        RedisBloomFilter::contains(self, key)
    }
    fn insert_if_absent_many(&mut self, keys: &[K]) -> Result<Vec<bool>>
    where
        K: Sized,
    {
        RedisBloomFilter::insert_if_absent_many(self, keys)
    }
    fn contains_many(&mut self, keys: &[K]) -> Result<Vec<bool>>
    where
        K: Sized,
    {
        RedisBloomFilter::contains_many(self, keys)
    }
    fn shared(&mut self) -> &mut RedisBloomFilter {
        self
    }
    fn round_trips(&self) -> Option<u64> {
        None
    }
}

impl<K: Hash + ?Sized> SharedFilter<K> for LocalFront {
    fn insert_if_absent(&mut self, key: &K) -> Result<bool> {
        LocalFront::insert_if_absent(self, key)
    }
    fn contains(&mut self, key: &K) -> Result<bool> {
        LocalFront::contains(self, key)
    }
    fn insert_if_absent_many(&mut self, keys: &[K]) -> Result<Vec<bool>>
    where
        K: Sized,
    {
        LocalFront::insert_if_absent_many(self, keys)
    }
    fn contains_many(&mut self, keys: &[K]) -> Result<Vec<bool>>
    where
        K: Sized,
    {
        LocalFront::contains_many(self, keys)
    }
    fn shared(&mut self) -> &mut RedisBloomFilter {
        self.remote()
    }
    fn round_trips(&self) -> Option<u64> {
        Some(LocalFront::round_trips(self))
    }
}
