//! False-positive formulas and sizing.
//!
//! Notation: `c` = bits per key (m/n), `k` = number of hash functions (bits set per key).
//!
//! * [`standard_fpr`] is the textbook rate of an unblocked Bloom filter, `(1 − e^(−k/c))^k`.
//! * [`blocked_fpr`] is the rate of a filter whose k bits per key all fall in one 512-bit
//!   block (Putze, Sanders, Singler 2007). Keys spread over blocks unevenly (Poisson), and
//!   overfull blocks cost more than underfull ones save, so a blocked filter needs a few more
//!   bits per key than a standard one for the same rate: about ×1.17 the rate at 10 bits/key.
//! * [`optimal_params`] sizes a blocked filter from the blocked formula.
//!
//! ```
//! use blockbloom::math::{blocked_fpr, optimal_params, standard_fpr};
//!
//! // The classic table: 10 bits per key and 7 hashes give 0.82% on a standard filter...
//! assert!((standard_fpr(10.0, 7) - 0.00819).abs() < 5e-6);
//! // ...but about 0.97% once all probes share one cache line.
//! assert!(blocked_fpr(10.0, 7) > 1.15 * standard_fpr(10.0, 7));
//!
//! // So a 1% blocked filter is sized with the blocked formula:
//! let (bits_per_key, k) = optimal_params(0.01).unwrap();
//! assert!(blocked_fpr(bits_per_key, k) <= 0.01);
//! assert!(bits_per_key > 9.59); // what the standard formula would have said
//! ```

use crate::error::Error;

/// Bits per block of the blocked layout.
pub const BLOCK_BITS: u32 = crate::block::BLOCK_BITS as u32;

/// The largest bits-per-key [`optimal_params`] will consider (far beyond any practical rate:
/// at 1e-15 a blocked filter needs about 80).
pub const MAX_BITS_PER_KEY: f64 = 4096.0;
const MIN_BITS_PER_KEY: f64 = 0.01;

/// False-positive rate of a standard (unblocked) Bloom filter with `bits_per_key` bits per key
/// and `k` hash functions: `(1 − e^(−k/c))^k`.
///
/// Returns NaN when `bits_per_key` is not positive or `k` is zero.
///
/// ```
/// use blockbloom::math::standard_fpr;
/// assert!((standard_fpr(8.0, 6) - 0.0216).abs() < 5e-5);
/// ```
pub fn standard_fpr(bits_per_key: f64, k: u32) -> f64 {
    if bits_per_key.is_nan() || bits_per_key <= 0.0 || k == 0 {
        return f64::NAN;
    }
    let k = k as f64;
    (1.0 - (-k / bits_per_key).exp()).powf(k)
}

/// ln(n!) — exact summation for small n, Stirling's series beyond.
fn ln_factorial(n: u64) -> f64 {
    if n < 64 {
        (2..=n).map(|i| (i as f64).ln()).sum()
    } else {
        let x = n as f64;
        x * x.ln() - x + 0.5 * (2.0 * core::f64::consts::PI * x).ln() + 1.0 / (12.0 * x)
            - 1.0 / (360.0 * x * x * x)
    }
}

/// False-positive rate of a blocked Bloom filter (512-bit blocks, all `k` probes of a key in
/// one block, positions drawn with replacement) with `bits_per_key` bits per key:
///
/// `fpr(c, k) = Σ_i Poisson(i; 512/c) · E[(X_i / 512)^k]`
///
/// (Putze, Sanders, Singler, "Cache-, Hash- and Space-Efficient Bloom Filters", 2007): a
/// block holds a Poisson number `i` of keys, each of which set `k` of its 512 bits at random;
/// `X_i` is the number of bits those `k·i` throws set, and a never-inserted key is a false
/// positive when its `k` bits all land on set ones. The usual form of the formula replaces
/// `E[(X_i/512)^k]` by `(E[X_i]/512)^k = (1 − (1 − 1/512)^(k·i))^k`, which by Jensen's
/// inequality *under*-estimates the rate: by 1.2% at 10 bits per key and `k = 7`, 2.2% at
/// 0.1%, 4% at 23 bits and `k = 12` (checked against the exact occupancy computation in
/// this module's tests). We add the second-order (variance) term of `E[(X/512)^k]`, which
/// brings the formula within 0.05% of the exact value for `k ≤ 12` (0.4% at `k = 20`), so
/// filters sized with it deliver the rate they promise.
///
/// Returns NaN when `bits_per_key` is not positive or `k` is zero.
///
/// ```
/// use blockbloom::math::{blocked_fpr, standard_fpr};
/// // Blocking costs accuracy, more so the more bits per key:
/// let r10 = blocked_fpr(10.0, 7) / standard_fpr(10.0, 7);
/// let r16 = blocked_fpr(16.0, 11) / standard_fpr(16.0, 11);
/// assert!(r10 > 1.1 && r16 > r10);
/// ```
pub fn blocked_fpr(bits_per_key: f64, k: u32) -> f64 {
    fpr_in_blocks(bits_per_key, k, BLOCK_BITS as f64)
}

