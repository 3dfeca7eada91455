//! One [blockbloom](https://docs.rs/blockbloom) Bloom filter shared by a fleet of processes
//! through Redis, with the same semantics, block layout and hashing as the local
//! `BloomFilter`, and `insert_if_absent` atomic *across processes*: of several crawler
//! processes that discover the same new URL at the same time, at most one is told to fetch it.
//!
//! ```no_run
//! use blockbloom_redis::RedisBloomFilter;
//! let mut seen = RedisBloomFilter::open_or_create("redis://127.0.0.1/", "crawl:seen", 100_000_000, 0.01)?;
//! let links = ["https://a.example/", "https://b.example/", "https://a.example/"];
//! let fresh = seen.insert_if_absent_many(&links)?;   // one round trip for the batch
//! assert_eq!(fresh, [true, true, false]);
//! # Ok::<(), blockbloom_redis::Error>(())
//! ```
//!
//! # How it works
//! * **Bits**: the filter's blocks, byte for byte as in a blockbloom snapshot (eight
//!   little-endian `u64` words per 64-byte block), in Redis strings ("shards", at most 512 MB
//!   each by Redis' limit; 64 MiB by default). Shard `i` of filter `name` is the key
//!   `{name.i}.bits`: the braces are a cluster hash tag per shard, so a Redis Cluster spreads
//!   the shards over its nodes.
//! * **Parameters** (number of blocks and hashes, capacity, rate, shard size, and the
//!   128-bit hashing key) live in the hash `{name}.meta`, written once, atomically, by whichever
//!   process creates the filter. Every process that opens the filter by name uses them; opening
//!   with different capacity or rate is an [`Error::Conflict`], never silent corruption.
//! * **Operations**: the client hashes each key (locally, exactly as `BloomFilter` does),
//!   groups a batch by shard, and sends one server-side call per shard — all of them in one
//!   pipelined round trip. By default the call is one `BITFIELD shard SET u1 <offset> 1 …`
//!   command setting all bits of the batch's keys in that shard and returning their old
//!   values: a key is new iff one of its old bits was 0. Redis runs a command atomically, so
//!   each key's check-and-set is atomic: two processes can never both get `true` for one new
//!   key (and a key repeated in a batch is new at most once). With
//!   [`direct_bitfield(false)`](RedisBuilder::direct_bitfield) the call is a Redis Function
//!   (`FUNCTION LOAD`, library `blockbloom_v1`) running the same `BITFIELD` and answering
//!   per key; where functions are unavailable (Redis < 7, or ACLs) the same Lua runs through
//!   `EVALSHA`. Creating the parameter hash always goes through the function (or script), so
//!   that exactly one process creates it.
//!
//! # Faults
//! Every failure is an [`Error`]; no call ever answers `true`/`false` for a key whose state
//! it does not know. Connection refused, timeouts and a connection dropped mid-batch (e.g. the
//! server restarting) give [`Error::Redis`]; the next call reconnects. After such an error the
//! batch **may or may not have been applied**: to never lose a URL, treat its keys as new
//! (fetch them: at-least-once), or ask [`contains_many`](RedisBloomFilter::contains_many)
//! once the server is back. A function or script missing after a restart (`Function not
//! found`, `NOSCRIPT`) is reloaded and the call retried once — safe, since the call did not
//! run. A key of the wrong type where a shard should be is [`Error::WrongType`].
//!
//! # Persistence
//! The filter is only as durable as Redis. Without persistence (`save ""`, `appendonly no`)
//! a restart empties it: every URL looks new again (re-crawled, not lost), and the parameter
//! hash is gone, so [`open`](RedisBloomFilter::open) fails until it is re-created. For a crawl
//! frontier, run Redis with `appendonly yes` and `appendfsync everysec` (at most about a
//! second of inserts lost in a crash: those URLs are fetched again) or `appendfsync always`
//! (nothing acknowledged is lost, at a throughput cost). Functions are persisted with the
//! data; scripts are not (they are reloaded automatically).
#![warn(missing_docs)]

use std::fmt;
use std::hash::Hash;
use std::time::Duration;

use blockbloom::{math, BloomFilter, Layout};
use redis::{ConnectionLike, ErrorKind, RedisError, Value};

mod net;
use net::Net;

/// The Lua source of the server side (see `src/blockbloom.lua`).
const LUA: &str = include_str!("blockbloom.lua");
/// Name of the function library; bump the suffix when the Lua changes incompatibly.
const LIBRARY: &str = "blockbloom_v1";
/// Version of the parameter hash's format.
const META_FORMAT: u32 = 1;
/// Bytes per block.
const BLOCK: u64 = 64;
/// Default largest shard (64 MiB, far below Redis' 512 MB string limit).
pub const DEFAULT_SHARD_BYTES: u64 = 64 << 20;
/// Redis' largest string.
pub const MAX_SHARD_BYTES: u64 = 512 << 20;

