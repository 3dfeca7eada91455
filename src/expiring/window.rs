//! The expiring filter's clock: times → epochs → 4-bit stamps, and which stamps are live.
//!
//! Time is cut into epochs of `E = ⌈W / 4⌉` ([`GENERATIONS`] to a window `W`). A slot
//! inserted in epoch `s` holds the stamp `s mod 15 + 1` (0: empty). A caller in epoch `e`
//! reads a stamp as
//! * **live** if its age `e − s` is `0..=GENERATIONS` (the key is inside its window), or
//!   `−lag..=−1` (written by a caller whose clock is up to `lag` epochs ahead);
//! * **dead** otherwise. Dead stamps are cleared by the sweep before their value could come
//!   round again as a live one (the mod-15 arithmetic is only unambiguous over 15 epochs).

use core::time::Duration;
use std::time::SystemTime;

use crate::storage::nanos_since_1970;

use crate::Error;

/// Past epochs a stamp stays live: the window is 4 epochs, so a key is remembered for its
/// whole window and forgotten at most one epoch (25% of the window) later.
pub(crate) const GENERATIONS: u64 = 4;
/// Clock difference tolerated between callers of one filter (threads, processes, hosts).
pub(crate) const SKEW: Duration = Duration::from_secs(1);
/// Distinct nonzero stamps in a 4-bit slot.
const STAMPS: u64 = 15;

/// A window's epochs: their length and the tolerances that follow from it — the clock
/// arithmetic every copy of an [`ExpiringBloomFilter`](crate::ExpiringBloomFilter) shares
/// (in memory, in a file, and in Redis through `blockbloom-redis`).
///
/// Time since 1970 is cut into epochs of `E = ⌈W / 4⌉`; a key inserted in epoch `s` is
/// seen by a caller in epoch `e` while `e − s` is `0..=4` (or `s` is at most
/// [`tolerated_lag`](Self::tolerated_lag) epochs ahead of `e`, written by a caller whose
/// clock is ahead).
///
/// ```
/// use blockbloom::ExpiryWindow;
/// use std::time::{Duration, UNIX_EPOCH};
/// let w = ExpiryWindow::new(Duration::from_secs(8))?;
/// assert_eq!((w.epoch(), w.generations(), w.tolerated_lag()), (Duration::from_secs(2), 4, 1));
/// assert_eq!(w.epoch_of(UNIX_EPOCH + Duration::from_secs(9)), 4);
/// assert_eq!(w.start_of(4), Duration::from_secs(8));
/// assert_eq!(w.forgotten_after(), Duration::from_secs(10)); // 5 epochs: 25% slack
/// assert!(ExpiryWindow::new(Duration::from_millis(999)).is_err());
/// # Ok::<(), blockbloom::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExpiryWindow {
    expire_after: Duration,
    /// Epoch length in nanoseconds: `⌈W / GENERATIONS⌉`, so that `GENERATIONS` epochs cover
    /// the window (promise 1).
    epoch_nanos: u64,
    /// Epochs a caller may be behind the filter's newest: `⌈SKEW / E⌉`, at least 1.
    lag: u64,
    /// For each epoch mod 15, which stamps it reads as live and as ahead (`Epoch::live`,
    /// `Epoch::ahead`): the rule below, tabled once per window.
    tables: [(u32, u32); STAMPS as usize],
}

/// A caller's epoch, reduced for reading and writing stamps.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Epoch {
    /// The stamp this epoch writes: its number mod 15, plus 1 (kept as such: the hot path
    /// writes it).
    stamp: u64,
    lag: u64,
    /// Bits `x` and `16 + x` set iff stamp `x` is live for this epoch ([`Epoch::is_live`]).
    live: u32,
    /// Bits `x` and `16 + x` set iff stamp `x` is ahead of this epoch ([`Epoch::is_ahead`]).
    ahead: u32,
}