/// Counters per block of [`CountingBloomFilter`](crate::CountingBloomFilter): 4-bit counters,
/// 128 in a 512-bit block.
pub const COUNTERS_PER_BLOCK: u32 = 128;

/// False-positive rate of a [`CountingBloomFilter`](crate::CountingBloomFilter) with
/// `counters_per_key` 4-bit counters per key and `k` counters per key: the blocked formula
/// with blocks of [`COUNTERS_PER_BLOCK`] slots instead of 512 (a counter is "set" when
/// nonzero). Smaller blocks spread keys less evenly, so a counting filter needs more slots
/// per key than a plain one needs bits, and each slot is 4 bits: about 4.4× the memory at 1%.
///
/// ```
/// use blockbloom::math::{blocked_fpr, counting_fpr};
/// assert!(counting_fpr(10.0, 7) > blocked_fpr(10.0, 7));
/// ```
pub fn counting_fpr(counters_per_key: f64, k: u32) -> f64 {
    fpr_in_blocks(counters_per_key, k, COUNTERS_PER_BLOCK as f64)
}

/// The blocked formula for blocks of `slots` slots.
fn fpr_in_blocks(bits_per_key: f64, k: u32, slots: f64) -> f64 {
    if bits_per_key.is_nan() || bits_per_key <= 0.0 || k == 0 {
        return f64::NAN;
    }
    let lambda = slots / bits_per_key;
    let kf = k as f64;
    let ln_q = (1.0 - 1.0 / slots).ln();
    let ln_q2 = (1.0 - 2.0 / slots).ln();
    // Poisson mass outside lambda ± 14·sqrt(lambda) + 40 is far below 1e-40.
    let spread = 14.0 * lambda.sqrt() + 40.0;
    let lo = (lambda - spread).max(0.0).floor() as u64;
    let hi = (lambda + spread).ceil() as u64;
    // Poisson weights by the recurrence p(i) = p(i−1)·λ/i from p(lo), in linear space.
    let mut p = (-lambda + lo as f64 * lambda.ln() - ln_factorial(lo)).exp();
    let mut sum = 0.0;
    for i in lo..=hi {
        if i > lo {
            p *= lambda / i as f64;
        }
        let n = kf * i as f64; // bits thrown into this block
        let q1 = (n * ln_q).exp(); // P(a given bit is still 0)
        let q2 = (n * ln_q2).exp(); // P(two given bits are both still 0)
        let fill = -(n * ln_q).exp_m1(); // 1 − q1, accurate for small i
                                         // E[(X/B)^k] for the number X of set bits, by the delta method: f(μ) + ½·f''(μ)·Var,
                                         // with Var(X)/B² = (1 − 1/B)·q2 + q1/B − q1² (occupancy of B bins by n throws).
        let var = (1.0 - 1.0 / slots) * q2 + q1 / slots - q1 * q1;
        let mut term = fill.powi(k as i32);
        if k >= 2 {
            term += 0.5 * kf * (kf - 1.0) * fill.powi(k as i32 - 2) * var.max(0.0);
        }
        sum += p * term;
    }
    sum.min(1.0)
}

/// The bits per key a blocked filter with `k` hashes needs to reach `fpr`, or `None` if it
/// would need more than [`MAX_BITS_PER_KEY`].
pub(crate) fn bits_per_key_for(fpr: f64, k: u32) -> Option<f64> {
    slots_per_key_for(fpr, k, blocked_fpr)
}

