//! Every block size (64, 128, 256, 512 bits) keeps the filter's contract: the rate asked
//! for at capacity, no false negatives, at most one winner per new key under a lock-step
//! race, snapshots and files that record the size, and refusals of what does not match.

use blockbloom::math::{blocked_fpr_sized, BLOCK_SIZES};
use blockbloom::{BloomFilter, Error, Layout};
use blockbloom_workload::{same_key_claims, url};

fn filter(capacity: u64, fpr: f64, block_bits: u32, seed: u128) -> BloomFilter {
    BloomFilter::builder()
        .capacity(capacity)
        .fpr(fpr)
        .block_bits(block_bits)
        .seed(seed)
        .build()
        .unwrap()
}

/// Filled to capacity, the measured rate on never-inserted keys is within the statistical
/// bound of the target (the binomial's 5 sigma above, and not far below: sizing prices the
/// block size in rather than wasting bits), and no inserted key is missing.
#[test]
fn every_block_size_meets_its_rate_at_capacity() {
    const N: u64 = 100_000;
    const QUERIES: u64 = 400_000;
    for fpr in [0.01, 0.001] {
        for bits in BLOCK_SIZES {
            let f = filter(N, fpr, bits, 5 + bits as u128);
            assert_eq!(f.block_bits(), bits);
            let fresh = (0..N)
                .filter(|&i| f.insert_if_absent(url(i).as_str()))
                .count();
            assert!(
                fresh as f64 >= N as f64 * (1.0 - 2.0 * fpr),
                "{bits}: {fresh}"
            );
            assert!(
                (0..N).all(|i| f.contains(url(i).as_str())),
                "false negative at {bits}"
            );
            assert!((0..N).all(|i| !f.insert_if_absent(url(i).as_str())));
            let fp = (N..N + QUERIES)
                .filter(|&i| f.contains(url(i).as_str()))
                .count() as f64;
            let expected = QUERIES as f64 * fpr;
            let sigma = (QUERIES as f64 * fpr * (1.0 - fpr)).sqrt();
            let bpk = f.num_bits() as f64 / N as f64;
            let theory = blocked_fpr_sized(bpk, f.num_hashes(), bits);
            assert!(theory <= fpr * 1.0001, "{bits}: sized for {theory}");
            assert!(
                fp <= expected + 5.0 * sigma,
                "block {bits}, fpr {fpr}: {fp} false positives, expected {expected}"
            );
            assert!(
                fp >= expected * 0.5,
                "block {bits}, fpr {fpr}: {fp} false positives: sizing wastes bits"
            );
            println!(
                "block {bits:>3} bits, fpr {fpr}: {bpk:.2} bits/key, k = {}, measured {:.4}%",
                f.num_hashes(),
                100.0 * fp / QUERIES as f64
            );
        }
    }
}

#[test]
fn smaller_blocks_need_more_bits_for_the_same_rate() {
    let sizes: Vec<u64> = BLOCK_SIZES
        .iter()
        .map(|&b| filter(1_000_000, 0.01, b, 1).num_bits())
        .collect();
    assert!(sizes.windows(2).all(|w| w[0] > w[1]), "{sizes:?}");
    // 512 is the default, with the bits of every earlier release.
    let default = BloomFilter::builder()
        .capacity(1_000_000)
        .seed(1)
        .build()
        .unwrap();
    assert_eq!(default.block_bits(), 512);
    assert_eq!(default.num_bits(), sizes[3]);
}

/// Every thread offers the same keys in the same order, meeting at a barrier before every
/// key: no key may be claimed twice, at any block size.
#[test]
fn same_key_race_has_at_most_one_winner_at_every_block_size() {
    const DISTINCT: u64 = 30_000;
    let keys: Vec<String> = (0..DISTINCT).map(url).collect();
    for bits in BLOCK_SIZES {
        let f = filter(DISTINCT, 0.001, bits, 77);
        let claims = same_key_claims(4, DISTINCT, |i| {
            f.insert_if_absent(keys[i as usize].as_str())
        });
        let twice = claims.iter().filter(|&&c| c > 1).count();
        let once = claims.iter().filter(|&&c| c == 1).count();
        assert_eq!(twice, 0, "block {bits}: {twice} keys claimed twice");
        assert!(
            once as f64 >= DISTINCT as f64 * 0.99,
            "block {bits}: {once}"
        );
        assert!(keys.iter().all(|k| f.contains(k.as_str())));
    }
}

#[test]
fn batches_answer_like_one_call_at_a_time_at_every_block_size() {
    let links: Vec<String> = (0..20_000).map(|i| url(i % 13_000)).collect();
    for bits in BLOCK_SIZES {
        let (a, b) = (filter(10_000, 0.01, bits, 3), filter(10_000, 0.01, bits, 3));
        let mut got = vec![false; links.len()];
        a.insert_if_absent_many(&links, &mut got);
        let want: Vec<bool> = links.iter().map(|u| b.insert_if_absent(u)).collect();
        assert_eq!(got, want, "block {bits}");
        assert_eq!(a.to_bytes_for_test(), b.to_bytes_for_test());
    }
}

trait Bytes {
    fn to_bytes_for_test(&self) -> Vec<u8>;
}

impl Bytes for BloomFilter {
    fn to_bytes_for_test(&self) -> Vec<u8> {
        let mut v = Vec::new();
        self.write_to(&mut v).unwrap();
        v
    }
}

