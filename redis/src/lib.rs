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
//! URLs are the `redis` crate's: `redis://[[user]:password@]host[:port][/db]`,
//! `redis+unix:///path?db=N&pass=…`, and, with the `tls` feature (on by default),
//! `rediss://…` — TLS through rustls, the server's certificate verified against the
//! system's trusted certificates or those in the file named by `SSL_CERT_FILE`. On a
//! cluster every node is reached with the URL's scheme and credentials.
//!
//! # How it works
//! * **Bits**: the filter's blocks, byte for byte as in a blockbloom snapshot (eight
//!   little-endian `u64` words per 64-byte block), in Redis strings ("shards", at most 512 MB
//!   each by Redis' limit; 64 MiB by default). Shard `i` of filter `name` is the key
//!   `{name.i}.bits`: the braces are a cluster hash tag per shard, so a Redis Cluster spreads
//!   the shards over its nodes. Each shard starts with a 64-byte **header** — the filter's
//!   parameters, its 128-bit hashing key and its *incarnation* (a random number chosen when
//!   the filter is created) — and its blocks follow.
//! * **Parameters** (number of blocks and hashes, capacity, rate, shard size, the hashing
//!   key, a checksum, and the incarnation) live in the hash `{name}.meta`, written once,
//!   atomically, by whichever process creates the filter. Every process that opens the filter
//!   by name uses them; opening with different capacity or rate is an [`Error::Conflict`];
//!   an edited or damaged hash, or one that disagrees with the shards' headers, is
//!   [`Error::BadMeta`]. If the hash vanished but the shards did not (eviction, a `DEL`), it
//!   is restored from a shard's header: a filter's hashing key never changes while its bits
//!   exist.
//! * **Operations**: the client hashes each key (locally, exactly as `BloomFilter` does) and
//!   groups a batch by shard. By default the client reads each key's 64-byte block
//!   (`GETRANGE`, then the shard header's incarnation after them), then, per shard with keys
//!   whose bits were found missing, sets only those bits (each step one pipelined round trip
//!   for all shards; the set also checks the header, atomically with its bits): a key
//!   already present writes nothing, so a crawl's repeats cost no AOF bytes and no replica
//!   traffic. Where the server keeps its writes (an append-only file, or a replica attached,
//!   read from `INFO` when the handle connects) the set is a call of the `bb_or` function,
//!   which ORs the bits into their blocks and writes back each block's changed bytes with
//!   one `SETRANGE` — all that reaches the AOF and the replicas (functions replicate by
//!   their effects): about 90 bytes per new key. Elsewhere it is one plain `BITFIELD … SET
//!   u1` per missing bit (about 39 AOF bytes each, but 5–8× less server time than the Lua).
//!   Either way a key is new iff one of its bits was still 0 when the set ran; since a set
//!   covers every bit of the key that its read found missing and runs atomically, after
//!   the first set that flips a bit of a key all its bits are 1, so two processes can never
//!   both get `true` for one new key (and a key repeated in a batch is new at most once) —
//!   also when handles that chose differently share a filter. With
//!   [`direct_bitfield(false)`](RedisBuilder::direct_bitfield) the read and the set run
//!   together inside the `bb_set` function, in one round trip. The functions are a Redis
//!   Functions library (`FUNCTION LOAD`, `blockbloom_v4`), or `EVALSHA` scripts where
//!   functions are unavailable. Creating the parameter hash always goes through them, so
//!   that exactly one process creates it.
//! * **Memory**: a filter's shards are created at their full length, each in one allocation,
//!   when the filter is created (a string grown piecemeal is over-allocated at every
//!   growth), and their sizes are chosen to fill the size classes of Redis' allocator; so
//!   `MEMORY USAGE` of a filter's keys is its bits within about 1.5% from the first insert on
//!   (`tests/memory.rs` measures it on a server and a cluster), and a filter that does not
//!   fit under `maxmemory` is refused at create (`OOM`), leaving nothing behind.
//!
//! # Faults
//! Every failure is an [`Error`]; no call ever answers `true`/`false` for a key whose state
//! it does not know. Connection refused, timeouts and a connection dropped mid-batch (e.g. the
//! server restarting) give [`Error::Redis`]; the next call reconnects. A connection the
//! server closed between calls (a restart, `CLIENT KILL`, its idle `timeout`) is not an
//! error: the next call meets it in a step that changes nothing — the read of the default
//! insert, or a `contains` — and sends that step again on a new connection (only such
//! steps are ever sent twice; with `direct_bitfield(false)` an insert's first command
//! writes, so its first call after a restart still fails). After such an error the
//! batch **may or may not have been applied**: to never lose a URL, treat its keys as new
//! (fetch them: at-least-once), or ask [`contains_many`](RedisBloomFilter::contains_many)
//! once the server is back. A function or script missing after a restart (`Function not
//! found`, `NOSCRIPT`) is reloaded and the call retried once — safe, since the call did not
//! run. A key of the wrong type where a shard should be is [`Error::WrongType`].
//!
//! A process forked after a filter connected does not use the inherited connection (its
//! socket is the parent's too, so each would read the other's replies): the child's first
//! call opens its own.
//!
//! **Lost state is detected, not guessed.** Every call checks, in the same atomic command as
//! its bits, that the shard's header holds the incarnation the client knows. A shard that
//! vanished (a restart without persistence, an eviction, `FLUSHALL`) has no header: the call
//! answers [`Error::StateLost`], and the client re-arms the filter under a new incarnation
//! (re-creating the parameter hash with its own parameters and key if it is gone too).
//! Every other client then finds the new incarnation on its next call and gets
//! `StateLost` once as well, adopting it — so after a loss all clients work in one filter
//! again, never in two with different keys. What to do on `StateLost`: send the batch
//! again (it was not applied), and know that URLs seen before the loss can be answered
//! "new" again (re-fetched; at most the filter's previous count of distinct keys).
//! `create`/`open` refuse a server whose `maxmemory-policy` is `allkeys-*`
//! ([`Error::EvictionPolicy`]; opt in with [`RedisBuilder::allow_eviction`]); `noeviction`
//! and `volatile-*` never evict the filter's keys (they have no TTL).
//!
//! # Persistence and replicas
//! The filter is only as durable as Redis. For a crawl frontier, run Redis with
//! `appendonly yes` and `appendfsync everysec` (at most about a second of inserts lost in a
//! crash: those URLs are fetched again) or `appendfsync always` (nothing acknowledged is
//! lost, at a throughput cost). Only bytes that change reach the AOF and the replicas.
//! [`wait_for_replicas`](RedisBloomFilter::wait_for_replicas) (`WAIT`) makes the inserts so
//! far survive a failover to a replica that acknowledged them. Functions are persisted and
//! replicated with the data; scripts are not (they are reloaded automatically).
#![warn(missing_docs)]

