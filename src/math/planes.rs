//! Sizing of the expiring filter's planes (`expiring/planes.rs`): how many lines keep the
//! rate at the worst moment of an epoch, at a steady rate or in the worst burst.
//!
//! A plane is 120 bits of a line; a key sets `k` of them in the plane of its epoch. With
//! `λ` keys of an epoch in a line (Poisson), the rate of one plane is
//! `Σ_n P(n; λ) · (1 − (1 − 1/120)^{kn})^k`, and a query tests each live plane: at the end
//! of an epoch four are full at a steady rate, two in the worst burst (a window's keys in
//! its last epoch, the next window's in the first).

use super::{blocks_for, check, Sizing};
use crate::{Arrival, Error, ExpiryWindow};

/// Bits of a plane.
pub(super) const PLANE_BITS: f64 = crate::layout::PLANE_BITS as f64;

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
        .map(|j| (j as f64 / PLANE_BITS).powi(k as i32))
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
                let stay = occupancy[j] * j as f64 / PLANE_BITS;
                let from = if j > 0 {
                    occupancy[j - 1] * (BITS - j + 1) as f64 / PLANE_BITS
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

/// The rate at the worst moment with `lambda` keys per full plane of a line.
pub(crate) fn worst_fpr(lambda: f64, k: u32, arrival: Arrival) -> f64 {
    let full = match arrival {
        Arrival::Steady => 4,
        Arrival::WorstBurst => 2,
    };
    1.0 - (1.0 - plane_fpr(lambda, k)).powi(full)
}

/// The most keys per plane of a line, and the `k` for them, at which the worst moment's
/// rate is at most `fpr`: the sizing search of the other filters, over a plane's bits per
/// key, remembered as theirs (loom's models build a filter per execution).
pub(crate) fn keys_per_plane(fpr: f64, arrival: Arrival) -> Result<(f64, u32), Error> {
    let (bits_per_key, k) = super::params_for(fpr, super::Rate::Planes(arrival))?;
    Ok((PLANE_BITS / bits_per_key, k))
}

/// Key lines and bits per key for `capacity` keys per `window` at `fpr`, arriving as
/// `arrival` says.
///
/// # Errors
/// [`Error::ZeroCapacity`], [`Error::InvalidFpr`], or [`Error::TooLarge`].
pub(crate) fn size_planes(
    capacity: u64,
    fpr: f64,
    arrival: Arrival,
    window: &ExpiryWindow,
) -> Result<Sizing, Error> {
    check(capacity, fpr)?;
    let (lambda, k) = keys_per_plane(fpr, arrival)?;
    // Keys in one plane: an epoch's share of the window at a steady rate, the whole
    // window's in the worst burst.
    let share = match arrival {
        Arrival::Steady => window.epoch().as_secs_f64() / window.expire_after().as_secs_f64(),
        Arrival::WorstBurst => 1.0,
    };
    Ok(Sizing {
        blocks: blocks_for(share / lambda, capacity, 1)?,
        hashes: k,
        target_fpr: fpr,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_steady_planes_take_22_2_bits_per_key_at_1_percent() {
        let (lambda, k) = keys_per_plane(0.01, Arrival::Steady).unwrap();
        // 512 bits a line, three epochs a window: 512 / (3 λ) bits per key of the window.
        let bits = 512.0 / (3.0 * lambda);
        assert_eq!(k, 7);
        assert!((22.1..22.3).contains(&bits), "{bits}");
        let (burst, _) = keys_per_plane(0.01, Arrival::WorstBurst).unwrap();
        assert!(
            burst < lambda * 1.3 && burst > lambda,
            "{burst} vs {lambda}"
        );
        // A month's window: the epoch is a third of it (plus a third of a second).
        let month = ExpiryWindow::new(core::time::Duration::from_secs(30 * 86_400)).unwrap();
        let s = size_planes(1_000_000, 0.01, Arrival::Steady, &month).unwrap();
        assert_eq!(s.hashes, 7);
        let bits_per_key = s.blocks as f64 * 512.0 / 1e6;
        assert!((22.1..22.3).contains(&bits_per_key), "{bits_per_key}");
    }

    #[test]
    fn the_rate_grows_with_the_keys_and_k_has_an_optimum() {
        assert_eq!(plane_fpr(0.0, 7), 0.0);
        assert!(plane_fpr(4.0, 7) < plane_fpr(8.0, 7));
        assert!(worst_fpr(8.0, 7, Arrival::Steady) > worst_fpr(8.0, 7, Arrival::WorstBurst));
        assert!(plane_fpr(7.8, 7) < plane_fpr(7.8, 2) && plane_fpr(7.8, 7) < plane_fpr(7.8, 16));
    }
}
