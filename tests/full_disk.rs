//! File-backed filters on a file system that fills up. A filter file is mapped, and a write
//! through a mapping to a page the file system has no room for is `SIGBUS`, which kills
//! the process; so a filter file's blocks are reserved when it is created or opened, and
//! running out of space is an error there (`ErrorKind::StorageFull`), never later.
//!
//! The file system is a 2 MiB tmpfs, mounted in a mount namespace of its own (`unshare`),
//! so nothing is left mounted however the test ends. The `inside` test does the work in
//! that namespace (it is a no-op in a normal run); `a_full_disk_is_an_error_not_a_crash`
//! starts it there and fails if it did not finish — or was killed by a signal. Mounting
//! needs root (or a user namespace): without it the test says so and passes, unless
//! `BLOCKBLOOM_REQUIRE_ALL` is set (as CI sets it).
#![cfg(target_os = "linux")]

use blockbloom::{BloomFilter, Error, GrowableBloomFilter};
use blockbloom_workload::url;
use std::io::{ErrorKind, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;

const INSIDE: &str = "BB_FULL_DISK_DIR";

#[test]
fn a_full_disk_is_an_error_not_a_crash() {
    let unshare = ["--mount", "--propagation", "private"];
    let can = Command::new("unshare")
        .args(unshare)
        .args(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", "/mnt"])
        .status()
        .is_ok_and(|s| s.success());
    if !can {
        assert!(
            std::env::var_os("BLOCKBLOOM_REQUIRE_ALL").is_none(),
            "cannot mount a tmpfs in a mount namespace (unshare, mount: root needed)"
        );
        eprintln!("SKIPPED: cannot mount a tmpfs in a mount namespace (unshare, mount)");
        return;
    }
    let dir = std::env::temp_dir().join(format!("bb-full-disk-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let status = Command::new("unshare")
        .args(unshare)
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", "inside", "--nocapture", "--test-threads=1"])
        .env(INSIDE, &dir)
        .status()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        status.success(),
        "the filter process failed: {status}{}",
        if status.signal() == Some(libc::SIGBUS) {
            " (SIGBUS: a write to the mapped file found no space)"
        } else {
            ""
        }
    );
}

/// The entries of `dir`, sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Fills the file system of `dir` with a file: `Err` (`StorageFull`) when it is full.
fn fill(dir: &Path) {
    let mut f = std::fs::File::create(dir.join("filler")).unwrap();
    let chunk = vec![1u8; 4096];
    loop {
        if let Err(e) = f.write_all(&chunk).and_then(|()| f.sync_all()) {
            assert_eq!(e.kind(), ErrorKind::StorageFull, "{e}");
            return;
        }
    }
}

fn is_full(e: &Error) -> bool {
    matches!(
        e,
        Error::Io {
            kind: ErrorKind::StorageFull,
            ..
        }
    )
}

/// In the namespace: mounts a 2 MiB tmpfs on `BB_FULL_DISK_DIR` and runs the cases there.
#[test]
fn inside() {
    let Some(dir) = std::env::var_os(INSIDE) else {
        return; // a normal run
    };
    let dir = Path::new(&dir);
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=2m", "tmpfs"])
        .arg(dir)
        .status()
        .unwrap();
    assert!(mounted.success());

    // 1. A filter that cannot fit: an error, and nothing left behind.
    let e = BloomFilter::open_file(dir.join("big.bloom"), 10_000_000, 0.01).unwrap_err();
    assert!(is_full(&e), "{e}");
    assert!(e.to_string().contains("big.bloom"), "{e}");
    assert_eq!(entries(dir), Vec::<String>::new());

    // 2. A filter that fits, then the disk fills up: every insert still lands, and the file
    //    is sealed on close.
    let path = dir.join("seen.bloom");
    let f = BloomFilter::open_file(&path, 1_000_000, 0.01).unwrap();
    fill(dir);
    let new = (0..1_000_000)
        .filter(|&i| f.insert_if_absent(&url(i)))
        .count();
    assert!(new > 990_000, "{new}");
    f.close().unwrap();
    let sealed = BloomFilter::load(&path).unwrap();
    assert!((0..1_000_000).all(|i| sealed.contains(&url(i))));
    drop(sealed);
    std::fs::remove_file(&path).unwrap();
    std::fs::remove_file(dir.join("filler")).unwrap();

    // 3. An existing file with holes (a sparse copy) that the disk cannot hold in full: the
    //    open is refused, before anything is written through the mapping.
    let elsewhere = std::env::temp_dir().join(format!("bb-sparse-{}.bloom", std::process::id()));
    let _ = std::fs::remove_file(&elsewhere);
    let f = BloomFilter::open_file(&elsewhere, 2_000_000, 0.01).unwrap();
    assert!(f.insert_if_absent("a key"));
    f.close().unwrap();
    let copy = dir.join("copy.bloom");
    let copied = Command::new("cp")
        .arg("--sparse=always")
        .arg(&elsewhere)
        .arg(&copy)
        .status()
        .unwrap();
    std::fs::remove_file(&elsewhere).unwrap();
    assert!(copied.success());
    let e = BloomFilter::open_file_existing(&copy).unwrap_err();
    assert!(is_full(&e), "{e}");
    assert!(BloomFilter::load(&copy).unwrap().contains("a key")); // still a good snapshot
    std::fs::remove_file(&copy).unwrap();

    // 4. A growing chain on a disk that fills: a layer that does not fit is not made
    //    (`growth_failed`), and the chain keeps every key it took in the layers it has.
    let path = dir.join("grow.bloom");
    let g = GrowableBloomFilter::open_file(&path, 10_000, 0.01).unwrap();
    let mut n = 0;
    while !g.growth_failed() {
        assert!(n < 3_000_000, "the chain never ran out of space");
        g.insert_if_absent(&url(n));
        n += 1;
    }
    for i in n..n + 100_000 {
        g.insert_if_absent(&url(i)); // into the last layer
    }
    assert!((0..n + 100_000).all(|i| g.contains(&url(i))));
    g.close().unwrap();
    let again = GrowableBloomFilter::open_file_existing(&path).unwrap();
    assert!((0..n + 100_000).all(|i| again.contains(&url(i))));
    drop(again);

    let unmounted = Command::new("umount").arg(dir).status().unwrap();
    assert!(unmounted.success());
}
