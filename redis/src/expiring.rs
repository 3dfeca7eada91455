//! [`RedisExpiringBloomFilter`]: an expiring filter shared through Redis: the server
//! module's expiring type (`planes.rs`), or generations the server itself frees.

use std::hash::Hash;
use std::time::{Duration, SystemTime};

use blockbloom::{Arrival, ExpiryWindow};

use crate::meta::{generation_key, Meta, CLOCK_BYTES, RING, SHARD_HEADER_BYTES};
use crate::server::{Call, Op};
use crate::{Error, RedisBloomFilter, RedisBuilder, Result};

/// Bytes per line in a generation: 128 slots of one bit.
pub(crate) const GENERATION_LINE_BYTES: u64 = 16;

/// An expiring filter shared by every process that opens it by name, with the API of the
/// local [`ExpiringBloomFilter`](blockbloom::ExpiringBloomFilter): a key is seen for
/// `expire_after` after the insert that added it. It is one of two kinds, chosen when it is
/// created ([`uses_module`](Self::uses_module) says which):
///
/// * **The module's expiring type**, where every primary has `blockbloom-redis-module` (and
///   [`RedisBuilder::use_module`] is on): each shard `{name.i}.bits` holds the header, a
///   clock line (window, newest epoch, sweeps, a checksum) and the local filter's planes,
///   line for line, set and tested in place by `BB.SHARD.X*`. The answers are those of an
///   `ExpiringBloomFilter` of the same seed at the same times (false positives included),
///   its memory the local filter's (2.82 bytes per key of capacity at 1% by `MEMORY USAGE`), and a key is new
///   again at most ⅓ (W + 1 s) after its window; the server's clock + 1 s bounds a call's
///   time. A server without the module is [`Error::ModuleMissing`] for it.
/// * **Generations through the Functions**, elsewhere: epochs are quarter windows
///   ([`ExpiryWindow::in_quarters`]) and slots a counting filter's, and a key is new again
///   at most 25% after its window. Each shard holds the header, the window, the newest
///   epoch any call used, and which generations exist; `{name.i}.g.<epoch>` holds, for
///   every line of the shard, one bit per slot, set for the keys inserted in that epoch. A
///   generation is created by the first insert of its epoch, at its full length, with
///   `PEXPIREAT` set to when no caller can read it any more (4 epochs plus the tolerated
///   lag after its own, plus a second): **the server frees old generations itself**; no
///   client sweeps.
///
/// Keys of one shard share a hash slot (the `{name.i}` tag), so a Redis Cluster spreads the
/// shards and each call's keys are on one node.
///
/// # Guarantees
/// As the local filter's, on the server's single-threaded calls: time going backwards
/// never forgets a key (a call works in the shard's newest epoch or its own, whichever is
/// later); each shard's check-and-set is one command or function call, so of several
/// processes inserting one new key, at most one is told it is new — across an epoch change
/// and clocks a second apart too. **Lost state is detected**: a shard (or a generation the
/// shard says was created) that is missing or of another incarnation (an eviction, a
/// restart without persistence, or with generations a server clock more than a second
/// ahead of the clients') makes the call fail with [`Error::StateLost`] and re-arms the
/// filter, as for [`RedisBloomFilter`]; a damaged clock line is refused. `create`/`open`
/// refuse `allkeys-*` and `volatile-*` eviction policies (generations have a TTL).
///
/// ```no_run
/// use blockbloom_redis::RedisExpiringBloomFilter;
/// use std::time::{Duration, SystemTime};
///
/// let day = Duration::from_secs(86_400);
/// let url = "redis://127.0.0.1/";
/// let mut seen = RedisExpiringBloomFilter::open_or_create(url, "crawl:fetched", 1_000_000, 0.01, 30 * day)?;
/// assert_eq!(seen.insert_if_absent_many(&["https://a.example/", "https://a.example/"])?, [true, false]);
/// assert!(seen.contains("https://a.example/")?);
/// // With an explicit time (replaying a log, tests): forgotten by `forgotten_after`.
/// let t = SystemTime::now();
/// seen.insert_many_at(&["https://b.example/"], t)?;
/// assert_eq!(seen.contains_many_at(&["https://b.example/"], t + 29 * day)?, [true]);
/// assert_eq!(seen.contains_many_at(&["https://b.example/"], t + seen.window().forgotten_after())?, [false]);
/// assert_eq!((seen.expire_after(), seen.capacity(), seen.target_fpr()), (30 * day, 1_000_000, 0.01));
/// let _other = RedisExpiringBloomFilter::open(url, "crawl:fetched")?; // its window from the server
/// assert!(RedisExpiringBloomFilter::delete(url, "crawl:fetched")?);
/// # Ok::<(), blockbloom_redis::Error>(())
/// ```
pub struct RedisExpiringBloomFilter {
    pub(crate) inner: RedisBloomFilter,
    pub(crate) window: ExpiryWindow,
    /// Per shard key, the generations its clock listed when last read (the two steps read
    /// those; see `expiring_two_step.rs`).
    pub(crate) created: std::collections::HashMap<String, Vec<u64>>,
}

