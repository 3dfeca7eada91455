//! Filter files across `fork`. A forked child inherits its parent's descriptors, and with
//! them the parent's *open file descriptions* — which is what an `flock` belongs to, not a
//! process. Parent and child would then share one shared lock, so whichever closed first
//! would believe nobody else had the file open: its `try_lock` would convert that common
//! lock to exclusive (every later open elsewhere then blocks until both have exited), and it
//! would seal the file — checksum written, in-use flag cleared — while the other still sets
//! bits in it.
//!
//! So every open filter file is registered here, and a handler run in each child at `fork`
//! (`pthread_atfork`) gives the child's copy of each descriptor an open file description of
//! its own (Linux: reopened through `/proc/self/fd`, put in place with `dup3`) holding its
//! own shared lock, as if the child had opened the file itself. A child for which that
//! fails (no `/proc`, another Unix) keeps the shared description and never seals the file;
//! [`FileLock::is_own`] tells which case a handle is in. The parent's own handler waits for
//! the child's to be done (a byte through a pipe, or the child's exit): until then the two
//! share each description, and a parent closing its filter at once would take the shared
//! lock exclusively and seal the file under its child.

use std::fs::File;
use std::os::unix::io::{AsRawFd, RawFd};
use std::sync::{Arc, Mutex, MutexGuard, Once, PoisonError};

use crate::sync::unmodeled::{AtomicU32, Ordering::Relaxed};

/// One registered descriptor.
struct Entry {
    fd: RawFd,
    /// The process whose open file description `fd` refers to.
    owner: AtomicU32,
}

/// The open filter files of this process.
static REGISTRY: Mutex<Vec<Arc<Entry>>> = Mutex::new(Vec::new());

fn registry() -> MutexGuard<'static, Vec<Arc<Entry>>> {
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What the forking thread holds from just before the fork until just after it (in parent
/// and child): the registry, locked so that the child sees a consistent list, and, when a
/// filter file is open, the handshake pipe (read end, write end).
type Held = (
    MutexGuard<'static, Vec<Arc<Entry>>>,
    Option<[libc::c_int; 2]>,
);

std::thread_local! {
    static HELD: std::cell::RefCell<Option<Held>> = const { std::cell::RefCell::new(None) };
}

/// How long a parent waits for its child to hold descriptions of its own: far more than
/// the few system calls take, on a loaded machine too; a child that never answers (stopped
/// at its first instruction) only brings back the race the wait closes.
const HANDSHAKE_MS: libc::c_int = 10_000;

extern "C" fn before_fork() {
    let guard = registry();
    let mut pipe = None;
    if !guard.is_empty() {
        let mut fds = [-1; 2];
        // SAFETY: `fds` has room for the two descriptors `pipe2` writes.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } == 0 {
            pipe = Some(fds);
        }
    }
    HELD.with(|h| *h.borrow_mut() = Some((guard, pipe)));
}

/// The parent waits until the child has its own open file descriptions (it writes a byte)
/// or has exited (end of file): before that the two share each description and its lock,
/// and a parent that closed a filter at once would find the shared lock free to take
/// exclusively, seal the file under its child and leave it locked for everyone.
extern "C" fn after_fork_in_parent() {
    HELD.with(|h| {
        if let Some((_guard, Some([read, write]))) = h.borrow_mut().take() {
            // SAFETY: the pipe's two descriptors, made in `before_fork` and owned here; the
            // write end is closed first, so that a child that exits ends the wait.
            unsafe {
                libc::close(write);
                let mut poll = libc::pollfd {
                    fd: read,
                    events: libc::POLLIN,
                    revents: 0,
                };
                if libc::poll(&mut poll, 1, HANDSHAKE_MS) > 0 {
                    let mut byte = 0u8;
                    libc::read(read, (&mut byte as *mut u8).cast(), 1);
                }
                libc::close(read);
            }
        }
    });
}

extern "C" fn after_fork_in_child() {
    HELD.with(|h| {
        if let Some((entries, pipe)) = h.borrow_mut().take() {
            for e in entries.iter() {
                reopen(e);
            }
            if let Some([read, write]) = pipe {
                // SAFETY: the child's copies of the pipe's descriptors; a byte tells the
                // parent this child holds descriptions of its own now.
                unsafe {
                    libc::close(read);
                    libc::write(write, b"!".as_ptr().cast(), 1);
                    libc::close(write);
                }
            }
        }
    });
}

/// In a just-forked child: replaces `e.fd`'s open file description by a new one of the same
/// file with a shared lock of its own. Only system calls, no allocation (the child of a
/// multi-threaded process may not take locks other threads held at the fork).
#[cfg(target_os = "linux")]
fn reopen(e: &Entry) {
    let mut path = *b"/proc/self/fd/\0\0\0\0\0\0\0\0\0\0\0\0";
    let prefix = b"/proc/self/fd/".len();
    let mut digits = [0u8; 10];
    let (mut n, mut len) = (e.fd as u32, 0);
    loop {
        digits[len] = b'0' + (n % 10) as u8;
        len += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // The digits after the prefix; the rest of `path` stays NUL, which terminates it.
    for i in 0..len {
        path[prefix + i] = digits[len - 1 - i];
    }
    // SAFETY: `path` is NUL-terminated; `open` has no other precondition.
    let fresh = unsafe { libc::open(path.as_ptr().cast(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fresh < 0 {
        return;
    }
    // SAFETY: `fresh` is a descriptor we just opened and own; `e.fd` is the registered
    // descriptor of a live filter file, which `dup3` atomically makes refer to `fresh`'s
    // description (closing the inherited reference); then our extra copy is closed.
    unsafe {
        if libc::flock(fresh, libc::LOCK_SH | libc::LOCK_NB) == 0
            && libc::dup3(fresh, e.fd, libc::O_CLOEXEC) >= 0
        {
            e.owner.store(libc::getpid() as u32, Relaxed);
        }
        libc::close(fresh);
    }
}

#[cfg(not(target_os = "linux"))]
fn reopen(_: &Entry) {}

/// The registration of an open, shared-locked filter file; unregistered on drop (declare it
/// before the `File` so that it drops first: a descriptor number is never left registered
/// after it was closed and perhaps reused).
pub(crate) struct FileLock(Arc<Entry>);

impl FileLock {
    /// Registers `file` (open, with its shared lock taken by this process).
    pub(crate) fn register(file: &File) -> FileLock {
        static HANDLERS: Once = Once::new();
        HANDLERS.call_once(|| {
            // SAFETY: three `extern "C"` functions that live for the whole program; they run
            // around every `fork` of the process, in the forking thread.
            unsafe {
                libc::pthread_atfork(
                    Some(before_fork),
                    Some(after_fork_in_parent),
                    Some(after_fork_in_child),
                )
            };
        });
        let e = Arc::new(Entry {
            fd: file.as_raw_fd(),
            owner: AtomicU32::new(std::process::id()),
        });
        registry().push(e.clone());
        FileLock(e)
    }

    /// Whether this process holds an open file description of the file of its own (the one
    /// it opened, or the one the fork handler gave it) — else it shares its parent's, and
    /// must neither take that lock exclusively nor seal the file.
    pub(crate) fn is_own(&self) -> bool {
        self.0.owner.load(Relaxed) == std::process::id()
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        registry().retain(|e| !Arc::ptr_eq(e, &self.0));
    }
}
