//! Huge pages by default, once dense: a big filter asks for them when about four new keys
//! per 4 KiB page are in (when 98% of its pages are touched anyway), not before, so a
//! sparsely used one still costs only the 4 KiB pages it touches; a dense snapshot asks as
//! it is loaded, a file-backed filter asks too; a small one, or one built with
//! `huge_pages(false)`, never asks. An expiring filter in memory asks at construction, and as
//! its snapshot is loaded; a populated filter (`populate(true)`) at construction, all of
//! it resident before its first key. (Its own test binary, one test: the
//! process's mappings are compared before and after.)

#[cfg(target_os = "linux")]
use blockbloom::{BloomFilter, GrowableBloomFilter};

/// Per mapping of this process: (size KiB, `AnonHugePages` KiB, advised `MADV_HUGEPAGE`).
#[cfg(target_os = "linux")]
fn mappings() -> Vec<(u64, u64, bool)> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").expect("/proc/self/smaps");
    let kib = |v: &str| -> u64 { v.trim().trim_end_matches("kB").trim().parse().unwrap() };
    let mut out: Vec<(u64, u64, bool)> = Vec::new();
    for line in smaps.lines() {
        if let Some(v) = line.strip_prefix("Size:") {
            out.push((kib(v), 0, false));
        } else if let Some(v) = line.strip_prefix("AnonHugePages:") {
            out.last_mut().unwrap().1 = kib(v);
        } else if let Some(flags) = line.strip_prefix("VmFlags:") {
            out.last_mut().unwrap().2 = flags.split_whitespace().any(|f| f == "hg");
        }
    }
    out
}

/// The one mapping of `bytes` (rounded up to whole pages).
#[cfg(target_os = "linux")]
fn mapping_of(bytes: usize) -> (u64, u64, bool) {
    let kib = (bytes as u64).div_ceil(4096) * 4;
    let found: Vec<_> = mappings().into_iter().filter(|m| m.0 == kib).collect();
    assert_eq!(found.len(), 1, "one mapping of {kib} KiB: {found:?}");
    found[0]
}

#[cfg(target_os = "linux")]
fn thp_available() -> bool {
    std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .is_ok_and(|s| !s.contains("[never]"))
}

