//! The standard formula reproduces the classic m/n–k table (Fan, Cao, Almeida, Broder,
//! "Summary Cache", 2000, Table 1, as reprinted on Broder & Mitzenmacher's and many course
//! pages), and the blocked formula is always the higher one.

use blockbloom::math::{blocked_fpr, optimal_params, standard_fpr};

/// (bits per key, k, the table's rounded value)
const TABLE: &[(f64, u32, f64)] = &[
    (2.0, 1, 0.393),
    (3.0, 2, 0.237),
    (4.0, 3, 0.147),
    (5.0, 3, 0.0918),
    (6.0, 4, 0.0561),
    (8.0, 6, 0.0216),
    (10.0, 7, 0.00819),
    (12.0, 8, 0.00314),
    (16.0, 11, 0.000459),
    (20.0, 8, 0.00014),
    (20.0, 14, 0.0000671),
    (32.0, 8, 0.00000573),
];

fn rounds_to(x: f64, table: f64) -> bool {
    // The table prints 3 significant digits (2 for 0.00014): accept half a unit of the
    // last printed digit.
    let digits = if table == 0.00014 { 2 } else { 3 };
    let unit = 10f64.powf(table.log10().floor() - (digits - 1) as f64);
    (x - table).abs() <= 0.5 * unit + 1e-15
}

#[test]
fn standard_formula_reproduces_the_classic_table() {
    for &(c, k, expected) in TABLE {
        let got = standard_fpr(c, k);
        assert!(
            rounds_to(got, expected),
            "c={c} k={k}: {got} vs table {expected}"
        );
    }
}

#[test]
fn blocked_formula_costs_accuracy() {
    for &(c, k, _) in TABLE {
        let (b, s) = (blocked_fpr(c, k), standard_fpr(c, k));
        if k == 1 {
            // one bit per key: the Poisson mixture of a linear function is the function
            assert!((b - s).abs() < 1e-12 * s, "c={c}: {b} vs {s}");
        } else {
            assert!(b > s, "c={c} k={k}");
        }
    }
    // The design card: ×1.17 at 10 bits/key, ×1.8 at 16 (each at its standard-optimal k).
    let r10 = blocked_fpr(10.0, 7) / standard_fpr(10.0, 7);
    let r16 = blocked_fpr(16.0, 11) / standard_fpr(16.0, 11);
    assert!((1.15..1.19).contains(&r10), "{r10}");
    assert!((1.8..1.95).contains(&r16), "{r16}");
}

#[test]
fn optimal_params_use_the_blocked_formula() {
    // The design card says 9.90 bits/key at 1% for a 512-bit blocked filter (9.59 standard), from
    // the first-order formula, which under-estimates the rate by 1.2% there; with the
    // variance term (ARCHITECTURE.md, decision 5) a blocked filter needs 9.92.
    let (c, k) = optimal_params(0.01).unwrap();
    assert!((c - 9.92).abs() < 0.01, "{c}");
    assert!(blocked_fpr(c, k) <= 0.01 * (1.0 + 1e-9));
    for p in [0.3, 0.1, 0.01, 1e-3, 1e-4, 1e-6, 1e-9] {
        let (c, k) = optimal_params(p).unwrap();
        assert!(blocked_fpr(c, k) <= p * (1.0 + 1e-9), "p={p}");
        // minimal: 1% fewer bits misses the target with this k and with every other k
        for kk in 1..=blockbloom::MAX_HASHES {
            assert!(
                blocked_fpr(c * 0.99, kk) > p,
                "p={p}: k={kk} beats the optimum"
            );
        }
        // and more than the standard formula asks for
        let standard_min = (1..=40)
            .map(|kk| {
                let mut c = 0.5;
                while standard_fpr(c, kk) > p {
                    c *= 1.001;
                }
                c
            })
            .fold(f64::INFINITY, f64::min);
        assert!(c > standard_min, "p={p}: {c} vs standard {standard_min}");
    }
}