/// Errors of the Redis-backed filter.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// Talking to Redis failed: connection refused, timeout, connection dropped, or an error
    /// reply. After one of these the state of the keys of the failed call is unknown.
    Redis(RedisError),
    /// No filter of this name exists in Redis.
    NotFound(String),
    /// A filter of this name exists with other parameters.
    Conflict {
        /// The parameter that differs.
        field: &'static str,
        /// Its value in Redis.
        stored: String,
        /// The value asked for.
        requested: String,
    },
    /// The parameter hash in Redis is not one this version can use (damaged, or written by
    /// an incompatible version).
    BadMeta(String),
    /// A shard key holds another type of value than a string.
    WrongType(String),
    /// Invalid parameters, or an error of the local filter (import/export).
    Filter(blockbloom::Error),
    /// The server answered something this client did not expect.
    Protocol(String),
    /// A shard size outside `64..=MAX_SHARD_BYTES` bytes was asked for.
    InvalidShardSize(u64),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Redis(e) => write!(f, "redis: {e}"),
            Error::NotFound(n) => write!(f, "no blockbloom filter named {n:?} in Redis"),
            Error::Conflict {
                field,
                stored,
                requested,
            } => write!(
                f,
                "the filter in Redis has {field} = {stored}, but {requested} was requested"
            ),
            Error::BadMeta(why) => write!(f, "unusable filter parameters in Redis: {why}"),
            Error::WrongType(k) => write!(f, "Redis key {k:?} is not a string (wrong type)"),
            Error::Filter(e) => write!(f, "{e}"),
            Error::Protocol(why) => write!(f, "unexpected reply from Redis: {why}"),
            Error::InvalidShardSize(b) => write!(
                f,
                "shard size must be between 64 bytes and {MAX_SHARD_BYTES} (Redis' string limit), got {b}"
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Redis(e) => Some(e),
            Error::Filter(e) => Some(e),
            _ => None,
        }
    }
}

impl From<blockbloom::Error> for Error {
    fn from(e: blockbloom::Error) -> Self {
        Error::Filter(e)
    }
}

impl From<RedisError> for Error {
    fn from(e: RedisError) -> Self {
        if e.code() == Some("WRONGTYPE") {
            return Error::WrongType(e.detail().unwrap_or_default().to_string());
        }
        Error::Redis(e)
    }
}

/// One server-side call: which (0 = set, 1 = get, 2 = meta), key, arguments.
type Call = (usize, String, Vec<u64>);

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// The filter's parameters, as stored in `{name}.meta`.
#[derive(Clone, Debug, PartialEq)]
struct Meta {
    seed: u128,
    blocks: u64,
    hashes: u32,
    capacity: u64,
    fpr: f64,
    shard_blocks: u64,
}

impl Meta {
    fn fields(&self) -> Vec<(String, String)> {
        vec![
            ("format".into(), META_FORMAT.to_string()),
            ("hash_id".into(), blockbloom::HASH_ALGORITHM_ID.to_string()),
            ("seed".into(), self.seed.to_string()),
            ("blocks".into(), self.blocks.to_string()),
            ("hashes".into(), self.hashes.to_string()),
            ("capacity".into(), self.capacity.to_string()),
            ("fpr".into(), self.fpr.to_string()),
            ("shard_blocks".into(), self.shard_blocks.to_string()),
        ]
    }

    fn parse(pairs: &[String]) -> Result<Meta> {
        let get = |name: &str| -> Result<&str> {
            pairs
                .chunks_exact(2)
                .find(|p| p[0] == name)
                .map(|p| p[1].as_str())
                .ok_or_else(|| Error::BadMeta(format!("field {name} missing")))
        };
        fn num<T: std::str::FromStr>(name: &str, v: &str) -> Result<T> {
            v.parse()
                .map_err(|_| Error::BadMeta(format!("field {name} = {v:?} is not a number")))
        }
        let format: u32 = num("format", get("format")?)?;
        if format != META_FORMAT {
            return Err(Error::BadMeta(format!(
                "format {format}, this version reads {META_FORMAT}"
            )));
        }
        let hash_id: u32 = num("hash_id", get("hash_id")?)?;
        if hash_id != blockbloom::HASH_ALGORITHM_ID {
            return Err(Error::BadMeta(format!(
                "hash algorithm {hash_id}, this version implements {}",
                blockbloom::HASH_ALGORITHM_ID
            )));
        }
        let m = Meta {
            seed: num("seed", get("seed")?)?,
            blocks: num("blocks", get("blocks")?)?,
            hashes: num("hashes", get("hashes")?)?,
            capacity: num("capacity", get("capacity")?)?,
            fpr: num("fpr", get("fpr")?)?,
            shard_blocks: num("shard_blocks", get("shard_blocks")?)?,
        };
        if m.blocks == 0
            || m.shard_blocks == 0
            || m.shard_blocks > MAX_SHARD_BYTES / BLOCK
            || m.hashes == 0
            || m.hashes > blockbloom::MAX_HASHES
            || m.capacity == 0
            || !(m.fpr > 0.0 && m.fpr < 1.0)
        {
            return Err(Error::BadMeta("a parameter is out of range".into()));
        }
        Ok(m)
    }
}