impl ExpiryWindow {
    /// The epochs of a window of `expire_after` (at least one second).
    ///
    /// # Errors
    /// [`Error::InvalidWindow`] below one second (the tolerated clock difference).
    ///
    /// Example at [`ExpiryWindow`].
    pub fn new(expire_after: Duration) -> Result<Self, Error> {
        let nanos = u64::try_from(expire_after.as_nanos()).unwrap_or(u64::MAX);
        if expire_after < SKEW || nanos == u64::MAX {
            return Err(Error::InvalidWindow(expire_after));
        }
        let epoch_nanos = nanos.div_ceil(GENERATIONS);
        let lag = (SKEW.as_nanos() as u64).div_ceil(epoch_nanos).max(1);
        debug_assert!(lag <= GENERATIONS);
        let mut tables = [(0, 0); STAMPS as usize];
        for (m, t) in tables.iter_mut().enumerate() {
            let e = Epoch {
                stamp: m as u64 + 1,
                lag,
                live: 0,
                ahead: 0,
            };
            for x in 1..=STAMPS {
                t.0 |= (e.is_live_by_age(x) as u32 * 0x1_0001) << x;
                t.1 |= (e.is_ahead_by_age(x) as u32 * 0x1_0001) << x;
            }
        }
        Ok(ExpiryWindow {
            expire_after,
            epoch_nanos,
            lag,
            tables,
        })
    }

    /// The window asked for.
    ///
    /// Example at [`ExpiryWindow`].
    pub fn expire_after(&self) -> Duration {
        self.expire_after
    }

    /// The window in nanoseconds (as a file records it; [`ExpiryWindow::new`] of it again gives
    /// this window).
    pub(crate) fn nanos(&self) -> u64 {
        self.expire_after.as_nanos() as u64
    }

    /// The epoch length.
    ///
    /// Example at [`ExpiryWindow`].
    pub fn epoch(&self) -> Duration {
        Duration::from_nanos(self.epoch_nanos)
    }

    /// How long after its insert a key is certainly forgotten: `(GENERATIONS + 1)` epochs.
    ///
    /// Example at [`ExpiryWindow`].
    pub fn forgotten_after(&self) -> Duration {
        self.epoch() * (GENERATIONS as u32 + 1)
    }

    /// Epochs a caller may be behind the newest one any caller has used.
    pub(crate) fn lag(&self) -> u64 {
        self.lag
    }

    /// Epochs a caller may be behind the newest one any caller has used: one second (the
    /// clock difference tolerated between callers), rounded up to whole epochs.
    ///
    /// Example at [`ExpiryWindow`].
    pub fn tolerated_lag(&self) -> u64 {
        self.lag
    }

    /// Past epochs a key stays seen (4): the window is this many epochs.
    ///
    /// Example at [`ExpiryWindow`].
    pub fn generations(&self) -> u64 {
        GENERATIONS
    }

    /// How far past the last sweep's epoch callers may go before stamps could alias: a stamp
    /// dead at the sweep's epoch `h` (older than `h − lag − GENERATIONS`) would read as live
    /// to a caller at `h + margin`.
    pub(crate) fn sweep_margin(&self) -> u64 {
        STAMPS - GENERATIONS - 2 * self.lag
    }

    /// The epoch number of `t` (0 before 1970).
    ///
    /// Example at [`ExpiryWindow`].
    #[inline]
    pub fn epoch_of(&self, t: SystemTime) -> u64 {
        self.epoch_of_nanos(nanos_since_1970(t))
    }

    /// The epoch number of the time `nanos` after 1970.
    #[inline(always)]
    pub(crate) fn epoch_of_nanos(&self, nanos: u64) -> u64 {
        nanos / self.epoch_nanos
    }

