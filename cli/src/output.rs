//! Standard output, and how much of it the next program has read.
//!
//! A line counts as delivered once the program reading our output has taken it: for a
//! file or a terminal, once `write` accepted it; for a pipe, once it has left the pipe's
//! buffer — the bytes still in the buffer (`FIONREAD`) are not delivered, and if the reader
//! exits (`| head`) they never will be. `--state` counts the lines recorded that were never
//! delivered, and reserves a file's room before it records the lines it will write.
#![allow(unsafe_code)] // two ioctl/poll calls on our own standard output; SAFETY notes below

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::FileTypeExt;

/// Standard output with a count of the bytes it accepted.
pub(crate) struct Output {
    /// Our own descriptor of standard output, written to directly: Rust's `Stdout` buffers
    /// (a `LineWriter`), and bytes it has taken are not yet with the reader — if a later
    /// write fails (a full disk), they are lost although counted as written.
    out: File,
    /// Bytes `write` accepted so far.
    pub(crate) accepted: u64,
    /// Standard output is a pipe (else: write = delivered).
    pipe: bool,
    /// Standard output is a file whose room can be reserved ahead (`reserve`).
    reservable: bool,
}

impl Output {
    /// Standard output; an error if it is closed (Rust's `Stdout` would silently discard
    /// what is written to it, and every line would count as delivered).
    pub(crate) fn new() -> io::Result<Output> {
        let out = File::from(io::stdout().as_fd().try_clone_to_owned()?);
        let kind = out.metadata().map(|m| m.file_type());
        let pipe = kind.as_ref().is_ok_and(|t| t.is_fifo());
        let reservable = kind.is_ok_and(|t| t.is_file());
        Ok(Output {
            out,
            accepted: 0,
            pipe,
            reservable,
        })
    }

    /// Writes all of `buf`, counting what was accepted even when a write fails.
    pub(crate) fn write_all(&mut self, mut buf: &[u8]) -> io::Result<()> {
        while !buf.is_empty() {
            match self.out.write(buf) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.accepted += n as u64;
                    buf = &buf[n..];
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Makes sure the next `len` bytes written find room on the disk where the output is a
    /// file: they are allocated now (`fallocate`, the file's size unchanged), so that a full
    /// disk fails here — before the lines are recorded in a state — rather than in the write
    /// that follows. Elsewhere (pipes, terminals, file systems without `fallocate`) it does
    /// nothing.
    pub(crate) fn reserve(&mut self, len: u64) -> io::Result<()> {
        if !self.reservable || len == 0 {
            return Ok(());
        }
        #[cfg(target_os = "linux")]
        {
            use std::io::Seek;
            let fd = self.out.as_raw_fd();
            // SAFETY: F_GETFL on our own open descriptor reads its flags; no pointers.
            let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
            // Where the next write lands: the end of the file with O_APPEND (`>>`), else
            // the file position.
            let at = if flags >= 0 && flags & libc::O_APPEND != 0 {
                self.out.metadata()?.len()
            } else {
                self.out.stream_position()?
            };
            loop {
                // SAFETY: fallocate on our own open descriptor; integers only.
                let r = unsafe {
                    libc::fallocate(
                        fd,
                        libc::FALLOC_FL_KEEP_SIZE,
                        at as libc::off_t,
                        len as libc::off_t,
                    )
                };
                if r == 0 {
                    return Ok(());
                }
                let e = io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EINTR) => continue,
                    Some(libc::EOPNOTSUPP | libc::ENOSYS | libc::EINVAL | libc::ENODEV) => {
                        self.reservable = false; // not on this file system
                        return Ok(());
                    }
                    _ => return Err(e),
                }
            }
        }
        #[cfg(not(target_os = "linux"))]
        Ok(())
    }

    /// Bytes the reader has taken so far (a lower bound if it cannot be known).
    pub(crate) fn delivered(&self) -> u64 {
        if self.pipe {
            self.accepted
                .saturating_sub(unread(&self.out).unwrap_or(u64::MAX))
        } else {
            self.accepted
        }
    }

    /// Waits up to `patience` for a pipe's reader to take everything or go away; returns
    /// the bytes delivered.
    pub(crate) fn settle(&self, patience: std::time::Duration) -> u64 {
        if self.pipe {
            let p = &self.out;
            let until = std::time::Instant::now() + patience;
            while unread(p) != Some(0) && !reader_gone(p) && std::time::Instant::now() < until {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
        self.delivered()
    }
}

impl Output {
    /// Whether standard output is a pipe whose reader has gone away.
    pub(crate) fn reader_gone(&self) -> bool {
        self.pipe && reader_gone(&self.out)
    }
}

/// Bytes written to pipe `p` that its reader has not taken yet.
fn unread(p: &File) -> Option<u64> {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD on a pipe's file descriptor writes one `c_int` through the pointer,
    // which points to a live local; the descriptor is ours for the call.
    let r = unsafe { libc::ioctl(p.as_raw_fd(), libc::FIONREAD, &mut n) };
    (r == 0 && n >= 0).then_some(n as u64)
}

/// Whether pipe `p` has no reader any more (`poll` reports an error condition).
fn reader_gone(p: &File) -> bool {
    let mut fds = libc::pollfd {
        fd: p.as_raw_fd(),
        events: libc::POLLOUT,
        revents: 0,
    };
    // SAFETY: one valid `pollfd` for a descriptor we own, timeout 0 (no blocking).
    let r = unsafe { libc::poll(&mut fds, 1, 0) };
    r > 0 && fds.revents & (libc::POLLERR | libc::POLLHUP) != 0
}
