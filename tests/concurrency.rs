//! Multi-thread stress tests of the concurrency contract (the loom-tests crate proves the
//! same properties exhaustively on tiny filters; these run it at scale on real threads).

use blockbloom::BloomFilter;
use blockbloom_workload::{same_key_claims, stream_claims, url, SplitMix64};

const DISTINCT: u64 = 100_000;

fn keys() -> Vec<String> {
    (0..DISTINCT).map(url).collect()
}

/// `threads` threads insert overlapping, differently shuffled streams over the same keys.
/// Afterwards: no false negative, no key won by two threads, and the number of `true`s at
/// most the number of distinct keys.
fn overlapping_streams(threads: usize) {
    let keys = keys();
    let f = BloomFilter::builder()
        .capacity(DISTINCT)
        .fpr(0.01)
        .seed(threads as u128)
        .build()
        .unwrap();
    // Each thread sees 3/4 of the keys (a different 3/4 for each), shuffled, and some twice.
    let order = |t: usize| {
        let mut mine: Vec<u64> = (0..DISTINCT)
            .filter(|i| !(i + t as u64).is_multiple_of(4))
            .collect();
        let repeats: Vec<u64> = mine.iter().copied().step_by(3).collect();
        mine.extend(repeats);
        SplitMix64::new(t as u64 + 100).shuffle(&mut mine);
        mine
    };
    let wins = stream_claims(threads, DISTINCT, order, 1, |ids, out| {
        out[0] = f.insert_if_absent(keys[ids[0] as usize].as_str())
    });
    check_claims(&wins, &keys, &f);
}

/// No key won twice, none lost, and nearly all won (keys nobody won are false positives:
/// a fill-dependent share, under 1% at capacity).
fn check_claims(wins: &[u8], keys: &[String], f: &BloomFilter) {
    let mut total = 0u64;
    for (i, &w) in wins.iter().enumerate() {
        assert!(w <= 1, "key {i} was claimed by {w} threads");
        total += w as u64;
        assert!(f.contains(keys[i].as_str()), "false negative for key {i}");
    }
    assert!(total <= DISTINCT);
    assert!(
        total as f64 >= DISTINCT as f64 * 0.985,
        "only {total} winners"
    );
}

/// As [`overlapping_streams`], every thread going through the batched path (batches of
/// 777 keys, each thread in its own shuffled order).
#[test]
fn concurrent_batches_keep_at_most_one_winner() {
    let keys = keys();
    let f = BloomFilter::builder()
        .capacity(DISTINCT)
        .fpr(0.01)
        .seed(9)
        .build()
        .unwrap();
    let order = |t: usize| {
        let mut mine: Vec<u64> = (0..DISTINCT).collect();
        SplitMix64::new(t as u64).shuffle(&mut mine);
        mine
    };
    let wins = stream_claims(4, DISTINCT, order, 777, |ids, out| {
        let batch: Vec<&str> = ids.iter().map(|&i| keys[i as usize].as_str()).collect();
        f.insert_if_absent_many(&batch, out);
    });
    check_claims(&wins, &keys, &f);
    let mut found = vec![false; keys.len()];
    f.contains_many(&keys, &mut found);
    assert!(
        found.iter().all(|&b| b),
        "false negative through contains_many"
    );
}

#[test]
fn two_threads() {
    overlapping_streams(2);
}

#[test]
fn four_threads() {
    overlapping_streams(4);
}

#[test]
fn eight_threads() {
    overlapping_streams(8);
}

/// The worst case for "at most one winner": every thread offers the same keys in the same
/// order, meeting at a barrier before every key, so every key is raced for by all threads at
/// once. The naive rule ("true if any fetch_or changed a bit") double-claims a large share of
/// keys in this test; ours must claim none twice.
#[test]
fn same_key_race_has_at_most_one_winner() {
    let keys = keys();
    let f = BloomFilter::builder()
        .capacity(DISTINCT)
        .fpr(0.001)
        .seed(77)
        .build()
        .unwrap();
    let claims = same_key_claims(4, DISTINCT, |i| {
        f.insert_if_absent(keys[i as usize].as_str())
    });
    let twice = claims.iter().filter(|&&c| c > 1).count();
    let once = claims.iter().filter(|&&c| c == 1).count();
    assert_eq!(
        twice, 0,
        "{twice} keys were claimed by more than one thread"
    );
    assert!(
        once as f64 >= DISTINCT as f64 * 0.99,
        "only {once} keys claimed"
    );
    assert!(keys.iter().all(|k| f.contains(k.as_str())));
}

/// Guarantee 1 across threads: a key inserted before a message is sent is seen by the
/// receiver, for every key (channel send/recv is a release/acquire pair).
#[test]
fn inserts_are_visible_after_synchronisation() {
    let f = BloomFilter::with_capacity(50_000, 0.01).unwrap();
    let (tx, rx) = std::sync::mpsc::sync_channel::<u64>(128);
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..50_000u64 {
                f.insert(&i);
                tx.send(i).unwrap();
            }
            drop(tx);
        });
        s.spawn(|| {
            for i in rx {
                assert!(f.contains(&i), "key {i} not visible after its message");
                assert!(!f.insert_if_absent(&i));
            }
        });
    });
}
