//! GrowableBloomFilter: rate after 100× growth, no false negatives across growth steps, and
//! at most one winner per key while layers are being added.

use blockbloom::{Error, GrowableBloomFilter};
use blockbloom_workload::{measure_fpr, same_key_claims, shuffled_claims, url};

const Z999: f64 = 3.29;

#[test]
fn rate_after_100x_the_initial_capacity_is_at_most_the_target() {
    for (initial, target) in [(10_000u64, 0.01), (10_000, 0.001)] {
        let f = GrowableBloomFilter::builder()
            .initial_capacity(initial)
            .fpr(target)
            .seed(1)
            .build()
            .unwrap();
        let n = initial * 100;
        let queries = 1_000_000u64;
        let mut fresh = 0u64;
        let measured = measure_fpr(
            n,
            queries,
            |k| fresh += f.insert_if_absent(k) as u64,
            |k| f.contains(k),
        );
        for i in (0..n).step_by(7) {
            assert!(f.contains(url(i).as_str()), "false negative for key {i}");
        }
        let bound = Z999 * (target * (1.0 - target) / queries as f64).sqrt();
        eprintln!(
            "growable {initial} @ {target}, {n} keys: {} layers, {:.2} bytes/key, measured \
             {measured:.5}, estimated_fpr {:.5}, {fresh} new, estimated_len {}",
            f.num_layers(),
            f.memory_bytes() as f64 / n as f64,
            f.estimated_fpr(),
            f.estimated_len()
        );
        assert!(f.num_layers() >= 7);
        assert!(!f.growth_failed());
        assert!(measured <= target + bound, "{measured} > {target}");
        assert_eq!(f.estimated_len(), fresh);
    }
}

/// Threads race over overlapping shuffled streams from a small first layer, so the filter
/// grows ~7 times during the race.
#[test]
fn overlapping_streams_across_growth_have_at_most_one_winner() {
    const DISTINCT: u64 = 100_000;
    let keys: Vec<String> = (0..DISTINCT).map(url).collect();
    for threads in [2usize, 4, 8] {
        let f = GrowableBloomFilter::builder()
            .initial_capacity(1_000)
            .fpr(0.01)
            .seed(threads as u128)
            .build()
            .unwrap();
        let wins = shuffled_claims(threads, DISTINCT, 1, |i| {
            f.insert_if_absent(keys[i as usize].as_str())
        });
        for (i, &w) in wins.iter().enumerate() {
            assert!(w <= 1, "key {i} won {w} times with {threads} threads");
            assert!(f.contains(keys[i].as_str()), "false negative for key {i}");
        }
        let total: u64 = wins.iter().map(|&w| w as u64).sum();
        eprintln!(
            "{threads} threads: {} layers, {total} winners of {DISTINCT}",
            f.num_layers()
        );
        assert!(f.num_layers() >= 7);
        assert!(total as f64 > 0.98 * DISTINCT as f64, "{total}");
    }
}

/// Same key raced by 4 threads with a barrier per key, from a first layer of 16 keys: the
/// filter grows about 10 times during the run, each growth step racing with a same-key race.
#[test]
fn same_key_races_during_growth_have_one_winner() {
    let rounds = 20_000u64;
    let f = GrowableBloomFilter::builder()
        .initial_capacity(16)
        .fpr(0.001)
        .seed(3)
        .build()
        .unwrap();
    let wins = same_key_claims(4, rounds, |r| f.insert_if_absent(&r));
    let doubles = wins.iter().filter(|&&w| w > 1).count();
    let none = wins.iter().filter(|&&w| w == 0).count();
    eprintln!(
        "{} layers, {doubles} double wins, {none} keys with no winner",
        f.num_layers()
    );
    assert!(f.num_layers() >= 10);
    assert_eq!(doubles, 0);
    assert!(none < 100, "{none}");
}

#[test]
fn bad_parameters_are_errors() {
    let b = || GrowableBloomFilter::builder().initial_capacity(100);
    assert_eq!(
        GrowableBloomFilter::builder().build().unwrap_err(),
        Error::MissingCapacity
    );
    assert_eq!(
        GrowableBloomFilter::new(0, 0.01).unwrap_err(),
        Error::ZeroCapacity
    );
    assert!(matches!(
        GrowableBloomFilter::new(10, 1.0),
        Err(Error::InvalidFpr(_))
    ));
    assert!(matches!(
        b().growth(1).build(),
        Err(Error::InvalidGrowth(_))
    ));
    for t in [0.0, 1.0, f64::NAN] {
        assert!(matches!(
            b().tightening(t).build(),
            Err(Error::InvalidGrowth(_))
        ));
    }
}

#[test]
fn hashed_keys_answer_like_their_keys_across_growth() {
    let build = || {
        GrowableBloomFilter::builder()
            .initial_capacity(1000)
            .seed(7)
            .build()
            .unwrap()
    };
    let (by_key, by_hash) = (build(), build());
    let f = blockbloom::BloomFilter::builder()
        .capacity(1000)
        .seed(7)
        .build()
        .unwrap();
    // 20,000 keys, each offered twice: the chain grows to several layers meanwhile.
    for i in (0..20_000u64).chain(0..20_000) {
        let key = url(i);
        let h = by_hash.key_hash(&key);
        assert_eq!(h, f.key_hash(&key), "a key hash depends only on the seed");
        assert_eq!(
            by_key.insert_if_absent(&key),
            by_hash.insert_if_absent_hash(h),
            "{i}"
        );
    }
    assert!(by_hash.num_layers() > 3, "{}", by_hash.num_layers());
    // The batches, growing the chain as they go: the same answers again.
    let batched = build();
    let keys: Vec<String> = (0..20_000u64).chain(0..20_000).map(url).collect();
    let hs: Vec<_> = keys.iter().map(|k| batched.key_hash(k)).collect();
    let mut fresh = vec![false; hs.len()];
    batched.insert_if_absent_hashes(&hs, &mut fresh);
    let singles = build();
    let expected: Vec<bool> = keys.iter().map(|k| singles.insert_if_absent(k)).collect();
    assert_eq!(fresh, expected);
    assert_eq!(batched.num_layers(), singles.num_layers());
    let probes: Vec<_> = (0..40_000u64).map(|i| batched.key_hash(&url(i))).collect();
    let mut found = vec![false; probes.len()];
    batched.contains_hashes(&probes, &mut found);
    let expected: Vec<bool> = (0..40_000u64).map(|i| singles.contains(&url(i))).collect();
    assert_eq!(found, expected);
    assert_eq!(by_key.num_layers(), by_hash.num_layers());
    for i in 0..40_000u64 {
        let key = url(i);
        assert_eq!(
            by_key.contains(&key),
            by_hash.contains_hash(by_hash.key_hash(&key))
        );
        assert!(i >= 20_000 || by_hash.contains_hash(by_hash.key_hash(&key)));
    }
}