    /// Whether the time `nanos` after 1970 lies in epoch `n`: the common case of
    /// [`epoch_of_nanos`](Self::epoch_of_nanos), with a multiplication in place of its
    /// division.
    #[inline(always)]
    pub(crate) fn is_in(&self, nanos: u64, n: u64) -> bool {
        nanos.wrapping_sub(n.wrapping_mul(self.epoch_nanos)) < self.epoch_nanos
    }

    /// Time from 1970 to the start of epoch `n`.
    ///
    /// Example at [`ExpiryWindow`].
    pub fn start_of(&self, n: u64) -> Duration {
        Duration::from_nanos(n.saturating_mul(self.epoch_nanos))
    }

    /// Epoch `n`, reduced.
    #[inline]
    pub(crate) fn at(&self, n: u64) -> Epoch {
        let m = n % STAMPS;
        let (live, ahead) = self.tables[m as usize];
        Epoch {
            stamp: m + 1,
            lag: self.lag,
            live,
            ahead,
        }
    }
}

impl Epoch {
    /// The stamp this epoch writes (1..=15).
    #[inline(always)]
    pub(crate) fn stamp(&self) -> u64 {
        self.stamp
    }

    /// Age of the nonzero stamp `x` in epochs, mod 15 (0..15).
    #[inline(always)]
    fn age(&self, x: u64) -> u64 {
        let (s, m) = (x - 1, self.stamp - 1);
        if m >= s {
            m - s
        } else {
            m + STAMPS - s
        }
    }

    /// Whether the stamp in the low 4 bits of `x` is live for this epoch (the bits above
    /// are ignored, so `x` is a word shifted to the stamp, unmasked): a table lookup, no
    /// branch. The shift takes `x` mod 32, as the CPU's does, and the table's upper half
    /// repeats its lower one, which covers bit 4.
    #[inline(always)]
    pub(crate) fn is_live(&self, x: u64) -> bool {
        self.live.wrapping_shr(x as u32) & 1 != 0
    }

    /// Whether the stamp in the low 4 bits of `x` is newer than this epoch (a caller ahead
    /// wrote it): a write keeps it. The lookup of [`is_live`](Self::is_live).
    #[inline(always)]
    pub(crate) fn is_ahead(&self, x: u64) -> bool {
        self.ahead.wrapping_shr(x as u32) & 1 != 0
    }

    /// The rule [`is_live`](Self::is_live) tables: `x` nonzero, aged `0..=GENERATIONS`, or
    /// up to `lag` ahead.
    fn is_live_by_age(&self, x: u64) -> bool {
        x != 0 && {
            let a = self.age(x);
            a <= GENERATIONS || a >= STAMPS - self.lag
        }
    }

    /// The rule [`is_ahead`](Self::is_ahead) tables.
    fn is_ahead_by_age(&self, x: u64) -> bool {
        x != 0 && self.age(x) >= STAMPS - self.lag
    }

    /// Whether stamp `x` (read when this was the newest epoch, so at most this new) is live
    /// for some caller once the newest epoch is `ahead` epochs later: callers are at most
    /// `lag` behind the newest, so a stamp up to `lag + GENERATIONS` old then. The sweep
    /// clears the rest. The rule [`Sweep`] applies to 16 stamps at once.
    #[cfg(test)]
    fn is_live_for_any(&self, x: u64, ahead: u64) -> bool {
        x != 0 && self.age(x).saturating_add(ahead) <= self.lag + GENERATIONS
    }

    /// What a sweep keeps while this is the newest epoch, clearing for the newest epoch
    /// `ahead` epochs later.
    pub(crate) fn sweep(&self, ahead: u64) -> Sweep {
        Sweep {
            m16: (self.stamp + 15) * LANES,
            above: (self.lag + GENERATIONS)
                .checked_sub(ahead)
                .map(|oldest| (127 - oldest) * LANES),
        }
    }
}

/// 1 in each byte.
const LANES: u64 = 0x0101_0101_0101_0101;
/// The low nibble of each byte.
const LOW_NIBBLES: u64 = 0x0F0F_0F0F_0F0F_0F0F;

