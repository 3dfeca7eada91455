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