// One file per part: `error` (Error, Result), `meta` (the parameter hash), `builder`
// (create/open), `server` (the Lua library and the pipelined calls), `net` (connections,
// cluster routing), `local` (to and from a local BloomFilter), `front` (an in-process filter
// in front); this file: the filter handle and its batched operations.
mod batch;
mod builder;
mod error;
mod estimates;
mod expiring;
mod expiring_sizing;
mod expiring_two_step;
mod front;
mod local;
mod meta;
mod native;
mod net;
mod planes;
mod server;
#[doc(hidden)]
pub mod shard_format;

use std::fmt;
use std::hash::Hash;
use std::time::Duration;

use blockbloom::Layout;

pub use builder::RedisBuilder;
pub use error::{Error, Result};
pub use expiring::RedisExpiringBloomFilter;
pub use front::{LocalFront, SharedFilter};
use meta::{Meta, Stored, SHARD_HEADER_BYTES};
use net::Net;
/// The `redis` crate (1.x) whose [`RedisError`](redis::RedisError) [`Error::Redis`]
/// carries: its error kinds and codes to match on, without a `redis` dependency of your
/// own pinned to the same release.
///
/// ```no_run
/// use blockbloom_redis::redis::{ErrorKind, ServerErrorKind};
/// use blockbloom_redis::{Error, RedisBloomFilter};
///
/// match RedisBloomFilter::open_or_create("redis://127.0.0.1/", "crawl:seen", 1_000_000, 0.01) {
///     Err(Error::Redis(e)) if e.kind() == ErrorKind::Server(ServerErrorKind::ReadOnly) => {
///         eprintln!("a replica: connect to the primary")
///     }
///     Err(Error::Redis(e)) if e.is_connection_refusal() => eprintln!("no server: {e}"),
///     other => println!("{:?}", other.map(|f| f.name().to_owned())),
/// }
/// ```
pub use redis;
use server::{meta_reply, Call, Mode, Op};