impl std::fmt::Debug for RedisExpiringBloomFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisExpiringBloomFilter")
            .field("filter", &self.inner)
            .field("expire_after", &self.window.expire_after())
            .finish()
    }
}

impl RedisBuilder {
    /// The window of an expiring filter ([`RedisExpiringBloomFilter`]): a key is seen for
    /// at least this long after its insert. Needed to create one; when opening, an existing
    /// filter with another window is refused ([`Error::Conflict`], field `"expire_after"`).
    ///
    /// Example at [`create_expiring`](Self::create_expiring).
    pub fn expire_after(mut self, window: Duration) -> Self {
        self.expire_after = Some(window);
        self
    }

    /// What an expiring filter's capacity is sized for, as the local filter's
    /// [`ExpiringBuilder::arrival`](blockbloom::ExpiringBuilder::arrival) (default
    /// [`Arrival::Steady`]). An existing filter sized for the other is refused
    /// ([`Error::Conflict`], field `"arrival"`).
    ///
    /// ```no_run
    /// use blockbloom::Arrival;
    /// use blockbloom_redis::RedisExpiringBloomFilter;
    /// use std::time::Duration;
    /// let f = RedisExpiringBloomFilter::builder("redis://127.0.0.1/", "news:seen")
    ///     .capacity(100_000)
    ///     .expire_after(Duration::from_secs(86_400))
    ///     .arrival(Arrival::WorstBurst)
    ///     .create_expiring()?;
    /// assert_eq!(f.arrival(), Arrival::WorstBurst);
    /// # Ok::<(), blockbloom_redis::Error>(())
    /// ```
    pub fn arrival(mut self, arrival: Arrival) -> Self {
        self.arrival = arrival;
        self
    }

    /// Creates an expiring filter (capacity: distinct keys inserted per window).
    ///
    /// ```no_run
    /// use blockbloom_redis::RedisExpiringBloomFilter;
    /// use std::time::Duration;
    /// let b = || RedisExpiringBloomFilter::builder("redis://127.0.0.1/", "news:seen");
    /// let mut f = b().capacity(100_000).expire_after(Duration::from_secs(86_400)).create_expiring()?;
    /// f.insert("https://example.com/today")?;
    /// let g = b().open_expiring()?;
    /// let h = b().capacity(100_000).expire_after(Duration::from_secs(86_400)).open_or_create_expiring()?;
    /// assert_eq!((g.expire_after(), h.num_lines()), (f.expire_after(), f.num_lines()));
    /// # Ok::<(), blockbloom_redis::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`create`](Self::create); [`Error::Filter`] without a window.
    pub fn create_expiring(self) -> Result<RedisExpiringBloomFilter> {
        RedisExpiringBloomFilter::wrap(self.expiring()?.create()?)
    }

