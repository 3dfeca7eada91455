//! A file-backed filter in a process that forks (Python's `multiprocessing` on Linux, a
//! daemon, a pre-fork server): the child inherits the filter and its file, and either may
//! close it first. The file stays locked shared while either has it open, is sealed only
//! by the last to close it, and stays openable by everyone else throughout.
//!
//! A binary of its own with one test, so that no other test's thread runs at the forks (a
//! child of a multi-threaded process inherits the locks other threads held).
#![cfg(unix)]
#![allow(unsafe_code)] // pipe, fork, _exit, waitpid: SAFETY notes below

use blockbloom::{BloomFilter, Error};
use std::io::{Read, Write};
use std::os::fd::FromRawFd;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

/// Opens `path` from another thread: `Err` if that takes more than 20 s (it blocks when the
/// file is locked exclusively).
fn open_within_timeout(path: &Path) -> Result<BloomFilter, String> {
    let (tx, rx) = mpsc::channel();
    let p = path.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(BloomFilter::open_file_existing(&p));
    });
    match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(_) => Err("open_file_existing blocked: the file is locked exclusively".into()),
    }
}

/// Forks: 0 in the child, the child's pid in the parent.
fn fork() -> libc::pid_t {
    // SAFETY: this test is the binary's only one, so no other thread holds a lock the child
    // could need.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    pid
}

/// Ends the child at once: no destructor of the parent's objects, no return into the test
/// harness.
fn exit_child(ok: bool) -> ! {
    // SAFETY: `_exit` has no preconditions.
    unsafe { libc::_exit(if ok { 0 } else { 1 }) }
}

fn wait(pid: libc::pid_t) -> i32 {
    let mut status = 0;
    // SAFETY: `pid` is our child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status), "child died: status {status}");
    libc::WEXITSTATUS(status)
}

#[test]
fn forked_children_and_their_parent_share_the_file_and_its_lock() {
    let dir = std::env::temp_dir().join(format!("bb-fork-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();

    // 1. The child closes its inherited filter first: the parent still has the file open,
    //    so the child must not seal it, nor leave it locked exclusively.
    let path = dir.join("child-closes-first.bloom");
    let f = BloomFilter::open_file(&path, 100_000, 0.01).unwrap();
    assert!(f.insert_if_absent("before the fork"));
    let pid = fork();
    if pid == 0 {
        // The child's copy of the parent's filter: closing it closes the child's handle.
        let won = f.insert_if_absent("from the child");
        exit_child(won && f.close().is_ok());
    }
    assert_eq!(wait(pid), 0);
    assert!(f.insert_if_absent("after the child closed"));
    assert!(f.contains("from the child"));
    let again = open_within_timeout(&path).unwrap();
    assert!(again.contains("after the child closed"));
    drop(again);
    assert!(
        matches!(BloomFilter::load(&path), Err(Error::InUse)),
        "sealed by the child while the parent still has it open"
    );
    drop(f);
    let sealed = BloomFilter::load(&path).expect("sealed by the parent, the last to close");
    assert!([
        "before the fork",
        "from the child",
        "after the child closed"
    ]
    .iter()
    .all(|k| sealed.contains(k)));

    // 2. The parent closes first while its child still sets bits: the child's handle keeps
    //    the file in use, the parent does not seal it, and the child, last, does.
    let path = dir.join("parent-closes-first.bloom");
    let f = BloomFilter::open_file(&path, 100_000, 0.01).unwrap();
    assert!(f.insert_if_absent("before the fork"));
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors `pipe` writes.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    let pid = fork();
    if pid == 0 {
        // SAFETY: the read end of the pipe, owned by this `File` only in the child.
        let mut go = unsafe { std::fs::File::from_raw_fd(fds[0]) };
        let mut byte = [0u8];
        let waited = go.read_exact(&mut byte).is_ok();
        let won = f.insert_if_absent("from the child, after the parent closed");
        exit_child(waited && won && f.close().is_ok());
    }
    // SAFETY: the read end is the child's.
    unsafe { libc::close(fds[0]) };
    f.close().unwrap();
    let again = open_within_timeout(&path).unwrap();
    assert!(again.contains("before the fork"));
    drop(again);
    assert!(
        matches!(BloomFilter::load(&path), Err(Error::InUse)),
        "sealed by the parent while its child still has it open"
    );
    // SAFETY: the write end of the pipe, owned by this `File` only in the parent.
    unsafe { std::fs::File::from_raw_fd(fds[1]) }
        .write_all(b"!")
        .unwrap();
    assert_eq!(wait(pid), 0);
    let sealed = BloomFilter::load(&path).expect("sealed by the child, the last to close");
    assert!(sealed.contains("from the child, after the parent closed"));

    std::fs::remove_dir_all(&dir).unwrap();
}
