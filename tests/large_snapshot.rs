//! A 1 GiB snapshot loads by streaming into the lazily zeroed allocation: no second copy,
//! and the pages of all-zero blocks never become resident. (Own test binary, so no other
//! test's allocations move the resident-set figure.)

#[cfg(target_os = "linux")]
use blockbloom_workload::resident_bytes;

#[cfg(target_os = "linux")]
#[test]
fn loading_a_1_gib_snapshot_makes_only_used_blocks_resident() {
    use blockbloom::BloomFilter;
    let dir = std::env::temp_dir().join(format!("blockbloom-large-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("large.bloom");
    {
        let f = BloomFilter::builder()
            .capacity(1)
            .bits(8 << 30) // 1 GiB
            .num_hashes(7)
            .seed(1)
            .build()
            .unwrap();
        for i in 0..10_000u64 {
            f.insert(&i);
        }
        f.save(&path).unwrap();
    }
    assert!(std::fs::metadata(&path).unwrap().len() > 1 << 30);
    let before = resident_bytes();
    let g = BloomFilter::load(&path).unwrap();
    let grew = resident_bytes().saturating_sub(before);
    assert!((0..10_000u64).all(|i| g.contains(&i)));
    assert!(
        grew < 128 << 20,
        "loading a 1 GiB snapshot with 10,000 keys made {} MiB resident",
        grew >> 20
    );
    drop(g);
    std::fs::remove_dir_all(&dir).unwrap();
}