    /// Opens an existing expiring filter (its window from the server). Example at
    /// [`create_expiring`](Self::create_expiring).
    pub fn open_expiring(mut self) -> Result<RedisExpiringBloomFilter> {
        self.expiring = true;
        RedisExpiringBloomFilter::wrap(self.open()?)
    }

    /// Opens the expiring filter, creating it if absent (as
    /// [`open_or_create`](Self::open_or_create)). Example at
    /// [`create_expiring`](Self::create_expiring).
    pub fn open_or_create_expiring(self) -> Result<RedisExpiringBloomFilter> {
        RedisExpiringBloomFilter::wrap(self.expiring()?.open_or_create()?)
    }

    fn expiring(mut self) -> Result<Self> {
        let w = self
            .expire_after
            .ok_or(Error::Filter(blockbloom::Error::MissingWindow))?;
        ExpiryWindow::in_quarters(w)?;
        self.expiring = true;
        Ok(self)
    }
}

impl RedisBloomFilter {
    /// Every generation key an expiring filter's shards name (none for a plain filter).
    pub(crate) fn generation_keys(&mut self) -> Result<Vec<String>> {
        let mut keys = Vec::new();
        for i in 0..self.num_shards() {
            let shard = self.shard_key(i);
            let epochs = self.created_generations(i)?;
            keys.extend(epochs.into_iter().map(|x| generation_key(&shard, x)));
        }
        Ok(keys)
    }

    /// The epochs of the generations shard `i`'s ring says were created (none for a plain
    /// filter).
    pub(crate) fn created_generations(&mut self, i: u64) -> Result<Vec<u64>> {
        if self.meta.window_ns == 0 || self.meta.planes {
            return Ok(Vec::new());
        }
        let shard = self.shard_key(i);
        let ring: Vec<u8> = self.with_key(&shard, |c| {
            redis::cmd("GETRANGE")
                .arg(&shard)
                .arg(CLOCK_BYTES - RING * 20)
                .arg(CLOCK_BYTES - 1)
                .query(c)
        })?;
        Ok(ring
            .chunks(20)
            .filter_map(|e| std::str::from_utf8(e).ok()?.parse::<u64>().ok())
            .collect())
    }
}

impl RedisExpiringBloomFilter {
    fn wrap(inner: RedisBloomFilter) -> Result<Self> {
        let w = Duration::from_nanos(inner.meta.window_ns);
        let window = match inner.meta.planes {
            true => ExpiryWindow::new(w)?,
            false => ExpiryWindow::in_quarters(w)?,
        };
        Ok(RedisExpiringBloomFilter {
            inner,
            window,
            created: Default::default(),
        })
    }

    /// Options for `url` and filter `name` (then [`RedisBuilder::create_expiring`] and its
    /// siblings).
    ///
    /// Example at [`RedisBuilder::create_expiring`].
    pub fn builder(url: &str, name: &str) -> RedisBuilder {
        RedisBloomFilter::builder(url, name)
    }

    /// Opens the expiring filter, creating it if absent; an existing one with another
    /// capacity, rate or window is [`Error::Conflict`].
    ///
    /// Example at [`RedisExpiringBloomFilter`].
    pub fn open_or_create(
        url: &str,
        name: &str,
        capacity: u64,
        fpr: f64,
        expire_after: Duration,
    ) -> Result<Self> {
        Self::builder(url, name)
            .capacity(capacity)
            .fpr(fpr)
            .expire_after(expire_after)
            .open_or_create_expiring()
    }

    /// Opens an existing expiring filter.
    ///
    /// Example at [`RedisExpiringBloomFilter`].
    pub fn open(url: &str, name: &str) -> Result<Self> {
        Self::builder(url, name).open_expiring()
    }

    /// Deletes the filter (its parameters, shards and generations) from one server.
    ///
    /// Example at [`RedisExpiringBloomFilter`].
    pub fn delete(url: &str, name: &str) -> Result<bool> {
        RedisBloomFilter::builder(url, name).delete()
    }

