#![doc = include_str!("../README.md")]
#![warn(missing_docs)]

// The layers, bottom up (ARCHITECTURE.md has the map):
// sync → block, storage → hash, layout → filters → snapshot, file, combine → par (rayon).
mod sync;

mod format;
mod line;
mod storage;
mod store;

mod hash;
mod layout;

mod bitset;
mod counting;
mod expiring;
mod family;
mod filter;
mod growable;

#[cfg(all(unix, not(blockbloom_loom)))]
mod file;
mod snapshot;

mod error;
pub mod math;
#[cfg(feature = "url")]
pub mod url;

#[cfg(feature = "internals")]
#[doc(hidden)]
#[path = "bench_support.rs"]
pub mod __bench;

/// The expiring filter's planes protocol alone, for its loom models.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod __planes {
    pub use crate::expiring::planes_model::PlanesModel;
}

/// The expiring filter's planes on lines one caller owns at a time, for the Redis module.
#[doc(hidden)]
pub mod planes_in_place {
    pub use crate::expiring::in_place::*;
}

pub use bitset::AtomicBitSet;
pub use counting::{CountingBloomFilter, COUNTER_MAX};
pub use error::Error;
pub use expiring::{Arrival, ExpiringBloomFilter, ExpiringBuilder, ExpiryWindow};
pub use family::{Filter, HashedFilter};
#[cfg(all(unix, not(blockbloom_loom)))]
pub use file::FileCondition;
#[cfg(all(feature = "rayon", feature = "internals"))]
#[doc(hidden)]
pub use filter::PAR_CHUNK;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub use filter::PREFETCH_DISTANCE;
pub use filter::{BloomFilter, Builder};
pub use format::MAX_HASHES;
pub use growable::{GrowableBloomFilter, GrowableBuilder, MAX_LAYERS};
pub use hash::{random_seed, KeyHash, StrBytes, HASH_ALGORITHM_ID};
pub use layout::{Layout, Probe, SlotProbe};
pub use snapshot::Verification;

/// The Rust examples of `docs/FILES.md`, run as doctests like the README's.
#[cfg(all(doctest, unix))]
#[doc = include_str!("../docs/FILES.md")]
struct FilesGuide;

/// Every structure of the family is `Send + Sync` (shared by reference between threads):
/// checked at compile time.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<BloomFilter>();
    send_sync::<CountingBloomFilter>();
    send_sync::<ExpiringBloomFilter>();
    send_sync::<GrowableBloomFilter>();
    send_sync::<AtomicBitSet>();
    send_sync::<Layout>();
};
