//! The rate of the expiring filter's planes (`expiring/planes.rs`), which its sizing
//! (`expiring::sizing`, through [`planes_params`] here) keeps under the target at the worst
//! moment of an epoch, at a steady rate or in the worst burst.
//!
//! A plane is two words of 60 bits in a line; a key draws `⌈k/2⌉` bits in one word and
//! `⌊k/2⌋` in the other (`layout::plane_mask`), the heavier word either with probability ½.
//! With `λ` keys of an epoch in a line (Poisson), the rate of one plane is
//! [`plane_fpr`], and a query tests each live plane: at the end of an epoch four are full
//! at a steady rate, two in the worst burst (a window's keys in its last epoch, the next
//! window's in the first).

use super::{check, params_for, Rate};
use crate::error::Error;

/// The expected rate at the worst moment that the sizing aims at, as a share of the target.
/// A filter's own fill varies around the expected one (the rate it gives by about 1.3% at
/// 10^5 keys, 0.4% at 10^6: its lines' loads are Poisson), so the expected worst moment
/// is put 3% under the target, for the measured one to stay at or under it from 10^5 keys
/// up (22.39 bits per key at 1% instead of 22.22).
pub(crate) const SIZED_SHARE: f64 = 0.97;

/// Bits of a plane (`layout::plane_mask` places a key's bits in one).
pub(crate) const PLANE_BITS: u32 = 120;

/// The bits of a plane per key and the `k` that keep the expiring filter's rate at or under
/// `fpr` with `full` planes full: its expected rate there is [`SIZED_SHARE`] of `fpr` (the
/// sizing search of the other filters, remembered as theirs: loom's models build a filter
/// per execution).
pub(crate) fn planes_params(fpr: f64, full: u32) -> Result<(f64, u32), Error> {
    check(1, fpr)?;
    params_for(fpr * SIZED_SHARE, Rate::Planes(full)).map_err(|e| e.for_rate_asked(fpr))
}

/// Bits of one of a plane's two words.
const WORD_BITS: usize = PLANE_BITS as usize / 2;

/// The draws of a key of `k` bits into its heavier and lighter word.
pub(crate) fn split(k: u32) -> (u32, u32) {
    (k.div_ceil(2), k / 2)
}

/// The rate of one plane holding a Poisson number of keys of mean `lambda`, `k` bits each,
/// exact under ideal hashing: for `n` keys, `c` of them heavier in the first word
/// (binomial), the words' occupancies after `⌈k/2⌉c + ⌊k/2⌋(n − c)` and
/// `⌊k/2⌋c + ⌈k/2⌉(n − c)` draws; a query hits words of `j₀` and `j₁` bits set with
/// probability `½ ((j₀/60)^⌈k/2⌉ (j₁/60)^⌊k/2⌋ + (j₀/60)^⌊k/2⌋ (j₁/60)^⌈k/2⌉)` (a fill's
/// variance raises the rate above the mean fill's); weighted by `P(n; λ)`.
pub(crate) fn plane_fpr(lambda: f64, k: u32) -> f64 {
    plane_fpr_in_words_of(WORD_BITS, lambda, k)
}

/// [`plane_fpr`] for a plane of two words of `word_bits` bits each (other layouts' bounds:
/// the tests).
fn plane_fpr_in_words_of(word_bits: usize, lambda: f64, k: u32) -> f64 {
    if lambda <= 0.0 {
        return 0.0;
    }
    let (heavy, light) = split(k);
    let last = (lambda * 4.0 + 40.0) as usize;
    let moments = word_moments(word_bits, heavy as usize * last, heavy, light);
    // binomial[c]: P(c of the n keys so far are heavier in the first word).
    let mut binomial = vec![0.0f64; last + 2];
    binomial[0] = 1.0;
    let (mut sum, mut p) = (0.0, (-lambda).exp());
    let (heavy, light) = (heavy as usize, light as usize);
    for n in 0..=last {
        let given_n: f64 = (0..=n)
            .map(|c| {
                let first = moments[heavy * c + light * (n - c)];
                let second = moments[light * c + heavy * (n - c)];
                binomial[c] * 0.5 * (first.0 * second.1 + first.1 * second.0)
            })
            .sum();
        sum += p * given_n;
        for c in (1..=n + 1).rev() {
            binomial[c] = 0.5 * (binomial[c] + binomial[c - 1]);
        }
        binomial[0] *= 0.5;
        p *= lambda / (n + 1) as f64;
    }
    sum
}

