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

/// Bits per block of the blocked layout (the default block size). Example at [`Sizing`].
pub const LINE_BITS: u32 = crate::line::LINE_BITS as u32;

/// The largest bits-per-key [`optimal_params`] will consider (far beyond any practical rate:
/// at 1e-15 a blocked filter needs about 80). Example at [`Sizing`].
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
    fpr_in_blocks(bits_per_key, k, LINE_BITS as f64)
}

/// [`blocked_fpr`] for blocks of `block_bits` bits ([`BLOCK_SIZES`]: smaller blocks need
/// fewer locked operations per new key and spread keys less evenly, so they need more bits
/// per key for the same rate).
///
/// ```
/// use blockbloom::math::{blocked_fpr, blocked_fpr_sized};
/// assert_eq!(blocked_fpr_sized(10.0, 7, 512), blocked_fpr(10.0, 7));
/// assert!(blocked_fpr_sized(10.0, 7, 64) > 1.5 * blocked_fpr(10.0, 7));
/// ```
pub fn blocked_fpr_sized(bits_per_key: f64, k: u32, block_bits: u32) -> f64 {
    fpr_in_blocks(bits_per_key, k, block_bits as f64)
}

/// The block sizes a [`BloomFilter`](crate::BloomFilter) can have, in bits
/// ([`Builder::block_bits`](crate::Builder::block_bits)); 512 is the default. Example at
/// [`Sizing`].
pub const BLOCK_SIZES: [u32; 4] = [64, 128, 256, 512];

/// `Ok` if `block_bits` is one of [`BLOCK_SIZES`].
pub(crate) fn check_block_bits(block_bits: u32) -> Result<(), Error> {
    if BLOCK_SIZES.contains(&block_bits) {
        Ok(())
    } else {
        Err(Error::InvalidBlockBits(block_bits))
    }
}

/// Counters per block of [`CountingBloomFilter`](crate::CountingBloomFilter): 4-bit counters,
/// 128 in a 512-bit block. Example at [`Sizing`].
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

/// Grid points at most in one evaluation of the blocked formula: bounds its time for any
/// bits per key (a block expecting 10^19 keys would otherwise sum 10^11 Poisson terms).
const MAX_TERMS: u64 = 1024;

/// The blocked formula for blocks of `slots` slots.
pub(crate) fn fpr_in_blocks(bits_per_key: f64, k: u32, slots: f64) -> f64 {
    fpr_in_blocks_with(bits_per_key, k, slots, MAX_TERMS)
}

/// As [`fpr_in_blocks`], summing at most `max_terms` (+1) Poisson terms.
fn fpr_in_blocks_with(bits_per_key: f64, k: u32, slots: f64, max_terms: u64) -> f64 {
    if bits_per_key.is_nan() || bits_per_key <= 0.0 || k == 0 {
        return f64::NAN;
    }
    let lambda = slots / bits_per_key;
    let kf = k as f64;
    let ln_q = (1.0 - 1.0 / slots).ln();
    let ln_q2 = (1.0 - 2.0 / slots).ln();
    // E[(X/B)^k] for a block that received `i` keys.
    let term = |i: f64| {
        let n = kf * i; // bits thrown into this block
        let q1 = (n * ln_q).exp(); // P(a given bit is still 0)
        let q2 = (n * ln_q2).exp(); // P(two given bits are both still 0)
        let fill = -(n * ln_q).exp_m1(); // 1 − q1, accurate for small i
                                         // By the delta method: f(μ) + ½·f''(μ)·Var, with Var(X)/B² = (1 − 1/B)·q2 + q1/B − q1²
                                         // (occupancy of B bins by n throws).
        let var = (1.0 - 1.0 / slots) * q2 + q1 / slots - q1 * q1;
        let mut t = fill.powi(k as i32);
        if k >= 2 {
            t += 0.5 * kf * (kf - 1.0) * fill.powi(k as i32 - 2) * var.max(0.0);
        }
        t
    };
    // Poisson mass outside lambda ± 14·sqrt(lambda) + 40 is far below 1e-40.
    let spread = 14.0 * lambda.sqrt() + 40.0;
    let lo = (lambda - spread).max(0.0).floor() as u64;
    let hi = (lambda + spread).ceil() as u64;
    if hi - lo > max_terms {
        // A huge λ (a filter with a tiny fraction of a bit per key): the Poisson is a normal
        // curve many integers wide and `term` is smooth across it, so a grid of MAX_TERMS
        // points with normalised normal weights gives the sum (and its λ·ln λ terms would
        // lose all precision in f64 anyway).
        let step = (hi - lo) as f64 / max_terms as f64;
        let (mut num, mut den) = (0.0, 0.0);
        for j in 0..=max_terms {
            let i = lo as f64 + j as f64 * step;
            let z = (i - lambda) / lambda.sqrt();
            let w = (-0.5 * z * z).exp();
            num += w * term(i.round());
            den += w;
        }
        return (num / den).min(1.0);
    }
    // Poisson weights by the recurrence p(i) = p(i−1)·λ/i from p(lo), in linear space.
    let mut p = (-lambda + lo as f64 * lambda.ln() - ln_factorial(lo)).exp();
    let mut sum = 0.0;
    for i in lo..=hi {
        if i > lo {
            p *= lambda / i as f64;
        }
        sum += p * term(i as f64);
    }
    sum.min(1.0)
}