/// Options for creating or opening a [`RedisBloomFilter`]; made by
/// [`RedisBloomFilter::builder`].
#[derive(Clone, Debug)]
#[must_use]
pub struct RedisBuilder {
    url: String,
    name: String,
    capacity: Option<u64>,
    fpr: f64,
    seed: Option<u128>,
    shard_bytes: u64,
    timeout: Duration,
    functions: bool,
    cluster: bool,
    direct: bool,
}

impl RedisBuilder {
    /// The URL is one node of a Redis Cluster: the client reads the slot map from it
    /// (`CLUSTER SLOTS`), keeps a connection per primary, sends each shard's call to the
    /// node that owns the shard's slot (one pipeline per node), and follows `MOVED` by
    /// re-reading the map.
    pub fn cluster(mut self) -> Self {
        self.cluster = true;
        self
    }

    /// Distinct keys the filter is sized for (required to create).
    pub fn capacity(mut self, n: u64) -> Self {
        self.capacity = Some(n);
        self
    }
    /// False-positive rate at capacity (default 0.01).
    pub fn fpr(mut self, fpr: f64) -> Self {
        self.fpr = fpr;
        self
    }
    /// The 128-bit hashing key of a new filter (default: random). An existing filter keeps
    /// its own.
    pub fn seed(mut self, seed: u128) -> Self {
        self.seed = Some(seed);
        self
    }
    /// Largest shard in bytes, rounded down to whole blocks (default
    /// [`DEFAULT_SHARD_BYTES`], at most [`MAX_SHARD_BYTES`]). Smaller shards spread a
    /// filter over more cluster nodes.
    pub fn shard_bytes(mut self, bytes: u64) -> Self {
        self.shard_bytes = bytes;
        self
    }
    /// Connect, read and write timeout (default 5 s).
    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = t;
        self
    }
    /// How a batch reaches the bits. `true` (the default): each shard's part of the batch is
    /// one plain `BITFIELD … SET u1 <offset> 1 …` command (`BITFIELD_RO … GET` for lookups),
    /// and the client reads each key's verdict from the old bits it returns. `false`: the
    /// batch goes to the `bb_set_v1` / `bb_get_v1` Lua function (or script), which runs the
    /// same `BITFIELD` and returns one answer per key. Both are one atomic server-side step
    /// per shard; the plain command measured 1.2–1.7× faster in the benchmark report (no Lua
    /// table work per key), the function sends k times fewer integers back.
    pub fn direct_bitfield(mut self, on: bool) -> Self {
        self.direct = on;
        self
    }
    /// Use `EVALSHA` scripts instead of Redis Functions (default: functions, falling back to
    /// scripts when the server has none).
    pub fn use_scripts(mut self) -> Self {
        self.functions = false;
        self
    }

    fn proposed(&self, seed: Option<u128>) -> Result<Meta> {
        let capacity = self
            .capacity
            .ok_or(Error::Filter(blockbloom::Error::MissingCapacity))?;
        if capacity == 0 {
            return Err(blockbloom::Error::ZeroCapacity.into());
        }
        let (c, k) = math::optimal_params(self.fpr)?;
        // Exactly the local builder's sizing, so `to_local` / `export` line up block for block.
        let blocks = ((c * capacity as f64 / 512.0).ceil() as u64).max(1);
        if !(64..=MAX_SHARD_BYTES).contains(&self.shard_bytes) {
            return Err(Error::InvalidShardSize(self.shard_bytes));
        }
        Ok(Meta {
            seed: seed.or(self.seed).unwrap_or_else(random_seed),
            blocks,
            hashes: k,
            capacity,
            fpr: self.fpr,
            shard_blocks: (self.shard_bytes / BLOCK).min(blocks),
        })
    }

    /// Creates the filter; [`Error::Conflict`] (field `"existence"`) if one of that name
    /// exists already.
    pub fn create(self) -> Result<RedisBloomFilter> {
        let meta = self.proposed(None)?;
        let mut f = RedisBloomFilter::connect(&self, meta.clone())?;
        let (created, stored) = f.put_meta(&meta)?;
        if !created {
            return Err(Error::Conflict {
                field: "existence",
                stored: format!("a filter named {:?}", self.name),
                requested: "a new one".into(),
            });
        }
        f.set_meta(stored);
        Ok(f)
    }

    /// Opens the filter of this name with its stored parameters; [`Error::NotFound`] if
    /// there is none.
    pub fn open(self) -> Result<RedisBloomFilter> {
        let placeholder = Meta {
            seed: 0,
            blocks: 1,
            hashes: 1,
            capacity: 1,
            fpr: 0.5,
            shard_blocks: 1,
        };
        let mut f = RedisBloomFilter::connect(&self, placeholder)?;
        let key = f.meta_key.clone();
        let pairs: Vec<String> = f.with_key(&key, |c| redis::cmd("HGETALL").arg(&key).query(c))?;
        if pairs.is_empty() {
            return Err(Error::NotFound(self.name.clone()));
        }
        f.set_meta(Meta::parse(&pairs)?);
        Ok(f)
    }

    /// Opens the filter, creating it if absent (atomically: of several processes starting at
    /// once, one creates it and all use its parameters). An existing filter must have been
    /// created with the same capacity and rate, else [`Error::Conflict`].
    pub fn open_or_create(self) -> Result<RedisBloomFilter> {
        let meta = self.proposed(None)?;
        let mut f = RedisBloomFilter::connect(&self, meta.clone())?;
        let (_, stored) = f.put_meta(&meta)?;
        for (field, a, b) in [
            (
                "capacity",
                stored.capacity.to_string(),
                meta.capacity.to_string(),
            ),
            ("fpr", stored.fpr.to_string(), meta.fpr.to_string()),
            ("blocks", stored.blocks.to_string(), meta.blocks.to_string()),
            ("hashes", stored.hashes.to_string(), meta.hashes.to_string()),
        ] {
            if a != b {
                return Err(Error::Conflict {
                    field,
                    stored: a,
                    requested: b,
                });
            }
        }
        f.set_meta(stored);
        Ok(f)
    }
}

