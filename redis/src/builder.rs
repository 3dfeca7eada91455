//! [`RedisBuilder`]: creating and opening a filter by name.

use std::time::Duration;

use blockbloom::math;

use crate::meta::{self, Meta, Stored};
use crate::server::{meta_reply, Call, Op};
use crate::{Error, RedisBloomFilter, Result, DEFAULT_SHARD_BYTES, LINE_BYTES, MAX_SHARD_BYTES};

/// Options for creating or opening a [`RedisBloomFilter`]; made by
/// [`RedisBloomFilter::builder`].
///
/// # Example
/// ```no_run
/// use blockbloom_redis::{RedisBloomFilter, DEFAULT_SHARD_BYTES, MAX_SHARD_BYTES};
/// use std::time::Duration;
///
/// // A filter spread over a cluster's nodes in 16 MiB shards, with a known hashing key.
/// let url = "redis://10.0.0.1:7000/";
/// assert!(16 << 20 < DEFAULT_SHARD_BYTES && DEFAULT_SHARD_BYTES < MAX_SHARD_BYTES);
/// let mut seen = RedisBloomFilter::builder(url, "crawl:seen")
///     .cluster()
///     .capacity(100_000_000)
///     .fpr(0.001)
///     .seed(0x5eed)
///     .shard_bytes(16 << 20)
///     .timeout(Duration::from_secs(2))
///     .open_or_create()?;
/// seen.insert("https://a.example/")?;
///
/// // The same filter through scripts instead of functions, on a server that may evict.
/// let again = RedisBloomFilter::builder(url, "crawl:seen")
///     .cluster()
///     .use_scripts()
///     .allow_eviction(true)
///     .direct_bitfield(false)
///     .open()?;
/// assert_eq!(again.capacity(), 100_000_000);
///
/// // A filter built in memory, copied to the cluster; then a scratch one made and removed.
/// let local = blockbloom::BloomFilter::with_capacity(1_000, 0.01)?;
/// local.insert("https://b.example/");
/// let mut shared = RedisBloomFilter::builder(url, "crawl:imported").cluster().export(&local)?;
/// assert!(shared.contains("https://b.example/")?);
/// RedisBloomFilter::builder(url, "test:scratch").cluster().capacity(10).create()?;
/// assert!(RedisBloomFilter::builder(url, "test:scratch").cluster().delete()?);
/// # Ok::<(), blockbloom_redis::Error>(())
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct RedisBuilder {
    pub(crate) url: String,
    pub(crate) name: String,
    pub(crate) capacity: Option<u64>,
    pub(crate) fpr: f64,
    pub(crate) seed: Option<u128>,
    /// `None`: the default for a new filter, the stored size for an existing one.
    pub(crate) shard_bytes: Option<u64>,
    pub(crate) timeout: Duration,
    pub(crate) functions: bool,
    /// Use the server module where every primary has it.
    pub(crate) module: bool,
    pub(crate) cluster: bool,
    pub(crate) direct: bool,
    pub(crate) allow_eviction: bool,
    /// An expiring filter's window (`expire_after`), if named.
    pub(crate) expire_after: Option<Duration>,
    /// Whether the filter wanted is an expiring one (`*_expiring`), and what its capacity
    /// is sized for.
    pub(crate) expiring: bool,
    pub(crate) arrival: blockbloom::Arrival,
    /// An expiring filter in the planes layout (chosen when it is created: where every
    /// primary has the module; else as found).
    pub(crate) planes: bool,
}

impl RedisBuilder {
    /// The URL is one node of a Redis Cluster: the client reads the slot map from it
    /// (`CLUSTER SLOTS`), keeps a connection per primary, sends each shard's call to the
    /// node that owns the shard's slot (one pipeline per node), and follows `MOVED` by
    /// re-reading the map.
    ///
    /// Example at [`RedisBuilder`].
    pub fn cluster(mut self) -> Self {
        self.cluster = true;
        self
    }

