//! `estimated_false_positives` against the false positives counted: distinct keys offered
//! to `insert_if_absent`, so every `false` is a new key taken for a repeat. Within ±30%
//! (the count's own spread at these sizes is ±5–10%).

use blockbloom::{
    BloomFilter, CountingBloomFilter, ExpiringBloomFilter, Filter, GrowableBloomFilter,
};
use std::time::Duration;

fn check(name: &str, filter: &dyn Filter<str>, keys: u64) {
    let lost = (0..keys)
        .filter(|i| !filter.insert_if_absent(format!("https://example.com/{i}").as_str()))
        .count() as f64;
    let estimate = filter.estimated_false_positives();
    println!(
        "{name}: {keys} new keys, {lost} taken for repeats, estimated {estimate:.1} ({:+.1}%)",
        100.0 * (estimate / lost - 1.0)
    );
    assert!(lost > 100.0, "{name}: too few to compare");
    assert!(
        (0.7 * lost..=1.3 * lost).contains(&estimate),
        "{name}: estimated {estimate} for {lost}"
    );
}

#[test]
fn estimates_are_within_30_percent_of_the_count() {
    check(
        "BloomFilter 1%, filled to capacity",
        &BloomFilter::with_capacity(200_000, 0.01).unwrap(),
        200_000,
    );
    check(
        "BloomFilter 1%, filled to 2x capacity",
        &BloomFilter::with_capacity(50_000, 0.01).unwrap(),
        100_000,
    );
    let small_blocks = BloomFilter::builder()
        .capacity(100_000)
        .fpr(0.01)
        .block_bits(64)
        .build()
        .unwrap();
    check("BloomFilter 1%, 64-bit blocks", &small_blocks, 100_000);
    check(
        "CountingBloomFilter 1%",
        &CountingBloomFilter::with_capacity(100_000, 0.01).unwrap(),
        100_000,
    );
    check(
        "GrowableBloomFilter 1% from 1,000, grown 100x",
        &GrowableBloomFilter::new(1_000, 0.01).unwrap(),
        100_000,
    );
    let expiring = ExpiringBloomFilter::builder()
        .expire_after(Duration::from_secs(86_400))
        .capacity(50_000)
        .fpr(0.01)
        .build()
        .unwrap();
    check(
        "ExpiringBloomFilter 1%, two windows' keys in one",
        &expiring,
        100_000,
    );
}

#[test]
fn an_exact_set_and_an_empty_filter_estimate_none() {
    let bits = blockbloom::AtomicBitSet::new(1_000).unwrap();
    assert_eq!(Filter::<u64>::estimated_false_positives(&bits), 0.0);
    assert_eq!(
        BloomFilter::with_capacity(1_000, 0.01)
            .unwrap()
            .estimated_false_positives(),
        0.0
    );
}