/// Bytes per block.
const LINE_BYTES: u64 = 64;

/// Default largest shard (64 MiB, far below Redis' 512 MB string limit). Example at
/// [`RedisBuilder`].
pub const DEFAULT_SHARD_BYTES: u64 = 64 << 20;
/// Redis' largest string. Example at [`RedisBuilder`].
pub const MAX_SHARD_BYTES: u64 = 512 << 20;

/// A Bloom filter stored in Redis, shared by every process that opens it by name. See the
/// crate docs for the layout, the atomicity argument and the fault model.
///
/// Methods take `&mut self` (one Redis connection per handle); give each thread its own
/// handle ([`try_clone`](Self::try_clone)).
///
/// # Example
/// ```no_run
/// use blockbloom_redis::RedisBloomFilter;
/// use std::time::Duration;
///
/// let url = "redis://127.0.0.1/";
/// let mut seen = RedisBloomFilter::open_or_create(url, "crawl:seen", 1_000_000, 0.01)?;
/// assert!(seen.insert_if_absent("https://a.example/")?); // new: fetch it
/// assert!(!seen.insert_if_absent("https://a.example/")?); // seen: skip it
/// seen.insert("https://b.example/")?;
/// assert!(seen.contains("https://b.example/")?);
/// assert_eq!(seen.insert_if_absent_many(&["https://b.example/", "https://c.example/"])?, [false, true]);
/// assert_eq!(seen.contains_many(&["https://c.example/", "https://d.example/"])?, [true, false]);
///
/// // Its parameters, read back from the server by every process that opens it.
/// let other = RedisBloomFilter::open(url, "crawl:seen")?;
/// assert_eq!((other.name(), other.capacity(), other.target_fpr()), ("crawl:seen", 1_000_000, 0.01));
/// assert_eq!((other.num_lines(), other.num_hashes()), (seen.num_lines(), seen.num_hashes()));
/// assert_eq!(other.incarnation(), seen.incarnation());
/// println!("{} shard(s), functions: {}", seen.num_shards(), seen.uses_functions());
///
/// // One handle per thread; a write made durable on one replica before going on.
/// let mut for_a_thread = seen.try_clone()?;
/// for_a_thread.insert("https://e.example/")?;
/// let acked = for_a_thread.wait_for_replicas(1, Duration::from_millis(100))?;
/// println!("{acked} replica(s) have every write so far");
///
/// // A fresh one for a test, removed afterwards.
/// let mut scratch = RedisBloomFilter::create(url, "test:scratch", 1_000, 0.01)?;
/// scratch.insert("x")?;
/// assert!(RedisBloomFilter::delete(url, "test:scratch")?);
/// # Ok::<(), blockbloom_redis::Error>(())
/// ```
pub struct RedisBloomFilter {
    pub(crate) net: Net,
    pub(crate) mode: Mode,
    /// Send plain `BITFIELD` commands (read, then set the missing bits) instead of calling
    /// the function/script.
    pub(crate) direct: bool,
    /// The two-step insert sets bits with `bb_or` (one `SETRANGE` per changed block in the
    /// AOF and the replication stream) rather than a plain `BITFIELD SET` per bit (faster on
    /// the server, about 39 AOF bytes per bit): chosen where the server keeps its writes.
    pub(crate) compact_writes: bool,
    pub(crate) want_functions: bool,
    /// Batches go through the server module (`BB.SHARD.*`): every primary has it and the
    /// handle did not opt out.
    pub(crate) native: bool,
    pub(crate) name: String,
    pub(crate) meta_key: String,
    pub(crate) meta: Meta,
    /// The incarnation this handle works in (see `meta.rs`).
    pub(crate) incarnation: u64,
    pub(crate) layout: Layout,
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
    /// Options for `url` (e.g. `redis://127.0.0.1:6379/`) and filter `name`. Example at
    /// [`RedisBuilder`].
    pub fn builder(url: &str, name: &str) -> RedisBuilder {
        RedisBuilder {
            url: url.into(),
            name: name.into(),
            capacity: None,
            fpr: 0.01,
            seed: None,
            shard_bytes: None,
            timeout: Duration::from_secs(5),
            functions: true,
            module: true,
            cluster: false,
            direct: true,
            allow_eviction: false,
            expire_after: None,
            expiring: false,
            arrival: blockbloom::Arrival::Steady,
            planes: false,
        }
    }

