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

/// Where a protocol relies on SeqCst loads and read-modify-writes forming one total order
/// (the expiring filter's planes: a store-buffering pattern), a SeqCst fence for loom, which
/// models SeqCst accesses as AcqRel (and would report executions no SeqCst program has) but
/// SeqCst fences exactly; nothing otherwise, where the accesses themselves are SeqCst (on
/// x86 a load is then a plain `mov` and a read-modify-write a locked instruction, a full
/// barrier already).
#[inline(always)]
pub(crate) fn seq_cst_order() {
    #[cfg(blockbloom_loom)]
    fence(Ordering::SeqCst);
}

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
