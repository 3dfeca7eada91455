//! AtomicBitSet: exactly one winner per id, iteration, union, snapshots.

use blockbloom::{AtomicBitSet, Error};
use blockbloom_workload::SplitMix64;
use std::sync::atomic::{AtomicU64, Ordering};

#[test]
fn racing_threads_claim_each_id_exactly_once() {
    let universe = 200_000u64;
    let s = AtomicBitSet::new(universe).unwrap();
    let claims: Vec<AtomicU64> = (0..4).map(|_| AtomicU64::new(0)).collect();
    std::thread::scope(|sc| {
        for t in 0..4u64 {
            let (s, claims) = (&s, &claims);
            sc.spawn(move || {
                let mut ids: Vec<u64> = (0..universe).filter(|i| i % 5 != t).collect();
                SplitMix64::new(t).shuffle(&mut ids);
                for i in ids {
                    if s.insert_if_absent(i) {
                        claims[t as usize].fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let total: u64 = claims.iter().map(|c| c.load(Ordering::Relaxed)).sum();
    // Every id is inserted by at least 3 threads; exactly one claim each.
    assert_eq!(total, universe, "every id claimed exactly once");
    assert_eq!(s.len(), universe);
}

#[test]
fn iter_len_remove_and_bounds() {
    let s = AtomicBitSet::new(1000).unwrap();
    assert!(s.is_empty());
    let ids = [999u64, 0, 64, 63, 511, 512, 513];
    for i in ids {
        assert!(s.insert_if_absent(i));
    }
    let mut sorted = ids.to_vec();
    sorted.sort();
    assert_eq!(s.iter().collect::<Vec<_>>(), sorted);
    assert_eq!(s.len(), ids.len() as u64);
    assert!(s.remove(64) && !s.remove(64) && !s.contains(64));
    assert!(!s.contains(1000) && !s.remove(5000));
    assert_eq!(s.try_insert_if_absent(1000), None);
    assert_eq!(AtomicBitSet::new(0).unwrap_err(), Error::EmptyUniverse);
}

#[test]
#[should_panic(expected = "out of range")]
fn insert_out_of_range_panics_with_a_message() {
    AtomicBitSet::new(10).unwrap().insert(10);
}

#[test]
fn snapshots_round_trip_and_damage_is_refused() {
    let s = AtomicBitSet::new(5000).unwrap();
    for i in (0..5000).step_by(7) {
        s.insert(i);
    }
    let mut bytes = Vec::new();
    s.write_to(&mut bytes).unwrap();
    let t = AtomicBitSet::read_from(&bytes[..]).unwrap();
    assert!(t.iter().eq(s.iter()));
    for at in (0..bytes.len()).step_by(13) {
        let mut bad = bytes.clone();
        bad[at] ^= 0x20;
        assert!(AtomicBitSet::read_from(&bad[..]).is_err(), "flip at {at}");
    }
    assert_eq!(
        AtomicBitSet::read_from(&bytes[..bytes.len() - 1]).unwrap_err(),
        Error::Truncated
    );
    // A filter's snapshot is not a bitset's, and vice versa.
    let f = blockbloom::BloomFilter::with_capacity(100, 0.01).unwrap();
    let mut fb = Vec::new();
    f.write_to(&mut fb).unwrap();
    // Each names whose it is and how to read it.
    assert_eq!(
        AtomicBitSet::read_from(&fb[..]).unwrap_err(),
        Error::InvalidSnapshot(
            "a Bloom filter's snapshot or file (BloomFilter::load reads it; ExpiringBloomFilter::load \
             if it expires; a growing one's state is its files)"
        )
    );
    assert_eq!(
        blockbloom::BloomFilter::read_from(&bytes[..]).unwrap_err(),
        Error::InvalidSnapshot("an AtomicBitSet's snapshot (AtomicBitSet::load reads it)")
    );
    let mut unknown = bytes.clone();
    unknown[..8].copy_from_slice(b"BLKBITSU");
    assert_eq!(
        AtomicBitSet::read_from(&unknown[..]).unwrap_err(),
        Error::BadMagic
    );
    // Bits beyond the universe (with a valid checksum) are refused.
    let small = AtomicBitSet::new(10).unwrap();
    let mut sb = Vec::new();
    small.write_to(&mut sb).unwrap();
    sb[128] = 0x00; // the first line, after the 128-byte header
    sb[129] = 0x08; // bit 11
    let n = sb.len();
    let sum = xxhash_rust::xxh3::xxh3_64(&sb[..n - 8]);
    sb[n - 8..].copy_from_slice(&sum.to_le_bytes());
    assert!(matches!(
        AtomicBitSet::read_from(&sb[..]),
        Err(Error::InvalidSnapshot(_))
    ));
    // save / load
    let dir = std::env::temp_dir().join(format!("bb-bitset-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    s.save(dir.join("ids.bits")).unwrap();
    assert!(AtomicBitSet::load(dir.join("ids.bits"))
        .unwrap()
        .iter()
        .eq(s.iter()));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn union_and_lazy_allocation() {
    let a = AtomicBitSet::new(1_000_000_000).unwrap(); // 125 MB mapped, nothing touched
    let b = AtomicBitSet::new(1_000_000_000).unwrap();
    a.insert(5);
    b.insert(999_999_999);
    a.union(&b).unwrap();
    assert_eq!(a.iter().collect::<Vec<_>>(), [5, 999_999_999]);
    assert!(matches!(
        a.union(&AtomicBitSet::new(10).unwrap()),
        Err(Error::Incompatible { .. })
    ));
}