    /// Creates a filter for `capacity` keys at rate `fpr` (error if `name` exists).
    ///
    /// Example at [`RedisBloomFilter`].
    pub fn create(url: &str, name: &str, capacity: u64, fpr: f64) -> Result<Self> {
        Self::builder(url, name)
            .capacity(capacity)
            .fpr(fpr)
            .create()
    }

    /// Opens an existing filter.
    ///
    /// Example at [`RedisBloomFilter`].
    pub fn open(url: &str, name: &str) -> Result<Self> {
        Self::builder(url, name).open()
    }

    /// Opens the filter, creating it if absent (see [`RedisBuilder::open_or_create`]).
    ///
    /// Example at [`RedisBloomFilter`].
    pub fn open_or_create(url: &str, name: &str, capacity: u64, fpr: f64) -> Result<Self> {
        Self::builder(url, name)
            .capacity(capacity)
            .fpr(fpr)
            .open_or_create()
    }

    /// Deletes the filter `name` (its parameters and every shard) from one server. Returns
    /// whether it existed. On a cluster: `RedisBloomFilter::builder(url, name).cluster().delete()`.
    ///
    /// Example at [`RedisBloomFilter`].
    pub fn delete(url: &str, name: &str) -> Result<bool> {
        Self::builder(url, name).delete()
    }

    pub(crate) fn connect(b: &RedisBuilder, meta: Meta) -> Result<Self> {
        let net = Net::new(&b.url, b.cluster, b.timeout)?;
        let layout = Layout::new(meta.seed, meta.blocks, meta.hashes)?;
        let mut f = RedisBloomFilter {
            net,
            direct: b.direct,
            compact_writes: true,
            mode: Mode::Functions,
            want_functions: b.functions,
            native: false,
            name: b.name.clone(),
            meta_key: format!("{{{}}}.meta", b.name),
            meta,
            incarnation: 0,
            layout,
        };
        f.load_server_code()?;
        f.native = b.module && f.meta.window_ns == 0 && f.module_available()?;
        Ok(f)
    }

    /// Adopts an identity and incarnation.
    pub(crate) fn set_meta(&mut self, stored: Stored) {
        let meta = stored.meta;
        self.layout = Layout::new(meta.seed, meta.blocks, meta.hashes).expect("validated");
        self.meta = meta;
        self.incarnation = stored.incarnation;
    }

    /// A second handle on the same filter with its own connection (for another thread).
    ///
    /// Example at [`RedisBloomFilter`].
    pub fn try_clone(&self) -> Result<Self> {
        let mut f = RedisBloomFilter {
            net: self.net.fresh(),
            direct: self.direct,
            compact_writes: self.compact_writes,
            mode: self.mode.clone(),
            want_functions: self.want_functions,
            native: self.native,
            name: self.name.clone(),
            meta_key: self.meta_key.clone(),
            meta: self.meta.clone(),
            incarnation: self.incarnation,
            layout: self.layout.clone(),
        };
        let key = f.meta_key.clone();
        f.with_key(&key, |c| redis::cmd("PING").query::<String>(c))?;
        Ok(f)
    }

    /// Redis key of shard `i`.
    pub(crate) fn shard_key(&self, i: u64) -> String {
        shard_format::shard_key(&self.name, i)
    }

    /// Number of shards (Redis string keys) holding the bits.
    ///
    /// Example at [`RedisBloomFilter`].
    pub fn num_shards(&self) -> u64 {
        self.meta.shards()
    }