fn random_seed() -> u128 {
    use std::collections::hash_map::RandomState;
    use std::hash::BuildHasher;
    let s = RandomState::new();
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    (s.hash_one((t, 1u8)) as u128) << 64 | s.hash_one((t, std::process::id())) as u128
}

#[derive(Clone, Debug)]
enum Mode {
    Functions,
    Scripts {
        set: String,
        get: String,
        meta: String,
    },
}

/// A Bloom filter stored in Redis, shared by every process that opens it by name. See the
/// crate docs for the layout, the atomicity argument and the fault model.
///
/// Methods take `&mut self` (one Redis connection per handle); give each thread its own
/// handle ([`try_clone`](Self::try_clone)).
pub struct RedisBloomFilter {
    net: Net,
    mode: Mode,
    /// Send plain `BITFIELD` commands instead of calling the function/script.
    direct: bool,
    want_functions: bool,
    name: String,
    meta_key: String,
    meta: Meta,
    layout: Layout,
}

impl fmt::Debug for RedisBloomFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisBloomFilter")
            .field("name", &self.name)
            .field("blocks", &self.meta.blocks)
            .field("hashes", &self.meta.hashes)
            .field("capacity", &self.meta.capacity)
            .field("fpr", &self.meta.fpr)
            .field("shards", &self.num_shards())
            .finish_non_exhaustive()
    }
}

impl RedisBloomFilter {
    /// Options for `url` (e.g. `redis://127.0.0.1:6379/`) and filter `name`.
    pub fn builder(url: &str, name: &str) -> RedisBuilder {
        RedisBuilder {
            url: url.into(),
            name: name.into(),
            capacity: None,
            fpr: 0.01,
            seed: None,
            shard_bytes: DEFAULT_SHARD_BYTES,
            timeout: Duration::from_secs(5),
            functions: true,
            cluster: false,
            direct: true,
        }
    }

    /// Creates a filter for `capacity` keys at rate `fpr` (error if `name` exists).
    pub fn create(url: &str, name: &str, capacity: u64, fpr: f64) -> Result<Self> {
        Self::builder(url, name)
            .capacity(capacity)
            .fpr(fpr)
            .create()
    }

    /// Opens an existing filter.
    pub fn open(url: &str, name: &str) -> Result<Self> {
        Self::builder(url, name).open()
    }

    /// Opens the filter, creating it if absent (see [`RedisBuilder::open_or_create`]).
    pub fn open_or_create(url: &str, name: &str, capacity: u64, fpr: f64) -> Result<Self> {
        Self::builder(url, name)
            .capacity(capacity)
            .fpr(fpr)
            .open_or_create()
    }

    /// Deletes the filter `name` (its parameters and every shard). Returns whether it existed.
    pub fn delete(url: &str, name: &str) -> Result<bool> {
        let mut f = match Self::open(url, name) {
            Ok(f) => f,
            Err(Error::NotFound(_)) => return Ok(false),
            Err(e) => return Err(e),
        };
        let mut keys = vec![f.meta_key.clone()];
        keys.extend((0..f.num_shards()).map(|i| f.shard_key(i)));
        // One DEL per key: shards may live on different cluster nodes.
        for k in keys {
            let _: i64 = f.with_key(&k, |c| redis::cmd("DEL").arg(&k).query(c))?;
        }
        Ok(true)
    }

