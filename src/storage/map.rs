//! Lines that are a file: a shared, writable mapping (`MAP_SHARED`) of the whole file, so
//! that every process mapping the same file works on the same physical pages (the page
//! cache), and what one process sets another sees — through the same atomic instructions as
//! in memory of its own.

use std::fs::File;
use std::os::unix::io::AsRawFd;

use super::alloc::{Backing, Lines};
use super::huge::{HugePages, Promotion};
use crate::error::Error;
use crate::line::{Line, LINE_BYTES};
use crate::sync::AtomicU64;

impl Lines {
    /// Maps all `map_len` bytes of `file` shared and writable; the `len` blocks start at
    /// byte `offset` (a multiple of 64, so the blocks stay cache-line aligned: the mapping
    /// itself is page-aligned). The file must be at least `offset + 64 · len` bytes long and
    /// stay so while mapped (a shorter file would fault on access).
    pub(crate) fn map_file(
        file: &File,
        map_len: usize,
        offset: usize,
        len: usize,
    ) -> Result<Lines, Error> {
        assert!(len > 0 && offset.is_multiple_of(LINE_BYTES));
        let end = len
            .checked_mul(LINE_BYTES)
            .and_then(|b| b.checked_add(offset))
            .filter(|&e| e <= map_len && map_len <= isize::MAX as usize)
            .ok_or(Error::TooLarge {
                bytes: map_len as u128,
            })?;
        debug_assert!(end <= map_len);
        // SAFETY: a shared mapping of an open file with no address hint has no preconditions
        // of its own; the result is checked for MAP_FAILED before use, and the caller keeps
        // the file at least `map_len` bytes long (checked on open, never truncated by us).
        let p = unsafe {
            libc::mmap(
                core::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::io(
                &std::io::Error::last_os_error(),
                "mapping the filter file",
            ));
        }
        let base = core::ptr::NonNull::new(p.cast::<u8>())
            .ok_or(Error::AllocationFailed { bytes: map_len })?;
        // SAFETY: `offset < map_len` (checked above), so the pointer stays inside the mapping.
        let first = unsafe { base.as_ptr().add(offset) };
        let ptr = core::ptr::NonNull::new(first.cast::<Line>()).expect("inside a mapping");
        Ok(Lines {
            ptr,
            len,
            backing: Backing::File { base, map_len },
            promotion: Promotion::new(map_len, HugePages::WhenDense),
        })
    }

    /// The 8-byte word at byte `at` of a file mapping, as an atomic shared with every other
    /// mapping of the file (the growable chain's live counters); `None` for memory of our own
    /// or an `at` that is not an aligned offset inside the mapping.
    pub(crate) fn file_word(&self, at: usize) -> Option<&AtomicU64> {
        let Backing::File { base, map_len } = self.backing else {
            return None;
        };
        if !at.is_multiple_of(8) || at.checked_add(8)? > map_len {
            return None;
        }
        // SAFETY: `at + 8 <= map_len`, so the 8 bytes lie inside the live mapping, which
        // outlives `&self`; the mapping is page-aligned and `at` a multiple of 8, so the word
        // is aligned for `AtomicU64`. The bytes are only ever accessed atomically (by this
        // and other processes: the words lie outside the blocks and the header), and an
        // `AtomicU64` may alias memory that others change (it has interior mutability).
        Some(unsafe { &*base.as_ptr().add(at).cast::<AtomicU64>() })
    }

    /// Writes a file mapping's dirty pages back to the file and waits for the write
    /// (`msync(MS_SYNC)`); a no-op for memory of our own.
    pub(crate) fn flush(&self) -> Result<(), Error> {
        if let Backing::File { base, map_len } = self.backing {
            // SAFETY: the range is exactly the live mapping made in `map_file`.
            let r = unsafe { libc::msync(base.as_ptr().cast(), map_len, libc::MS_SYNC) };
            if r != 0 {
                return Err(Error::io(
                    &std::io::Error::last_os_error(),
                    "flushing the filter file",
                ));
            }
        }
        Ok(())
    }
}

/// Reserves the disk blocks of the first `len` bytes of `file` (`fallocate`), so that a
/// write through a mapping of it never needs space the file system no longer has: a write
/// fault that finds none is `SIGBUS`, which kills the process, where the reservation fails
/// with `ENOSPC` up front. Lines already allocated stay as they are (their data too).
/// `Ok(false)` where the file system or the OS cannot reserve: the file stays sparse.
pub(crate) fn reserve(file: &File, len: u64) -> std::io::Result<bool> {
    #[cfg(target_os = "linux")]
    {
        let len = libc::off_t::try_from(len)
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::FileTooLarge))?;
        loop {
            // SAFETY: `fallocate` on an open descriptor with mode 0 only allocates blocks;
            // it has no memory-safety preconditions.
            if unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len) } == 0 {
                return Ok(true);
            }
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EOPNOTSUPP) => return Ok(false),
                _ => return Err(e),
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (file, len);
        Ok(false)
    }
}