/// The slots per key a layout with rate function `rate` and `k` hashes needs to reach `fpr`.
fn slots_per_key_for(fpr: f64, k: u32, rate: fn(f64, u32) -> f64) -> Option<f64> {
    let ok = |c: f64| rate(c, k) <= fpr;
    // Bracket the answer, starting from the standard formula's bits per key for this k
    // (a blocked filter never needs fewer), then bisect on a log scale.
    let standard = -(k as f64) / (-fpr.powf(1.0 / k as f64)).ln_1p();
    let mut lo = standard.clamp(MIN_BITS_PER_KEY, MAX_BITS_PER_KEY);
    while ok(lo) {
        if lo <= MIN_BITS_PER_KEY {
            return Some(MIN_BITS_PER_KEY);
        }
        lo = (lo * 0.5).max(MIN_BITS_PER_KEY);
    }
    let mut hi = lo;
    while !ok(hi) {
        if hi >= MAX_BITS_PER_KEY {
            return None;
        }
        lo = hi;
        hi = (hi * 1.25).min(MAX_BITS_PER_KEY);
    }
    let (mut lo, mut hi) = (lo.ln(), hi.ln());
    for _ in 0..32 {
        let mid = 0.5 * (lo + hi);
        if ok(mid.exp()) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi.exp())
}

/// The number of hashes that minimises the blocked rate at `bits_per_key` bits per key.
pub(crate) fn best_hashes(bits_per_key: f64) -> u32 {
    let mut best = (f64::INFINITY, 1);
    for k in 1..=crate::MAX_HASHES {
        let p = blocked_fpr(bits_per_key, k);
        if p < best.0 {
            best = (p, k);
        } else if k > best.1 + 2 {
            break; // the rate is unimodal in k
        }
    }
    best.1
}

/// The smallest bits-per-key and its number of hashes for which a blocked filter's
/// false-positive rate ([`blocked_fpr`]) is at most `fpr`.
///
/// Errors: [`Error::InvalidFpr`] unless `0 < fpr < 1`; [`Error::UnreachableFpr`] for rates
/// below what [`MAX_BITS_PER_KEY`] bits and [`MAX_HASHES`](crate::MAX_HASHES) hashes reach.
///
/// ```
/// use blockbloom::math::optimal_params;
/// let (c, k) = optimal_params(0.01)?;
/// assert!((9.8..10.2).contains(&c), "{c}");
/// assert!((6..=7).contains(&k));
/// assert!(optimal_params(0.0).is_err());
/// # Ok::<(), blockbloom::Error>(())
/// ```
pub fn optimal_params(fpr: f64) -> Result<(f64, u32), Error> {
    params_for(fpr, blocked_fpr)
}

/// The smallest number of 4-bit counters per key, and its number of hashes, for which a
/// [`CountingBloomFilter`](crate::CountingBloomFilter)'s rate ([`counting_fpr`]) is at most
/// `fpr`. Memory per key is `4 ×` the first number, in bits.
///
/// ```
/// use blockbloom::math::{counting_params, optimal_params};
/// let (c, k) = counting_params(0.01)?;
/// assert!((10.0..13.0).contains(&c), "{c}");
/// assert!(c > optimal_params(0.01)?.0);
/// assert!(k >= 5);
/// # Ok::<(), blockbloom::Error>(())
/// ```
pub fn counting_params(fpr: f64) -> Result<(f64, u32), Error> {
    params_for(fpr, counting_fpr)
}

fn params_for(fpr: f64, rate: fn(f64, u32) -> f64) -> Result<(f64, u32), Error> {
    if !(fpr > 0.0 && fpr < 1.0) {
        return Err(Error::InvalidFpr(fpr));
    }
    let mut best: Option<(f64, u32)> = None;
    for k in 1..=crate::MAX_HASHES {
        match (slots_per_key_for(fpr, k, rate), best) {
            (Some(c), None) => best = Some((c, k)),
            (Some(c), Some((b, _))) if c < b => best = Some((c, k)),
            (_, Some((_, bk))) if k > bk + 2 => break, // unimodal in k
            _ => {}
        }
    }
    best.ok_or(Error::UnreachableFpr(fpr))
}

#[cfg(test)]
mod tests {
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
                st[k][d] * (0..d).map(|j| (b - j as f64) / b).product::<f64>()
                    / b.powi((k - d) as i32)
            })
            .collect();
        let binom =
            |n: usize, r: usize| (0..r).fold(1.0, |a, j| a * (n - j) as f64 / (j + 1) as f64);
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
}