    /// A second handle with its own connection (for another thread).
    ///
    /// Example at [`RedisBloomFilter::try_clone`].
    pub fn try_clone(&self) -> Result<Self> {
        Ok(RedisExpiringBloomFilter {
            inner: self.inner.try_clone()?,
            window: self.window,
            created: Default::default(),
        })
    }

    /// One server call per shard the batch touches (pipelined): the answers of `op` for
    /// `keys` at time `t`.
    fn batch<K: Hash>(&mut self, op: Op, keys: &[K], t: SystemTime) -> Result<Vec<bool>> {
        let mut out = vec![false; keys.len()];
        if keys.is_empty() {
            return Ok(out);
        }
        if self.inner.meta.planes {
            return self.planes_batch(op, keys, t);
        }
        let f = &self.inner;
        let k = f.meta.hashes as u64;
        let per = f.meta.shard_blocks;
        let mut by_shard: Vec<(u64, Vec<usize>, Vec<u64>)> = Vec::new();
        for (idx, key) in keys.iter().enumerate() {
            let p = f.layout.probe_slots(key);
            let (shard, line) = (p.line() as u64 / per, p.line() as u64 % per);
            let entry = match by_shard.iter_mut().find(|e| e.0 == shard) {
                Some(e) => e,
                None => {
                    by_shard.push((shard, Vec::new(), vec![k]));
                    by_shard.last_mut().expect("just pushed")
                }
            };
            entry.1.push(idx);
            entry.2.push(line);
            let start = entry.2.len();
            let mut m = p.slots();
            while m != 0 {
                entry.2.push(m.trailing_zeros() as u64);
                m &= m - 1;
            }
            let first = entry.2[start];
            entry.2.resize(start + k as usize, first);
        }
        let head = |shard: u64| {
            let lines = per.min(f.meta.blocks - shard * per);
            [
                f.incarnation.to_be_bytes().to_vec(),
                self.window.epoch_of(t).to_string().into_bytes(),
                self.window.tolerated_lag().to_string().into_bytes(),
                (SHARD_HEADER_BYTES + lines * GENERATION_LINE_BYTES)
                    .to_string()
                    .into_bytes(),
                self.window.epoch().as_nanos().to_string().into_bytes(),
            ]
            .to_vec()
        };
        let (indices, calls): (Vec<Vec<usize>>, Vec<Call>) = by_shard
            .into_iter()
            .map(|(shard, idx, nums)| {
                let call = Call {
                    op,
                    key: f.shard_key(shard),
                    head: head(shard),
                    nums,
                };
                (idx, call)
            })
            .unzip();
        if self.inner.direct && op != Op::XIns {
            let own = self.window.epoch_of(t);
            return self.two_steps(op, own, keys.len(), &indices, &calls);
        }
        self.inner.call_and_answer(&indices, &calls, &mut out)?;
        Ok(out)
    }

    /// `insert_if_absent` for a batch at `t`: `out[i]` is `true` iff `keys[i]` was not
    /// seen within the window (fetch it); a key repeated in the batch is new at most once.
    ///
    /// # Errors
    /// Any [`Error`]; then the batch may or may not have been applied (see
    /// [`RedisBloomFilter`]'s faults).
    ///
    /// Example at [`RedisExpiringBloomFilter`].
    pub fn insert_if_absent_many_at<K: Hash>(
        &mut self,
        keys: &[K],
        t: SystemTime,
    ) -> Result<Vec<bool>> {
        self.batch(Op::XSet, keys, t)
    }

    /// [`insert_if_absent_many_at`](Self::insert_if_absent_many_at) now.
    ///
    /// Example at [`RedisExpiringBloomFilter`].
    pub fn insert_if_absent_many<K: Hash>(&mut self, keys: &[K]) -> Result<Vec<bool>> {
        self.batch(Op::XSet, keys, SystemTime::now())
    }

    /// Whether each key was inserted within the window before `t`.
    ///
    /// Example at [`RedisExpiringBloomFilter`].
    pub fn contains_many_at<K: Hash>(&mut self, keys: &[K], t: SystemTime) -> Result<Vec<bool>> {
        self.batch(Op::XGet, keys, t)
    }

