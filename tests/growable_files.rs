//! A file-backed GrowableBloomFilter as one thing on disk: files in its layers' places that
//! are not its layers are refused at open (before any key is read), growth that cannot
//! happen is reported with its cause before keys go in (`try_reserve`), and chains with one
//! seed merge layer by layer (`union`).
#![cfg(unix)]

use blockbloom::{Error, GrowableBloomFilter};
use blockbloom_workload::procs::temp_dir;

fn foreign_path(r: Result<GrowableBloomFilter, Error>) -> String {
    match r {
        Err(Error::ForeignLayer { path, .. }) => path,
        Err(e) => panic!("expected ForeignLayer, got {e}"),
        Ok(_) => panic!("expected ForeignLayer, got a filter"),
    }
}

/// `rm s.bloom` with `s.bloom.1` left: a new chain at `s.bloom` is refused (it would take
/// the leftover for its second layer and fail to grow), and so is one whose first file
/// exists; a directory in the way likewise. The chain's own prepared layer is adopted.
#[test]
fn files_in_the_layers_places_are_refused_at_open() {
    let dir = temp_dir("foreign");
    let path = dir.join("s.bloom");
    let old = GrowableBloomFilter::open_file(&path, 1_000, 0.01).unwrap();
    for i in 0..3_000u32 {
        old.insert(&i);
    }
    assert_eq!(old.num_layers(), 2);
    old.close().unwrap();
    std::fs::remove_file(&path).unwrap();
    let stale = dir.join("s.bloom.1").display().to_string();
    assert_eq!(
        foreign_path(GrowableBloomFilter::open_file(&path, 1_000, 0.01)),
        stale
    );
    assert!(!path.exists(), "the refused open created the first file");

    // A first file made by another chain, the leftover beside it.
    std::fs::rename(&stale, dir.join("keep")).unwrap();
    drop(GrowableBloomFilter::open_file(&path, 1_000, 0.01).unwrap());
    std::fs::rename(dir.join("keep"), &stale).unwrap();
    let err = GrowableBloomFilter::open_file_existing(&path)
        .err()
        .unwrap();
    assert!(err.to_string().contains("s.bloom.1"), "{err}");
    assert!(err.to_string().contains("another chain"), "{err}");

    // A directory where layer 2 goes.
    std::fs::remove_file(&stale).unwrap();
    std::fs::create_dir(dir.join("s.bloom.2")).unwrap();
    assert_eq!(
        foreign_path(GrowableBloomFilter::open_file_existing(&path)),
        dir.join("s.bloom.2").display().to_string()
    );
    std::fs::remove_dir(dir.join("s.bloom.2")).unwrap();

    // The chain's own next layer, made by a grower stopped before it counted it, is fine.
    let f = GrowableBloomFilter::open_file_existing(&path).unwrap();
    for i in 0..1_500u32 {
        f.insert(&i);
    }
    assert_eq!(f.num_layers(), 2);
    drop(f);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `try_reserve` grows before the keys come, and says why it cannot: a directory where the
/// next layer goes (made after the chain was opened), or a directory it may not write.
#[test]
fn try_reserve_grows_ahead_or_reports_the_cause() {
    let dir = temp_dir("reserve");
    let path = dir.join("s.bloom");
    let f = GrowableBloomFilter::open_file(&path, 1_000, 0.01).unwrap();
    f.try_reserve(1_000).unwrap();
    assert_eq!(f.num_layers(), 1);
    for i in 0..900u32 {
        f.insert(&i);
    }
    std::fs::create_dir(dir.join("s.bloom.1")).unwrap();
    match f.try_reserve(200) {
        Err(Error::ForeignLayer { path, .. }) => assert!(path.ends_with("s.bloom.1")),
        other => panic!("{other:?}"),
    }
    assert!(f.growth_failed());
    assert_eq!(f.num_layers(), 1);
    std::fs::remove_dir(dir.join("s.bloom.1")).unwrap();
    f.try_reserve(200).unwrap(); // the cause removed: it grows
    assert_eq!(f.num_layers(), 2);
    f.try_reserve(5_000).unwrap(); // 2k is too small: 4k + … up to a layer of 8k
    assert_eq!(f.num_layers(), 4);
    drop(f);

    // In memory: the same arithmetic.
    let m = GrowableBloomFilter::new(100, 0.01).unwrap();
    m.try_reserve(100).unwrap();
    assert_eq!(m.num_layers(), 1);
    m.try_reserve(101).unwrap();
    assert_eq!(m.num_layers(), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Chains of different lengths with one seed merge into one that has every key of both;
/// other seeds are refused, naming the difference.
#[test]
fn union_merges_chains_of_different_lengths() {
    let dir = temp_dir("union");
    let build = |name: &str, seed: u128| {
        GrowableBloomFilter::builder()
            .initial_capacity(1_000)
            .seed(seed)
            .open_file(dir.join(name))
            .unwrap()
    };
    let (a, b) = (build("a", 5), build("b", 5));
    for i in 0..500u32 {
        a.insert(&i);
    }
    for i in 10_000..20_000u32 {
        b.insert(&i);
    }
    assert!(a.num_layers() == 1 && b.num_layers() == 4);
    let out = build("out", 5);
    out.union(&a).unwrap();
    out.union(&b).unwrap();
    assert_eq!(out.num_layers(), 4);
    assert!((0..500u32).chain(10_000..20_000).all(|i| out.contains(&i)));
    assert_eq!(out.estimated_len(), a.estimated_len() + b.estimated_len());
    let other = build("c", 6);
    assert_eq!(
        other.union(&a).err(),
        Some(Error::Incompatible { what: "seed" })
    );
    drop((a, b, other));
    out.close().unwrap();
    let again = GrowableBloomFilter::open_file_existing(dir.join("out")).unwrap();
    assert!((0..500u32)
        .chain(10_000..20_000)
        .all(|i| again.contains(&i)));
    drop(again);
    std::fs::remove_dir_all(&dir).unwrap();
}
