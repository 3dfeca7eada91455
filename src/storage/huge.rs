//! Transparent huge pages for big filters, by default once they are dense.
//!
//! A filter's accesses are random, so on 4 KiB pages a big filter misses the TLB on almost
//! every operation; on 2 MiB pages one TLB entry covers 32,768 lines. But `MADV_HUGEPAGE`
//! at construction commits 2 MiB at the first touch of a region, so a huge filter used
//! sparsely would cost up to 512 times the memory of the lines it uses. So by default
//! ([`HugePages::WhenDense`]) a mapping of at least [`AUTO_HUGE_PAGES_FROM`] bytes is
//! promoted only once about four keys per 4 KiB page have been inserted: by then 98% of
//! its pages are touched anyway, and the promotion (`MADV_HUGEPAGE`, then
//! `MADV_COLLAPSE`, Linux 6.1+: the kernel copies the touched pages into huge pages)
//! commits at most the 2% left. Until then memory grows with the 4 KiB pages touched.
//!
//! The count is sampled: a new key whose hash has its low [`SAMPLE_BITS`] bits clear
//! adds one to a counter (one `fetch_add` per 1,024 new keys, on a line of its own); the
//! call that brings it to the mark promotes. A snapshot's load counts the blocks it wrote,
//! so a dense one is promoted as it is loaded. Advice is a hint: where it is refused (no
//! THP, another OS, a file system without large folios) the filter works the same.

// Under loom the blocks are a plain box: nothing is mapped, nothing promoted.
#![cfg_attr(blockbloom_loom, allow(dead_code))]

use crate::sync::unmodeled::{AtomicU64, Ordering};

/// Mappings at least this large get huge pages by default, once dense. Measured in the
/// benchmark report's scale section (docs/PERFORMANCE.md): from a 19 MiB filter up, huge
/// pages made a fill 18–49% faster; at 12 MiB two runs disagreed (17%, and nothing).
pub(crate) const AUTO_HUGE_PAGES_FROM: usize = 16 << 20;

/// One new key in `2^SAMPLE_BITS` is counted.
pub(crate) const SAMPLE_BITS: u32 = 10;

/// When a mapping asks for huge pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HugePages {
    /// Never (`huge_pages(false)`).
    Never,
    /// At construction (`huge_pages(true)`), for mappings of 2 MiB or more.
    Now,
    /// The default: once dense, for mappings of [`AUTO_HUGE_PAGES_FROM`] or more.
    WhenDense,
}

impl HugePages {
    /// The builders' `Option<bool>`: `None` is the default.
    pub(crate) fn from_choice(choice: Option<bool>) -> Self {
        match choice {
            None => HugePages::WhenDense,
            Some(true) => HugePages::Now,
            Some(false) => HugePages::Never,
        }
    }
}

/// The sampled count of new keys and the mark at which the mapping is promoted (0: never).
#[repr(align(64))]
pub(crate) struct Promotion {
    sampled: AtomicU64,
    mark: u64,
}

impl Promotion {
    /// For a mapping of `bytes` whose choice is `huge`: a mark of four new keys per 4 KiB
    /// page, in samples (one per MiB), for [`HugePages::WhenDense`] mappings large enough.
    pub(crate) fn new(bytes: usize, huge: HugePages) -> Self {
        let auto = huge == HugePages::WhenDense && bytes >= AUTO_HUGE_PAGES_FROM;
        let mark = if auto && cfg!(target_os = "linux") {
            (4 * (bytes as u64 / 4096)) >> SAMPLE_BITS
        } else {
            0
        };
        Promotion {
            sampled: AtomicU64::new(0),
            mark,
        }
    }

    /// Counts the new key hashed to `h` if it is sampled; `true` for the one call that
    /// brings the count to the mark, which then promotes the mapping.
    #[inline(always)]
    pub(crate) fn count(&self, h: u64) -> bool {
        h & ((1 << SAMPLE_BITS) - 1) == 0 && self.mark != 0 && self.count_sample()
    }

    #[cold]
    fn count_sample(&self) -> bool {
        self.add(1)
    }

    /// Counts `n` keys at once (a load's non-zero blocks); `true` if that reaches the mark.
    pub(crate) fn count_many(&self, n: u64) -> bool {
        self.mark != 0 && self.add(n >> SAMPLE_BITS)
    }

    /// Adds `samples`; `true` for the one call whose addition crosses the mark.
    fn add(&self, samples: u64) -> bool {
        let before = self.sampled.fetch_add(samples, Ordering::Relaxed);
        before < self.mark && before + samples >= self.mark
    }
}

/// Advises `len` bytes at `addr` (page-aligned) `MADV_HUGEPAGE`, and with `collapse` asks
/// the kernel to back what is resident with huge pages now (`MADV_COLLAPSE`). Failures are
/// ignored: the advice is a hint.
#[cfg(target_os = "linux")]
pub(crate) fn advise(addr: *mut libc::c_void, len: usize, collapse: bool) {
    /// `MADV_COLLAPSE` (Linux 6.1), not in every libc crate's list.
    const MADV_COLLAPSE: libc::c_int = 25;
    // SAFETY: the range is a whole mapping of the caller's; these advices change only how
    // it is backed, never its contents (a collapse copies the pages, and concurrent
    // accesses fault and wait until it is done, as for the kernel's own khugepaged).
    unsafe {
        libc::madvise(addr, len, libc::MADV_HUGEPAGE);
        if collapse {
            libc::madvise(addr, len, MADV_COLLAPSE);
        }
    }
}
