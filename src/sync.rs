//! The one place that names atomics.
//!
//! Built normally, these are `core`'s atomics. Built with `RUSTFLAGS="--cfg blockbloom_loom"`
//! they are [loom](https://docs.rs/loom)'s, so the very same filter code is model-checked by
//! the `loom-tests` crate. We gate on a cfg of our own rather than a Cargo feature (features
//! unify across a workspace, so a loom feature would leak into ordinary builds) and rather than
//! `crossbeam_loom` (which crates in rayon's dependency tree react to).
//!
//! Rule: no other module imports `core::sync::atomic` or `std::sync::atomic` directly.

#[cfg(blockbloom_loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicPtr, AtomicU64, Ordering};

#[cfg(not(blockbloom_loom))]
pub(crate) use core::sync::atomic::{fence, AtomicBool, AtomicPtr, AtomicU64, Ordering};

/// Process-wide state outside the filters (the random-seed and temporary-file counters, the
/// CPU's `prefetchw` answer, the forked child's descriptors' owner): always
/// `core`'s atomics, since loom's cannot live in a `static` and these take no part in any
/// protocol the models check.
pub(crate) mod unmodeled {
    // `AtomicU8` and `AtomicU32` are used on x86-64 and Linux only, and not under loom.
    #[allow(unused_imports)]
    pub(crate) use core::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};

    /// The next value of `counter` (distinct for every call in the process).
    pub(crate) fn next(counter: &AtomicU64) -> u64 {
        counter.fetch_add(1, Ordering::Relaxed)
    }
}
