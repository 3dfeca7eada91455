//! The expected number of new keys a filter has taken for repeats so far, from its fill.

/// Expected false positives over a fill from 0 to `n` inserted keys, where `fpr_at(x)` is
/// the rate once `x` keys are in: while `x` keys are in, new keys arrive until one is
/// inserted, so that level contributes `p / (1 − p)` expected false positives (`p =
/// fpr_at(x)`, at most 0.99 here).
pub(crate) fn expected_false_positives(n: f64, fpr_at: impl Fn(f64) -> f64) -> f64 {
    simpson(n, |x| {
        let p = if x > 0.0 { fpr_at(x) } else { 0.0 };
        let p = if p.is_nan() { 0.0 } else { p.clamp(0.0, 0.99) };
        p / (1.0 - p)
    })
}

/// Expected false positives among `n` distinct keys offered, where `fpr_at(x)` is the rate
/// once `x` have been offered: `∫ p`. For a filter whose fill counts the keys offered, not
/// those inserted (a key taken for a repeat sets no bit, so the fill after `x` offered keys
/// is that of `x` inserted ones): the expiring filter's planes, whose fill comes from a
/// whole window's keys.
pub(crate) fn false_positives_among_offered(n: f64, fpr_at: impl Fn(f64) -> f64) -> f64 {
    simpson(n, |x| {
        let p = if x > 0.0 { fpr_at(x) } else { 0.0 };
        if p.is_nan() {
            0.0
        } else {
            p.clamp(0.0, 1.0)
        }
    })
}

/// `∫_0^n f`, by Simpson's rule over 64 intervals of a smooth function (0 for `n` NaN or not
/// positive; infinite for `n` infinite, a full filter's count: the rates integrated here
/// grow towards 1 with the keys).
fn simpson(n: f64, f: impl Fn(f64) -> f64) -> f64 {
    if n.is_nan() || n <= 0.0 {
        return 0.0;
    }
    if n.is_infinite() {
        return f64::INFINITY;
    }
    const INTERVALS: u32 = 64;
    let h = n / INTERVALS as f64;
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

/// The number of keys in a filter of `bits` bits (`block_bits` to a block, `k` hashes)
/// with `ones` of them set: the inverse of the expected fill `1 − exp(−λ·(1 − (1 −
/// 1/B)^k))`, `λ` keys per block. Infinite when every bit is set, NaN for `k = 0` or a
/// block of fewer than 2 bits, 0 for an empty filter. The estimate behind
/// [`BloomFilter::estimated_len`](crate::BloomFilter::estimated_len), for copies of a
/// filter whose bits are counted elsewhere (a Redis server's `BITCOUNT`).
///
/// ```
/// use blockbloom::{math::keys_from_ones, BloomFilter};
/// let f = BloomFilter::with_capacity(100_000, 0.01)?;
/// for i in 0..50_000u64 { f.insert(&i); }
/// let n = keys_from_ones(f.count_ones(), f.num_bits(), f.num_hashes(), f.block_bits());
/// assert_eq!(n.round() as u64, f.estimated_len());
/// assert!((n - 50_000.0).abs() < 1_000.0, "{n}");
/// assert!(keys_from_ones(1, 512, 0, 512).is_nan() && keys_from_ones(0, 0, 6, 512) == 0.0);
/// # Ok::<(), blockbloom::Error>(())
/// ```
pub fn keys_from_ones(ones: u64, bits: u64, k: u32, block_bits: u32) -> f64 {
    if k == 0 || block_bits < 2 {
        return f64::NAN;
    }
    let b = block_bits as f64;
    keys_from_fill(ones, bits, -(k as f64 * (1.0 - 1.0 / b).ln()).exp_m1(), b)
}

/// The inverse of a blocked fill `1 − exp(−λ · per_key)`, `λ` keys per block of
/// `block_bits`, `per_key` the share of a block's bits a key sets in expectation: the keys
/// in `bits` bits with `ones` set (infinite when all are, 0 for none).
pub(crate) fn keys_from_fill(ones: u64, bits: u64, per_key: f64, block_bits: f64) -> f64 {
    if bits == 0 || ones == 0 {
        return 0.0;
    }
    let fill = ones.min(bits) as f64 / bits as f64;
    -(-fill).ln_1p() / per_key * (bits as f64 / block_bits)
}

/// The expected number of new keys taken for repeats (false positives) while a filter of
/// `bits` bits (`block_bits` to a block, `k` hashes) filled from empty to `keys` keys:
/// [`BloomFilter::estimated_false_positives`](crate::BloomFilter::estimated_false_positives)
/// from a key count found elsewhere (as [`keys_from_ones`]). About `0.19 · n · fpr` for a
/// filter filled to its capacity `n` at 1%; infinite for `keys` infinite (every bit set).
///
/// ```
/// use blockbloom::math::{false_positives_over_fill, size_filter};
/// let s = size_filter(1_000_000, 0.01, None, None)?;
/// let lost = false_positives_over_fill(1e6, s.blocks * 512, s.hashes, 512);
/// assert!((1_500.0..2_300.0).contains(&lost), "{lost}");
/// # Ok::<(), blockbloom::Error>(())
/// ```
pub fn false_positives_over_fill(keys: f64, bits: u64, k: u32, block_bits: u32) -> f64 {
    blocked_false_positives(keys, bits as f64, k, block_bits)
}