/// For `0 ..= draws` draws into a word of `word_bits` bits: `(E[(j/b)^heavy],
/// E[(j/b)^light])`, `j` the bits set (the occupancy distribution of `b` bins).
fn word_moments(word_bits: usize, draws: usize, heavy: u32, light: u32) -> Vec<(f64, f64)> {
    let share = |j: usize| j as f64 / word_bits as f64;
    let mut occupancy = vec![0.0f64; word_bits + 1];
    occupancy[0] = 1.0;
    let mut moments = Vec::with_capacity(draws + 1);
    for d in 0..=draws {
        let moment = |a: u32| -> f64 {
            occupancy
                .iter()
                .enumerate()
                .map(|(j, o)| o * share(j).powi(a as i32))
                .sum()
        };
        moments.push((moment(heavy), moment(light)));
        if d < draws {
            for j in (0..=word_bits).rev() {
                let from = if j > 0 {
                    occupancy[j - 1] * (1.0 - share(j - 1))
                } else {
                    0.0
                };
                occupancy[j] = occupancy[j] * share(j) + from;
            }
        }
    }
    moments
}

/// The keys of an epoch in `lines` lines whose planes hold `ones` bits of it: the inverse
/// of the expected fill `1 − exp(−λ (1 − u))`, `λ` keys per line, `u` the chance that a
/// key leaves a given bit of its plane clear (`(q^⌈k/2⌉ + q^⌊k/2⌋) / 2`, `q = 59/60`).
/// Infinite when every bit is set, 0 for none.
pub(crate) fn keys_from_plane_ones(ones: u64, lines: u64, k: u32) -> f64 {
    let (heavy, light) = split(k);
    let q = 1.0 - 1.0 / WORD_BITS as f64;
    let per_key = 1.0 - 0.5 * (q.powi(heavy as i32) + q.powi(light as i32));
    let bits = lines * u64::from(PLANE_BITS);
    super::false_positives::keys_from_fill(ones, bits, per_key, f64::from(PLANE_BITS))
}

/// The rate of a query on a plane whose words hold `ones` bits set under its label, `k`
/// bits a key: the chance that its draws all land on set bits.
pub(crate) fn plane_words_fpr(ones: [u32; 2], k: u32) -> f64 {
    let (heavy, light) = split(k);
    let [f0, f1] = ones.map(|o| f64::from(o) / WORD_BITS as f64);
    let hit = |a: u32, b: u32| f0.powi(a as i32) * f1.powi(b as i32);
    0.5 * (hit(heavy, light) + hit(light, heavy))
}

