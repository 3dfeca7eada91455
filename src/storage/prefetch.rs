//! Cache prefetch hints for the batched operations.

/// Hints the CPU to fetch the cache line holding `*block` for reading. A no-op where we have no stable
/// prefetch intrinsic (anything but x86-64) and under loom.
#[inline(always)]
pub fn prefetch_read<T>(block: &T) {
    #[cfg(all(target_arch = "x86_64", not(blockbloom_loom)))]
    // SAFETY: `_mm_prefetch` needs SSE, which every x86-64 CPU has (it is in the target's
    // baseline); a prefetch is a hint that never faults and never changes memory, and the
    // address comes from a live reference anyway.
    unsafe {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((block as *const T).cast());
    }
    #[cfg(any(not(target_arch = "x86_64"), blockbloom_loom))]
    let _ = block;
}

/// As [`prefetch_read`], with intent to write: `prefetchw` (the line arrives exclusive, so
/// the later `fetch_or` needs no second coherence round trip) when the build enables the
/// `prfchw` target feature (e.g. `-C target-cpu=native` on any recent x86), else a plain
/// `prefetcht0`.
#[inline(always)]
pub fn prefetch_write<T>(block: &T) {
    #[cfg(all(target_arch = "x86_64", not(blockbloom_loom)))]
    // SAFETY: as in `prefetch_read`.
    unsafe {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_ET0};
        _mm_prefetch::<_MM_HINT_ET0>((block as *const T).cast());
    }
    #[cfg(any(not(target_arch = "x86_64"), blockbloom_loom))]
    let _ = block;
}