    /// [`contains_many_at`](Self::contains_many_at) now.
    ///
    /// Example at [`RedisExpiringBloomFilter`].
    pub fn contains_many<K: Hash>(&mut self, keys: &[K]) -> Result<Vec<bool>> {
        self.batch(Op::XGet, keys, SystemTime::now())
    }

    /// Inserts the keys at `t`, renewing the window of those present.
    ///
    /// Example at [`RedisExpiringBloomFilter`].
    pub fn insert_many_at<K: Hash>(&mut self, keys: &[K], t: SystemTime) -> Result<()> {
        self.batch(Op::XIns, keys, t).map(drop)
    }

    /// [`insert_many_at`](Self::insert_many_at) now.
    ///
    /// Example at [`RedisExpiringBloomFilter`].
    pub fn insert_many<K: Hash>(&mut self, keys: &[K]) -> Result<()> {
        self.batch(Op::XIns, keys, SystemTime::now()).map(drop)
    }

    /// Inserts `key` now; `Ok(true)` if it was not seen within the window.
    ///
    /// Example at [`RedisBuilder::create_expiring`].
    pub fn insert_if_absent<K: Hash + ?Sized>(&mut self, key: &K) -> Result<bool> {
        Ok(self.batch(Op::XSet, &[key], SystemTime::now())?[0])
    }

    /// Inserts `key` now.
    ///
    /// Example at [`RedisBuilder::create_expiring`].
    pub fn insert<K: Hash + ?Sized>(&mut self, key: &K) -> Result<()> {
        self.batch(Op::XIns, &[key], SystemTime::now()).map(drop)
    }

    /// Whether `key` was inserted within the window.
    ///
    /// Example at [`RedisExpiringBloomFilter`].
    pub fn contains<K: Hash + ?Sized>(&mut self, key: &K) -> Result<bool> {
        Ok(self.batch(Op::XGet, &[key], SystemTime::now())?[0])
    }

    /// The epochs of the window.
    ///
    /// Example at [`RedisExpiringBloomFilter`].
    pub fn window(&self) -> &ExpiryWindow {
        &self.window
    }

    /// The window.
    ///
    /// Example at [`RedisExpiringBloomFilter`].
    pub fn expire_after(&self) -> Duration {
        self.window.expire_after()
    }

    /// The filter's name. Example at [`RedisBloomFilter`].
    pub fn name(&self) -> &str {
        self.inner.name()
    }

    /// Distinct keys per window it was sized for. Example at [`RedisExpiringBloomFilter`].
    pub fn capacity(&self) -> u64 {
        self.inner.capacity()
    }

    /// The rate it was sized for. Example at [`RedisExpiringBloomFilter`].
    pub fn target_fpr(&self) -> f64 {
        self.inner.target_fpr()
    }

    /// What its capacity was sized for: steady arrival's size, or the worst burst's.
    /// Example at [`RedisBuilder::arrival`].
    pub fn arrival(&self) -> Arrival {
        let m = &self.inner.meta;
        let steady = crate::expiring_sizing::expiring_lines(
            m.planes,
            m.capacity,
            m.fpr,
            Arrival::Steady,
            self.expire_after(),
        );
        match steady {
            Ok((lines, _)) if lines == self.num_lines() => Arrival::Steady,
            _ => Arrival::WorstBurst,
        }
    }

    /// Whether the filter is the server module's expiring type (the local filter's planes,
    /// kept in place by `BB.SHARD.X*`): created so where every primary had the module; else
    /// it keeps generations through the Functions.
    ///
    /// ```no_run
    /// use blockbloom_redis::RedisExpiringBloomFilter;
    /// use std::time::Duration;
    /// let b = || RedisExpiringBloomFilter::builder("redis://127.0.0.1/", "news:seen");
    /// let f = b().capacity(1000).expire_after(Duration::from_secs(3600)).open_or_create_expiring()?;
    /// println!("kept by the module: {}", f.uses_module());
    /// # Ok::<(), blockbloom_redis::Error>(())
    /// ```
    pub fn uses_module(&self) -> bool {
        self.inner.meta.planes
    }