    fn connect(b: &RedisBuilder, meta: Meta) -> Result<Self> {
        let net = Net::new(&b.url, b.cluster, b.timeout)?;
        let layout = Layout::new(meta.seed, meta.blocks, meta.hashes)?;
        let mut f = RedisBloomFilter {
            net,
            direct: b.direct,
            mode: Mode::Functions,
            want_functions: b.functions,
            name: b.name.clone(),
            meta_key: format!("{{{}}}.meta", b.name),
            meta,
            layout,
        };
        f.load_server_code()?;
        Ok(f)
    }

    fn set_meta(&mut self, meta: Meta) {
        self.layout = Layout::new(meta.seed, meta.blocks, meta.hashes).expect("validated");
        self.meta = meta;
    }

    /// A second handle on the same filter with its own connection (for another thread).
    pub fn try_clone(&self) -> Result<Self> {
        let mut f = RedisBloomFilter {
            net: self.net.fresh(),
            direct: self.direct,
            mode: self.mode.clone(),
            want_functions: self.want_functions,
            name: self.name.clone(),
            meta_key: self.meta_key.clone(),
            meta: self.meta.clone(),
            layout: self.layout.clone(),
        };
        let key = f.meta_key.clone();
        f.with_key(&key, |c| redis::cmd("PING").query::<String>(c))?;
        Ok(f)
    }