/// The stamps a sweep keeps ([`Epoch::is_live_for_any`]), for a word's 16 stamps at once:
/// eight in byte lanes at a time, with no branch and no table (docs/PERFORMANCE.md, "The
/// sweep", gives its speed against reading the memory alone).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sweep {
    /// `m + 16` in each byte, `m` the newest epoch mod 15.
    m16: u64,
    /// `127 − oldest` in each byte, `oldest` the greatest age kept; `None`: no age is.
    above: Option<u64>,
}

impl Sweep {
    /// `v` with every stamp cleared that the sweep does not keep.
    #[inline]
    pub(crate) fn swept(&self, v: u64) -> u64 {
        let Some(above) = self.above else {
            return 0;
        };
        // Per byte lane, for a stamp x in 0..=15: d = m + 16 − x in 1..=30, its age mod 15
        // is d less 15 where d ≥ 15 (x = 0 gets some age, and clearing it changes
        // nothing); the lane is cleared where that age exceeds `oldest`. No lane carries
        // into the next: every sum stays below 256.
        let keep = |x: u64| {
            let d = self.m16 - x;
            let age = d - 15 * ((d + 113 * LANES) >> 7 & LANES);
            let old = (age + above) >> 7 & LANES;
            !(15 * old) & LOW_NIBBLES
        };
        v & (keep(v & LOW_NIBBLES) | keep(v >> 4 & LOW_NIBBLES) << 4)
    }
}

/// The stamps (low bit of each nibble) of `v` among `slots` that are live for `e`.
#[inline(always)]
pub(crate) fn live_slots(v: u64, slots: u64, e: &Epoch) -> u64 {
    let mut live = 0;
    let mut m = slots;
    while m != 0 {
        let shift = m.trailing_zeros();
        m &= m - 1;
        live |= (e.is_live(v >> shift & 15) as u64) << shift;
    }
    live
}

