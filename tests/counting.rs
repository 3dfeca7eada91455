//! CountingBloomFilter: measured rate, remove semantics, snapshots, and the concurrency contract at
//! scale (the loom-tests crate checks the same protocol exhaustively on one block).

use blockbloom::math::counting_fpr;
use blockbloom::{CountingBloomFilter, Error};
use blockbloom_workload::{measure_fpr, same_key_claims, shuffled_claims, url, SplitMix64};

const Z999: f64 = 3.29;

fn bound(p: f64, n: u64) -> f64 {
    Z999 * (p * (1.0 - p) / n as f64).sqrt()
}

#[test]
fn measured_rate_matches_the_counting_formula() {
    for (capacity, target, queries) in [(100_000u64, 0.01, 1_000_000u64), (100_000, 0.1, 200_000)] {
        let f = CountingBloomFilter::with_seed(capacity, target, 11).unwrap();
        let measured = measure_fpr(capacity, queries, |k| f.insert(k), |k| f.contains(k));
        let per_key = f.num_counters() as f64 / capacity as f64;
        let theory = counting_fpr(per_key, f.num_hashes());
        eprintln!(
            "counting {capacity} @ {target}: {per_key:.2} counters/key, k={}, {:.2} bytes/key, \
             measured {measured:.5}, formula {theory:.5}",
            f.num_hashes(),
            f.memory_bytes() as f64 / capacity as f64
        );
        assert!((measured - theory).abs() <= bound(theory, queries));
        assert!(measured <= target + bound(target, queries));
    }
}

#[test]
fn removed_keys_go_and_the_rest_stay() {
    let n = 50_000u64;
    let f = CountingBloomFilter::with_seed(n, 0.01, 3).unwrap();
    let keys: Vec<String> = (0..n).map(url).collect();
    for k in &keys {
        f.insert(k.as_str()); // (`insert_if_absent` would skip false positives, which then could not be removed)
    }
    for k in keys.iter().step_by(2) {
        assert!(f.remove(k.as_str()), "an inserted key can be removed");
    }
    for k in keys.iter().skip(1).step_by(2) {
        assert!(
            f.contains(k.as_str()),
            "false negative after removing other keys"
        );
    }
    let still = keys
        .iter()
        .step_by(2)
        .filter(|k| f.contains(k.as_str()))
        .count();
    // Removed keys now answer like never-inserted ones: present only as false positives.
    assert!((still as f64) < 0.02 * (n / 2) as f64, "{still}");
    let est = f.estimated_len() as f64;
    assert!((est - (n / 2) as f64).abs() < 0.02 * n as f64, "{est}");
    // Refusal: a key whose counter is 0 is not "removed".
    let absent = (n..n + 1000)
        .map(url)
        .find(|k| !f.contains(k.as_str()))
        .unwrap();
    assert!(!f.remove(absent.as_str()));
}

/// Threads insert and remove their own keys in a 2-block filter, so keys of different threads
/// share blocks and words. With every update a whole-word compare-exchange, the counters end
/// exactly where the net operations put them: all zero once every key is removed.
#[test]
fn concurrent_inserts_and_removes_of_different_keys_never_corrupt_counters() {
    let f = CountingBloomFilter::with_seed(20, 0.1, 5).unwrap();
    assert!(f.num_counters() <= 512);
    let threads = 4;
    std::thread::scope(|s| {
        for t in 0..threads {
            let f = &f;
            s.spawn(move || {
                let mine: Vec<u64> = (0..3).map(|j| t * 100 + j).collect();
                let mut rng = SplitMix64::new(t);
                for _ in 0..20_000 {
                    let k = mine[rng.below(3) as usize];
                    f.insert(&k);
                    assert!(f.contains(&k), "false negative right after insert");
                    assert!(f.remove(&k), "refused to remove a key this thread holds");
                }
                for k in &mine {
                    f.insert(k);
                }
                for k in &mine {
                    assert!(f.contains(k));
                }
                for k in &mine {
                    assert!(f.remove(k));
                }
            });
        }
    });
    assert_eq!(f.estimated_len(), 0, "every counter back to 0");
}

#[test]
fn overlapping_insert_if_absent_streams_have_at_most_one_winner() {
    const DISTINCT: u64 = 50_000;
    let keys: Vec<String> = (0..DISTINCT).map(url).collect();
    for threads in [2usize, 4, 8] {
        let f = CountingBloomFilter::with_seed(DISTINCT, 0.01, threads as u128).unwrap();
        let wins = shuffled_claims(threads, DISTINCT, 7, |i| {
            f.insert_if_absent(keys[i as usize].as_str())
        });
        for (i, &w) in wins.iter().enumerate() {
            assert!(w <= 1, "key {i} won {w} times with {threads} threads");
            assert!(f.contains(keys[i].as_str()), "false negative");
            assert!(f.estimated_count(keys[i].as_str()) >= 1);
        }
        let total: u64 = wins.iter().map(|&w| w as u64).sum();
        assert!(total as f64 > 0.98 * DISTINCT as f64, "{total}");
        // Losers undid their increments: the counters hold about one insert per key.
        let est = f.estimated_len() as f64;
        assert!(
            (est - DISTINCT as f64).abs() < 0.03 * DISTINCT as f64,
            "{est}"
        );
    }
}

