//! The crate's [`Error`] and [`Result`].

use std::fmt;

use redis::RedisError;

use crate::MAX_SHARD_BYTES;

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

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
