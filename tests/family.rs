//! The family's vocabulary (docs/API.md): every member answers the same operations under the
//! same names through the `Filter` and `HashedFilter` traits, the `_many` forms give the
//! answers of one call at a time, and the 0.x names still work until 1.0.

use blockbloom::{
    AtomicBitSet, BloomFilter, CountingBloomFilter, Filter, GrowableBloomFilter, HashedFilter,
};

/// `insert_if_absent_many` and `contains_many` against one call at a time on a twin.
fn many_equals_one_at_a_time<K: std::hash::Hash>(
    batched: &dyn Filter<K>,
    single: &dyn Filter<K>,
    keys: &[K],
) {
    let mut out = vec![false; keys.len()];
    batched.insert_if_absent_many(keys, &mut out);
    let want: Vec<bool> = keys.iter().map(|k| single.insert_if_absent(k)).collect();
    assert_eq!(out, want);
    assert!(want.iter().filter(|&&w| w).count() >= keys.len() / 2 - 20);
    batched.contains_many(keys, &mut out);
    assert!(out.iter().all(|&x| x), "no false negatives");
    batched.insert_many(keys);
    assert!(batched.estimated_len() > 0 && batched.memory_bytes() > 0);
    assert!(batched.estimated_fpr() <= batched.target_fpr().max(0.0) * 1.5 + 1e-12);
    assert!(batched.try_reserve(10).is_ok());
}

fn urls(n: u64) -> Vec<String> {
    // every key twice: the second copy must be answered "seen"
    (0..2 * n)
        .map(|i| format!("https://example.com/{}", i % n))
        .collect()
}

#[test]
fn every_member_speaks_the_same_vocabulary() {
    let keys = urls(3_000);
    let fixed = || {
        BloomFilter::builder()
            .capacity(5_000)
            .seed(1)
            .build()
            .unwrap()
    };
    many_equals_one_at_a_time::<String>(&fixed(), &fixed(), &keys);
    let small = || {
        BloomFilter::builder()
            .capacity(5_000)
            .block_bits(64)
            .seed(1)
            .build()
            .unwrap()
    };
    many_equals_one_at_a_time::<String>(&small(), &small(), &keys);
    let growing = || {
        GrowableBloomFilter::builder()
            .initial_capacity(500) // grows during the batch
            .seed(1)
            .build()
            .unwrap()
    };
    many_equals_one_at_a_time::<String>(&growing(), &growing(), &keys);
    let counting = || CountingBloomFilter::with_seed(5_000, 0.01, 1).unwrap();
    many_equals_one_at_a_time::<String>(&counting(), &counting(), &keys);
    let ids: Vec<u64> = (0..6_000).map(|i| i % 3_000).collect();
    let set = || AtomicBitSet::new(3_000).unwrap();
    many_equals_one_at_a_time::<u64>(&set(), &set(), &ids);
}

fn hashed_forms_equal_keyed_forms(f: &impl HashedFilter, twin: &dyn Filter<str>) {
    let keys = urls(2_000);
    let hs: Vec<_> = keys.iter().map(|k| f.key_hash(k.as_str())).collect();
    let mut out = vec![false; hs.len()];
    f.insert_if_absent_hashes(&hs, &mut out);
    let want: Vec<bool> = keys.iter().map(|k| twin.insert_if_absent(k)).collect();
    assert_eq!(out, want);
    assert!(hs
        .iter()
        .all(|&h| f.contains_hash(h) && !f.insert_if_absent_hash(h)));
    let other = f.key_hash("https://elsewhere.example/");
    f.insert_hash(other);
    f.insert_hashes(&[other]);
    f.contains_hashes(&[other], &mut out[..1]);
    assert!(out[0]);
}

#[test]
fn hashed_forms_are_the_same_on_every_hashing_member() {
    let fixed = || {
        BloomFilter::builder()
            .capacity(5_000)
            .seed(2)
            .build()
            .unwrap()
    };
    hashed_forms_equal_keyed_forms(&fixed(), &fixed());
    let growing = || {
        GrowableBloomFilter::builder()
            .initial_capacity(300)
            .seed(2)
            .build()
            .unwrap()
    };
    hashed_forms_equal_keyed_forms(&growing(), &growing());
    // a key hash depends only on the seed: the same in both members
    assert_eq!(fixed().key_hash("a"), growing().key_hash("a"));
}