/// `v` with its nibble at `shift` stamped `e` unless the nibble is ahead of `e` (a caller
/// ahead wrote it); the other nibbles as they are. Branch-free: the hot path calls it for
/// each of a key's slots, where a branch on the slot's state would be mispredicted.
#[inline(always)]
pub(crate) fn stamped(v: u64, shift: u32, e: &Epoch) -> u64 {
    let x = v >> shift; // the stamp, with the nibbles above it
    let write = (!e.is_ahead(x) as u64).wrapping_neg();
    // The bits that change the nibble to `e`'s stamp, shifted back into place.
    v ^ ((x ^ e.stamp()) & 15 & write) << shift
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    #[test]
    fn a_key_is_live_for_its_window_and_dead_one_epoch_after() {
        for secs in [1u64, 2, 7, 3600, 30 * 86_400] {
            let w = ExpiryWindow::new(Duration::from_secs(secs)).unwrap();
            let epoch = w.epoch().as_nanos() as u64;
            for start in [0, 1, epoch / 2, epoch - 1] {
                let t0 = 1_000 * epoch + start;
                let at = |ns: u64| w.at(w.epoch_of(UNIX_EPOCH + Duration::from_nanos(ns)));
                let s = at(t0).stamp();
                let w_ns = secs * 1_000_000_000;
                for d in [0, 1, w_ns / 2, w_ns - 1] {
                    assert!(at(t0 + d).is_live(s), "{secs}s window, +{d}ns");
                }
                let gone = w.forgotten_after().as_nanos() as u64;
                assert!(gone as f64 <= 1.25 * w_ns as f64 + 4.0);
                for d in [gone, gone + epoch, gone + 5 * epoch] {
                    assert!(!at(t0 + d).is_live(s), "{secs}s window, +{d}ns");
                }
            }
        }
    }

    #[test]
    fn stamps_ahead_by_the_lag_are_live_and_kept() {
        let w = ExpiryWindow::new(Duration::from_secs(2)).unwrap();
        assert_eq!(w.lag(), 2);
        let e = w.at(100);
        for ahead in 1..=2 {
            let x = w.at(100 + ahead).stamp();
            assert!(e.is_live(x) && e.is_ahead(x));
            assert_eq!(stamped(x, 0, &e), x);
        }
        assert!(!e.is_live(w.at(100 - 5).stamp()));
        assert_eq!(stamped(w.at(95).stamp(), 0, &e), e.stamp());
        let (old, other) = (w.at(95).stamp(), w.at(97).stamp());
        assert_eq!(stamped(old << 8 | other, 8, &e), e.stamp() << 8 | other);
    }

    #[test]
    fn the_tables_say_what_the_rule_says() {
        for secs in [1u64, 2, 3, 4, 7, 3600] {
            let w = ExpiryWindow::new(Duration::from_secs(secs)).unwrap();
            for n in 0..3 * STAMPS {
                let e = w.at(n);
                // The stamp with other nibbles' bits above it, as read from a shifted word.
                for (x, above) in (0..16).flat_map(|x| [0, 1, 0x5a5, u64::MAX >> 4].map(|a| (x, a)))
                {
                    assert_eq!(
                        e.is_live(above << 4 | x),
                        e.is_live_by_age(x),
                        "{secs}s, epoch {n}, stamp {x} under {above:x}"
                    );
                    assert_eq!(
                        e.is_ahead(above << 4 | x),
                        e.is_ahead_by_age(x),
                        "{secs}s, epoch {n}, stamp {x} under {above:x}"
                    );
                    let slots = 1u64 << 20;
                    assert_eq!(live_slots(x << 20, slots, &e) != 0, e.is_live_by_age(x));
                    // A write replaces the nibble unless it is ahead; the others stay.
                    let v = above << 4 | x;
                    let want = if e.is_ahead_by_age(x) {
                        v
                    } else {
                        v & !15 | e.stamp()
                    };
                    assert_eq!(stamped(v, 0, &e), want, "{secs}s, epoch {n}, {v:x}");
                    assert_eq!(stamped(v << 8 | 0xa5, 8, &e), want << 8 | 0xa5);
                }
            }
        }
    }

    /// The sweep's lanes against the rule, stamp by stamp: every stamp value in every
    /// nibble (each beside other values), every newest epoch mod 15, every `ahead` up to
    /// past what is kept, for lags of 1, 2 and 4 epochs.
    #[test]
    fn the_sweep_keeps_what_the_rule_keeps() {
        for secs in [1u64, 2, 3600] {
            let w = ExpiryWindow::new(Duration::from_secs(secs)).unwrap();
            for n in 100..100 + STAMPS {
                let e = w.at(n);
                for ahead in 0..=GENERATIONS + w.lag() + 2 {
                    let sweep = e.sweep(ahead);
                    for x in 0..16u64 {
                        for i in 0..16 {
                            // x in nibble i, the other nibbles each holding a different value.
                            let others = (0..16u64).fold(0, |v, j| v | ((x + j) % 16) << (4 * j));
                            let v = others & !(15 << (4 * i)) | x << (4 * i);
                            let want = (0..16).fold(0, |out, j| {
                                let y = v >> (4 * j) & 15;
                                out | (e.is_live_for_any(y, ahead) as u64 * y) << (4 * j)
                            });
                            assert_eq!(sweep.swept(v), want, "{secs}s, epoch {n}, +{ahead}, {v:x}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn windows_shorter_than_the_skew_are_refused() {
        assert!(ExpiryWindow::new(Duration::from_millis(999)).is_err());
        assert!(ExpiryWindow::new(Duration::MAX).is_err());
        assert!(
            ExpiryWindow::new(Duration::from_secs(1))
                .unwrap()
                .sweep_margin()
                >= 3
        );
    }
}
