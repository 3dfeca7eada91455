//! Cache prefetch hints: the batched operations fetch the lines of keys ahead; one
//! expiring call fetches its own line before it reads the clock.

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

/// As [`prefetch_read`], with intent to write: `prefetchw` where the CPU has it (asked once
/// per process, with `cpuid`; every x86-64 CPU from AMD, Intel's since Broadwell), else a
/// plain `prefetcht0`. The line then arrives exclusive, so the later `fetch_or` needs no
/// second coherence round trip; a line another core last wrote is taken from it once, not
/// shared first and then upgraded. With 2 threads inserting into one filter of 10^6 keys,
/// that is what lets the second thread help (`python/bench/threads.py`: ×1.0–1.1 one thread
/// with `prefetcht0`, ×1.7–1.8 with `prefetchw`, one VM whose two vCPUs were far apart).
#[inline(always)]
pub fn prefetch_write<T>(block: &T) {
    #[cfg(all(target_arch = "x86_64", not(blockbloom_loom)))]
    {
        let p: *const T = block;
        if x86::has_prefetchw() {
            // SAFETY: `prefetchw` exists on this CPU (checked just above); a prefetch is a
            // hint that never faults and never changes memory, and `p` comes from a live
            // reference anyway.
            unsafe {
                core::arch::asm!(
                    "prefetchw byte ptr [{0}]",
                    in(reg) p,
                    options(nostack, preserves_flags, readonly)
                );
            }
        } else {
            // SAFETY: as in `prefetch_read`.
            unsafe {
                use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                _mm_prefetch::<_MM_HINT_T0>(p.cast());
            }
        }
    }
    #[cfg(any(not(target_arch = "x86_64"), blockbloom_loom))]
    let _ = block;
}

#[cfg(all(target_arch = "x86_64", not(blockbloom_loom)))]
mod x86 {
    use crate::sync::unmodeled::{AtomicU8, Ordering::Relaxed};

    /// 0: not asked yet; 1: the CPU has `prefetchw`; 2: it has not.
    static PREFETCHW: AtomicU8 = AtomicU8::new(0);

    /// Whether the CPU has `prefetchw`: a constant where the build enables `prfchw`, else one
    /// relaxed load and a branch that is always predicted (racing first callers all store
    /// the same answer).
    #[inline(always)]
    pub(super) fn has_prefetchw() -> bool {
        if cfg!(target_feature = "prfchw") {
            return true;
        }
        match PREFETCHW.load(Relaxed) {
            1 => true,
            2 => false,
            _ => detect(),
        }
    }

    /// `CPUID.80000001H:ECX.PRFCHW[bit 8]`, both vendors' flag for `prefetchw`.
    #[cold]
    #[inline(never)]
    fn detect() -> bool {
        use core::arch::x86_64::__cpuid;
        #[allow(unused_unsafe)] // `__cpuid` is a safe function in newer Rust
        // SAFETY: `cpuid` exists on every x86-64 CPU; leaf 0x8000_0001 is only read when
        // leaf 0x8000_0000 says it exists.
        let yes = unsafe {
            __cpuid(0x8000_0000).eax >= 0x8000_0001 && __cpuid(0x8000_0001).ecx & (1 << 8) != 0
        };
        PREFETCHW.store(if yes { 1 } else { 2 }, Relaxed);
        yes
    }

    #[cfg(test)]
    mod tests {
        /// The answer is stable, and where `/proc/cpuinfo` lists the flag (Linux calls it
        /// `3dnowprefetch`) it is yes.
        #[test]
        fn prefetchw_detection_agrees_with_the_kernel() {
            let first = super::has_prefetchw();
            assert_eq!(super::has_prefetchw(), first);
            if let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") {
                let listed = info
                    .lines()
                    .filter(|l| l.starts_with("flags"))
                    .any(|l| l.split_whitespace().any(|f| f == "3dnowprefetch"));
                assert_eq!(first, listed, "cpuid and /proc/cpuinfo disagree");
            }
        }
    }
}
