//! The `blockbloom` Python package's native module (`blockbloom._blockbloom`): the Rust
//! filters behind a Python API. Keys are `str` or `bytes`: a `str` is hashed as the Rust
//! `&str` of its UTF-8 bytes, and `bytes` exactly like a `str` with those bytes, so a state
//! written by `blockbloom dedup` or a Rust program answers the same here.
//!
//! One file per class (`bloom.rs`, `growable.rs`, `counting.rs`, `expiring.rs`, `bitset.rs`,
//! `redis.rs`, `redis_expiring.rs`), the URL functions in `url.rs`, with what they share in `keys.rs` (keys and batches),
//! `snapshots.rs` (`bytes`, pickling and copies) and `errors.rs` (exceptions).

mod bitset;
mod bloom;
mod counting;
mod errors;
mod expiring;
mod growable;
mod keys;
mod redis;
mod redis_expiring;
mod snapshots;
mod url;

pub(crate) use bitset::AtomicBitSet;
pub(crate) use bloom::BloomFilter;
pub(crate) use counting::CountingBloomFilter;
pub(crate) use errors::*;
pub(crate) use expiring::ExpiringBloomFilter;
pub(crate) use growable::GrowableBloomFilter;
pub(crate) use keys::*;
pub(crate) use redis::RedisBloomFilter;
pub(crate) use redis_expiring::RedisExpiringBloomFilter;

use pyo3::prelude::*;

#[pymodule]
fn _blockbloom(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<BloomFilter>()?;
    m.add_class::<GrowableBloomFilter>()?;
    m.add_class::<CountingBloomFilter>()?;
    m.add_class::<ExpiringBloomFilter>()?;
    m.add_class::<AtomicBitSet>()?;
    m.add_class::<RedisBloomFilter>()?;
    m.add_class::<RedisExpiringBloomFilter>()?;
    m.add_function(wrap_pyfunction!(url::canonicalize_url, m)?)?;
    m.add_function(wrap_pyfunction!(url::request_fingerprint, m)?)?;
    m.add_function(wrap_pyfunction!(url::scrapy_redis_request_fingerprint, m)?)?;
    // `canonicalize_url(..., encoding=...)` decodes bytes as w3lib does: undecodable bytes
    // as `%XX`.
    m.py().import("codecs")?.call_method1(
        "register_error",
        (
            url::PERCENT_ENCODE,
            wrap_pyfunction!(url::percent_encode_errors, m)?,
        ),
    )?;
    m.add("SnapshotError", m.py().get_type::<SnapshotError>())?;
    m.add("RedisError", m.py().get_type::<RedisError>())?;
    m.add("StateLost", m.py().get_type::<StateLost>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
