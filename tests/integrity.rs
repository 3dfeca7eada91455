//! Nothing damaged is ever used: a byte flipped anywhere in the header of a filter file of
//! every kind (fixed, each layer of a growing chain, expiring), or in the lines of a cleanly
//! closed one, is refused by every open, and the file is left byte for byte as it was; a
//! header damaged while the file is open is never sealed over.
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use blockbloom::{
    BloomFilter, Error, ExpiringBloomFilter, FileCondition, GrowableBloomFilter, Verification,
};

const HEADER: usize = 128;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("bb-integrity-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The fixed filter the tests use, in the file at `path` (created if missing).
fn open_fixed(path: &Path) -> BloomFilter {
    BloomFilter::builder()
        .capacity(1000)
        .seed(7)
        .open_file(path)
        .unwrap()
}

fn expiring_builder() -> blockbloom::ExpiringBuilder {
    ExpiringBloomFilter::builder()
        .expire_after(Duration::from_secs(3600))
        .capacity(1000)
        .seed(7)
}

/// Every open of a file of this kind, each `Err` or `Ok(())`.
type Opens = Vec<(&'static str, fn(&Path) -> Result<(), Error>)>;

fn fixed_opens() -> Opens {
    vec![
        ("open_file", |p| {
            BloomFilter::builder()
                .capacity(1000)
                .seed(7)
                .open_file(p)
                .map(drop)
        }),
        ("open_file_existing", |p| {
            BloomFilter::open_file_existing(p).map(drop)
        }),
        ("open_file_existing_with(HeaderOnly)", |p| {
            BloomFilter::open_file_existing_with(p, Verification::HeaderOnly).map(drop)
        }),
        ("load", |p| BloomFilter::load(p).map(drop)),
    ]
}

fn growing_opens() -> Opens {
    vec![
        ("open_file", |p| {
            GrowableBloomFilter::open_file(p, 100, 0.01).map(drop)
        }),
        ("open_file_existing", |p| {
            GrowableBloomFilter::open_file_existing(p).map(drop)
        }),
        ("open_file_existing_with(HeaderOnly)", |p| {
            GrowableBloomFilter::open_file_existing_with(p, Verification::HeaderOnly).map(drop)
        }),
    ]
}

fn expiring_opens() -> Opens {
    vec![
        ("open_file", |p| expiring_builder().open_file(p).map(drop)),
        ("open_file_existing", |p| {
            ExpiringBloomFilter::open_file_existing(p).map(drop)
        }),
        ("open_file_existing_with(HeaderOnly)", |p| {
            ExpiringBloomFilter::open_file_existing_with(p, Verification::HeaderOnly).map(drop)
        }),
        ("load", |p| ExpiringBloomFilter::load(p).map(drop)),
    ]
}

/// Flips each byte of `damaged`'s header in turn (and, with `lines`, bytes of its lines),
/// and checks that every open refuses it and leaves every file of the filter unchanged.
fn every_damage_is_refused(dir: &Path, first: &Path, damaged: &Path, opens: &Opens, lines: bool) {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let before: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    let good = std::fs::read(damaged).unwrap();
    for (name, open) in opens {
        assert_eq!(open(first), Ok(()), "{name}: the good file opens");
    }
    let mut offsets: Vec<usize> = (0..HEADER).collect();
    if lines {
        // The first, a middle and the last byte of the lines, and the checksum after them.
        let end = HEADER + 64 * u64::from_le_bytes(good[32..40].try_into().unwrap()) as usize;
        offsets.extend([HEADER, HEADER + (end - HEADER) / 2 + 5, end - 1, end]);
    }
    for at in offsets {
        for flip in [0xffu8, 0x01, 0x80] {
            if at == 44 && flip == 0x01 {
                continue; // the in-use flag itself: "not closed cleanly", tested below
            }
            let mut bad = good.clone();
            bad[at] ^= flip;
            std::fs::write(damaged, &bad).unwrap();
            for (name, open) in opens {
                // `load` refuses layer files whatever they hold; `HeaderOnly` trusts lines.
                if at >= HEADER && name.contains("HeaderOnly") {
                    continue;
                }
                let r = open(first);
                assert!(r.is_err(), "{name}: byte {at} ^ {flip:#x} opened");
                assert_eq!(
                    std::fs::read(damaged).unwrap(),
                    bad,
                    "{name}: byte {at} changed"
                );
            }
        }
    }
    std::fs::write(damaged, &good).unwrap();
    let after: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    assert!(
        before == after,
        "only the damaged file was touched, and put back"
    );
}

#[test]
fn a_damaged_fixed_file_is_refused_by_every_open_and_left_as_it_was() {
    for bits in [512, 64] {
        let dir = temp_dir(&format!("fixed{bits}"));
        let path = dir.join("s.bloom");
        let f = BloomFilter::builder()
            .capacity(1000)
            .seed(7)
            .block_bits(bits)
            .open_file(&path)
            .unwrap();
        (0..500).for_each(|i| f.insert(&i));
        f.close().unwrap();
        let mut opens = fixed_opens();
        if bits == 64 {
            opens.remove(0); // open_file asks for 512-bit blocks
        }
        every_damage_is_refused(&dir, &path, &path, &opens, true);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn a_damaged_layer_of_a_growing_file_is_refused_and_left_as_it_was() {
    let dir = temp_dir("growing");
    let path = dir.join("s.bloom");
    let g = GrowableBloomFilter::open_file(&path, 100, 0.01).unwrap();
    (0..250u64).for_each(|i| {
        g.insert(&i);
    });
    assert_eq!(g.num_layers(), 2);
    g.close().unwrap();
    let layer1 = dir.join("s.bloom.1");
    every_damage_is_refused(&dir, &path, &path, &growing_opens(), true);
    every_damage_is_refused(&dir, &path, &layer1, &growing_opens(), true);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_damaged_expiring_file_is_refused_and_left_as_it_was() {
    let dir = temp_dir("expiring");
    let path = dir.join("s.bloom");
    let e = expiring_builder().open_file(&path).unwrap();
    (0..500u64).for_each(|i| {
        e.insert(&i);
    });
    e.close().unwrap();
    // The clock line's window word (line 0, word 2) with the header's intact, too.
    let mut opens = expiring_opens();
    every_damage_is_refused(&dir, &path, &path, &opens, true);
    let good = std::fs::read(&path).unwrap();
    let mut bad = good.clone();
    bad[HEADER + 16 + 3] ^= 1;
    std::fs::write(&path, &bad).unwrap();
    opens.retain(|(n, _)| !n.contains("HeaderOnly"));
    for (name, open) in &opens {
        assert!(open(&path).is_err(), "{name}: a damaged window word opened");
    }
    // Even trusting the lines, the window word must be the header's.
    let r = ExpiringBloomFilter::open_file_existing_with(&path, Verification::HeaderOnly);
    assert!(matches!(r, Err(Error::InvalidSnapshot(_))), "{r:?}");
    assert_eq!(std::fs::read(&path).unwrap(), bad);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_file_its_last_user_never_closed_opens_with_its_header_checked() {
    let dir = temp_dir("crashed");
    let path = dir.join("s.bloom");
    let f = open_fixed(&path);
    f.insert("kept");
    f.close().unwrap();
    // The flag set as a killed user leaves it: its lines cannot be checked (the checksum is
    // not current), so a damaged line is not seen, but a damaged header still is.
    let mut crashed = std::fs::read(&path).unwrap();
    crashed[44] |= 1;
    crashed[HEADER + 7] ^= 0x40;
    std::fs::write(&path, &crashed).unwrap();
    let f = BloomFilter::open_file_existing(&path).unwrap();
    assert_eq!(f.file_condition(), Some(FileCondition::NotClosedCleanly));
    assert!(f.contains("kept"));
    drop(f);
    let mut damaged = crashed.clone();
    damaged[44] |= 1;
    damaged[20] ^= 0xff; // the seed
    std::fs::write(&path, &damaged).unwrap();
    assert!(matches!(
        BloomFilter::open_file_existing(&path),
        Err(Error::HeaderChecksumMismatch { .. })
    ));
    assert_eq!(std::fs::read(&path).unwrap(), damaged);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_header_damaged_while_in_use_is_not_sealed_over() {
    use std::os::unix::fs::FileExt;
    let dir = temp_dir("in-use");
    let path = dir.join("s.bloom");
    let f = open_fixed(&path);
    f.insert("x");
    // Another program (or a bad disk) changes the seed under the open filter.
    let other = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    other.write_all_at(&[0xff], 20).unwrap();
    let e = f.close().unwrap_err();
    assert!(e.to_string().contains("not sealing"), "{e}");
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes[44] & 1, 1, "still flagged in use");
    assert!(BloomFilter::open_file_existing(&path).is_err());
    assert!(BloomFilter::load(&path).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn conditions_say_how_the_file_was_found() {
    let dir = temp_dir("conditions");
    let path = dir.join("s.bloom");
    let a = BloomFilter::open_file(&path, 1000, 0.01).unwrap();
    assert_eq!(
        BloomFilter::open_file_existing(&path)
            .unwrap()
            .file_condition(),
        Some(FileCondition::InUse)
    );
    drop(a);
    let b = BloomFilter::open_file_existing_with(&path, Verification::HeaderOnly).unwrap();
    assert_eq!(
        b.file_condition(),
        Some(FileCondition::ClosedCleanly {
            lines_verified: false
        })
    );
    drop(b);
    assert_eq!(
        BloomFilter::with_capacity(10, 0.01)
            .unwrap()
            .file_condition(),
        None
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn files_of_format_version_2_are_refused_with_how_to_convert_them() {
    let dir = temp_dir("v2");
    let path = dir.join("old.bloom");
    let f = BloomFilter::builder()
        .capacity(1000)
        .seed(7)
        .build()
        .unwrap();
    f.insert("x");
    let mut bytes = Vec::new();
    f.write_to(&mut bytes).unwrap();
    // The same filter as version 1 wrote it: a 64-byte header.
    bytes.drain(64..HEADER);
    bytes[8..12].copy_from_slice(&1u32.to_le_bytes());
    bytes[46..48].copy_from_slice(&0u16.to_le_bytes());
    let n = bytes.len();
    let sum = xxhash_rust::xxh3::xxh3_64(&bytes[..n - 8]);
    bytes[n - 8..].copy_from_slice(&sum.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let e = BloomFilter::open_file_existing(&path).unwrap_err();
    assert!(e.to_string().contains("load"), "{e}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    // The conversion the message names.
    BloomFilter::load(&path).unwrap().save(&path).unwrap();
    assert!(BloomFilter::open_file_existing(&path)
        .unwrap()
        .contains("x"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `path`'s file rewritten as format version 3 wrote it, both checksums made anew (the
/// header's and the lines', which may be followed by padding to a page's end).
fn as_version_3(path: &Path) -> Vec<u8> {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[8..12].copy_from_slice(&3u32.to_le_bytes());
    let sum = xxhash_rust::xxh3::xxh3_64(&bytes[..120]);
    bytes[120..128].copy_from_slice(&sum.to_le_bytes());
    let end = HEADER + 64 * u64::from_le_bytes(bytes[32..40].try_into().unwrap()) as usize;
    let sum = xxhash_rust::xxh3::xxh3_64(&bytes[..end]);
    bytes[end..end + 8].copy_from_slice(&sum.to_le_bytes());
    std::fs::write(path, &bytes).unwrap();
    bytes
}

/// A plain file of format version 3, closed cleanly, opens with its lines checked as
/// before: version 4 changed only the expiring filter's lines.
#[test]
fn a_plain_file_of_format_version_3_opens_as_before() {
    let dir = temp_dir("plain-v3");
    let path = dir.join("old.bloom");
    let f = BloomFilter::builder()
        .capacity(1000)
        .seed(7)
        .open_file(&path)
        .unwrap();
    f.insert("x");
    f.close().unwrap();
    as_version_3(&path);
    let g = BloomFilter::open_file_existing(&path).unwrap();
    assert!(g.contains("x") && !g.contains("y"));
    g.close().unwrap();
    assert!(BloomFilter::load(&path).unwrap().contains("x"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An expiring file of format version 3 (4-bit stamps) is refused by every open and by
/// `load`, with how to rebuild it, and left as it was; rebuilt as the message says, it
/// works.
#[test]
fn an_expiring_file_of_format_version_3_is_refused_with_how_to_rebuild_it() {
    let dir = temp_dir("expiring-v3");
    let path = dir.join("old.bloom");
    let day = Duration::from_secs(86_400);
    let builder = || {
        ExpiringBloomFilter::builder()
            .expire_after(day)
            .capacity(1000)
            .seed(7)
    };
    let f = builder().open_file(&path).unwrap();
    f.insert("x");
    f.close().unwrap();
    let bytes = as_version_3(&path);
    let refusals = [
        builder().open_file(&path).unwrap_err(),
        ExpiringBloomFilter::open_file_existing(&path).unwrap_err(),
        ExpiringBloomFilter::load(&path).unwrap_err(),
    ];
    for e in refusals {
        let msg = e.to_string();
        assert!(
            msg.contains("version 3") && msg.contains("rebuild"),
            "{msg}"
        );
        assert!(
            msg.contains("creating it again with the same options"),
            "{msg}"
        );
    }
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "left as it was");
    // The rebuild the message names.
    std::fs::remove_file(&path).unwrap();
    let g = builder().open_file(&path).unwrap();
    assert!(g.insert_if_absent("x") && g.contains("x"));
    drop(g);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every builder records the key format it is given in its files, reads it back, and
/// refuses a file made with another (`Error::Conflict`, `what` "key format").
#[test]
fn key_formats_are_recorded_and_checked_by_every_kind() {
    let dir = temp_dir("key-formats");
    let fixed = dir.join("f.bloom");
    let f = BloomFilter::builder()
        .capacity(100)
        .key_format(5)
        .open_file(&fixed)
        .unwrap();
    assert_eq!(f.key_format(), 5);
    drop(f);
    assert_eq!(BloomFilter::load(&fixed).unwrap().key_format(), 5);
    let growing = dir.join("g.bloom");
    let g = GrowableBloomFilter::builder()
        .initial_capacity(100)
        .key_format(6)
        .open_file(&growing)
        .unwrap();
    (0..300u64).for_each(|i| g.insert(&i));
    assert!(
        g.key_format() == 6 && g.num_layers() > 1,
        "the layers' files too"
    );
    drop(g);
    assert_eq!(
        GrowableBloomFilter::open_file_existing(&growing)
            .unwrap()
            .key_format(),
        6
    );
    // Left in use by a crash, then refused for another key format: left as it was (not
    // sealed by the refusal).
    let mut crashed = std::fs::read(&growing).unwrap();
    crashed[44] |= 1;
    std::fs::write(&growing, &crashed).unwrap();
    let other = GrowableBloomFilter::builder()
        .initial_capacity(100)
        .key_format(0)
        .open_file(&growing);
    assert_eq!(std::fs::read(&growing).unwrap(), crashed);
    assert!(
        matches!(
            other,
            Err(Error::Conflict {
                what: "key format",
                ..
            })
        ),
        "{other:?}"
    );
    let expiring = dir.join("e.bloom");
    let e = expiring_builder()
        .key_format(7)
        .open_file(&expiring)
        .unwrap();
    assert_eq!(e.key_format(), 7);
    drop(e);
    assert_eq!(
        ExpiringBloomFilter::load(&expiring).unwrap().key_format(),
        7
    );
    let other = expiring_builder().key_format(1).open_file(&expiring);
    assert!(
        matches!(
            other,
            Err(Error::Conflict {
                what: "key format",
                ..
            })
        ),
        "{other:?}"
    );
    // Without a key format given, a file keeps its own.
    assert_eq!(
        expiring_builder()
            .open_file(&expiring)
            .unwrap()
            .key_format(),
        7
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A file the open created says so, not "not closed cleanly" (it is created flagged in use).
#[test]
fn a_file_the_open_created_says_so() {
    let dir = temp_dir("created");
    let path = dir.join("s.bloom");
    let f = BloomFilter::open_file(&path, 1000, 0.01).unwrap();
    assert_eq!(f.file_condition(), Some(FileCondition::Created));
    drop(f);
    assert_eq!(
        BloomFilter::open_file(&path, 1000, 0.01)
            .unwrap()
            .file_condition(),
        Some(FileCondition::ClosedCleanly {
            lines_verified: true
        })
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The live words no header checksum can cover, bounded: an expiring file left in use whose
/// newest epoch is ahead of this machine's clock is refused (it would make every key new);
/// a growing chain's layer count is covered by the seal's checksum, and one lowered in a
/// file left in use is caught by the keys of the layer it hides.
#[test]
fn live_words_are_checked_where_no_checksum_covers_them() {
    let dir = temp_dir("live-words");
    // An expiring file left in use (flag set, nobody holding it), its newest epoch moved a
    // year ahead.
    let path = dir.join("e.bloom");
    let e = expiring_builder().open_file(&path).unwrap();
    assert!(e.insert_if_absent("kept"));
    drop(e);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[44] |= 1;
    std::fs::write(&path, &bytes).unwrap();
    let newest = u64::from_le_bytes(bytes[HEADER..HEADER + 8].try_into().unwrap());
    assert!(ExpiringBloomFilter::open_file_existing(&path)
        .unwrap()
        .contains("kept"));
    let mut ahead = std::fs::read(&path).unwrap(); // sealed again by the open's close
    ahead[44] |= 1; // left in use again
    let year_of_epochs = 365 * 24 * 4; // one-hour window: epochs of 15 minutes
    ahead[HEADER..HEADER + 8].copy_from_slice(&(newest + year_of_epochs).to_le_bytes());
    std::fs::write(&path, &ahead).unwrap();
    let r = ExpiringBloomFilter::open_file_existing(&path);
    assert!(matches!(r, Err(Error::InvalidSnapshot(_))), "{r:?}");
    assert_eq!(std::fs::read(&path).unwrap(), ahead, "left as it was");

    // A growing chain of three layers, sealed: its layer count lowered is a checksum
    // mismatch.
    let first = dir.join("g.bloom");
    let g = GrowableBloomFilter::open_file(&first, 100, 0.01).unwrap();
    (0..700u64).for_each(|i| g.insert(&i));
    let layers = g.num_layers();
    assert!(layers >= 3);
    drop(g);
    let good = std::fs::read(&first).unwrap();
    let nlines = u64::from_le_bytes(good[32..40].try_into().unwrap()) as usize;
    let layers_at = HEADER + 64 * nlines + 64 + 64; // trailer_at + LAYERS_AT
    assert_eq!(good[layers_at] as usize, layers - 1);
    // Lowered to 0: layer 1 (200 keys) and the ones after it hidden. (Hiding only the
    // newest layer can hide none: a chain may have made it before any key went there.)
    let mut lowered = good.clone();
    lowered[layers_at] = 0;
    std::fs::write(&first, &lowered).unwrap();
    let r = GrowableBloomFilter::open_file_existing(&first);
    assert!(
        matches!(r, Err(Error::ChecksumMismatch { .. })),
        "{}",
        r.is_ok()
    );
    // The same left in use: the hidden layer holds keys, so the count is known damaged.
    lowered[44] |= 1;
    std::fs::write(&first, &lowered).unwrap();
    let r = GrowableBloomFilter::open_file_existing(&first);
    assert!(
        matches!(r, Err(Error::InvalidSnapshot(_))),
        "{:?}",
        r.map(|g| (g.num_layers(), g.file_condition()))
    );
    assert_eq!(std::fs::read(&first).unwrap(), lowered);
    std::fs::write(&first, &good).unwrap();
    let g = GrowableBloomFilter::open_file_existing(&first).unwrap();
    assert!((0..700u64).all(|i| g.contains(&i)) && g.num_layers() == layers);
    drop(g);
    std::fs::remove_dir_all(&dir).unwrap();
}