    /// A shard did not have our incarnation's header: the state was lost (the shard, or
    /// the whole database), or another client found a loss first and re-incarnated the
    /// filter. Re-incarnates (or adopts the new incarnation), re-arms every shard, and
    /// returns the error to report: [`Error::StateLost`], or what went wrong on the way.
    fn recover(&mut self, shard: &str) -> Error {
        match self.reincarnate() {
            Ok(()) => Error::StateLost {
                name: self.name.clone(),
                shard: shard.to_string(),
            },
            Err(e) => e,
        }
    }

    /// Moves this handle (and the filter) to a new incarnation, or to the one another client
    /// moved it to, and arms every shard with it.
    pub(crate) fn reincarnate(&mut self) -> Result<()> {
        let known = self.incarnation;
        let fresh = meta::new_incarnation();
        let mut head = vec![known.to_string().into_bytes()];
        head.extend(self.meta.field_args(fresh));
        let reply = self.run_one(Call {
            op: Op::Reincarnate,
            key: self.meta_key.clone(),
            head,
            nums: Vec::new(),
        })?;
        let stored = Meta::parse(&meta_reply(reply)?.1)?;
        if !stored.meta.same_shape(&self.meta) {
            // Re-created by a client with other parameters after the loss.
            return Err(self.meta.conflict(&stored.meta));
        }
        // The same shape (a client that re-created it after a restart may have another
        // seed: the bits under ours are gone anyway, so everyone moves to the stored one).
        self.set_meta(stored);
        self.arm_all(&[known])
    }

    /// Writes our header into every shard whose header is missing or holds one of the
    /// incarnations `replace` (one pipelined call per shard).
    pub(crate) fn arm_all(&mut self, replace: &[u64]) -> Result<()> {
        let header = self.meta.armed_shard(self.incarnation);
        let calls: Vec<Call> = (0..self.num_shards())
            .map(|s| {
                let mut head = vec![
                    header.clone(),
                    self.meta.shard_len(s).to_string().into_bytes(),
                ];
                head.extend(replace.iter().map(|i| i.to_be_bytes().to_vec()));
                Call {
                    op: Op::Arm,
                    key: self.shard_key(s),
                    head,
                    nums: Vec::new(),
                }
            })
            .collect();
        self.run_calls(&calls).map(drop)
    }

    /// Shard `i`'s header (`None` where missing).
    pub(crate) fn shard_header(&mut self, i: u64) -> Result<Option<Stored>> {
        let key = self.shard_key(i);
        let k2 = key.clone();
        let h: Vec<u8> = self.with_key(&k2, |c| {
            redis::cmd("GETRANGE")
                .arg(&key)
                .arg(0)
                .arg(SHARD_HEADER_BYTES + 7) // an expiring shard's window follows
                .query(c)
        })?;
        Meta::from_header(&h)
    }

    /// Every shard's header (`None` where missing), one round trip each.
    pub(crate) fn shard_headers(&mut self) -> Result<Vec<Option<Stored>>> {
        (0..self.num_shards())
            .map(|i| self.shard_header(i))
            .collect()
    }

    /// [`insert_if_absent`](Self::insert_if_absent) for a batch, in one round trip (one
    /// server-side call per shard the batch touches, pipelined). `out[i]` is `true` iff
    /// `keys[i]` was new; a key repeated in the batch is new at most once. Each key's
    /// check-and-set is atomic on the server.
    ///
    /// # Errors
    /// Any [`Error`]; then the batch may or may not have been applied (see the crate docs).
    ///
    /// Example at [`RedisBloomFilter`].
    pub fn insert_if_absent_many<K: Hash>(&mut self, keys: &[K]) -> Result<Vec<bool>> {
        self.batch(Op::Set, keys)
    }

    /// [`contains`](Self::contains) for a batch, in one round trip.
    ///
    /// Example at [`RedisBloomFilter`].
    pub fn contains_many<K: Hash>(&mut self, keys: &[K]) -> Result<Vec<bool>> {
        self.batch(Op::Get, keys)
    }

