//! Unit tests of `math.rs`.

use super::*;

#[test]
fn poisson_mass_sums_to_one() {
    for c in [0.05, 1.0, 10.0, 100.0, 4000.0] {
        let lambda = 512.0 / c;
        let spread = 14.0 * f64::sqrt(lambda) + 40.0;
        let lo = (lambda - spread).max(0.0).floor() as u64;
        let hi = (lambda + spread).ceil() as u64;
        let s: f64 = (lo..=hi)
            .map(|i| (-lambda + i as f64 * lambda.ln() - ln_factorial(i)).exp())
            .sum();
        assert!((s - 1.0).abs() < 1e-9, "c={c}: {s}");
    }
}

/// The exact rate: for a block hit by `n` throws, P(all of a query's k positions are set)
/// = Σ_d P(the k positions are d distinct bins) · P(n throws cover d given bins), the
/// latter by inclusion–exclusion.
fn exact_fpr(c: f64, k: u32) -> f64 {
    let b = 512.0f64;
    let k = k as usize;
    // Stirling numbers of the second kind S(k, d).
    let mut st = vec![vec![0.0f64; k + 1]; k + 1];
    st[0][0] = 1.0;
    for i in 1..=k {
        for j in 1..=i {
            st[i][j] = j as f64 * st[i - 1][j] + st[i - 1][j - 1];
        }
    }
    let p_d: Vec<f64> = (0..=k)
        .map(|d| {
            st[k][d] * (0..d).map(|j| (b - j as f64) / b).product::<f64>() / b.powi((k - d) as i32)
        })
        .collect();
    let binom = |n: usize, r: usize| (0..r).fold(1.0, |a, j| a * (n - j) as f64 / (j + 1) as f64);
    let lambda = b / c;
    let mut sum = 0.0;
    for i in 0..(lambda + 14.0 * lambda.sqrt() + 40.0) as u64 {
        let p = (-lambda + i as f64 * lambda.ln() - ln_factorial(i)).exp();
        let n = (k as u64 * i) as f64;
        let cover = |d: usize| -> f64 {
            (0..=d)
                .map(|j| {
                    let sign = if j % 2 == 0 { 1.0 } else { -1.0 };
                    sign * binom(d, j) * (1.0 - j as f64 / b).powf(n)
                })
                .sum()
        };
        sum += p * (1..=k).map(|d| p_d[d] * cover(d)).sum::<f64>();
    }
    sum
}

#[test]
fn blocked_formula_matches_the_exact_occupancy_computation() {
    for (c, k) in [(4.83, 3), (9.9, 7), (15.49, 9), (17.32, 10), (23.36, 12)] {
        let (ours, exact) = (blocked_fpr(c, k), exact_fpr(c, k));
        assert!(
            (ours / exact - 1.0).abs() < 5e-4,
            "c={c} k={k}: {ours} vs {exact}"
        );
        // The first-order formula is off by percents at these sizes.
        let first = (0..1000u64)
            .map(|i| {
                let l = 512.0 / c;
                let p = (-l + i as f64 * l.ln() - ln_factorial(i)).exp();
                p * (1.0 - (1.0 - 1.0 / 512.0f64).powf((k as u64 * i) as f64)).powi(k as i32)
            })
            .sum::<f64>();
        assert!(
            first < exact,
            "Jensen: the first-order formula underestimates"
        );
    }
}

#[test]
fn stirling_matches_exact_sum() {
    for n in [64u64, 100, 1000] {
        let exact: f64 = (2..=n).map(|i| (i as f64).ln()).sum();
        assert!((ln_factorial(n) - exact).abs() < 1e-9 * exact);
    }
}

#[test]
fn invalid_inputs_are_nan_or_errors() {
    assert!(standard_fpr(0.0, 3).is_nan());
    assert!(standard_fpr(f64::NAN, 3).is_nan());
    assert!(blocked_fpr(10.0, 0).is_nan());
    assert!(blocked_fpr(-1.0, 2).is_nan());
    for p in [0.0, 1.0, -0.5, 2.0, f64::NAN, f64::INFINITY] {
        assert!(
            matches!(optimal_params(p), Err(Error::InvalidFpr(_))),
            "{p}"
        );
    }
    assert!(matches!(
        optimal_params(1e-300),
        Err(Error::UnreachableFpr(_))
    ));
}

#[test]
fn sizing_answers_at_once_for_any_capacity() {
    // Once a minutes-long loop (a fraction of a bit per key summed 10^11 Poisson terms).
    let started = std::time::Instant::now();
    for capacity in [1, 1000, 1 << 40, u64::MAX] {
        for bits in [None, Some(1), Some(512), Some(u64::MAX)] {
            for hashes in [None, Some(1), Some(32)] {
                let _ = size_filter(capacity, 0.01, bits, hashes);
            }
        }
        let _ = size_counting(capacity, 1e-9);
    }
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    // A huge λ saturates the rate instead of spinning.
    assert_eq!(blocked_fpr(512.0 / u64::MAX as f64, 6), 1.0);
    assert!(blocked_fpr(1e-3, 1) > 0.99);
}

#[test]
fn sizing_a_rate_again_answers_from_the_memo_with_the_same_bits() {
    // Rates no other test sizes (the memo is process-wide; the count is this thread's).
    let rates = [0.0123456, 0.0234567, 0.0345678];
    let solved = |fpr, rate| solve_params(fpr, rate).unwrap();
    let first: Vec<_> = rates.iter().map(|&p| optimal_params(p).unwrap()).collect();
    // Answered from the memo: no new solving, and the very bits of a fresh solution.
    let before = SOLVED.get();
    for _ in 0..10 {
        for (&p, &f) in rates.iter().zip(&first) {
            let again = optimal_params(p).unwrap();
            assert_eq!((again.0.to_bits(), again.1), (f.0.to_bits(), f.1));
        }
    }
    assert_eq!(
        SOLVED.get(),
        before,
        "30 sizings of 3 remembered rates solved"
    );
    for (&p, &f) in rates.iter().zip(&first) {
        let fresh = solved(p, Rate::Blocked(LINE_BITS));
        assert_eq!((fresh.0.to_bits(), fresh.1), (f.0.to_bits(), f.1));
    }
    // The same rate under another formula is another answer, not the memo's.
    for (&p, &f) in rates.iter().zip(&first) {
        let small = optimal_params_sized(p, 64).unwrap();
        assert_eq!(small, solved(p, Rate::Blocked(64)));
        assert!(small.0 > f.0, "64-bit blocks need more bits per key");
        let counting = counting_params(p).unwrap();
        assert_eq!(counting, solved(p, Rate::Counting));
        assert_ne!(counting, f);
    }
    // Errors are not remembered.
    let before = SOLVED.get();
    assert!(optimal_params(f64::NAN).is_err() && optimal_params(f64::NAN).is_err());
    assert_eq!(SOLVED.get(), before + 2);
}

#[test]
fn grid_and_exact_sums_agree_where_both_work() {
    // Lines of 2^20 slots at 10 per key: λ ≈ 10^5, ~9,200 Poisson terms, so the grid
    // runs; the full recurrence is still exact enough there to compare with.
    for k in [1, 3, 7] {
        let slots = (1u64 << 20) as f64;
        let grid = fpr_in_blocks_with(10.0, k, slots, MAX_TERMS);
        let full = fpr_in_blocks_with(10.0, k, slots, u64::MAX);
        assert!((grid / full - 1.0).abs() < 1e-3, "k={k}: {grid} vs {full}");
    }
}
