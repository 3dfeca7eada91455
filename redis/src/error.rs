//! The crate's [`Error`] and [`Result`].

use std::fmt;

use redis::RedisError;

use crate::MAX_SHARD_BYTES;

/// Errors of the Redis-backed filter.
///
/// # Example
/// What a crawler does with each: never take a key's state as known when the call failed.
/// ```no_run
/// use blockbloom_redis::{Error, RedisBloomFilter, Result};
///
/// fn to_fetch(seen: &mut RedisBloomFilter, urls: &[&str]) -> Result<Vec<bool>> {
///     match seen.insert_if_absent_many(urls) {
///         // The state was lost and the filter re-armed: the batch was not applied, send it again.
///         Err(Error::StateLost { .. }) => seen.insert_if_absent_many(urls),
///         // Unknown whether the batch was applied: fetch them all (at-least-once).
///         Err(Error::Redis(e)) => {
///             eprintln!("redis: {e}; fetching the batch anyway");
///             Ok(vec![true; urls.len()])
///         }
///         other => other,
///     }
/// }
/// let mut seen = RedisBloomFilter::open_or_create("redis://127.0.0.1/", "crawl:seen", 1_000_000, 0.01)?;
/// println!("{:?}", to_fetch(&mut seen, &["https://a.example/"])?);
/// match RedisBloomFilter::open("redis://127.0.0.1/", "no:such:filter") {
///     Err(Error::NotFound(name)) => println!("no filter {name}"),
///     other => println!("{other:?}"),
/// }
/// # Ok::<(), Error>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// Talking to Redis failed: connection refused, timeout, connection dropped, or an error
    /// reply. After one of these the state of the keys of the failed call is unknown. (The
    /// `redis` crate's error, re-exported as [`blockbloom_redis::redis`](crate::redis).)
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
    /// A key of the filter holds another type of value than the filter put there (the key's
    /// name, where known; else empty).
    WrongType(String),
    /// Invalid parameters, or an error of the local filter (import/export).
    Filter(blockbloom::Error),
    /// The server answered something this client did not expect.
    Protocol(String),
    /// A shard size outside `128..=MAX_SHARD_BYTES` bytes was asked for (192 bytes at least
    /// for an expiring filter kept by the module: its clock line too).
    InvalidShardSize(u64),
    /// The filter's state in Redis was found lost — a shard or the parameter hash vanished
    /// (a restart without persistence, an eviction, `FLUSHALL`), or another client found
    /// such a loss first. The batch was not applied (or, with
    /// [`direct_bitfield(true)`](crate::RedisBuilder::direct_bitfield), only partly): send
    /// it again. The filter has been re-armed under a new incarnation and works again, but
    /// keys inserted before the loss may now be answered "new": up to all of them are
    /// fetched again (re-fetching is safe; nothing is reported seen that was not). Each
    /// client gets this error once per loss.
    StateLost {
        /// The filter's name.
        name: String,
        /// The shard where the loss was seen.
        shard: String,
    },
    /// The server evicts keys of any kind (`maxmemory-policy` is `allkeys-*`), which can
    /// silently empty a filter's shards; allow it with
    /// [`RedisBuilder::allow_eviction`](crate::RedisBuilder::allow_eviction).
    EvictionPolicy(String),
    /// The expiring filter of this name is the server module's expiring type (created where
    /// every primary had `blockbloom-redis-module`), and a server it lives on does not have
    /// the module loaded now: load it (`--loadmodule`) and call again.
    ModuleMissing(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Redis(e) => write!(f, "redis: {e}"),
            Error::ModuleMissing(n) => write!(
                f,
                "the expiring filter {n:?} is kept by the blockbloom server module, which a \
                 server it lives on does not have loaded: load it (redis-server --loadmodule \
                 libblockbloom_redis_module.so) and call again"
            ),
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
            Error::WrongType(k) if k.is_empty() => f.write_str(
                "a Redis key of the filter holds another type of value (WRONGTYPE): not a blockbloom filter's key",
            ),
            Error::WrongType(k) => write!(
                f,
                "Redis key {k:?} holds another type of value than a string (WRONGTYPE): not a blockbloom shard"
            ),
            Error::Filter(e) => write!(f, "{e}"),
            Error::Protocol(why) => write!(f, "unexpected reply from Redis: {why}"),
            Error::StateLost { name, shard } => write!(
                f,
                "the state of filter {name:?} in Redis was lost ({shard} was missing or re-armed: \
                 restart without persistence, eviction or FLUSHALL); the batch was not applied \
                 and the filter is re-armed: re-send the batch; keys seen before the loss may be \
                 reported new again"
            ),
            Error::EvictionPolicy(p) => write!(
                f,
                "the server's maxmemory-policy is {p}, which may evict the filter's keys \
                 (use a volatile-* policy or noeviction, or RedisBuilder::allow_eviction)"
            ),
            Error::InvalidShardSize(b) => write!(
                f,
                "shard size must be between 128 bytes and {MAX_SHARD_BYTES} (Redis' string limit), got {b}"
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
            return Error::WrongType(String::new()); // the key is named where it is known
        }
        Error::Redis(e)
    }
}

/// A reply of another shape than asked for: a [`RedisError`] of kind
/// [`Parse`](redis::ErrorKind::Parse), as the `redis` crate makes of it.
impl From<redis::ParsingError> for Error {
    fn from(e: redis::ParsingError) -> Self {
        Error::Redis(e.into())
    }
}

/// `Result` with this crate's [`Error`]. Example at [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