    /// Runs `f` on the connection to the node holding `key` (reconnecting after an I/O
    /// error, following a cluster's `MOVED` once).
    fn with_key<T>(
        &mut self,
        key: &str,
        f: impl FnMut(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T> {
        self.net.on_key(key, f).map_err(Error::from)
    }

    /// Loads the function library (or, failing that, the scripts).
    fn load_server_code(&mut self) -> Result<()> {
        if self.want_functions {
            let code = format!(
                "#!lua name={LIBRARY}\n{LUA}\n\
                 redis.register_function('bb_set_v1', bb_set)\n\
                 redis.register_function{{function_name='bb_get_v1', callback=bb_get, flags={{'no-writes'}}}}\n\
                 redis.register_function('bb_meta_v1', bb_meta)\n"
            );
            let mut ok = true;
            for node in self.net.primaries()? {
                let r = self.net.on_node(&node, |c| {
                    redis::cmd("FUNCTION")
                        .arg("LOAD")
                        .arg(&code)
                        .query::<String>(c)
                });
                match r {
                    Ok(_) => {}
                    Err(e) if e.detail().is_some_and(|d| d.contains("already exists")) => {}
                    // Unknown command (Redis < 7) or not allowed: fall back to scripts.
                    Err(e) if e.kind() == ErrorKind::ResponseError => {
                        ok = false;
                        break;
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            if ok {
                self.mode = Mode::Functions;
                return Ok(());
            }
        }
        let mut shas = Vec::new();
        for body in ["bb_set", "bb_get", "bb_meta"] {
            let script = format!("{LUA}\nreturn {body}(KEYS, ARGV)\n");
            let mut sha = String::new();
            for node in self.net.primaries()? {
                sha = self.net.on_node(&node, |c| {
                    redis::cmd("SCRIPT").arg("LOAD").arg(&script).query(c)
                })?;
            }
            shas.push(sha);
        }
        let [set, get, meta]: [String; 3] = shas.try_into().expect("three scripts");
        self.mode = Mode::Scripts { set, get, meta };
        Ok(())
    }

    /// Adds one server-side call (`which` = set/get/meta) on `key` to `pipe`.
    fn add_call(&self, pipe: &mut redis::Pipeline, which: usize, key: &str, args: &[u64]) {
        if self.direct && which < 2 {
            // One BITFIELD command: all SETs (GETs) of the batch's keys in this shard, run
            // atomically, answering each bit's old value.
            let c = pipe.cmd(["BITFIELD", "BITFIELD_RO"][which]).arg(key);
            for &o in &args[1..] {
                if which == 0 {
                    c.arg("SET").arg("u1").arg(o).arg(1);
                } else {
                    c.arg("GET").arg("u1").arg(o);
                }
            }
            return;
        }
        let cmd = match &self.mode {
            Mode::Functions => {
                let name = ["bb_set_v1", "bb_get_v1", "bb_meta_v1"][which];
                pipe.cmd("FCALL").arg(name)
            }
            Mode::Scripts { set, get, meta } => {
                let sha = [set, get, meta][which];
                pipe.cmd("EVALSHA").arg(sha.as_str())
            }
        };
        cmd.arg(1).arg(key).arg(args);
    }

    /// Sends `calls` (server-side call, key, arguments): one pipeline per node, so one round
    /// trip on a single server. A call the server did not run — our code was lost (restart
    /// without persistence, `FUNCTION FLUSH`) or, in a cluster, its slot `MOVED` — is retried
    /// once after reloading the code / re-reading the slot map; every other error fails the
    /// batch. Calls that ran are never sent twice (their answers would change).
    fn run_calls(&mut self, calls: &[Call]) -> Result<Vec<Vec<i64>>> {
        let mut out: Vec<Option<Vec<i64>>> = vec![None; calls.len()];
        let mut pending: Vec<usize> = (0..calls.len()).collect();
        for attempt in 0..2 {
            let mut by_node: Vec<(String, Vec<usize>)> = Vec::new();
            for &i in &pending {
                let node = self.net.node_of(&calls[i].1)?;
                match by_node.iter_mut().find(|g| g.0 == node) {
                    Some(g) => g.1.push(i),
                    None => by_node.push((node, vec![i])),
                }
            }
            let (mut retry, mut reload) = (Vec::new(), false);
            for (node, idx) in by_node {
                let mut pipe = redis::pipe();
                for &i in &idx {
                    let (which, key, args) = &calls[i];
                    self.add_call(&mut pipe, *which, key, args);
                }
                let packed = pipe.get_packed_pipeline();
                let replies = self
                    .net
                    .on_node(&node, |c| c.req_packed_commands(&packed, 0, idx.len()))?;
                if replies.len() != idx.len() {
                    return Err(Error::Protocol(format!(
                        "{} replies for {} calls",
                        replies.len(),
                        idx.len()
                    )));
                }
                for (i, v) in idx.into_iter().zip(replies) {
                    match v {
                        Value::ServerError(e) => {
                            let e = RedisError::from(e);
                            if attempt == 0 && (code_missing(&e) || net::moved(&e)) {
                                reload |= code_missing(&e);
                                retry.push(i);
                            } else {
                                return Err(e.into());
                            }
                        }
                        v => out[i] = Some(redis::from_redis_value(&v)?),
                    }
                }
            }
            if retry.is_empty() {
                break;
            }
            if reload {
                self.load_server_code()?;
            }
            pending = retry;
        }
        out.into_iter()
            .map(|o| o.ok_or_else(|| Error::Protocol("a call was not answered".into())))
            .collect()
    }

    /// Writes the parameter hash unless it exists; returns (created, stored parameters).
    fn put_meta(&mut self, meta: &Meta) -> Result<(bool, Meta)> {
        let args: Vec<String> = meta
            .fields()
            .into_iter()
            .flat_map(|(a, b)| [a, b])
            .collect();
        for attempt in 0..2 {
            let mut cmd = match &self.mode {
                Mode::Functions => {
                    let mut c = redis::cmd("FCALL");
                    c.arg("bb_meta_v1");
                    c
                }
                Mode::Scripts { meta, .. } => {
                    let mut c = redis::cmd("EVALSHA");
                    c.arg(meta.as_str());
                    c
                }
            };
            cmd.arg(1).arg(&self.meta_key).arg(&args);
            let key = self.meta_key.clone();
            match self.with_key(&key, |c| cmd.query::<Vec<redis::Value>>(c)) {
                Err(Error::Redis(e)) if attempt == 0 && code_missing(&e) => {
                    self.load_server_code()?
                }
                Err(e) => return Err(e),
                Ok(v) => {
                    let created = matches!(v.first(), Some(redis::Value::Int(1)));
                    let pairs: Vec<String> = v[1..]
                        .iter()
                        .map(redis::from_redis_value)
                        .collect::<redis::RedisResult<_>>()?;
                    return Ok((created, Meta::parse(&pairs)?));
                }
            }
        }
        unreachable!("returns on the second attempt")
    }

    /// Redis key of shard `i`.
    fn shard_key(&self, i: u64) -> String {
        format!("{{{}.{i}}}.bits", self.name)
    }

    /// Number of shards (Redis string keys) holding the bits.
    pub fn num_shards(&self) -> u64 {
        self.meta.blocks.div_ceil(self.meta.shard_blocks)
    }

    /// Groups `keys` by shard: per shard, the key indices and the call arguments (`k`, then
    /// `k` bit offsets per key in Redis' bit numbering).
    fn plan<K: Hash>(&self, keys: &[K]) -> Vec<(u64, Vec<usize>, Vec<u64>)> {
        let k = self.meta.hashes as usize;
        let mut by_shard: Vec<(u64, Vec<usize>, Vec<u64>)> = Vec::new();
        for (idx, key) in keys.iter().enumerate() {
            let p = self.layout.probe(key);
            let block = p.block() as u64;
            let shard = block / self.meta.shard_blocks;
            let base = (block % self.meta.shard_blocks) * 512;
            let entry = match by_shard.iter_mut().find(|e| e.0 == shard) {
                Some(e) => e,
                None => {
                    by_shard.push((shard, Vec::new(), vec![k as u64]));
                    by_shard.last_mut().expect("just pushed")
                }
            };
            entry.1.push(idx);
            let start = entry.2.len();
            for (w, mut word) in p.mask().into_iter().enumerate() {
                while word != 0 {
                    let i = word.trailing_zeros() as u64;
                    word &= word - 1;
                    // Local bit i of word w sits in byte 8w + i/8 of the block, bit i%8 from
                    // the least significant end; Redis numbers bits from the most significant.
                    entry.2.push(base + 64 * w as u64 + 8 * (i / 8) + 7 - i % 8);
                }
            }
            let first = entry.2[start];
            entry.2.resize(start + k, first); // pad: a repeated SET changes nothing
        }
        by_shard
    }

    fn batch<K: Hash>(&mut self, which: usize, keys: &[K]) -> Result<Vec<bool>> {
        let mut out = vec![false; keys.len()];
        if keys.is_empty() {
            return Ok(out);
        }
        let (indices, calls): (Vec<Vec<usize>>, Vec<Call>) = self
            .plan(keys)
            .into_iter()
            .map(|(shard, idx, args)| (idx, (which, self.shard_key(shard), args)))
            .unzip();
        // `run_calls` answers every call or fails.
        let replies = self.run_calls(&calls)?;
        for (idx, mut reply) in indices.iter().zip(replies) {
            if self.direct {
                // Old bits, k per key: new iff one was 0; present iff none was.
                let k = self.meta.hashes as usize;
                if reply.len() != idx.len() * k {
                    return Err(Error::Protocol(format!(
                        "{} bits for {} keys",
                        reply.len(),
                        idx.len()
                    )));
                }
                reply = reply
                    .chunks_exact(k)
                    .map(|bits| {
                        let zero = bits.contains(&0);
                        (if which == 0 { zero } else { !zero }) as i64
                    })
                    .collect();
            }
            if reply.len() != idx.len() {
                return Err(Error::Protocol(format!(
                    "{} answers for {} keys",
                    reply.len(),
                    idx.len()
                )));
            }
            for (&i, r) in idx.iter().zip(reply) {
                out[i] = r == 1;
            }
        }
        Ok(out)
    }

    /// [`insert_if_absent`](Self::insert_if_absent) for a batch, in one round trip (one
    /// server-side call per shard the batch touches, pipelined). `out[i]` is `true` iff
    /// `keys[i]` was new; a key repeated in the batch is new at most once. Each key's
    /// check-and-set is atomic on the server.
    ///
    /// # Errors
    /// Any [`Error`]; then the batch may or may not have been applied (see the crate docs).
    pub fn insert_if_absent_many<K: Hash>(&mut self, keys: &[K]) -> Result<Vec<bool>> {
        self.batch(0, keys)
    }

    /// [`contains`](Self::contains) for a batch, in one round trip.
    pub fn contains_many<K: Hash>(&mut self, keys: &[K]) -> Result<Vec<bool>> {
        self.batch(1, keys)
    }

    /// Inserts `key`; `Ok(true)` if it was absent. One round trip: batch keys with
    /// [`insert_if_absent_many`](Self::insert_if_absent_many) for throughput.
    pub fn insert_if_absent<K: Hash + ?Sized>(&mut self, key: &K) -> Result<bool> {
        Ok(self.batch(0, &[key])?[0])
    }

    /// Inserts `key`.
    pub fn insert<K: Hash + ?Sized>(&mut self, key: &K) -> Result<()> {
        self.batch(0, &[key]).map(drop)
    }

    /// Whether `key` may have been inserted.
    pub fn contains<K: Hash + ?Sized>(&mut self, key: &K) -> Result<bool> {
        Ok(self.batch(1, &[key])?[0])
    }

    /// Copies the filter into a local [`BloomFilter`] with the same parameters and seed, so
    /// that it answers exactly as this one did at the time of the copy (shard by shard, each
    /// read atomically).
    pub fn to_local(&mut self) -> Result<BloomFilter> {
        let local = self.local_twin()?;
        for s in 0..self.num_shards() {
            let key = self.shard_key(s);
            let bytes: Vec<u8> = self.with_key(&key, |c| redis::cmd("GET").arg(&key).query(c))?;
            let first = (s * self.meta.shard_blocks) as usize;
            let len = self.shard_len(s) as usize * BLOCK as usize;
            if bytes.len() > len {
                return Err(Error::Protocol(format!(
                    "shard {key} is {} bytes, more than its {len}",
                    bytes.len()
                )));
            }
            // A shard whose last bits were never set is shorter: the rest is zeros.
            let mut padded = bytes;
            padded.resize(len, 0);
            local.or_block_bytes(first, &padded)?;
        }
        Ok(local)
    }

    /// Blocks in shard `s`.
    fn shard_len(&self, s: u64) -> u64 {
        (self.meta.blocks - s * self.meta.shard_blocks).min(self.meta.shard_blocks)
    }

    /// An empty local filter with this filter's parameters.
    fn local_twin(&self) -> Result<BloomFilter> {
        let f = BloomFilter::builder()
            .capacity(self.meta.capacity)
            .fpr(self.meta.fpr)
            .seed(self.meta.seed)
            .build()?;
        if f.num_blocks() as u64 == self.meta.blocks && f.num_hashes() == self.meta.hashes {
            return Ok(f);
        }
        Ok(BloomFilter::builder()
            .capacity(self.meta.capacity)
            .bits(self.meta.blocks * 512)
            .hashes(self.meta.hashes)
            .seed(self.meta.seed)
            .build()?)
    }

    /// ORs a local filter with the same parameters and seed into this one (each shard one
    /// atomic `BITOP OR`): the union of node-local filters into the shared one.
    ///
    /// # Errors
    /// [`Error::Conflict`] if the local filter's blocks, hashes or seed differ.
    pub fn union_from(&mut self, local: &BloomFilter) -> Result<()> {
        for (field, a, b) in [
            ("blocks", self.meta.blocks, local.num_blocks() as u64),
            ("hashes", self.meta.hashes as u64, local.num_hashes() as u64),
        ] {
            if a != b {
                return Err(Error::Conflict {
                    field,
                    stored: a.to_string(),
                    requested: b.to_string(),
                });
            }
        }
        if local.seed() != self.meta.seed {
            return Err(Error::Conflict {
                field: "seed",
                stored: "(secret)".into(),
                requested: "another seed".into(),
            });
        }
        let mut bytes = Vec::new();
        for s in 0..self.num_shards() {
            bytes.clear();
            let first = (s * self.meta.shard_blocks) as usize;
            local.block_bytes(first, self.shard_len(s) as usize, &mut bytes)?;
            if bytes.iter().all(|&b| b == 0) {
                continue;
            }
            let key = self.shard_key(s);
            let tmp = format!("{{{}.{s}}}.union.{}", self.name, random_seed());
            let k2 = key.clone();
            let r = self.with_key(&k2, |c| {
                redis::pipe()
                    .cmd("SET")
                    .arg(&tmp)
                    .arg(&bytes[..])
                    .arg("PX")
                    .arg(600_000)
                    .ignore()
                    .cmd("BITOP")
                    .arg("OR")
                    .arg(&key)
                    .arg(&key)
                    .arg(&tmp)
                    .ignore()
                    .cmd("DEL")
                    .arg(&tmp)
                    .ignore()
                    .query::<()>(c)
            });
            r?;
        }
        Ok(())
    }

    /// Creates filter `name` in Redis from a local filter (its parameters and seed) and
    /// copies its bits, or ORs them into an existing filter with the same parameters.
    pub fn export(url: &str, name: &str, local: &BloomFilter) -> Result<Self> {
        let mut f = Self::builder(url, name)
            .capacity(local.capacity())
            .fpr(local.target_fpr())
            .seed(local.seed())
            .open_or_create()?;
        f.union_from(local)?;
        Ok(f)
    }

    /// Bytes the shards occupy in Redis (the sum of their string lengths; Redis adds a few
    /// dozen bytes per key).
    pub fn memory_bytes(&mut self) -> Result<u64> {
        let mut total = 0;
        for s in 0..self.num_shards() {
            let key = self.shard_key(s);
            let n: u64 = self.with_key(&key, |c| redis::cmd("STRLEN").arg(&key).query(c))?;
            total += n;
        }
        Ok(total)
    }

    /// The filter's name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Number of 512-bit blocks.
    pub fn num_blocks(&self) -> u64 {
        self.meta.blocks
    }
    /// Bits per key.
    pub fn num_hashes(&self) -> u32 {
        self.meta.hashes
    }
    /// Keys the filter was sized for.
    pub fn capacity(&self) -> u64 {
        self.meta.capacity
    }
    /// Rate the filter was sized for.
    pub fn target_fpr(&self) -> f64 {
        self.meta.fpr
    }
    /// Whether calls go through Redis Functions (`true`) or `EVALSHA` scripts.
    pub fn uses_functions(&self) -> bool {
        matches!(self.mode, Mode::Functions)
    }
}

/// The server lost our code (restart without persistence, `FUNCTION FLUSH`, `SCRIPT FLUSH`):
/// the call did not run.
fn code_missing(e: &RedisError) -> bool {
    e.kind() == ErrorKind::NoScriptError
        || e.detail().is_some_and(|d| d.contains("Function not found"))
        || e.to_string().contains("Function not found")
}
