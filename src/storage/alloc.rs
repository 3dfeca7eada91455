//! [`Lines`]: the filter's memory, a zeroed, 64-byte-aligned array of [`Line`]s.
//!
//! Why not `Box<[Line]>` from `std::alloc::alloc_zeroed`? For alignments above 16 bytes,
//! std's Unix system allocator implements `alloc_zeroed` as `alloc` followed by a `memset`
//! of the whole size, which touches every page: building a 10 GiB filter would take seconds
//! and commit 10 GiB at once. An anonymous `mmap` returns page-aligned memory that the kernel
//! zero-fills lazily on first touch, so construction is O(1) in time and resident memory.
//! Small filters (< [`MMAP_THRESHOLD`]) still use the global allocator, so custom allocators
//! and memory profilers see them.

use super::huge::HugePages;
#[cfg(not(blockbloom_loom))]
use super::huge::Promotion;
use crate::error::Error;
use crate::line::{Line, LINE_BYTES};
use core::ops::Deref;

/// Filters at least this large are mapped directly from the OS (Unix only).
#[cfg_attr(any(blockbloom_loom, not(unix)), allow(dead_code))]
pub(crate) const MMAP_THRESHOLD: usize = 1 << 20;

/// Filters at least this large may ask for transparent huge pages (the size of one).
#[cfg_attr(any(blockbloom_loom, not(target_os = "linux")), allow(dead_code))]
pub(crate) const HUGE_PAGE_THRESHOLD: usize = 2 << 20;

/// Byte size of `len` blocks, or [`Error::TooLarge`] if it does not fit the address space.
pub(crate) fn byte_size(len: usize) -> Result<usize, Error> {
    len.checked_mul(LINE_BYTES)
        .filter(|&b| b <= isize::MAX as usize)
        .ok_or(Error::TooLarge {
            bytes: len as u128 * LINE_BYTES as u128,
        })
}

/// Owner of `len` blocks: zeroed memory of its own, or a shared mapping of a file.
#[cfg(not(blockbloom_loom))]
pub(crate) struct Lines {
    pub(super) ptr: core::ptr::NonNull<Line>,
    pub(super) len: usize,
    pub(super) backing: Backing,
    /// When the mapping gets huge pages by default (`huge.rs`).
    pub(super) promotion: Promotion,
}

/// Where a [`Lines`]' memory comes from, and so how it is released.
#[cfg(not(blockbloom_loom))]
pub(super) enum Backing {
    /// The global allocator (small arrays).
    Heap,
    /// An anonymous private mapping of exactly the blocks.
    Anonymous,
    /// A shared mapping of a whole file of `map_len` bytes starting at `base`; the blocks
    /// start inside it (see `map.rs`).
    #[cfg_attr(not(unix), allow(dead_code))]
    File {
        base: core::ptr::NonNull<u8>,
        map_len: usize,
    },
}

#[cfg(not(blockbloom_loom))]
impl Lines {
    /// Allocates `len >= 1` zeroed blocks, returning an error (never aborting) when the memory
    /// cannot be had; a big mapping gets huge pages once dense ([`HugePages::WhenDense`]).
    pub(crate) fn zeroed(len: usize) -> Result<Self, Error> {
        Self::zeroed_with(len, HugePages::WhenDense)
    }