/// The bits per key a blocked filter with `k` hashes needs to reach `fpr`, or `None` if it
/// would need more than [`MAX_BITS_PER_KEY`].
fn bits_per_key_for(fpr: f64, k: u32, block_bits: u32) -> Option<f64> {
    slots_per_key_for(fpr, k, |c, k| blocked_fpr_sized(c, k, block_bits))
}

/// The slots per key a layout with rate function `rate` and `k` hashes needs to reach `fpr`.
fn slots_per_key_for(fpr: f64, k: u32, rate: impl Fn(f64, u32) -> f64) -> Option<f64> {
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
fn best_hashes(bits_per_key: f64, block_bits: u32) -> u32 {
    let mut best = (f64::INFINITY, 1);
    for k in 1..=crate::format::MAX_HASHES {
        let p = blocked_fpr_sized(bits_per_key, k, block_bits);
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
/// below what [`MAX_BITS_PER_KEY`] bits and [`MAX_HASHES`](crate::format::MAX_HASHES) hashes reach.
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
    params_for(fpr, Rate::Blocked(LINE_BITS))
}

/// [`optimal_params`] for blocks of `block_bits` bits ([`blocked_fpr_sized`]).
///
/// ```
/// use blockbloom::math::optimal_params_sized;
/// let (c64, _) = optimal_params_sized(0.01, 64)?;
/// let (c512, _) = optimal_params_sized(0.01, 512)?;
/// assert!(c64 > 1.2 * c512, "{c64} vs {c512}"); // 12.1 against 9.9 bits per key
/// assert!(optimal_params_sized(0.01, 100).is_err());
/// # Ok::<(), blockbloom::Error>(())
/// ```
pub fn optimal_params_sized(fpr: f64, block_bits: u32) -> Result<(f64, u32), Error> {
    check_block_bits(block_bits)?;
    params_for(fpr, Rate::Blocked(block_bits))
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
    params_for(fpr, Rate::Counting)
}

/// Which rate formula a sizing solves: the blocked one for a block size, the counting one, or
/// the expiring planes'.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Rate {
    Blocked(u32),
    Counting,
    /// The expiring filter's planes at the worst moment with this many planes full, the
    /// slots a plane's bits.
    Planes(u32),
}

impl Rate {
    fn fpr(self, slots_per_key: f64, k: u32) -> f64 {
        match self {
            Rate::Blocked(block_bits) => blocked_fpr_sized(slots_per_key, k, block_bits),
            Rate::Counting => counting_fpr(slots_per_key, k),
            Rate::Planes(full) => {
                planes::worst_fpr(f64::from(planes::PLANE_BITS) / slots_per_key, k, full)
            }
        }
    }
}

/// Answers of [`params_for`] at most this many (rate, formula) pairs back, newest first.
const MEMO_ENTRIES: usize = 16;

/// The last [`MEMO_ENTRIES`] answers of [`params_for`]: solving for the slots per key takes
/// ~1.5 ms (a bisection per number of hashes, each step a Poisson sum of some 300 terms), the
/// same for a filter of a thousand keys as for one of a billion; a program that makes many
/// small filters with the same rate (one per site of a crawl) pays it once.
static MEMO: std::sync::Mutex<Vec<Solved>> = std::sync::Mutex::new(Vec::new());

/// A [`MEMO`] entry: the rate's bits, its formula, and the answer.
type Solved = (u64, Rate, (f64, u32));

#[cfg(test)]
thread_local! {
    /// Times this thread's [`params_for`] solved instead of answering from [`MEMO`].
    static SOLVED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// [`solve_params`], remembered: the answer is the very same (f64 bits and all) as solving
/// again, so a filter's size never depends on what was sized before it.
fn params_for(fpr: f64, rate: Rate) -> Result<(f64, u32), Error> {
    let key = fpr.to_bits();
    let memo = || {
        MEMO.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    };
    if let Some(&(_, _, found)) = memo().iter().find(|e| e.0 == key && e.1 == rate) {
        return Ok(found);
    }
    // Solved with the lock released: another thread sizing meanwhile does not wait for it
    // (two threads may then solve the same rate once each, to the same answer).
    let found = solve_params(fpr, rate)?;
    let mut m = memo();
    if !m.iter().any(|e| e.0 == key && e.1 == rate) {
        m.insert(0, (key, rate, found));
        m.truncate(MEMO_ENTRIES);
    }
    Ok(found)
}

/// The smallest slots per key over every number of hashes for `fpr` under `rate`.
fn solve_params(fpr: f64, rate: Rate) -> Result<(f64, u32), Error> {
    #[cfg(test)]
    SOLVED.set(SOLVED.get() + 1);
    if !(fpr > 0.0 && fpr < 1.0) {
        return Err(Error::InvalidFpr(fpr));
    }
    let rate = |c: f64, k: u32| rate.fpr(c, k);
    let mut best: Option<(f64, u32)> = None;
    for k in 1..=crate::format::MAX_HASHES {
        match (slots_per_key_for(fpr, k, rate), best) {
            (Some(c), None) => best = Some((c, k)),
            (Some(c), Some((b, _))) if c < b => best = Some((c, k)),
            (_, Some((_, bk))) if k > bk + 2 => break, // unimodal in k
            _ => {}
        }
    }
    best.ok_or(Error::UnreachableFpr(fpr))
}

/// The size of a blocked filter: what [`size_filter`] and [`size_counting`] derive from a
/// capacity and a rate. Every filter type, `blockbloom-redis` and the CLI size through these
/// two functions, so the same parameters give the same blocks everywhere.
///
/// ```
/// use blockbloom::math::*;
/// let s = size_filter_sized(1_000_000, 0.01, None, None, 64)?;
/// assert!(BLOCK_SIZES.contains(&64) && LINE_BITS == 512);
/// assert_eq!(s.bytes(), s.blocks as u128 * 64); // counted in 64-byte lines
/// assert!((s.bytes() * 8) as f64 / 1e6 < MAX_BITS_PER_KEY);
/// let c = size_counting(1_000_000, 0.01)?;
/// assert!(c.blocks as u128 * COUNTERS_PER_BLOCK as u128 > 10_000_000); // > 10 counters a key
/// # Ok::<(), blockbloom::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct Sizing {
    /// Number of 64-byte blocks (≥ 1).
    pub blocks: u64,
    /// Bits (or counters) set per key, `1..=MAX_HASHES`.
    pub hashes: u32,
    /// The rate at capacity: the one asked for, or, when `bits` or `hashes` were fixed by
    /// the caller, the one the formula predicts for them.
    pub target_fpr: f64,
}

impl Sizing {
    /// Bytes of the blocks. Example at [`Sizing`].
    pub fn bytes(&self) -> u128 {
        self.blocks as u128 * LINE_BYTES as u128
    }
}

const LINE_BYTES: u64 = crate::line::LINE_BYTES as u64;

/// Checks capacity and rate, the common part of every sizing.
fn check(capacity: u64, fpr: f64) -> Result<(), Error> {
    if capacity == 0 {
        return Err(Error::ZeroCapacity);
    }
    if !(fpr > 0.0 && fpr < 1.0) {
        return Err(Error::InvalidFpr(fpr));
    }
    Ok(())
}

/// Whole blocks of `slots` slots for `capacity` keys at `per_key` slots each (at least one),
/// or [`Error::TooLarge`] when the count does not fit this machine's address space.
pub(crate) fn blocks_for(per_key: f64, capacity: u64, slots: u32) -> Result<u64, Error> {
    let blocks = (per_key * capacity as f64 / slots as f64).ceil().max(1.0);
    let too_large = Error::TooLarge {
        bytes: (blocks * LINE_BYTES as f64) as u128,
    };
    if blocks * LINE_BYTES as f64 >= isize::MAX as f64 {
        return Err(too_large);
    }
    Ok(blocks as u64)
}

/// Sizes a [`BloomFilter`](crate::BloomFilter) (512-bit blocks) for `capacity` keys at rate
/// `fpr`, optionally with the total `bits` (rounded up to whole blocks) and/or the number of
/// `hashes` fixed by the caller (as [`Builder::bits`](crate::Builder::bits) and
/// [`Builder::num_hashes`](crate::Builder::num_hashes)). Answers in bounded time for any input.
///
/// ```
/// use blockbloom::math::size_filter;
/// let s = size_filter(1_000_000, 0.01, None, None)?;
/// assert_eq!((s.blocks, s.hashes, s.target_fpr), (19_372, 6, 0.01)); // 9.92 bits per key
/// let fixed = size_filter(1000, 0.01, Some(1 << 16), Some(5))?;
/// assert_eq!((fixed.blocks, fixed.hashes), (128, 5));
/// assert!(size_filter(u64::MAX, 0.01, None, None).is_err()); // too large for any machine
/// # Ok::<(), blockbloom::Error>(())
/// ```
///
/// # Errors
/// [`Error::ZeroCapacity`], [`Error::InvalidFpr`], [`Error::UnreachableFpr`],
/// [`Error::InvalidHashes`], [`Error::InvalidBits`], [`Error::TooLarge`].
pub fn size_filter(
    capacity: u64,
    fpr: f64,
    bits: Option<u64>,
    hashes: Option<u32>,
) -> Result<Sizing, Error> {
    size_filter_sized(capacity, fpr, bits, hashes, LINE_BITS)
}

/// [`size_filter`] for blocks of `block_bits` bits (one of [`BLOCK_SIZES`]): the rate is
/// priced with [`blocked_fpr_sized`]. The size is still counted in 64-byte lines
/// ([`Sizing::blocks`]), each holding `512 / block_bits` blocks.
///
/// ```
/// use blockbloom::math::{size_filter, size_filter_sized};
/// let s512 = size_filter_sized(1_000_000, 0.01, None, None, 512)?;
/// assert_eq!(s512, size_filter(1_000_000, 0.01, None, None)?);
/// let s64 = size_filter_sized(1_000_000, 0.01, None, None, 64)?;
/// assert!(s64.bytes() > s512.bytes() * 12 / 10);
/// # Ok::<(), blockbloom::Error>(())
/// ```
///
/// # Errors
/// Those of [`size_filter`], and [`Error::InvalidBlockBits`].
pub fn size_filter_sized(
    capacity: u64,
    fpr: f64,
    bits: Option<u64>,
    hashes: Option<u32>,
    block_bits: u32,
) -> Result<Sizing, Error> {
    check_block_bits(block_bits)?;
    check(capacity, fpr)?;
    if let Some(k) = hashes {
        if k == 0 || k > crate::format::MAX_HASHES {
            return Err(Error::InvalidHashes(k));
        }
    }
    let (blocks, k) = match (bits, hashes) {
        (Some(0), _) => return Err(Error::InvalidBits(0)),
        (Some(bits), Some(k)) => (bits.div_ceil(LINE_BITS as u64), k),
        (Some(bits), None) => {
            let blocks = bits.div_ceil(LINE_BITS as u64);
            let per_key = blocks as f64 * LINE_BITS as f64 / capacity as f64;
            (blocks, best_hashes(per_key, block_bits))
        }
        (None, Some(k)) => {
            let c = bits_per_key_for(fpr, k, block_bits).ok_or(Error::UnreachableFpr(fpr))?;
            (blocks_for(c, capacity, LINE_BITS)?, k)
        }
        (None, None) => {
            let (c, k) = optimal_params_sized(fpr, block_bits)?;
            (blocks_for(c, capacity, LINE_BITS)?, k)
        }
    };
    if blocks as f64 * LINE_BYTES as f64 >= isize::MAX as f64 {
        return Err(Error::TooLarge {
            bytes: blocks as u128 * LINE_BYTES as u128,
        });
    }
    let target_fpr = if bits.is_some() || hashes.is_some() {
        blocked_fpr_sized(
            blocks as f64 * LINE_BITS as f64 / capacity as f64,
            k,
            block_bits,
        )
    } else {
        fpr
    };
    Ok(Sizing {
        blocks,
        hashes: k,
        target_fpr,
    })
}

/// Sizes a [`CountingBloomFilter`](crate::CountingBloomFilter) (blocks of
/// [`COUNTERS_PER_BLOCK`] 4-bit counters) for `capacity` keys at rate `fpr`.
///
/// ```
/// use blockbloom::math::size_counting;
/// let s = size_counting(1_000_000, 0.01)?;
/// assert!(s.bytes() > 5_000_000 && s.bytes() < 6_000_000);
/// # Ok::<(), blockbloom::Error>(())
/// ```
///
/// # Errors
/// [`Error::ZeroCapacity`], [`Error::InvalidFpr`], [`Error::UnreachableFpr`],
/// [`Error::TooLarge`].
pub fn size_counting(capacity: u64, fpr: f64) -> Result<Sizing, Error> {
    check(capacity, fpr)?;
    let (c, k) = counting_params(fpr)?;
    Ok(Sizing {
        blocks: blocks_for(c, capacity, COUNTERS_PER_BLOCK)?,
        hashes: k,
        target_fpr: fpr,
    })
}

/// The false-positive rate of a blocked filter at its current fill: the mean over its blocks
/// of `(used / slots)^k`, from each block's count of used slots (bits, counters, live
/// stamps). Every member's `estimated_fpr`, and that of copies read elsewhere (Redis).
///
/// ```
/// use blockbloom::math::fpr_of_fills;
/// // Two blocks of 512 bits, k = 2: one half full, one empty.
/// assert_eq!(fpr_of_fills([256, 0].into_iter(), 512, 2), 0.125);
/// ```
pub fn fpr_of_fills(fills: impl Iterator<Item = u32>, slots: u32, k: u32) -> f64 {
    let (mut sum, mut blocks) = (0.0, 0u64);
    for used in fills {
        sum += (used as f64 / slots as f64).powi(k as i32);
        blocks += 1;
    }
    sum / blocks as f64
}

mod false_positives;
pub(crate) mod planes;
pub(crate) use false_positives::{
    blocked_false_positives, expected_false_positives, false_positives_among_offered,
};
pub use false_positives::{false_positives_over_fill, keys_from_ones};
pub(crate) use planes::planes_params;

#[cfg(test)]
mod tests;