    /// Inserts `key`; `Ok(true)` if it was absent. One round trip: batch keys with
    /// [`insert_if_absent_many`](Self::insert_if_absent_many) for throughput.
    ///
    /// Example at [`RedisBloomFilter`].
    pub fn insert_if_absent<K: Hash + ?Sized>(&mut self, key: &K) -> Result<bool> {
        Ok(self.batch(Op::Set, &[key])?[0])
    }

    /// Inserts `key`.
    ///
    /// Example at [`RedisBloomFilter`].
    pub fn insert<K: Hash + ?Sized>(&mut self, key: &K) -> Result<()> {
        self.batch(Op::Set, &[key]).map(drop)
    }

    /// Whether `key` may have been inserted.
    ///
    /// Example at [`RedisBloomFilter`].
    pub fn contains<K: Hash + ?Sized>(&mut self, key: &K) -> Result<bool> {
        Ok(self.batch(Op::Get, &[key])?[0])
    }

    /// The filter's name.
    ///
    /// Example at [`RedisBloomFilter`].
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Number of 64-byte lines (512-bit blocks), as
    /// [`BloomFilter::num_lines`](blockbloom::BloomFilter::num_lines).
    ///
    /// Example at [`RedisBloomFilter`].
    pub fn num_lines(&self) -> u64 {
        self.meta.blocks
    }

    /// Bits per key.
    ///
    /// Example at [`RedisBloomFilter`].
    pub fn num_hashes(&self) -> u32 {
        self.meta.hashes
    }
    /// Keys the filter was sized for.
    ///
    /// Example at [`RedisBloomFilter`].
    pub fn capacity(&self) -> u64 {
        self.meta.capacity
    }
    /// Rate the filter was sized for.
    ///
    /// Example at [`RedisBloomFilter`].
    pub fn target_fpr(&self) -> f64 {
        self.meta.fpr
    }
    /// Whether calls go through Redis Functions (`true`) or `EVALSHA` scripts.
    ///
    /// Example at [`RedisBloomFilter`].
    pub fn uses_functions(&self) -> bool {
        matches!(self.mode, Mode::Functions)
    }
    /// Whether batches go through the server module (`blockbloom-redis-module`, loaded on
    /// every primary) rather than the Functions; see [`RedisBuilder::use_module`].
    ///
    /// ```no_run
    /// use blockbloom_redis::RedisBloomFilter;
    /// let f = RedisBloomFilter::builder("redis://127.0.0.1/", "crawl:seen")
    ///     .capacity(1_000_000)
    ///     .use_module(false)
    ///     .open_or_create()?;
    /// assert!(!f.uses_module());
    /// # Ok::<(), blockbloom_redis::Error>(())
    /// ```
    pub fn uses_module(&self) -> bool {
        self.native
    }
    /// Waits until `replicas` replicas have acknowledged every write this handle sent
    /// (Redis `WAIT`, on each primary it wrote to), for at most `timeout` per primary
    /// (rounded up to a whole millisecond; `WAIT`'s 0, "for ever", is never sent); returns
    /// the number of replicas that did (the least over the primaries). Keys whose insert
    /// returned before this call, when it answers `replicas`, survive a failover to one of
    /// those replicas. The connection's read timeout is lengthened by `timeout` for the
    /// call, so a wait longer than it is not an error.
    ///
    /// Example at [`RedisBloomFilter`].
    pub fn wait_for_replicas(&mut self, replicas: u64, timeout: Duration) -> Result<u64> {
        let ms = (timeout.as_nanos().div_ceil(1_000_000)).clamp(1, u64::MAX as u128) as u64;
        let io = self.net.timeout();
        let mut least = u64::MAX;
        for node in self.net.primaries()? {
            let n: u64 = self.net.on_node(&node, |c| {
                c.set_read_timeout(Some(io.saturating_add(Duration::from_millis(ms))))?;
                let n = redis::cmd("WAIT").arg(replicas).arg(ms).query(c);
                c.set_read_timeout(Some(io))?;
                n
            })?;
            least = least.min(n);
        }
        Ok(least)
    }

    /// The filter's current incarnation (changes when state was found lost; see
    /// [`Error::StateLost`]).
    ///
    /// Example at [`RedisBloomFilter`].
    pub fn incarnation(&self) -> u64 {
        self.incarnation
    }
}