/// The same key raced by 4 threads, 5,000 times (a barrier per key): exactly one winner each
/// time but for false positives, since nothing else writes the filter.
#[test]
fn same_key_race_has_one_winner() {
    let rounds = 5_000u64;
    let f = CountingBloomFilter::with_seed(rounds, 0.001, 9).unwrap();
    let wins = same_key_claims(4, rounds, |r| f.insert_if_absent(&r));
    let doubles = wins.iter().filter(|&&w| w > 1).count();
    let none = wins.iter().filter(|&&w| w == 0).count();
    assert_eq!(doubles, 0);
    assert!(
        none < 50,
        "{none} keys with no winner (false positives at 0.1%)"
    );
}

#[test]
fn bad_parameters_are_errors() {
    use blockbloom::Error;
    assert_eq!(
        CountingBloomFilter::with_capacity(0, 0.01).unwrap_err(),
        Error::ZeroCapacity
    );
    for p in [0.0, 1.0, -1.0, f64::NAN] {
        assert!(matches!(
            CountingBloomFilter::with_capacity(10, p),
            Err(Error::InvalidFpr(_))
        ));
    }
    assert!(matches!(
        CountingBloomFilter::with_capacity(1 << 62, 0.01),
        Err(Error::TooLarge { .. } | Error::AllocationFailed { .. })
    ));
}

/// A snapshot keeps every counter and parameter; every single-byte damage, cut and trailing
/// byte is an error; another kind's snapshot is refused; `save` and `load` round-trip.
#[test]
fn snapshots_keep_the_counters_and_refuse_damage() {
    let f = CountingBloomFilter::with_seed(2_000, 0.01, 9).unwrap();
    for i in 0..2_000u64 {
        f.insert(&i);
        if i % 3 == 0 {
            f.insert(&i);
        }
    }
    for i in (0..2_000u64).step_by(5) {
        assert!(f.remove(&i));
    }
    let mut bytes = Vec::new();
    f.write_to(&mut bytes).unwrap();
    assert_eq!(bytes.len(), 128 + f.num_counters() as usize / 2 + 8);
    let g = CountingBloomFilter::read_from(&bytes[..]).unwrap();
    assert_eq!(
        (
            g.seed(),
            g.num_counters(),
            g.num_hashes(),
            g.capacity(),
            g.target_fpr()
        ),
        (
            f.seed(),
            f.num_counters(),
            f.num_hashes(),
            f.capacity(),
            f.target_fpr()
        )
    );
    for i in 0..3_000u64 {
        assert_eq!(g.estimated_count(&i), f.estimated_count(&i), "key {i}");
    }
    let mut again = Vec::new();
    g.write_to(&mut again).unwrap();
    assert_eq!(again, bytes, "re-saving gives the same bytes");

    let small = CountingBloomFilter::with_seed(20, 0.01, 1).unwrap();
    small.insert("a");
    let mut good = Vec::new();
    small.write_to(&mut good).unwrap();
    for pos in 0..good.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut bad = good.clone();
            bad[pos] ^= flip;
            assert!(
                CountingBloomFilter::read_from(&bad[..]).is_err(),
                "flip {flip:#x} at byte {pos} was accepted"
            );
        }
    }
    for cut in 0..good.len() {
        assert_eq!(
            CountingBloomFilter::read_from(&good[..cut]).unwrap_err(),
            Error::Truncated,
            "cut at {cut}"
        );
    }
    let mut long = good.clone();
    long.push(0);
    assert!(matches!(
        CountingBloomFilter::read_from(&long[..]),
        Err(Error::InvalidSnapshot(_))
    ));
    let mut plain = Vec::new();
    blockbloom::BloomFilter::with_capacity(20, 0.01)
        .unwrap()
        .write_to(&mut plain)
        .unwrap();
    let mut set = Vec::new();
    blockbloom::AtomicBitSet::new(100)
        .unwrap()
        .write_to(&mut set)
        .unwrap();
    for (other, whose) in [(&plain, "a Bloom filter's"), (&set, "an AtomicBitSet's")] {
        let e = CountingBloomFilter::read_from(&other[..]).unwrap_err();
        assert!(e.to_string().contains(whose), "{e}");
    }
    for e in [
        blockbloom::BloomFilter::read_from(&good[..]).unwrap_err(),
        blockbloom::AtomicBitSet::read_from(&good[..]).unwrap_err(),
    ] {
        assert_eq!(
            e,
            Error::InvalidSnapshot(
                "a CountingBloomFilter's snapshot (CountingBloomFilter::load reads it)"
            )
        );
    }

    let dir = blockbloom_workload::procs::temp_dir("counting-save");
    let path = dir.join("c.bloom");
    f.save(&path).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    let h = CountingBloomFilter::load(&path).unwrap();
    assert!((0..2_000u64).all(|i| h.estimated_count(&i) == f.estimated_count(&i)));
    assert!(matches!(
        CountingBloomFilter::load(dir.join("missing")),
        Err(Error::Io { .. })
    ));
}

/// Saving while other threads insert and remove: a key inserted before the save began and
/// never removed is in every snapshot (each word of counters is read at once).
#[test]
fn a_snapshot_taken_during_inserts_and_removes_holds_every_key_kept() {
    let f = CountingBloomFilter::with_seed(50_000, 0.01, 3).unwrap();
    let kept: Vec<u64> = (0..10_000).collect();
    for k in &kept {
        f.insert(k);
    }
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut rng = SplitMix64::new(7);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let k = 1_000_000 + rng.below(20_000);
                f.insert(&k);
                assert!(f.remove(&k));
            }
        });
        for _ in 0..20 {
            let mut bytes = Vec::new();
            f.write_to(&mut bytes).unwrap();
            let g = CountingBloomFilter::read_from(&bytes[..]).unwrap();
            let lost = kept.iter().filter(|k| !g.contains(*k)).count();
            assert_eq!(lost, 0, "keys kept throughout missing from a snapshot");
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
}