#[cfg(target_os = "linux")]
#[test]
fn big_filters_get_huge_pages_once_dense_and_small_ones_never() {
    if !thp_available() {
        eprintln!("no transparent huge pages on this kernel: nothing to see");
        return;
    }
    // 2·10^8 keys at 1%: a 248 MB filter; its mark: 4 keys per 4 KiB page, 242,000 keys.
    let big = BloomFilter::builder()
        .capacity(200_000_000)
        .seed(1)
        .build()
        .unwrap();
    let bytes = big.memory_bytes();
    let pages = bytes as u64 / 4096;
    let before = blockbloom_workload::resident_bytes();
    for i in 0..pages {
        big.insert_if_absent(&i);
    }
    let (_, huge, advised) = mapping_of(bytes);
    let grown = blockbloom_workload::resident_bytes() - before;
    println!(
        "{} MiB filter, {pages} keys (1 per page): advised {advised}, {} MiB resident",
        bytes >> 20,
        grown >> 20
    );
    assert!(!advised && huge == 0, "asked before it was dense");
    // 1 − 1/e of the 4 KiB pages touched (63%); with huge pages at once, all of them.
    assert!(grown < bytes as u64 * 3 / 4, "{grown} bytes resident");
    let t = std::time::Instant::now();
    for i in pages..6 * pages {
        big.insert(&i);
    }
    let (_, huge, advised) = mapping_of(bytes);
    println!(
        "after {} keys ({:.2?}): advised {advised}, {} MiB on huge pages",
        6 * pages,
        t.elapsed(),
        huge >> 10
    );
    assert!(advised, "dense, and not advised");
    assert!(
        huge > 0,
        "advised, but no huge page (MADV_COLLAPSE: Linux 6.1+)"
    );
    assert!(
        (0..6 * pages).all(|i| big.contains(&i)),
        "a key lost in the collapse"
    );
    // Its snapshot, loaded, is dense from the start: advised as it is loaded.
    let dir = blockbloom_workload::procs::temp_dir("huge-snapshot");
    big.save(dir.join("seen.snapshot")).unwrap();
    drop(big);
    let loaded = BloomFilter::load(dir.join("seen.snapshot")).unwrap();
    let (_, huge, advised) = mapping_of(bytes);
    println!(
        "loaded: advised {advised}, {} MiB on huge pages",
        huge >> 10
    );
    assert!(
        advised && huge > 0,
        "a dense snapshot loaded on 4 KiB pages"
    );
    assert!((0..6 * pages).all(|i| loaded.contains(&i)));
    drop(loaded);
    std::fs::remove_dir_all(&dir).unwrap();

    // A file-backed filter is advised too (whether the kernel can back a shared file
    // mapping with huge pages depends on its file system); its keys survive a reopen.
    let dir = blockbloom_workload::procs::temp_dir("huge-file");
    let path = dir.join("seen.bloom");
    let file = BloomFilter::builder()
        .capacity(200_000_000)
        .open_file(&path)
        .unwrap();
    for i in 0..6 * pages {
        file.insert(&i);
    }
    let advised = mappings().iter().any(|m| m.2);
    println!("file-backed, after {} keys: advised {advised}", 6 * pages);
    assert!(advised, "the file mapping was not advised");
    file.close().unwrap();
    let again = BloomFilter::open_file_existing(&path).unwrap();
    assert!(
        (0..6 * pages).all(|i| again.contains(&i)),
        "a key lost in the file"
    );
    drop(again);
    std::fs::remove_dir_all(&dir).unwrap();

    // Opted out, or small: never, however dense.
    let opted_out = BloomFilter::builder()
        .capacity(200_000_000)
        .seed(1)
        .huge_pages(false)
        .build()
        .unwrap();
    let small = GrowableBloomFilter::builder()
        .initial_capacity(10_000_000) // 12 MiB, under the 16 MiB from which it is automatic
        .seed(1)
        .build()
        .unwrap();
    for i in 0..6 * pages {
        opted_out.insert(&i);
        small.insert(&i);
    }
    assert_eq!(small.num_layers(), 1);
    // (Their mappings may have been merged with others: no mapping at all is advised.)
    assert!(mappings().iter().all(|m| !m.2), "a filter advised");
    assert!(opted_out.contains(&0u64) && small.contains(&0u64));
    drop((opted_out, small));

    // An expiring filter in memory is advised at construction (its default: at its capacity
    // it touches every page within its first window), and its first keys land on huge
    // pages; opted out, never.
    let expiring = |huge: bool, populate: bool| {
        blockbloom::ExpiringBloomFilter::builder()
            .expire_after(std::time::Duration::from_secs(3600))
            .capacity(4_000_000) // 11 MB
            .seed(1)
            .huge_pages(huge)
            .populate(populate)
            .build()
            .unwrap()
    };
    let e = expiring(true, false);
    let bytes = e.memory_bytes();
    assert!(
        mapping_of(bytes).2,
        "an expiring filter not advised at construction"
    );
    for i in 0..100_000u64 {
        assert!(e.insert_if_absent(&i));
    }
    let (_, huge, _) = mapping_of(bytes);
    println!(
        "expiring, {} MiB, 10^5 keys: {} MiB on huge pages",
        bytes >> 20,
        huge >> 10
    );
    assert!(huge > 0, "advised at construction, but no huge page");
    // Its snapshot, loaded, likewise.
    let dir = blockbloom_workload::procs::temp_dir("huge-expiring");
    e.save(dir.join("seen.snapshot")).unwrap();
    drop(e);
    let loaded = blockbloom::ExpiringBloomFilter::load(dir.join("seen.snapshot")).unwrap();
    let (_, huge, advised) = mapping_of(bytes);
    assert!(
        advised && huge > 0,
        "an expiring snapshot loaded on 4 KiB pages"
    );
    assert!((0..100_000u64).all(|i| loaded.contains(&i)));
    drop(loaded);
    std::fs::remove_dir_all(&dir).unwrap();
    let e = expiring(false, false);
    for i in 0..100_000u64 {
        assert!(e.insert_if_absent(&i));
    }
    assert!(
        mappings().iter().all(|m| !m.2),
        "an expiring filter advised when opted out"
    );
    drop(e);

    // Populated: every page committed at construction, before any key, advised at once
    // (the plain filter too), its keys found as in any other. One at a time: two advised
    // mappings side by side could merge.
    let check = |bytes: usize, what: &str| {
        let (kib, huge, advised) = mapping_of(bytes);
        let rss = rss_kib_of(bytes);
        println!("populated {what}: {kib} KiB, {rss} KiB resident, {huge} KiB on huge pages");
        assert!(advised, "a populated {what} not advised");
        assert_eq!(rss, kib, "a populated {what} not all resident");
    };
    let f = BloomFilter::builder()
        .capacity(20_000_000) // 25 MB
        .seed(2)
        .populate(true)
        .build()
        .unwrap();
    check(f.memory_bytes(), "filter");
    assert!(f.insert_if_absent(&1u64) && f.contains(&1u64) && !f.contains(&2u64));
    drop(f);
    let e = expiring(true, true);
    check(e.memory_bytes(), "expiring filter");
    assert!(e.insert_if_absent(&1u64) && e.contains(&1u64) && !e.contains(&2u64));
    drop(e);
}

/// `Rss` of the one mapping of `bytes`, in KiB.
#[cfg(target_os = "linux")]
fn rss_kib_of(bytes: usize) -> u64 {
    let kib = (bytes as u64).div_ceil(4096) * 4;
    let smaps = std::fs::read_to_string("/proc/self/smaps").expect("/proc/self/smaps");
    let field = |line: &str, name: &str| -> Option<u64> {
        let v = line.strip_prefix(name)?;
        v.trim().trim_end_matches("kB").trim().parse().ok()
    };
    let mut size = None;
    for line in smaps.lines() {
        if let Some(v) = field(line, "Size:") {
            size = Some(v);
        } else if let (Some(rss), Some(s)) = (field(line, "Rss:"), size) {
            if s == kib {
                return rss;
            }
        }
    }
    panic!("no mapping of {kib} KiB")
}