#[test]
fn snapshots_record_the_block_size() {
    for bits in BLOCK_SIZES {
        let f = filter(5_000, 0.01, bits, 9);
        (0..5_000).for_each(|i| f.insert(url(i).as_str()));
        let bytes = f.to_bytes_for_test();
        // Every size is written as version 4, with the size at offset 46.
        let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
        let field = u16::from_le_bytes(bytes[46..48].try_into().unwrap());
        assert_eq!((version, u32::from(field)), (4, bits));
        let g = BloomFilter::read_from(&bytes[..]).unwrap();
        assert_eq!(g.block_bits(), bits);
        assert_eq!(g.probe("x"), f.probe("x"));
        assert!((0..5_000).all(|i| g.contains(url(i).as_str())));
        assert_eq!(g.to_bytes_for_test(), bytes);
    }
}

/// Rewrites the checksums after editing a header (so that the reader's field checks, not the
/// checksums, must catch the edit): the header's (versions 3 and 4) and the whole file's.
fn reseal(bytes: &mut [u8]) {
    if u32::from_le_bytes(bytes[8..12].try_into().unwrap()) >= 3 {
        let sum = xxhash_rust::xxh3::xxh3_64(&bytes[..120]);
        bytes[120..128].copy_from_slice(&sum.to_le_bytes());
    }
    let end = bytes.len() - 8;
    let sum = xxhash_rust::xxh3::xxh3_64(&bytes[..end]);
    bytes[end..].copy_from_slice(&sum.to_le_bytes());
}

#[test]
fn damaged_or_unknown_block_sizes_are_refused() {
    let f = filter(1_000, 0.01, 64, 2);
    let good = f.to_bytes_for_test();
    let mut bad_size = good.clone();
    bad_size[46..48].copy_from_slice(&100u16.to_le_bytes());
    reseal(&mut bad_size);
    assert!(matches!(
        BloomFilter::read_from(&bad_size[..]),
        Err(Error::InvalidSnapshot(_))
    ));
    // A version-1 header (512-bit blocks, 64 bytes) must not carry a size.
    let g = filter(1_000, 0.01, 512, 2);
    let mut v1 = g.to_bytes_for_test();
    v1.drain(64..128);
    v1[8..12].copy_from_slice(&1u32.to_le_bytes());
    v1[46..48].copy_from_slice(&0u16.to_le_bytes());
    reseal(&mut v1);
    assert_eq!(
        BloomFilter::read_from(&v1[..]).unwrap().probe("x"),
        g.probe("x")
    );
    v1[46..48].copy_from_slice(&64u16.to_le_bytes());
    reseal(&mut v1);
    assert!(BloomFilter::read_from(&v1[..]).is_err());
    // A newer version than this build knows.
    let mut v5 = good.clone();
    v5[8..12].copy_from_slice(&5u32.to_le_bytes());
    reseal(&mut v5);
    assert!(matches!(
        BloomFilter::read_from(&v5[..]),
        Err(Error::UnsupportedVersion(5))
    ));
    // Version 3 is version 4 but for expiring filters: a plain filter's reads the same.
    let mut v3 = good.clone();
    v3[8..12].copy_from_slice(&3u32.to_le_bytes());
    reseal(&mut v3);
    assert_eq!(
        BloomFilter::read_from(&v3[..]).unwrap().probe("x"),
        f.probe("x")
    );
    assert!(matches!(
        BloomFilter::builder().capacity(10).block_bits(32).build(),
        Err(Error::InvalidBlockBits(32))
    ));
    assert!(Layout::with_block_bits(1, 10, 5, 1024).is_err());
}

#[test]
fn unions_need_the_same_block_size() {
    let a = filter(1_000, 0.01, 64, 4);
    let b = BloomFilter::builder()
        .capacity(1_000)
        .bits(a.num_bits())
        .num_hashes(a.num_hashes())
        .seed(4)
        .build()
        .unwrap();
    assert_eq!(
        (a.num_bits(), a.num_hashes()),
        (b.num_bits(), b.num_hashes())
    );
    assert!(matches!(
        a.union(&b),
        Err(Error::Incompatible { what: "block size" })
    ));
    let c = filter(1_000, 0.01, 64, 4);
    c.insert("only in c");
    a.union(&c).unwrap();
    assert!(a.contains("only in c"));
}

#[cfg(unix)]
#[test]
fn file_backed_filters_record_the_block_size() {
    let dir = std::env::temp_dir().join(format!("bb-block-size-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("seen.bloom");
    let _ = std::fs::remove_file(&path);
    {
        let f = BloomFilter::builder()
            .capacity(10_000)
            .fpr(0.01)
            .block_bits(128)
            .open_file(&path)
            .unwrap();
        assert!(f.insert_if_absent("https://example.com/"));
        f.close().unwrap();
    }
    let g = BloomFilter::open_file_existing(&path).unwrap();
    assert_eq!(g.block_bits(), 128);
    assert!(!g.insert_if_absent("https://example.com/"));
    drop(g);
    // The same capacity and rate with another block size is a conflict, named.
    match BloomFilter::open_file(&path, 10_000, 0.01) {
        Err(Error::Conflict { what, .. }) => assert_eq!(what, "block size"),
        other => panic!("expected a block-size conflict, got {other:?}"),
    }
    // A snapshot loaded from the sealed file keeps the size too.
    assert_eq!(BloomFilter::load(&path).unwrap().block_bits(), 128);
    std::fs::remove_dir_all(&dir).unwrap();
}
