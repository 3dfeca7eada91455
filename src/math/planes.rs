//! The rate of the expiring filter's planes (`expiring/planes.rs`), which its sizing
//! (`expiring::sizing`, through [`planes_params`] here) keeps under the target at the worst
//! moment of an epoch, at a steady rate or in the worst burst.
//!
//! A plane is 120 bits of a line; a key sets `k` of them in the plane of its epoch. With
//! `λ` keys of an epoch in a line (Poisson), the rate of one plane is
//! `Σ_n P(n; λ) · (1 − (1 − 1/120)^{kn})^k`, and a query tests each live plane: at the end
//! of an epoch four are full at a steady rate, two in the worst burst (a window's keys in
//! its last epoch, the next window's in the first).

use super::{check, params_for, Rate};
use crate::error::Error;

/// The expected rate at the worst moment that the sizing aims at, as a share of the target.
/// A filter's own fill varies around the expected one (the rate it gives by about 1.3% at
/// 10^5 keys, 0.4% at 10^6: its lines' loads are Poisson), so the expected worst moment
/// is put 3% under the target, for the measured one to stay at or under it from 10^5 keys
/// up (22.35 bits per key at 1% instead of 22.18).
pub(crate) const SIZED_SHARE: f64 = 0.97;

/// Bits of a plane (`layout::plane_mask` places a key's bits in one).
pub(crate) const PLANE_BITS: u32 = 120;
const BITS_F: f64 = PLANE_BITS as f64;

/// The bits of a plane per key and the `k` that keep the expiring filter's rate at or under
/// `fpr` with `full` planes full: its expected rate there is [`SIZED_SHARE`] of `fpr` (the
/// sizing search of the other filters, remembered as theirs: loom's models build a filter
/// per execution).
pub(crate) fn planes_params(fpr: f64, full: u32) -> Result<(f64, u32), Error> {
    check(1, fpr)?;
    params_for(fpr * SIZED_SHARE, Rate::Planes(full)).map_err(|e| match e {
        Error::UnreachableFpr(_) => Error::UnreachableFpr(fpr),
        e => e,
    })
}

/// The rate of one plane holding a Poisson number of keys of mean `lambda`, `k` bits each:
/// for `n` keys, `Σ_j P(j bits set after kn draws) · (j / 120)^k` (the occupancy
/// distribution, exact under ideal hashing: a fill's variance raises the rate above the
/// mean fill's), weighted by `P(n; λ)`.
pub(crate) fn plane_fpr(lambda: f64, k: u32) -> f64 {
    if lambda <= 0.0 {
        return 0.0;
    }
    const BITS: usize = PLANE_BITS as usize;
    let hit: Vec<f64> = (0..=BITS)
        .map(|j| (j as f64 / BITS_F).powi(k as i32))
        .collect();
    // occupancy[j]: P(j distinct bits set) after the draws so far.
    let mut occupancy = vec![0.0f64; BITS + 1];
    occupancy[0] = 1.0;
    let (mut sum, mut p) = (0.0, (-lambda).exp());
    let last = (lambda * 4.0 + 40.0) as u32;
    for n in 0..=last {
        sum += p * occupancy.iter().zip(&hit).map(|(o, h)| o * h).sum::<f64>();
        // The next key's k draws.
        for _ in 0..k {
            for j in (0..=BITS).rev() {
                let stay = occupancy[j] * j as f64 / BITS_F;
                let from = if j > 0 {
                    occupancy[j - 1] * (BITS - j + 1) as f64 / BITS_F
                } else {
                    0.0
                };
                occupancy[j] = stay + from;
            }
        }
        p *= lambda / f64::from(n + 1);
    }
    sum
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
}
