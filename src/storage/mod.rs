//! The filters' memory, and the crate's one `unsafe` module. Its parts, each in its file:
//!
//! * [`alloc`]: [`Lines`], a zeroed, 64-byte-aligned array of [`Line`](crate::line::Line)s
//!   that the OS zero-fills lazily (an anonymous `mmap` from 1 MiB up), so building a 10 GiB
//!   filter is O(1) in time and resident memory.
//! * [`huge`]: when a mapping asks for transparent huge pages: at once, never, or by
//!   default once the filter is dense (a sampled count of new keys).
//! * [`prefetch`]: the cache prefetch hints of the batched operations (an x86 intrinsic that
//!   Rust marks `unsafe` although a prefetch cannot fault or change memory).
//! * `clock`: the wall clock as nanoseconds since 1970 (`clock_gettime`), for the expiring
//!   filter's epochs.
//! * [`published`]: [`Published`], the lock-free append-only array through which the growable
//!   filter publishes its layers.
//! * `map` (Unix): blocks that are a file, mapped `MAP_SHARED` (the file-backed filter), and
//!   `reserve`, which allocates the file's disk blocks up front.
//! * `fork` (Unix): [`FileLock`], which gives a forked child an open file description of
//!   each filter file of its own (`pthread_atfork`), so that its lock is its own.
//!
//! Storage holds blocks; it does not know how keys map to bits (`layout` does).
#![allow(unsafe_code)] // the crate's one unsafe module; every block has a SAFETY note

mod alloc;
mod clock;
#[cfg(all(unix, not(blockbloom_loom)))]
mod fork;
mod huge;
#[cfg(all(unix, not(blockbloom_loom)))]
mod map;
mod prefetch;
mod published;

pub(crate) use alloc::{byte_size, Lines};
#[cfg(feature = "internals")]
pub use clock::{coarse_clock_nanos, coarse_clock_resolution};
pub(crate) use clock::{nanos_since_1970, wall_clock_bounds, wall_clock_nanos};
#[cfg(all(unix, not(blockbloom_loom)))]
pub(crate) use fork::FileLock;
pub(crate) use huge::HugePages;
#[cfg(all(unix, not(blockbloom_loom)))]
pub(crate) use map::reserve;
pub use prefetch::{prefetch_read, prefetch_write};
pub(crate) use published::Published;
