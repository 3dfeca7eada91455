//! Measured false-positive rates against the blocked-filter formula.
//!
//! For each configuration: fill a filter to capacity with realistic URLs, query 10^6 URLs
//! that were never inserted, and check the measured rate against `blocked_fpr` (at the
//! filter's actual bits per key) and against the target, each within a two-sided 99.9%
//! binomial bound (z = 3.29) on the 10^6 queries.

use blockbloom::math::{blocked_fpr, standard_fpr};
use blockbloom::BloomFilter;
use blockbloom_workload::measure_fpr;

const Z999: f64 = 3.29;
const QUERIES: u64 = 1_000_000;

fn bound(p: f64, n: u64) -> f64 {
    Z999 * (p * (1.0 - p) / n as f64).sqrt()
}

/// Fills `f` with URLs `0..capacity` and returns the share of URLs
/// `capacity..capacity + QUERIES` (never inserted) that it reports present.
fn fill_and_measure(f: &BloomFilter, capacity: u64) -> f64 {
    measure_fpr(capacity, QUERIES, |k| f.insert(k), |k| f.contains(k))
}

fn check(capacity: u64, target: f64, seed: u128) {
    let f = BloomFilter::builder()
        .capacity(capacity)
        .fpr(target)
        .seed(seed)
        .build()
        .unwrap();
    let measured = fill_and_measure(&f, capacity);
    let bits_per_key = f.num_bits() as f64 / capacity as f64;
    let theory = blocked_fpr(bits_per_key, f.num_hashes());
    let estimated = f.estimated_fpr();
    eprintln!(
        "capacity {capacity}, target {target}: {bits_per_key:.3} bits/key, k={}, measured {measured:.6}, \
         blocked formula {theory:.6}, standard formula {:.6}, estimated_fpr {estimated:.6}",
        f.num_hashes(),
        standard_fpr(bits_per_key, f.num_hashes())
    );
    assert!(
        (measured - theory).abs() <= bound(theory, QUERIES),
        "measured {measured} vs blocked formula {theory} (bound ±{})",
        bound(theory, QUERIES)
    );
    assert!(
        measured <= target + bound(target, QUERIES),
        "measured {measured} above target {target} by more than {}",
        bound(target, QUERIES)
    );
    // The filter's own estimate from its fill agrees with what we measured.
    assert!(
        (measured - estimated).abs() <= bound(estimated, QUERIES),
        "measured {measured} vs estimated_fpr {estimated}"
    );
    // And the sizing is not wasteful: the rate at capacity is close to the target.
    assert!(
        theory > 0.8 * target,
        "oversized: {theory} for target {target}"
    );
    // estimated_len recovers the number of keys within 2%.
    let n = f.estimated_len() as f64;
    assert!(
        (n / capacity as f64 - 1.0).abs() < 0.02,
        "estimated_len {n}"
    );
}

#[test]
fn fpr_10_percent_at_1e5() {
    check(100_000, 0.1, 1);
}

#[test]
fn fpr_1_percent_at_1e6() {
    check(1_000_000, 0.01, 2);
}

#[test]
fn fpr_0_1_percent_at_1e6() {
    check(1_000_000, 0.001, 3);
}

/// The standard formula would undersize a blocked filter: sized with it, the measured rate
/// misses the target. This is why sizing uses the blocked formula.
#[test]
fn standard_sizing_would_miss_the_target() {
    let capacity = 200_000u64;
    // 14.38 bits/key and k=10 is the standard formula's optimum for 0.1%.
    let f = BloomFilter::builder()
        .capacity(capacity)
        .bits((14.38 * capacity as f64) as u64)
        .num_hashes(10)
        .seed(4)
        .build()
        .unwrap();
    let measured = fill_and_measure(&f, capacity);
    assert!(
        measured > 0.001 + bound(0.001, QUERIES),
        "standard sizing measured {measured}"
    );
}