    /// Distinct keys the filter is sized for (required to create).
    ///
    /// Example at [`RedisBuilder`].
    pub fn capacity(mut self, n: u64) -> Self {
        self.capacity = Some(n);
        self
    }
    /// False-positive rate at capacity (default 0.01).
    ///
    /// Example at [`RedisBuilder`].
    pub fn fpr(mut self, fpr: f64) -> Self {
        self.fpr = fpr;
        self
    }
    /// The 128-bit hashing key of a new filter (default: random). An existing filter keeps
    /// its own.
    ///
    /// Example at [`RedisBuilder`].
    pub fn seed(mut self, seed: u128) -> Self {
        self.seed = Some(seed);
        self
    }
    /// Largest shard in bytes (default
    /// [`DEFAULT_SHARD_BYTES`](crate::DEFAULT_SHARD_BYTES), at most [`MAX_SHARD_BYTES`]).
    /// Smaller shards spread a filter over more cluster nodes. Within this bound the shards
    /// are sized to fill the memory Redis' allocator gives them (its size classes are up to
    /// 25% apart), so that a filter's keys take about its bits in Redis memory; a filter
    /// then often has two shards where one would fit. The creator's choice: a
    /// process that opens an existing filter without naming a size uses the stored one,
    /// and naming another is an [`Error::Conflict`].
    ///
    /// Example at [`RedisBuilder`].
    pub fn shard_bytes(mut self, bytes: u64) -> Self {
        self.shard_bytes = Some(bytes);
        self
    }
    /// Connect, read and write timeout (default 5 s).
    ///
    /// Example at [`RedisBuilder`].
    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = t;
        self
    }
    /// How an insert reaches the bits. `true` (the default): in two steps — per shard, each
    /// key's 64-byte block is read with plain `GETRANGE`s (and the shard's header after
    /// them, with `BITFIELD_RO shard GET i64 0`), then only the missing bits are set: by the
    /// `bb_or_v4` function where the server keeps its writes (AOF or replicas: one
    /// `SETRANGE` of each changed block's span reaches them), else by one plain `BITFIELD …
    /// SET u1` per bit. Each step is one pipelined round trip (the second skipped when
    /// nothing is missing), and a key is new iff one of its bits was still 0 when set,
    /// which keeps at most one winner across processes (the argument is at `two_step_set`
    /// in the source). `false`: one round trip to the `bb_set_v4` / `bb_get_v4` function
    /// (or script), which reads and sets the bits atomically on the server. All write only
    /// the bytes that change (so repeats cost no AOF bytes and no replica traffic) and
    /// check the shard's header (a lost shard is [`Error::StateLost`]).
    /// `examples/aof_throughput.rs` measures them.
    pub fn direct_bitfield(mut self, on: bool) -> Self {
        self.direct = on;
        self
    }
    /// Accept a server whose `maxmemory-policy` may evict any key (`allkeys-*`). By default
    /// `create`/`open` refuse one with [`Error::EvictionPolicy`]: an evicted shard empties
    /// part of the filter (the next call touching it answers [`Error::StateLost`], and its
    /// keys are fetched again). Safe policies: `noeviction` (writes fail with an error when
    /// memory is full) and `volatile-*` (only keys with a TTL are evicted; the filter's keys
    /// have none).
    ///
    /// Example at [`RedisBuilder`].
    pub fn allow_eviction(mut self, on: bool) -> Self {
        self.allow_eviction = on;
        self
    }
    /// Use `EVALSHA` scripts instead of Redis Functions (default: functions, falling back to
    /// scripts when the server has none).
    ///
    /// Example at [`RedisBuilder`].
    pub fn use_scripts(mut self) -> Self {
        self.functions = false;
        self
    }

    /// Whether batches may go through the server module (`blockbloom-redis-module`) where
    /// every primary has it loaded (default: yes; an expiring filter never does). Both
    /// paths keep the same shards, so handles that chose differently share one filter.
    ///
    /// Example at [`RedisBloomFilter::uses_module`].
    pub fn use_module(mut self, on: bool) -> Self {
        self.module = on;
        self
    }

    pub(crate) fn proposed(&self, seed: Option<u128>) -> Result<Meta> {
        let capacity = self
            .capacity
            .ok_or(Error::Filter(blockbloom::Error::MissingCapacity))?;
        if capacity == 0 {
            return Err(blockbloom::Error::ZeroCapacity.into());
        }
        let seed = seed.or(self.seed).unwrap_or_else(blockbloom::random_seed);
        let (blocks, k, window_ns) = match self.expire_after.filter(|_| self.expiring) {
            Some(w) => {
                let (lines, k) = self.expiring_lines(capacity, w)?;
                (lines, k, w.as_nanos() as u64)
            }
            // Exactly the local builder's sizing, so `to_local` / `export` line up block
            // for block.
            None => {
                let sizing = math::size_filter(capacity, self.fpr, None, None)?;
                (sizing.blocks, sizing.hashes, 0)
            }
        };
        let shard_bytes = self.shard_bytes.unwrap_or(DEFAULT_SHARD_BYTES);
        let head = match self.planes && window_ns != 0 {
            true => meta::PLANES_HEAD_BYTES,
            false => meta::SHARD_HEADER_BYTES,
        };
        if !(head + LINE_BYTES..=MAX_SHARD_BYTES).contains(&shard_bytes) {
            return Err(Error::InvalidShardSize(shard_bytes));
        }
        Ok(Meta {
            seed,
            blocks,
            hashes: k,
            capacity,
            fpr: self.fpr,
            shard_blocks: meta::shard_blocks_for(blocks, shard_bytes, head),
            window_ns,
            planes: self.planes && window_ns != 0,
        })
    }

    /// What was asked of a filter found `stored`: `proposed`, with the stored shard size
    /// where none was named (the creator's choice, see [`shard_bytes`](Self::shard_bytes)).
    /// A named size is met by the stored one it gives (the shards fitted to the
    /// allocator below it), or by the one it gave before shards were fitted (whole blocks
    /// below it), so that filters made by earlier versions open as before.
    fn asked(&self, proposed: &Meta, stored: &Meta) -> Meta {
        let mut asked = proposed.clone();
        let earlier = |bytes: u64| {
            (bytes / LINE_BYTES - meta::SHARD_HEADER_BYTES / LINE_BYTES).min(stored.blocks)
        };
        if self
            .shard_bytes
            .is_none_or(|b| stored.shard_blocks == earlier(b))
        {
            asked.shard_blocks = stored.shard_blocks;
        }
        asked
    }

    /// Connects, checks the eviction policy, and chooses how the two-step insert writes.
    fn connect(&self, meta: Meta) -> Result<RedisBloomFilter> {
        let mut f = RedisBloomFilter::connect(self, meta)?;
        f.compact_writes = f.server_keeps_writes()?;
        if !self.allow_eviction {
            if let Some(policy) = f.eviction_policy()? {
                // An expiring filter's generations have a TTL: `volatile-*` evicts them too.
                if policy.starts_with("allkeys")
                    || (self.expiring && policy.starts_with("volatile"))
                {
                    return Err(Error::EvictionPolicy(policy));
                }
            }
        }
        Ok(f)
    }

    /// Creates the filter; [`Error::Conflict`] (field `"existence"`) if one of that name
    /// exists already (its parameter hash, or a shard).
    ///
    /// Example at [`RedisBuilder`].
    pub fn create(self) -> Result<RedisBloomFilter> {
        let wanted = self.clone();
        wanted.of_kind(self.create_any()?)
    }

    pub(crate) fn create_any(self) -> Result<RedisBloomFilter> {
        let mut f = self.connect(self.proposed(None)?)?;
        let b = self.for_server(&mut f)?;
        let meta = b.proposed(None)?;
        f.propose(meta.clone())?;
        let exists = || Error::Conflict {
            field: "existence",
            stored: format!("a filter named {:?}", self.name),
            requested: "a new one".into(),
        };
        if f.read_meta()?.is_some() || f.shard_headers()?.iter().any(Option::is_some) {
            return Err(exists());
        }
        let stored = f.create_meta(&meta)?;
        if stored.meta != meta {
            return Err(exists());
        }
        Ok(f)
    }

    /// Opens the filter of this name with its stored parameters; [`Error::NotFound`] if
    /// there is none. A parameter hash that vanished while the shards remain (eviction) is
    /// re-created from the first shard's header.
    ///
    /// Example at [`RedisBuilder`].
    pub fn open(self) -> Result<RedisBloomFilter> {
        let wanted = self.clone();
        wanted.of_kind(self.open_any()?)
    }

    pub(crate) fn open_any(self) -> Result<RedisBloomFilter> {
        let placeholder = Meta {
            seed: 0,
            blocks: 1,
            hashes: 1,
            capacity: 1,
            fpr: 0.5,
            shard_blocks: 1,
            window_ns: 0,
            planes: false,
        };
        let mut f = self.connect(placeholder)?;
        match f.read_meta()? {
            Some(stored) => f.adopt(stored)?,
            None => match f.shard_header(0)? {
                Some(stored) => f.restore_meta(stored)?,
                None => return Err(Error::NotFound(self.name.clone())),
            },
        }
        Ok(f)
    }

    /// Deletes the filter of this name (its parameters and every shard; on a cluster, on
    /// whichever node holds each). Returns whether it existed.
    ///
    /// Example at [`RedisBuilder`].
    pub fn delete(self) -> Result<bool> {
        let mut f = match self.open_any() {
            Ok(f) => f,
            Err(Error::NotFound(_)) => return Ok(false),
            Err(e) => return Err(e),
        };
        let mut keys = f.generation_keys()?;
        keys.push(f.meta_key.clone());
        keys.extend((0..f.num_shards()).map(|i| f.shard_key(i)));
        // One DEL per key: shards may live on different cluster nodes.
        for k in keys {
            let _: i64 = f.with_key(&k, |c| redis::cmd("DEL").arg(&k).query(c))?;
        }
        Ok(true)
    }

    /// [`RedisBloomFilter::export`] with this builder's options (a cluster, a timeout, a
    /// shard size): opens the filter with `local`'s capacity, rate and seed, creating it if
    /// absent (as [`open_or_create`](Self::open_or_create)), and ORs `local`'s bits into it
    /// ([`RedisBloomFilter::union_from`]).
    ///
    /// # Errors
    /// As `open_or_create` and `union_from`: [`Error::Conflict`] if an existing filter
    /// has other parameters or another seed, or `local` another block size than 512.
    ///
    /// Example at [`RedisBuilder`].
    pub fn export(self, local: &blockbloom::BloomFilter) -> Result<RedisBloomFilter> {
        if local.block_bits() != 512 {
            // Refused before anything is created in Redis.
            return Err(Error::Conflict {
                field: "block_bits",
                stored: "512".into(),
                requested: local.block_bits().to_string(),
            });
        }
        let mut f = self
            .capacity(local.capacity())
            .fpr(local.target_fpr())
            .seed(local.seed())
            .open_or_create()?;
        f.union_from(local)?;
        Ok(f)
    }

    /// Opens the filter, creating it if absent (atomically: of several processes starting at
    /// once, one creates it and all use its parameters). An existing filter must have been
    /// created with the same capacity and rate, else [`Error::Conflict`]. A parameter hash
    /// that vanished while the shards remain is re-created from a shard's header (the
    /// filter keeps its seed); after a total loss the filter is created anew.
    ///
    /// Example at [`RedisBuilder`].
    pub fn open_or_create(self) -> Result<RedisBloomFilter> {
        let wanted = self.clone();
        wanted.of_kind(self.open_or_create_any()?)
    }

    pub(crate) fn open_or_create_any(self) -> Result<RedisBloomFilter> {
        let mut f = self.connect(self.proposed(None)?)?;
        let mut b = self.for_server(&mut f)?;
        let mut meta = b.proposed(None)?;
        f.propose(meta.clone())?;
        let stored = match f.read_meta()? {
            Some(stored) => stored,
            None => match f.shard_header(0)? {
                Some(stored) => stored,
                None => {
                    let stored = f.create_meta(&meta)?;
                    // (Another process may have created it first, of the other kind.)
                    if stored.meta.planes != b.planes {
                        b.planes = stored.meta.planes;
                        meta = b.proposed(Some(stored.meta.seed))?;
                    }
                    let asked = b.asked(&meta, &stored.meta);
                    if !stored.meta.same_shape(&asked) {
                        return Err(b.conflict(&asked, &stored.meta));
                    }
                    // (Created by another process first: `create_meta` adopted it.)
                    return Ok(f);
                }
            },
        };
        // The parameter hash as it is now: one that appeared since it was read (another
        // process creating the filter at this moment) is the identity to take, not the
        // first shard's header read before it (perhaps a losing creator's).
        let (stored, restore) = match f.read_meta()? {
            Some(now) => (now, false),
            None => (stored, true),
        };
        // An existing expiring filter is compared as the kind it is (made in generations
        // before the module was loaded, or by the module).
        if stored.meta.planes != b.planes {
            b.planes = stored.meta.planes;
            meta = b.proposed(Some(stored.meta.seed))?;
        }
        let asked = b.asked(&meta, &stored.meta);
        if !stored.meta.same_shape(&asked) {
            return Err(b.conflict(&asked, &stored.meta));
        }
        if restore {
            f.restore_meta(stored)?;
        } else {
            f.adopt(stored)?;
        }
        Ok(f)
    }
}

