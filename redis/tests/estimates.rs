//! The shared filters' estimates against what happened: the new keys a Redis filter took
//! for repeats, counted, against `estimated_false_positives`; its keys and rate against the
//! local copy's.
mod common;

use blockbloom_redis::{RedisBloomFilter, RedisExpiringBloomFilter};
use blockbloom_workload::url;
use common::stamps::StampModel;
use common::Server;
use std::time::Duration;

/// Offers `n` distinct URLs in batches of 1,000; the number told "not new": every one a
/// false positive.
fn false_positives_of(mut offer: impl FnMut(&[String]) -> Vec<bool>, n: u64) -> u64 {
    let mut lost = 0;
    for start in (0..n).step_by(1_000) {
        let keys: Vec<String> = (start..(start + 1_000).min(n)).map(url).collect();
        lost += offer(&keys).iter().filter(|&&new| !new).count() as u64;
    }
    lost
}

#[test]
fn a_redis_filter_estimates_the_new_keys_it_took_for_repeats() {
    if !common::available() {
        return;
    }
    let s = Server::start();
    let n = 200_000;
    let mut f = RedisBloomFilter::builder(&s.url(), "est")
        .capacity(n)
        .fpr(0.01)
        .shard_bytes(64 * 1024)
        .create()
        .unwrap();
    assert!(f.num_shards() > 1);
    assert_eq!(f.estimated_false_positives().unwrap(), 0.0);
    let lost = false_positives_of(|k| f.insert_if_absent_many(k).unwrap(), n) as f64;
    let estimate = f.estimated_false_positives().unwrap();
    let (len, fpr) = (f.estimated_len().unwrap(), f.estimated_fpr().unwrap());
    let local = f.to_local().unwrap();
    println!(
        "Redis filter, {n} URLs at 1%: {lost} taken for repeats, estimated {estimate:.1}; \
         {len} keys, rate {fpr:.5} (local copy: {} keys, rate {:.5})",
        local.estimated_len(),
        local.estimated_fpr()
    );
    assert!(
        (0.7 * lost..1.3 * lost).contains(&estimate),
        "{estimate} for {lost}"
    );
    assert_eq!(len, local.estimated_len(), "the same bits, the same count");
    assert!((fpr / local.estimated_fpr() - 1.0).abs() < 0.05, "{fpr}");
    assert!((0.008..0.012).contains(&fpr), "{fpr}");
}

#[test]
fn a_redis_expiring_filter_estimates_the_new_keys_it_took_for_repeats() {
    if !common::available() {
        return;
    }
    let s = Server::start();
    let (cap, n, seed) = (50_000, 100_000, 0x5eed);
    let day = Duration::from_secs(86_400);
    let mut f = RedisExpiringBloomFilter::builder(&s.url(), "xest")
        .capacity(cap)
        .fpr(0.01)
        .seed(seed)
        .expire_after(day)
        .shard_bytes(64 * 1024)
        .create_expiring()
        .unwrap();
    assert!(f.num_shards() > 1);
    assert_eq!(f.estimated_false_positives().unwrap(), 0.0);
    let mut local = StampModel::new(cap, 0.01, seed, day, blockbloom::Arrival::Steady);
    let lost = false_positives_of(
        |k| {
            let now = std::time::SystemTime::now();
            let here: Vec<bool> = k
                .iter()
                .map(|k| local.insert_if_absent(k.as_str(), now))
                .collect();
            let there = f.insert_if_absent_many(k).unwrap();
            assert_eq!(here, there, "the rule's answers");
            there
        },
        n,
    ) as f64;
    let estimate = f.estimated_false_positives().unwrap();
    let (len, fpr) = (f.estimated_len().unwrap(), f.estimated_fpr().unwrap());
    let rule_fpr = local.estimated_fpr(std::time::SystemTime::now());
    println!(
        "Redis expiring filter, {n} URLs in one window: {lost} taken for repeats, estimated \
         {estimate:.1}; {len} keys, rate {fpr:.5} (the rule's {rule_fpr:.5})"
    );
    assert!(
        (0.7 * lost..1.3 * lost).contains(&estimate),
        "{estimate} for {lost}"
    );
    // The keys offered, counted from the bits (a key taken for a repeat sets none).
    assert!((len as f64 / n as f64 - 1.0).abs() < 0.05, "{len}");
    assert!((fpr - rule_fpr).abs() < 1e-9, "the same live slots: {fpr}");
}
