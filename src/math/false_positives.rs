//! The expected number of new keys a filter has taken for repeats so far, from its fill.

/// Expected false positives over a fill from 0 to `n` inserted keys, where `fpr_at(x)` is
/// the rate once `x` keys are in: while `x` keys are in, new keys arrive until one is
/// inserted, so that level contributes `p / (1 − p)` expected false positives (`p =
/// fpr_at(x)`, at most 0.99 here). Simpson's rule over 64 intervals of a smooth function.
pub(crate) fn expected_false_positives(n: f64, fpr_at: impl Fn(f64) -> f64) -> f64 {
    if n.is_nan() || n <= 0.0 {
        return 0.0;
    }
    const INTERVALS: u32 = 64;
    let h = n / INTERVALS as f64;
    let f = |x: f64| {
        let p = if x > 0.0 { fpr_at(x) } else { 0.0 };
        let p = if p.is_nan() { 0.0 } else { p.clamp(0.0, 0.99) };
        p / (1.0 - p)
    };
    let inner: f64 = (1..INTERVALS)
        .map(|i| f(i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 })
        .sum();
    h / 3.0 * (f(0.0) + inner + f(n))
}

/// [`expected_false_positives`] of a blocked filter of `slots` bits (or counters) in all,
/// `slots_per_block` to a block, `k` hashes.
pub(crate) fn blocked_false_positives(n: f64, slots: f64, k: u32, slots_per_block: u32) -> f64 {
    expected_false_positives(n, |x| {
        super::fpr_in_blocks(slots / x, k, slots_per_block as f64)
    })
}
