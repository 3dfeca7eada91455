//! The batched (prefetching) operations give exactly the answers of the one-at-a-time calls,
//! leave the same bits behind, and keep the concurrency contract.

use blockbloom::{BloomFilter, PREFETCH_DISTANCE};
use blockbloom_workload::{dup_stream, url};

fn pair(capacity: u64, fpr: f64, seed: u128) -> (BloomFilter, BloomFilter) {
    let make = || {
        BloomFilter::builder()
            .capacity(capacity)
            .fpr(fpr)
            .seed(seed)
            .build()
            .unwrap()
    };
    (make(), make())
}

fn same_bits(a: &BloomFilter, b: &BloomFilter) -> bool {
    let (mut x, mut y) = (Vec::new(), Vec::new());
    a.write_to(&mut x).unwrap();
    b.write_to(&mut y).unwrap();
    x == y
}

/// Batch sizes around the pipeline's depth, where the warm-up and drain code paths differ.
fn lengths() -> Vec<usize> {
    let d = PREFETCH_DISTANCE;
    vec![
        0,
        1,
        2,
        d - 1,
        d,
        d + 1,
        2 * d,
        2 * d + 3,
        3 * d - 1,
        1000,
        20_000,
    ]
}

#[test]
fn insert_if_absent_many_equals_one_at_a_time() {
    // A 50%-duplicate URL stream, filled past capacity so false positives occur too.
    let (ids, distinct) = dup_stream(60_000, 0.5, 1);
    let links: Vec<String> = ids.iter().map(|&i| url(i)).collect();
    let (batched, single) = pair(distinct / 2, 0.01, 11);
    let mut start = 0;
    for len in lengths().into_iter().cycle() {
        if start >= links.len() {
            break;
        }
        let chunk = &links[start..(start + len).min(links.len())];
        let mut got = vec![false; chunk.len()];
        batched.insert_if_absent_many(chunk, &mut got);
        let want: Vec<bool> = chunk.iter().map(|u| single.insert_if_absent(u)).collect();
        assert_eq!(got, want, "batch at {start}..+{len}");
        start += chunk.len();
    }
    assert!(same_bits(&batched, &single));
}

#[test]
fn contains_and_insert_batch_equal_one_at_a_time() {
    let (batched, single) = pair(10_000, 0.01, 5);
    let keys: Vec<u64> = (0..10_000).collect();
    batched.insert_many(&keys);
    keys.iter().for_each(|k| single.insert(k));
    assert!(same_bits(&batched, &single));

    let probes: Vec<u64> = (5_000..40_000).collect();
    for len in lengths() {
        let chunk = &probes[..len.min(probes.len())];
        let mut got = vec![true; chunk.len()];
        batched.contains_many(chunk, &mut got);
        let want: Vec<bool> = chunk.iter().map(|k| single.contains(k)).collect();
        assert_eq!(got, want, "len {len}");
    }
    // Members are all found (no false negatives), and some non-members are not.
    let mut got = vec![false; probes.len()];
    batched.contains_many(&probes, &mut got);
    assert!(got[..5_000].iter().all(|&b| b));
    assert!(got[5_000..].iter().filter(|&&b| b).count() < 35_000 / 50);
}

#[test]
fn a_key_repeated_within_a_batch_wins_once() {
    let f = BloomFilter::builder()
        .capacity(1000)
        .fpr(0.001)
        .seed(2)
        .build()
        .unwrap();
    // Repeats closer than, at, and farther than the prefetch distance.
    let keys: Vec<&str> = ["a", "a", "b", "c"]
        .into_iter()
        .chain(std::iter::repeat_n("x", PREFETCH_DISTANCE))
        .chain(["a", "b", "c", "d"])
        .collect();
    let mut out = vec![false; keys.len()];
    f.insert_if_absent_many(&keys, &mut out);
    let mut want = vec![false; keys.len()];
    want[0] = true; // a
    want[2] = true; // b
    want[3] = true; // c
    want[4] = true; // x
    want[keys.len() - 1] = true; // d
    assert_eq!(out, want);
}

#[test]
#[should_panic(expected = "one answer slot per key")]
fn mismatched_output_length_panics() {
    let f = BloomFilter::with_capacity(100, 0.01).unwrap();
    f.insert_if_absent_many(&[1u64, 2, 3], &mut [false; 2]);
}

#[cfg(feature = "rayon")]
#[test]
fn par_contains_matches_contains() {
    let f = BloomFilter::builder()
        .capacity(20_000)
        .fpr(0.01)
        .seed(4)
        .build()
        .unwrap();
    let keys: Vec<u64> = (0..50_000).collect();
    f.par_insert_many(&(0..20_000u64).map(|i| i * 2).collect::<Vec<_>>());
    let mut got = vec![false; keys.len()];
    f.par_contains_many(&keys, &mut got);
    let want: Vec<bool> = keys.iter().map(|k| f.contains(k)).collect();
    assert_eq!(got, want);
}

#[test]
fn hashed_batches_equal_one_at_a_time() {
    // Keys hashed by one filter, probed in another with the same seed (the Python binding
    // hashes while it reads the keys and probes later): the answers and bits of the
    // one-at-a-time calls.
    let (ids, distinct) = dup_stream(30_000, 0.5, 2);
    let links: Vec<String> = ids.iter().map(|&i| url(i)).collect();
    let (hashed, single) = pair(distinct / 2, 0.01, 13);
    let hasher = BloomFilter::builder()
        .capacity(10)
        .seed(13)
        .build()
        .unwrap();
    let mut start = 0;
    for len in lengths().into_iter().cycle() {
        if start >= links.len() {
            break;
        }
        let chunk = &links[start..(start + len).min(links.len())];
        let hs: Vec<_> = chunk.iter().map(|u| hasher.key_hash(u)).collect();
        let mut present = vec![false; chunk.len()];
        hashed.contains_hashes(&hs, &mut present);
        let want: Vec<bool> = chunk.iter().map(|u| single.contains(u)).collect();
        assert_eq!(present, want, "contains at {start}..+{len}");
        let mut got = vec![false; chunk.len()];
        hashed.insert_if_absent_hashes(&hs, &mut got);
        let want: Vec<bool> = chunk.iter().map(|u| single.insert_if_absent(u)).collect();
        assert_eq!(got, want, "insert_if_absent at {start}..+{len}");
        start += chunk.len();
    }
    assert!(same_bits(&hashed, &single));
    let (a, b) = pair(5_000, 0.01, 13);
    let keys: Vec<u64> = (0..5_000).collect();
    a.insert_hashes(&keys.iter().map(|k| hasher.key_hash(k)).collect::<Vec<_>>());
    keys.iter().for_each(|k| b.insert(k));
    assert!(same_bits(&a, &b));
}
