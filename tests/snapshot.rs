//! Snapshots: round trips, every kind of damage is a clear error, atomic saves that survive
//! `kill -9`, and saving while other threads insert.

use blockbloom::{BloomFilter, Error};
use blockbloom_workload::procs::temp_dir;
use blockbloom_workload::{url, SplitMix64};
use std::sync::atomic::{AtomicU64, Ordering};

fn filter(capacity: u64, seed: u128) -> BloomFilter {
    BloomFilter::builder()
        .capacity(capacity)
        .fpr(0.01)
        .seed(seed)
        .build()
        .unwrap()
}

fn bytes_of(f: &BloomFilter) -> Vec<u8> {
    let mut v = Vec::new();
    f.write_to(&mut v).unwrap();
    v
}

#[test]
fn round_trip_keeps_every_key_and_parameter() {
    // 1 block, a few blocks, more than one I/O chunk (1024 blocks), and a mapped filter
    for capacity in [1u64, 100, 60_000, 1_000_000] {
        let f = filter(capacity, capacity as u128);
        for i in 0..capacity {
            f.insert(&i);
        }
        let bytes = bytes_of(&f);
        assert_eq!(bytes.len(), 128 + f.num_lines() * 64 + 8);
        let g = BloomFilter::read_from(&bytes[..]).unwrap();
        assert_eq!(g.num_bits(), f.num_bits());
        assert_eq!(g.num_hashes(), f.num_hashes());
        assert_eq!(g.seed(), f.seed());
        assert_eq!(g.capacity(), f.capacity());
        assert_eq!(g.target_fpr(), f.target_fpr());
        assert_eq!(g.count_ones(), f.count_ones());
        assert!((0..capacity).all(|i| g.contains(&i)));
        assert_eq!(bytes_of(&g), bytes, "re-saving gives the same bytes");
    }
}

#[test]
fn every_single_byte_corruption_is_detected() {
    let f = filter(20, 1);
    for i in 0..20u64 {
        f.insert(&i);
    }
    let good = bytes_of(&f);
    for pos in 0..good.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut bad = good.clone();
            bad[pos] ^= flip;
            let r = BloomFilter::read_from(&bad[..]);
            assert!(r.is_err(), "flip {flip:#x} at byte {pos} was accepted");
            assert!(!r.unwrap_err().to_string().is_empty());
        }
    }
}

#[test]
fn every_truncation_is_detected() {
    let f = filter(5_000, 2);
    let good = bytes_of(&f);
    let mut rng = SplitMix64::new(3);
    let mut cuts: Vec<usize> = (0..200).collect();
    cuts.extend((0..200).map(|_| rng.below(good.len() as u64) as usize));
    cuts.extend(good.len() - 9..good.len());
    for cut in cuts {
        assert_eq!(
            BloomFilter::read_from(&good[..cut]).unwrap_err(),
            Error::Truncated,
            "cut at {cut}"
        );
    }
}

#[test]
fn trailing_bytes_are_refused() {
    let mut bytes = bytes_of(&filter(100, 4));
    bytes.push(0);
    assert!(matches!(
        BloomFilter::read_from(&bytes[..]),
        Err(Error::InvalidSnapshot(_))
    ));
}

/// The header checksum (format versions 3 and 4, docs/FILES.md): XXH3-64 of bytes 0..120 with the
/// in-use flag (bit 0 at offset 44) cleared, at offset 120.
fn reseal_header(bytes: &mut [u8]) {
    let mut head = bytes[..120].to_vec();
    head[44] &= !1;
    let sum = xxh3(&head);
    bytes[120..128].copy_from_slice(&sum.to_le_bytes());
}

/// Header edits that keep both checksums valid, so each reaches its own check.
fn with_header(edit: impl Fn(&mut [u8])) -> Result<BloomFilter, Error> {
    let mut bytes = bytes_of(&filter(100, 5));
    edit(&mut bytes);
    reseal_header(&mut bytes);
    let n = bytes.len();
    let sum = xxh3(&bytes[..n - 8]);
    bytes[n - 8..].copy_from_slice(&sum.to_le_bytes());
    BloomFilter::read_from(&bytes[..])
}

fn xxh3(b: &[u8]) -> u64 {
    // The format's checksum: XXH3-64, seed 0, default secret (the reference implementation,
    // not the library's writer).
    xxhash_rust::xxh3::xxh3_64(b)
}

