//! No panic on any input: the builders and `_at` forms fed extreme numbers (0, NaN, ±inf,
//! 2^63, 2^64 − 1, 1e19 s, 1e300, the largest `f64`, times before 1970 and at the end of
//! `SystemTime`) return an `Error` or work; and no time ahead of the machine's clock makes
//! a key inside its window new (guarantee 6 of `ExpiringBloomFilter`).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use blockbloom::{
    BloomFilter, CountingBloomFilter, ExpiringBloomFilter, GrowableBloomFilter, Layout,
};
use proptest::prelude::*;

const FLOATS: [f64; 12] = [
    0.0,
    -0.0,
    -1.0,
    1.0,
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::MAX,
    f64::MIN_POSITIVE,
    1e-300,
    1e300,
    9.3e18,
];
const COUNTS: [u64; 6] = [0, 1, 1 << 63, u64::MAX, 10_000_000_000_000_000_000, 1 << 40];

/// Every builder and constructor with every extreme count and rate: `Ok` or `Err`, no panic
/// (a filter that fits is built lazily, so a 2^40-key one costs no memory here).
#[test]
fn builders_take_extreme_numbers_without_panicking() {
    for &c in &COUNTS {
        for &p in &FLOATS {
            let _ = BloomFilter::builder().capacity(c).fpr(p).build();
            let _ = BloomFilter::builder()
                .capacity(c)
                .fpr(0.01)
                .bits(c)
                .num_hashes(c as u32)
                .build();
            let _ = CountingBloomFilter::with_capacity(c, p);
            let _ = GrowableBloomFilter::builder()
                .initial_capacity(c)
                .fpr(p)
                .build();
            let _ = GrowableBloomFilter::builder()
                .initial_capacity(1000)
                .growth(c)
                .tightening(p)
                .build();
            let _ = Layout::new(c as u128, c, c as u32);
            let _ = blockbloom::math::size_filter(c, p, Some(c), Some(c as u32));
            let _ = blockbloom::math::standard_fpr(p, c as u32);
            for window in [
                Duration::ZERO,
                Duration::from_nanos(1),
                Duration::from_secs(1),
                Duration::from_secs(u64::MAX),
                Duration::MAX,
                Duration::from_secs_f64(1.8e19),
            ] {
                let _ = ExpiringBloomFilter::builder()
                    .expire_after(window)
                    .capacity(c.min(1 << 20))
                    .fpr(p)
                    .build();
            }
        }
    }
}

/// A time `secs` seconds after 1970 (or before, if negative), where `SystemTime` has one.
fn time(secs: i128) -> Option<SystemTime> {
    if secs >= 0 {
        UNIX_EPOCH.checked_add(Duration::from_secs(u64::try_from(secs).ok()?))
    } else {
        UNIX_EPOCH.checked_sub(Duration::from_secs(u64::try_from(-secs).ok()?))
    }
}

fn extreme_times() -> impl Strategy<Value = i128> {
    prop_oneof![
        Just(0i128),
        Just(-1),
        Just(i64::MAX as i128),
        Just(i64::MIN as i128),
        Just(u64::MAX as i128),
        Just(1e19 as i128),
        Just(9_300_000_000_000_000_000),
        any::<i64>().prop_map(i128::from),
        any::<u64>().prop_map(i128::from),
        (0i128..4_000_000_000),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Every `_at` form at any representable time: no panic, and the key inserted now is
    /// still seen now (no time ahead moves the filter past the machine's clock + 1 s).
    #[test]
    fn at_forms_take_any_time_and_forget_nothing_early(
        secs in prop::collection::vec(extreme_times(), 1..6),
        window in prop_oneof![Just(1u64), Just(60), Just(86_400 * 30)],
    ) {
        let f = ExpiringBloomFilter::builder()
            .expire_after(Duration::from_secs(window))
            .capacity(1000)
            .build()
            .unwrap();
        prop_assert!(f.insert_if_absent("kept"));
        for s in secs {
            let Some(t) = time(s) else { continue };
            let _ = f.insert_if_absent_at("x", t);
            f.insert_at("y", t);
            let _ = f.contains_at("y", t);
            let mut out = [false; 2];
            f.insert_if_absent_many_at(&["a", "b"], t, &mut out);
            f.contains_many_at(&["a", "b"], t, &mut out);
            f.insert_many_at(&["c"], t);
            let _ = f.estimated_fpr_at(t);
            let _ = f.oldest_generation_start();
        }
        // A one-second window may roll over while the case runs: `kept` was inserted well
        // within any longer one.
        if window > 1 {
            prop_assert!(f.contains("kept"), "a time ahead made a key inside its window new");
        }
    }
}
