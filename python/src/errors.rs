//! The package's exceptions, and the Python exception for each Rust error.

use pyo3::create_exception;
use pyo3::exceptions::{PyConnectionError, PyMemoryError, PyOSError, PyValueError};
use pyo3::prelude::*;

create_exception!(
    blockbloom,
    SnapshotError,
    PyOSError,
    "A snapshot or state file is damaged, truncated, of another version, or in use (an \
     OSError, as gzip.BadGzipFile): the file is left as it was."
);
create_exception!(
    blockbloom,
    RedisError,
    PyConnectionError,
    "Talking to Redis failed, or the filter's state in Redis was lost or conflicts."
);
create_exception!(
    blockbloom,
    StateLost,
    RedisError,
    "The filter's state in Redis was lost (restart, eviction, FLUSHALL): re-send the batch."
);

/// The Python exception for a filter error.
pub(crate) fn err(e: blockbloom::Error) -> PyErr {
    use blockbloom::Error as E;
    match e {
        E::Io { kind, message } => {
            let errno = match kind {
                std::io::ErrorKind::NotFound => Some(2),
                std::io::ErrorKind::PermissionDenied => Some(13),
                std::io::ErrorKind::AlreadyExists => Some(17),
                std::io::ErrorKind::FileTooLarge => Some(27),
                std::io::ErrorKind::StorageFull => Some(28),
                _ => None,
            };
            match errno {
                Some(n) => PyOSError::new_err((n, message)),
                None => PyOSError::new_err(message),
            }
        }
        // Something in the way of a file-backed chain's layers: "file exists".
        E::ForeignLayer { .. } => PyOSError::new_err((17, e.to_string())),
        E::AllocationFailed { .. } => PyMemoryError::new_err(e.to_string()),
        E::BadMagic
        | E::UnsupportedVersion(_)
        | E::UnknownHash(_)
        | E::Truncated
        | E::ChecksumMismatch { .. }
        | E::HeaderChecksumMismatch { .. }
        | E::InvalidSnapshot(_)
        | E::InUse => SnapshotError::new_err(e.to_string()),
        _ => PyValueError::new_err(e.to_string()),
    }
}

/// What an open checks: `verify=False` trusts a cleanly closed file's lines.
pub(crate) fn verification(verify: bool) -> blockbloom::Verification {
    if verify {
        blockbloom::Verification::Full
    } else {
        blockbloom::Verification::HeaderOnly
    }
}

pub(crate) fn redis_err(e: blockbloom_redis::Error) -> PyErr {
    use blockbloom_redis::Error as E;
    match e {
        E::StateLost { .. } => StateLost::new_err(e.to_string()),
        E::Filter(f) => err(f),
        E::InvalidShardSize(_) => PyValueError::new_err(e.to_string()),
        e => RedisError::new_err(e.to_string()),
    }
}