    /// Lines of the filter (64 bytes each in the planes layout; of 128 slots in each
    /// generation otherwise). Example at [`RedisBuilder::create_expiring`].
    pub fn num_lines(&self) -> u64 {
        self.inner.num_lines()
    }

    /// Slots per key. Example at [`RedisBloomFilter`].
    pub fn num_hashes(&self) -> u32 {
        self.inner.num_hashes()
    }

    /// Number of shards. Example at [`RedisBloomFilter`].
    pub fn num_shards(&self) -> u64 {
        self.inner.num_shards()
    }

    /// The current incarnation (see [`Error::StateLost`]). Example at [`RedisBloomFilter`].
    pub fn incarnation(&self) -> u64 {
        self.inner.incarnation()
    }

    /// [`RedisBloomFilter::wait_for_replicas`].
    ///
    /// Example at [`RedisBloomFilter`].
    pub fn wait_for_replicas(&mut self, replicas: u64, timeout: Duration) -> Result<u64> {
        self.inner.wait_for_replicas(replicas, timeout)
    }

    /// The Redis keys of the generations that exist now (for operators and tests: `TTL`,
    /// `MEMORY USAGE`).
    ///
    /// Example at [`RedisExpiringBloomFilter`].
    pub fn generation_keys(&mut self) -> Result<Vec<String>> {
        let keys = self.inner.generation_keys()?;
        let mut out = Vec::new();
        for k in keys {
            let k2 = k.clone();
            let n: i64 = self
                .inner
                .with_key(&k, |c| redis::cmd("EXISTS").arg(&k2).query(c))?;
            if n == 1 {
                out.push(k);
            }
        }
        Ok(out)
    }
}

impl RedisBuilder {
    /// [`Error::Conflict`] naming the first parameter in which `stored` differs from
    /// `asked`; for an expiring filter that differs only in its size, the arrival it was
    /// sized for (field `"arrival"`).
    pub(crate) fn conflict(&self, asked: &Meta, stored: &Meta) -> Error {
        let other = match self.arrival {
            blockbloom::Arrival::Steady => blockbloom::Arrival::WorstBurst,
            blockbloom::Arrival::WorstBurst => blockbloom::Arrival::Steady,
        };
        let mut theirs = self.clone();
        theirs.arrival = other;
        let same_but_size = |m: &Meta| {
            let mut m = m.clone();
            m.shard_blocks = stored.shard_blocks;
            m.blocks == stored.blocks && m.same_shape(stored)
        };
        match theirs.proposed(Some(stored.seed)) {
            Ok(m) if self.expiring && !same_but_size(asked) && same_but_size(&m) => {
                Error::Conflict {
                    field: "arrival",
                    stored: format!("{other:?}"),
                    requested: format!("{:?}", self.arrival),
                }
            }
            _ => asked.conflict(stored),
        }
    }

    /// `f`, if it is of the kind asked for (plain, or expiring with the window named), else
    /// [`Error::Conflict`] (field `"expire_after"`).
    pub(crate) fn of_kind(&self, f: RedisBloomFilter) -> Result<RedisBloomFilter> {
        let want = match (self.expiring, self.expire_after) {
            (false, _) => Some(0),
            (true, Some(w)) => Some(w.as_nanos() as u64),
            (true, None) => None,
        };
        let stored = f.meta.window_ns;
        let ok = match want {
            Some(w) => w == stored,
            None => stored != 0,
        };
        if ok {
            return Ok(f);
        }
        let text = |ns: u64| match ns {
            0 => "none (a filter that never forgets)".to_string(),
            ns => format!("{:?}", Duration::from_nanos(ns)),
        };
        Err(Error::Conflict {
            field: "expire_after",
            stored: text(stored),
            requested: want.map_or("an expiring filter".into(), text),
        })
    }
}
