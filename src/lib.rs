#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

mod block;
mod error;
mod filter;
mod hash;
pub mod math;
#[cfg(feature = "rayon")]
mod par;
mod snapshot;
mod storage;
mod sync;

pub use error::Error;
pub use filter::{BloomFilter, Builder, Probe, PREFETCH_DISTANCE};
pub use hash::{HASH_ALGORITHM_ID, MAX_HASHES};
#[cfg(feature = "rayon")]
pub use par::PAR_CHUNK;
