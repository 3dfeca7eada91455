//! Construction is O(1): a huge filter's pages are not touched until used.
//! (Its own test binary, so no other test's allocations move the resident-set figure.)

#[cfg(target_os = "linux")]
use blockbloom_workload::resident_bytes;

#[cfg(target_os = "linux")]
#[test]
fn a_4_gib_filter_costs_no_resident_memory_until_used() {
    use blockbloom::BloomFilter;
    let before = resident_bytes();
    let f = BloomFilter::builder()
        .capacity(3_000_000_000)
        .fpr(0.01)
        .build()
        .unwrap();
    assert!(f.memory_bytes() > 3 << 30, "{}", f.memory_bytes());
    let after = resident_bytes();
    assert!(
        after - before < 64 << 20,
        "building a {} MiB filter made {} MiB resident",
        f.memory_bytes() >> 20,
        (after - before) >> 20
    );
    // Using it touches only the pages of the blocks used.
    for i in 0..1000u64 {
        assert!(f.insert_if_absent(&i));
    }
    assert!(resident_bytes() - before < 64 << 20);
    assert!((0..1000u64).all(|i| f.contains(&i)));
    drop(f);
}

/// The same for a new expiring filter in a file: its first calls map only the pages of the
/// lines they use (a first call that swept the whole filter read all of the file into this
/// process's resident set).
#[cfg(target_os = "linux")]
#[test]
fn a_new_expiring_file_maps_only_the_pages_its_keys_use() {
    use blockbloom::ExpiringBloomFilter;
    let dir = blockbloom_workload::procs::temp_dir("lazy-expiring");
    let before = resident_bytes();
    let f = ExpiringBloomFilter::builder()
        .expire_after(std::time::Duration::from_secs(3600))
        .capacity(150_000_000)
        .open_file(dir.join("seen.bloom"))
        .unwrap();
    assert!(f.memory_bytes() > 300 << 20, "{}", f.memory_bytes());
    for i in 0..1000u64 {
        assert!(f.insert_if_absent(&i));
    }
    let grown = resident_bytes().saturating_sub(before);
    assert!(
        grown < 64 << 20,
        "1,000 keys in a new {} MiB file made {} MiB resident",
        f.memory_bytes() >> 20,
        grown >> 20
    );
    assert!((0..1000u64).all(|i| f.contains(&i)));
    drop(f);
    std::fs::remove_dir_all(dir).unwrap();
}

/// The sizes (KiB) of this process's mappings marked `MADV_HUGEPAGE` (`VmFlags` has `hg`).
#[cfg(target_os = "linux")]
fn huge_page_advised_kib() -> Vec<u64> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").expect("/proc/self/smaps");
    let mut sizes = Vec::new();
    let mut size = 0;
    for line in smaps.lines() {
        if let Some(kib) = line.strip_prefix("Size:") {
            size = kib
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()
                .expect("Size: N kB");
        } else if let Some(flags) = line.strip_prefix("VmFlags:") {
            if flags.split_whitespace().any(|f| f == "hg") {
                sizes.push(size);
            }
        }
    }
    sizes
}

/// `huge_pages(true)` marks the filter's own mapping, and nothing else, `MADV_HUGEPAGE`; the
/// mark goes with the filter. (Where the kernel has no transparent huge pages the advice is
/// refused, harmlessly, and there is nothing to see.)
#[cfg(target_os = "linux")]
#[test]
fn huge_pages_are_asked_for_the_filter_s_own_mapping() {
    use blockbloom::BloomFilter;
    if !std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists() {
        return;
    }
    let build = |huge| {
        BloomFilter::builder()
            .capacity(10_000_000)
            .seed(4)
            .huge_pages(huge)
            .build()
            .unwrap()
    };
    let before = huge_page_advised_kib();
    let plain = build(false);
    assert_eq!(huge_page_advised_kib(), before, "asked without huge_pages");
    let huge = build(true);
    let mut new = huge_page_advised_kib();
    for s in &before {
        let i = new
            .iter()
            .position(|n| n == s)
            .expect("a mapping went away");
        new.remove(i);
    }
    let kib = (huge.memory_bytes() as u64).div_ceil(4096) * 4;
    assert_eq!(new, [kib], "the filter's {kib} KiB mapping");
    for i in 0..10_000u64 {
        assert_eq!(huge.insert_if_absent(&i), plain.insert_if_absent(&i));
    }
    drop(huge);
    assert_eq!(huge_page_advised_kib(), before);
}