impl RedisBloomFilter {
    /// The server's `maxmemory-policy`, or `None` where `CONFIG GET` is refused: renamed or
    /// removed on managed services (an `ERR` reply), or not allowed to this user by an ACL
    /// (`NOPERM`).
    fn eviction_policy(&mut self) -> Result<Option<String>> {
        let key = self.meta_key.clone();
        let r = self.with_key(&key, |c| {
            redis::cmd("CONFIG")
                .arg("GET")
                .arg("maxmemory-policy")
                .query::<Vec<String>>(c)
        });
        match r {
            Ok(v) => Ok(v.get(1).cloned()),
            Err(Error::Redis(e))
                if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::ResponseError)
                    || e.code() == Some("NOPERM") =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Best effort: deletes every shard whose header holds `incarnation`.
    fn disarm(&mut self, incarnation: u64) {
        for i in 0..self.num_shards() {
            if let Ok(Some(h)) = self.shard_header(i) {
                if h.incarnation == incarnation {
                    let key = self.shard_key(i);
                    let _ = self.with_key(&key.clone(), |c| {
                        redis::cmd("DEL").arg(&key).query::<i64>(c)
                    });
                }
            }
        }
    }

    /// The parameter hash, if present (checked: [`Error::BadMeta`] if damaged or edited).
    fn read_meta(&mut self) -> Result<Option<Stored>> {
        let key = self.meta_key.clone();
        let pairs: Vec<String> =
            self.with_key(&key, |c| redis::cmd("HGETALL").arg(&key).query(c))?;
        if pairs.is_empty() {
            return Ok(None);
        }
        Meta::parse(&pairs).map(Some)
    }

    /// Creates the filter as `meta` (a fresh incarnation): arms the shards, then writes the
    /// parameter hash unless another process did first — whose filter is then adopted.
    fn create_meta(&mut self, meta: &Meta) -> Result<Stored> {
        let mine = Stored {
            meta: meta.clone(),
            incarnation: meta::new_incarnation(),
        };
        self.set_meta(mine.clone());
        if let Err(e) = self.arm_all(&[]) {
            // Shards are allocated whole: a filter that does not fit (`OOM` under
            // `maxmemory`) fails here. Nobody else uses our incarnation (the parameter hash
            // is not written yet), so the shards armed with it are removed again.
            self.disarm(mine.incarnation);
            return Err(e);
        }
        let head = meta.field_args(mine.incarnation);
        let key = self.meta_key.clone();
        let reply = self.run_one(Call {
            op: Op::Meta,
            key,
            head,
            nums: Vec::new(),
        })?;
        let (created, pairs) = meta_reply(reply)?;
        let stored = Meta::parse(&pairs)?;
        if !created {
            // Another process created it first: use its filter (our armed headers, if any,
            // are replaced).
            self.set_meta(stored.clone());
            self.arm_all(&[mine.incarnation])?;
        }
        // Creators racing this one armed shards with identities of their own before one
        // parameter hash won; each re-arms its shards to the winner's, and so does this
        // process, so that a shard still carrying a loser's header (one slower than this
        // call) is not taken for another filter's. No key is in such a shard: a creator
        // inserts only once it holds the winner's identity.
        for _ in 0..100 {
            let losers: Vec<u64> = self
                .shard_headers()?
                .into_iter()
                .flatten()
                .filter(|h| h.incarnation != stored.incarnation)
                .map(|h| h.incarnation)
                .collect();
            if losers.is_empty() {
                break;
            }
            self.arm_all(&losers)?;
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        self.verify_shards()?;
        Ok(stored)
    }

    /// Re-creates a vanished parameter hash from a shard header's identity.
    fn restore_meta(&mut self, from: Stored) -> Result<()> {
        let mut head = vec![from.incarnation.to_string().into_bytes()];
        head.extend(from.meta.field_args(from.incarnation));
        let key = self.meta_key.clone();
        let reply = self.run_one(Call {
            op: Op::Reincarnate,
            key,
            head,
            nums: Vec::new(),
        })?;
        let stored = Meta::parse(&meta_reply(reply)?.1)?;
        self.adopt(stored)
    }

    /// Takes `stored` as this handle's identity and checks the shards against it.
    fn adopt(&mut self, stored: Stored) -> Result<()> {
        self.set_meta(stored);
        self.verify_shards()
    }

    /// Every shard must carry our identity: a header with other parameters or another seed
    /// is [`Error::BadMeta`] (an edited parameter hash, or the keys of another filter); a
    /// missing header or an older incarnation is a loss, handled by re-incarnating.
    ///
    /// A header of other parameters is looked at again for up to 200 ms first: a process
    /// creating the same filter at the same moment arms shards with an identity of its own
    /// until its parameter hash loses, then re-arms them to the winner's.
    fn verify_shards(&mut self) -> Result<()> {
        let mut tries = 0;
        let headers = loop {
            let headers = self.shard_headers()?;
            let foreign = headers.iter().flatten().any(|s| s.meta != self.meta);
            if !foreign {
                break headers;
            }
            tries += 1;
            if tries == 100 {
                return Err(Error::BadMeta(
                    "a shard's header disagrees with the parameter hash (edited, or the keys \
                     of another filter)"
                        .into(),
                ));
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        };
        let lost = headers
            .iter()
            .any(|h| !matches!(h, Some(s) if s.incarnation == self.incarnation));
        if lost {
            self.reincarnate()?;
        }
        Ok(())
    }
}