/// The rate at the worst moment with `lambda` keys in each of `full` planes of a line (four
/// at a steady rate, two in the worst burst) and the others empty.
pub(crate) fn worst_fpr(lambda: f64, k: u32, full: u32) -> f64 {
    1.0 - (1.0 - plane_fpr(lambda, k)).powi(full as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_grows_with_the_keys_and_k_has_an_optimum() {
        assert_eq!(plane_fpr(0.0, 7), 0.0);
        assert!(plane_fpr(4.0, 7) < plane_fpr(8.0, 7));
        assert!(worst_fpr(8.0, 7, 4) > worst_fpr(8.0, 7, 2));
        assert!(plane_fpr(7.8, 7) < plane_fpr(7.8, 2) && plane_fpr(7.8, 7) < plane_fpr(7.8, 16));
    }

    /// The model against planes filled with the layout's own masks: a Poisson number of
    /// keys per plane, then queries of other keys; the rate within 4% (the sample's
    /// standard error is about 1%), for the 1% filters' k and for an odd and an even other.
    #[test]
    fn the_model_matches_planes_filled_by_the_layouts_masks() {
        let hasher = crate::hash::KeyHasher::new(17);
        let uniform = |a: u64, b: u64| (hasher.hash(&(a, b)) >> 11) as f64 / (1u64 << 53) as f64;
        for (k, lambda, planes) in [(7, 7.6f64, 40_000u64), (4, 4.0, 20_000), (2, 6.0, 10_000)] {
            let (mut hits, mut queries) = (0u64, 0u64);
            for plane in 0..planes {
                // Knuth's Poisson draw.
                let (mut n, mut product) = (0u64, uniform(plane, u64::MAX));
                while product > (-lambda).exp() {
                    n += 1;
                    product *= uniform(plane, u64::MAX - n);
                }
                let mut words = [0u64; 2];
                for i in 0..n {
                    let m = crate::layout::plane_mask(hasher.hash(&(plane, i, 0u8)), k);
                    words = [words[0] | m[0], words[1] | m[1]];
                }
                for i in 0..100u64 {
                    let m = crate::layout::plane_mask(hasher.hash(&(plane, i, 1u8)), k);
                    hits += u64::from(m[0] & !words[0] == 0 && m[1] & !words[1] == 0);
                    queries += 1;
                }
            }
            let (measured, model) = (hits as f64 / queries as f64, plane_fpr(lambda, k));
            assert!(
                (measured / model - 1.0).abs() < 0.04,
                "k {k}, λ {lambda}: measured {measured}, model {model}"
            );
        }
    }

    /// Bits per key of capacity at a steady rate for a 512-bit line of `planes` planes of two
    /// words of `word_bits` each, `planes − 1` epochs a window (so a key is forgotten
    /// `planes / (planes − 1)` windows after its epoch's start), sized as ours: the expected
    /// worst moment at [`SIZED_SHARE`] of 1%, the best `k`.
    fn steady_bits_per_key(planes: u32, word_bits: usize) -> f64 {
        let plane_bits = 2.0 * word_bits as f64;
        let worst = |slots: f64, k: u32| {
            let plane = plane_fpr_in_words_of(word_bits, plane_bits / slots, k);
            1.0 - (1.0 - plane).powi(planes as i32)
        };
        (4..=10)
            .filter_map(|k| super::super::slots_per_key_for(0.01 * SIZED_SHARE, k, worst))
            .map(|slots| slots * 512.0 / (f64::from(planes - 1) * plane_bits))
            .fold(f64::INFINITY, f64::min)
    }

    /// The moonshot, 20 bits per key at 1% in one line with a key forgotten by
    /// 4/3 of the window, is beyond every planes layout, labels or not: ours (two 60-bit
    /// words a plane, 4-bit labels) takes what its sizing says; a label per pair of words
    /// (a 128-bit compare-exchange) 21.5; no labels at all 20.7 with four planes, and more
    /// planes (more, shorter epochs) take more, and three (forgotten by 3/2 of the window)
    /// 20.9. `-- --nocapture` prints them.
    #[test]
    fn twenty_bits_per_key_is_beyond_every_one_line_planes_layout() {
        let ours = steady_bits_per_key(4, 60);
        let sized = planes_params(0.01, 4).unwrap().0 / 3.0 * 512.0 / f64::from(PLANE_BITS);
        assert!(
            (ours / sized - 1.0).abs() < 2e-3,
            "{ours} against the sizing's {sized}"
        );
        let paired_labels = steady_bits_per_key(4, 62);
        let unlabelled: Vec<(u32, f64)> = [3, 4, 5, 6, 8]
            .map(|planes| (planes, steady_bits_per_key(planes, 256 / planes as usize)))
            .to_vec();
        eprintln!("ours {ours:.2}; a label per pair of words {paired_labels:.2}");
        for (planes, bits) in &unlabelled {
            eprintln!(
                "{planes} unlabelled planes of 2 × {} bits: {bits:.2}",
                256 / planes
            );
        }
        assert!(ours > paired_labels && paired_labels > unlabelled[1].1);
        assert!(unlabelled.iter().all(|&(_, bits)| bits > 20.0));
        assert!(unlabelled[2..]
            .iter()
            .all(|&(_, bits)| bits > unlabelled[1].1));
    }

    /// Given a plane's words, the rate is the chance that a key's split draws all hit:
    /// one bit of a key in a full word and an empty one hits half the time.
    #[test]
    fn a_planes_words_give_the_rate_of_the_split_draws() {
        assert_eq!(plane_words_fpr([60, 0], 1), 0.5);
        assert_eq!(plane_words_fpr([60, 0], 7), 0.0);
        assert_eq!(plane_words_fpr([60, 60], 7), 1.0);
        let f = plane_words_fpr([30, 15], 3);
        assert!(
            (f - 0.5 * (0.25 * 0.25 + 0.5 * 0.0625)).abs() < 1e-15,
            "{f}"
        );
    }

    /// The keys from a plane's fill invert the expected fill of `n` keys a line.
    #[test]
    fn keys_from_plane_ones_invert_the_expected_fill() {
        let q: f64 = 59.0 / 60.0;
        let u = 0.5 * (q.powi(4) + q.powi(3));
        let lines = 1_000u64;
        let ones = (120_000.0 * (1.0 - (-5.0 * (1.0 - u)).exp())).round() as u64;
        let keys = keys_from_plane_ones(ones, lines, 7);
        assert!((keys / 5_000.0 - 1.0).abs() < 1e-3, "{keys}");
        assert_eq!(keys_from_plane_ones(0, lines, 7), 0.0);
        assert!(keys_from_plane_ones(120_000, lines, 7).is_infinite());
    }
}
