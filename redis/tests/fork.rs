//! A process forked after a filter connected (what Python's `multiprocessing` does on
//! Linux): the child must open its own connection, not read replies from the parent's
//! socket. A binary of its own with one test, so that no other test's thread runs at the
//! fork (a child of a multi-threaded process inherits the locks other threads held).

#![allow(unsafe_code)] // pipe, fork, _exit, waitpid: SAFETY notes below

mod common;

use blockbloom_redis::RedisBloomFilter;
use blockbloom_workload::url;
use common::Server;
use std::io::{Read, Write};
use std::os::fd::FromRawFd;

#[test]
fn a_forked_child_opens_its_own_connection() {
    if !common::available() {
        return;
    }
    let s = Server::start();
    let mut f = RedisBloomFilter::create(&s.url(), "f", 1_000_000, 1e-6).unwrap();
    assert!(f.insert_if_absent("parent:0").unwrap()); // connected before the fork
    let keys: Vec<String> = (0..3000).map(url).collect();

    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors `pipe` writes.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: this test is the binary's only one, so no other thread holds a lock the
    // child could need; the child leaves with `_exit`, running no destructor of the
    // parent's objects (the server stays the parent's to kill).
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        // The child offers every key while the parent offers the same keys: one byte per
        // answer, 'E' for an error.
        let answers: Vec<u8> = keys
            .iter()
            .map(|k| match f.insert_if_absent(k) {
                Ok(true) => b'1',
                Ok(false) => b'0',
                Err(_) => b'E',
            })
            .collect();
        // SAFETY: the pipe's write end, owned by nothing else in the child.
        let mut w = unsafe { std::fs::File::from_raw_fd(fds[1]) };
        let ok = w.write_all(&answers).is_ok();
        // SAFETY: ends the child without unwinding into the test harness.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    // SAFETY: the write end is the child's; the read end is ours alone from here on.
    unsafe { libc::close(fds[1]) };
    let mine: Vec<bool> = keys
        .iter()
        .map(|k| f.insert_if_absent(k).expect("the parent's connection"))
        .collect();
    let mut theirs = Vec::new();
    // SAFETY: the read end of the pipe, owned by this `File` only.
    unsafe { std::fs::File::from_raw_fd(fds[0]) }
        .read_to_end(&mut theirs)
        .unwrap();
    let mut status = 0;
    // SAFETY: `pid` is our child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);

    assert_eq!(theirs.len(), keys.len());
    assert!(!theirs.contains(&b'E'), "the child got errors");
    let wrong = (0..keys.len())
        .filter(|&i| mine[i] == (theirs[i] == b'1'))
        .count();
    assert_eq!(wrong, 0, "keys won by both processes or by neither");
    assert!((1..100).all(|i| f.insert_if_absent(&format!("parent:{i}")).unwrap()));
}