    /// As [`zeroed`](Self::zeroed), with huge pages as `huge` says (`huge.rs`): with
    /// [`HugePages::Now`] a mapping of at least [`HUGE_PAGE_THRESHOLD`] is marked
    /// `MADV_HUGEPAGE` (Linux) at once, so the kernel backs it with 2 MiB pages when it
    /// can. The advice is a hint; where it is refused or unsupported the filter works the
    /// same on 4 KiB pages.
    pub(crate) fn zeroed_with(len: usize, huge: HugePages) -> Result<Self, Error> {
        assert!(len > 0, "a filter has at least one block");
        let bytes = byte_size(len)?;
        let promotion = Promotion::new(bytes, huge);
        #[cfg(unix)]
        if bytes >= MMAP_THRESHOLD {
            // SAFETY: an anonymous private mapping with no address hint has no preconditions;
            // the result is checked for MAP_FAILED before use.
            let p = unsafe {
                libc::mmap(
                    core::ptr::null_mut(),
                    bytes,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                return Err(Error::AllocationFailed { bytes });
            }
            #[cfg(target_os = "linux")]
            if huge == HugePages::Now && bytes >= HUGE_PAGE_THRESHOLD {
                super::huge::advise(p, bytes, false);
            }
            let ptr = core::ptr::NonNull::new(p.cast::<Line>())
                .ok_or(Error::AllocationFailed { bytes })?;
            return Ok(Lines {
                ptr,
                len,
                backing: Backing::Anonymous,
                promotion,
            });
        }
        let layout = core::alloc::Layout::array::<Line>(len).map_err(|_| Error::TooLarge {
            bytes: bytes as u128,
        })?;
        // SAFETY: `layout` has non-zero size (len >= 1, blocks are 64 bytes).
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr =
            core::ptr::NonNull::new(p.cast::<Line>()).ok_or(Error::AllocationFailed { bytes })?;
        Ok(Lines {
            ptr,
            len,
            backing: Backing::Heap,
            promotion,
        })
    }

    /// Commits every page of these lines now, as `MAP_POPULATE` would: one store of zero per
    /// 4 KiB, so that no later access takes a page fault (with huge pages advised, the first
    /// store in each 2 MiB region commits the region). Only for fresh lines that no one
    /// else holds yet: the stores overwrite a word.
    pub(crate) fn populate_fresh(&self) {
        const LINES_PER_PAGE: usize = 4096 / LINE_BYTES;
        for line in self.iter().step_by(LINES_PER_PAGE) {
            line.words()[0].store(0, crate::sync::Ordering::Relaxed);
        }
    }

    /// Counts a new key (its hash `h`) towards the default promotion to huge pages, and
    /// promotes the mapping when it is dense (`huge.rs`): called after every won insert.
    #[inline(always)]
    pub(crate) fn count_new_key(&self, h: u64) {
        if self.promotion.count(h) {
            self.promote();
        }
    }

    /// Counts `n` blocks written by a load towards the promotion (each as a new key: a
    /// block holds at least one), promoting the mapping if that makes it dense.
    pub(crate) fn count_loaded_lines(&self, n: u64) {
        if self.promotion.count_many(n) {
            self.promote();
        }
    }

    #[cold]
    fn promote(&self) {
        #[cfg(target_os = "linux")]
        match self.backing {
            Backing::Anonymous => {
                super::huge::advise(self.ptr.as_ptr().cast(), self.len * LINE_BYTES, true)
            }
            Backing::File { base, map_len } => {
                super::huge::advise(base.as_ptr().cast(), map_len, true)
            }
            Backing::Heap => {}
        }
    }
}

#[cfg(not(blockbloom_loom))]
impl Deref for Lines {
    type Target = [Line];
    #[inline]
    fn deref(&self) -> &[Line] {
        // SAFETY: `ptr` points to `len` blocks that we own for `self`'s lifetime, 64-byte
        // aligned (mmap gives page alignment, the allocator honours the layout), and zeroed.
        // All-zero bytes are a valid `Line` (eight `AtomicU64` of value 0). Lines are only
        // ever mutated through their atomics, so shared references are sound.
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

#[cfg(not(blockbloom_loom))]
impl Drop for Lines {
    fn drop(&mut self) {
        let bytes = self.len * LINE_BYTES; // computed without overflow when made
        match self.backing {
            #[cfg(unix)]
            Backing::Anonymous => {
                // SAFETY: the range is exactly the mapping made in `zeroed_with`, unmapped
                // once, and no reference into it outlives `self`.
                unsafe { libc::munmap(self.ptr.as_ptr().cast(), bytes) };
            }
            #[cfg(unix)]
            Backing::File { base, map_len } => {
                // SAFETY: the range is exactly the mapping made in `map_file`, unmapped once,
                // and no reference into it outlives `self`.
                unsafe { libc::munmap(base.as_ptr().cast(), map_len) };
            }
            #[cfg(not(unix))]
            Backing::Anonymous | Backing::File { .. } => unreachable!("mapped only on Unix"),
            Backing::Heap => {
                let layout =
                    core::alloc::Layout::array::<Line>(self.len).expect("checked in zeroed");
                // SAFETY: allocated in `zeroed_with` by the global allocator with this layout.
                unsafe { std::alloc::dealloc(self.ptr.as_ptr().cast(), layout) };
            }
        }
    }
}

// SAFETY: `Lines` owns its memory (like `Box<[Line]>`; a file mapping is shared with other
// processes, which only ever touch it through atomic operations too), and `Line` holds only
// atomics, which are `Send + Sync`.
#[cfg(not(blockbloom_loom))]
unsafe impl Send for Lines {}
// SAFETY: as above: shared access only goes through atomic operations.
#[cfg(not(blockbloom_loom))]
unsafe impl Sync for Lines {}

/// Under loom the blocks are built value by value: loom's atomics carry model state and
/// cannot live in zeroed memory.
#[cfg(blockbloom_loom)]
pub(crate) struct Lines(Box<[Line]>);

#[cfg(blockbloom_loom)]
impl Lines {
    pub(crate) fn zeroed(len: usize) -> Result<Self, Error> {
        Self::zeroed_with(len, HugePages::WhenDense)
    }

    pub(crate) fn zeroed_with(len: usize, _huge: HugePages) -> Result<Self, Error> {
        byte_size(len)?;
        Ok(Lines((0..len).map(|_| Line::new()).collect()))
    }

    #[inline(always)]
    pub(crate) fn count_new_key(&self, _h: u64) {}

    pub(crate) fn populate_fresh(&self) {}

    pub(crate) fn count_loaded_lines(&self, _n: u64) {}
}

#[cfg(blockbloom_loom)]
impl Deref for Lines {
    type Target = [Line];
    fn deref(&self) -> &[Line] {
        &self.0
    }
}

#[cfg(all(test, not(blockbloom_loom)))]
mod tests {
    use super::*;
    use crate::sync::Ordering;

    fn check(len: usize) {
        let b = Lines::zeroed(len).unwrap();
        assert_eq!(b.len(), len);
        assert_eq!(b.as_ptr() as usize % 64, 0, "blocks are cache-line aligned");
        for (i, blk) in b.iter().enumerate() {
            for w in blk.words() {
                assert_eq!(w.load(Ordering::Relaxed), 0);
                w.fetch_or(i as u64 | 1, Ordering::Relaxed);
            }
        }
        assert_eq!(
            b[len - 1].word(7).load(Ordering::Relaxed),
            (len as u64 - 1) | 1
        );
    }

    #[test]
    fn small_heap_allocation_is_zeroed_and_aligned() {
        check(1);
        check(3);
        check(MMAP_THRESHOLD / LINE_BYTES - 1);
    }

    #[test]
    fn mapped_allocation_is_zeroed_and_aligned() {
        check(MMAP_THRESHOLD / LINE_BYTES);
        check(MMAP_THRESHOLD / LINE_BYTES * 3 + 5);
    }

    /// Pages of `lines`' mapping that are resident (`mincore`), and all of its pages.
    #[cfg(target_os = "linux")]
    fn resident_pages(lines: &Lines) -> (usize, usize) {
        // SAFETY: `sysconf` has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let bytes = lines.len() * LINE_BYTES;
        let mut v = vec![0u8; bytes.div_ceil(page)];
        // SAFETY: the range is the page-aligned mapping of `lines`, alive for the call, and
        // `v` has one byte per page of it.
        let r = unsafe { libc::mincore(lines.ptr.as_ptr().cast(), bytes, v.as_mut_ptr()) };
        assert_eq!(r, 0, "mincore");
        (v.iter().filter(|&&b| b & 1 != 0).count(), v.len())
    }

    /// A mapping is committed lazily, page by page as it is touched, and all at once by
    /// `populate_fresh` (on 4 KiB pages and on huge ones), still zeroed.
    #[cfg(target_os = "linux")]
    #[test]
    fn populating_commits_every_page_at_once() {
        for huge in [HugePages::Never, HugePages::Now] {
            let lines = Lines::zeroed_with((8 << 20) / LINE_BYTES, huge).unwrap();
            lines[lines.len() / 2]
                .word(3)
                .fetch_or(1, Ordering::Relaxed);
            let (resident, pages) = resident_pages(&lines);
            assert!(
                resident < pages / 2,
                "{huge:?}: {resident} of {pages} at first"
            );
            lines.populate_fresh();
            assert_eq!(resident_pages(&lines), (pages, pages), "{huge:?}");
            let set = lines
                .iter()
                .flat_map(|l| l.words())
                .map(|w| w.load(Ordering::Relaxed));
            assert_eq!(set.map(u64::count_ones).sum::<u32>(), 1, "{huge:?}");
        }
    }

    #[test]
    fn impossible_sizes_are_errors() {
        assert!(matches!(
            Lines::zeroed(usize::MAX / 8),
            Err(Error::TooLarge { .. })
        ));
        // 2^50 bytes (1 PiB) exceeds any user address space: the OS refuses it.
        assert!(matches!(
            Lines::zeroed(1 << 44),
            Err(Error::AllocationFailed { .. })
        ));
    }
}