#[test]
fn each_header_check_has_its_error() {
    assert!(
        with_header(|_| {}).is_ok(),
        "the re-checksummed original loads"
    );
    assert_eq!(with_header(|b| b[0] = b'X').unwrap_err(), Error::BadMagic);
    assert_eq!(
        with_header(|b| b[8..12].copy_from_slice(&5u32.to_le_bytes())).unwrap_err(),
        Error::UnsupportedVersion(5)
    );
    // Version 2 (blocks smaller than 512 bits) must name its block size.
    assert!(matches!(
        with_header(|b| {
            b[8..12].copy_from_slice(&2u32.to_le_bytes());
            b[46..48].copy_from_slice(&0u16.to_le_bytes());
        })
        .unwrap_err(),
        Error::InvalidSnapshot(_)
    ));
    // Any header field changed without its header checksum (the whole-file checksum
    // rewritten, as a writer that knew only version 2 would).
    for at in (8..120).step_by(7) {
        let mut bytes = bytes_of(&filter(100, 5));
        bytes[at] ^= 0x10;
        let n = bytes.len();
        let sum = xxh3(&bytes[..n - 8]);
        bytes[n - 8..].copy_from_slice(&sum.to_le_bytes());
        let e = BloomFilter::read_from(&bytes[..]).unwrap_err();
        assert!(
            matches!(
                e,
                Error::HeaderChecksumMismatch { .. } | Error::UnsupportedVersion(_)
            ),
            "byte {at}: {e:?}"
        );
    }
    let e = with_header(|b| b[100] = 1).unwrap_err();
    assert!(
        matches!(e, Error::InvalidSnapshot(_)),
        "reserved bytes: {e:?}"
    );
    assert_eq!(
        with_header(|b| b[12..16].copy_from_slice(&7u32.to_le_bytes())).unwrap_err(),
        Error::UnknownHash(7)
    );
    type Edit = (&'static str, fn(&mut [u8]));
    let edits: [Edit; 4] = [
        ("k = 0", |b| b[40..44].copy_from_slice(&0u32.to_le_bytes())),
        ("k = 33", |b| {
            b[40..44].copy_from_slice(&33u32.to_le_bytes())
        }),
        ("unknown flag", |b| {
            b[44..46].copy_from_slice(&2u16.to_le_bytes())
        }),
        ("capacity 0", |b| {
            b[48..56].copy_from_slice(&0u64.to_le_bytes())
        }),
    ];
    for (what, edit) in edits {
        let e = with_header(edit);
        assert!(matches!(e, Err(Error::InvalidSnapshot(_))), "{what}: {e:?}");
    }
    // The in-use flag of a file-backed filter's file: its checksum is not current.
    assert_eq!(
        with_header(|b| b[44..46].copy_from_slice(&1u16.to_le_bytes())).unwrap_err(),
        Error::InUse
    );
    for fpr in [0.0f64, 1.0, f64::NAN, -0.5] {
        let e = with_header(|b| b[56..64].copy_from_slice(&fpr.to_bits().to_le_bytes()));
        assert!(matches!(e, Err(Error::InvalidSnapshot(_))), "{fpr}: {e:?}");
    }
    // Line counts that do not fit the body, or the machine.
    let e = with_header(|b| b[32..40].copy_from_slice(&0u64.to_le_bytes()));
    assert!(matches!(e, Err(Error::InvalidSnapshot(_))), "{e:?}");
    let e = with_header(|b| b[32..40].copy_from_slice(&1u64.to_le_bytes()));
    assert!(matches!(e, Err(Error::ChecksumMismatch { .. })), "{e:?}");
    let e = with_header(|b| b[32..40].copy_from_slice(&1000u64.to_le_bytes()));
    assert_eq!(e.unwrap_err(), Error::Truncated);
    for huge in [1u64 << 40, 1 << 60, u64::MAX] {
        let e = with_header(|b| b[32..40].copy_from_slice(&huge.to_le_bytes()));
        assert!(
            matches!(
                e,
                Err(Error::TooLarge { .. } | Error::AllocationFailed { .. } | Error::Truncated)
            ),
            "{huge}: {e:?}"
        );
    }
}

#[test]
fn save_and_load_files() {
    let dir = temp_dir("files");
    let path = dir.join("seen.bloom");
    let f = filter(10_000, 6);
    f.insert("a");
    f.save(&path).unwrap();
    f.insert("b");
    f.save(&path).unwrap(); // replaces the old snapshot
    let g = BloomFilter::load(&path).unwrap();
    assert!(g.contains("a") && g.contains("b"));
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["seen.bloom"], "no temporary file left behind");
    let e = BloomFilter::load(dir.join("missing.bloom")).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Io {
                kind: std::io::ErrorKind::NotFound,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("missing.bloom"));
    let e = f.save(dir.join("no-such-dir").join("x.bloom")).unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every insert that returned before `save` began is in the snapshot, while another thread
/// keeps inserting during the save.
#[test]
fn save_while_inserting_keeps_everything_inserted_before() {
    let dir = temp_dir("concurrent");
    let f = filter(400_000, 7);
    let done = AtomicU64::new(0); // keys 0..done have been inserted
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..400_000u64 {
                f.insert(&i);
                done.store(i + 1, Ordering::Release);
            }
        });
        for round in 0..5 {
            let before = done.load(Ordering::Acquire);
            let path = dir.join(format!("s{round}.bloom"));
            f.save(&path).unwrap();
            let g = BloomFilter::load(&path).unwrap();
            assert!(
                (0..before).all(|i| g.contains(&i)),
                "round {round}: lost a key < {before}"
            );
        }
    });
    std::fs::remove_dir_all(&dir).unwrap();
}

const CHILD_ENV: &str = "BLOCKBLOOM_KILL_TEST_PATH";

/// Run by `kill_during_save_never_breaks_the_file` in a child process: saves a growing
/// filter to the same path over and over until killed.
#[test]
#[ignore = "helper: runs only as the child of kill_during_save_never_breaks_the_file"]
fn child_saves_forever() {
    let Some(path) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let f = filter(2_000_000, 8);
    let mut next = 0u64;
    loop {
        for _ in 0..50_000 {
            f.insert(url(next).as_str());
            next += 1;
        }
        f.save(&path).unwrap();
    }
}

#[cfg(unix)]
#[test]
fn kill_during_save_never_breaks_the_file() {
    let dir = temp_dir("kill");
    let path = dir.join("seen.bloom");
    let exe = std::env::current_exe().unwrap();
    let mut rng = SplitMix64::new(11);
    for round in 0..20 {
        let mut child = std::process::Command::new(&exe)
            .args([
                "child_saves_forever",
                "--exact",
                "--ignored",
                "--quiet",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, &path)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Let it save at least once (from round 1 on, the previous round's file exists).
        while round == 0 && !path.exists() {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        std::thread::sleep(std::time::Duration::from_millis(5 + rng.below(120)));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let g = BloomFilter::load(&path)
            .unwrap_or_else(|e| panic!("round {round}: snapshot broken after kill: {e}"));
        assert!(g.contains(url(0).as_str()), "round {round}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
