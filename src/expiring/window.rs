//! The expiring filter's clock: times → epochs, and how long a key stays seen.
//!
//! Time since 1970 is cut into epochs of `E = ⌈(W + 1 s) / 3⌉` for a window `W`
//! ([`GENERATIONS`] epochs cover the window and the tolerated clock difference). A key
//! inserted in epoch `s` is seen by callers in epochs `s ..= s + 3` and forgotten from
//! `s + 4` on (`planes.rs` holds the line layout that reads it so).
//!
//! `blockbloom-redis`'s generations still count in quarter windows (`E = ⌈W / 4⌉`, seen
//! for 4 epochs after its own): [`ExpiryWindow::in_quarters`] gives those epochs.

use core::time::Duration;
use std::time::SystemTime;

use crate::storage::nanos_since_1970;

use crate::Error;

/// Past epochs a key stays seen: 3, so that the window and the tolerated clock difference
/// fit in the epochs after the key's own, which may have begun just before its insert.
pub(crate) const GENERATIONS: u64 = super::planes::PLANES - 1;
/// Clock difference tolerated between callers of one filter (threads, processes, hosts).
pub(crate) const SKEW: Duration = Duration::from_secs(1);

/// A window's epochs: their length and the tolerances that follow from it — the clock
/// arithmetic every copy of an [`ExpiringBloomFilter`](crate::ExpiringBloomFilter) shares
/// (in memory and in a file).
///
/// Time since 1970 is cut into epochs of `E = ⌈(W + 1 s) / 3⌉`; a key inserted in epoch
/// `s` is seen by a caller in epoch `e` while `e − s` is `0..=3`, so for at least `W` after
/// its insert even by a caller whose clock is a second ahead, and forgotten `4 E` after
/// the start of its epoch: at most `4/3 (W + 1 s)` (+ 4 ns of rounding) after its insert.
///
/// ```
/// use blockbloom::ExpiryWindow;
/// use std::time::{Duration, UNIX_EPOCH};
/// let w = ExpiryWindow::new(Duration::from_secs(8))?;
/// assert_eq!((w.epoch(), w.generations(), w.tolerated_lag()), (Duration::from_secs(3), 3, 1));
/// assert_eq!(w.epoch_of(UNIX_EPOCH + Duration::from_secs(10)), 3);
/// assert_eq!(w.start_of(3), Duration::from_secs(9));
/// assert_eq!(w.forgotten_after(), Duration::from_secs(12)); // 4 epochs: 4/3 of (W + 1 s)
/// assert!(ExpiryWindow::new(Duration::from_millis(999)).is_err());
/// # Ok::<(), blockbloom::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExpiryWindow {
    expire_after: Duration,
    /// Epoch length in nanoseconds.
    epoch_nanos: u64,
    /// Past epochs a key stays seen: [`GENERATIONS`], or 4 in quarter windows.
    generations: u64,
    /// Epochs the tolerated clock difference spans: `⌈SKEW / E⌉`, at least 1.
    lag: u64,
}

impl ExpiryWindow {
    /// The epochs of a window of `expire_after` (at least one second).
    ///
    /// # Errors
    /// [`Error::InvalidWindow`] below one second (the tolerated clock difference).
    ///
    /// Example at [`ExpiryWindow`].
    pub fn new(expire_after: Duration) -> Result<Self, Error> {
        let nanos = Self::checked_nanos(expire_after)?;
        let epoch_nanos = nanos
            .saturating_add(SKEW.as_nanos() as u64)
            .div_ceil(GENERATIONS);
        Ok(Self::with(expire_after, epoch_nanos, GENERATIONS))
    }

    /// The epochs of `blockbloom-redis`'s generations: quarter windows (`⌈W / 4⌉`), a key
    /// seen for the 4 epochs after its own and forgotten in the fifth. Not public API.
    #[doc(hidden)]
    pub fn in_quarters(expire_after: Duration) -> Result<Self, Error> {
        let nanos = Self::checked_nanos(expire_after)?;
        Ok(Self::with(expire_after, nanos.div_ceil(4), 4))
    }

    fn checked_nanos(expire_after: Duration) -> Result<u64, Error> {
        match u64::try_from(expire_after.as_nanos()) {
            Ok(n) if expire_after >= SKEW && n != u64::MAX => Ok(n),
            _ => Err(Error::InvalidWindow(expire_after)),
        }
    }

    fn with(expire_after: Duration, epoch_nanos: u64, generations: u64) -> Self {
        let lag = (SKEW.as_nanos() as u64).div_ceil(epoch_nanos).max(1);
        ExpiryWindow {
            expire_after,
            epoch_nanos,
            generations,
            lag,
        }
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

    /// The epoch length in nanoseconds.
    #[inline(always)]
    pub(crate) fn nanos_per_epoch(&self) -> u64 {
        self.epoch_nanos
    }

    /// The epoch length.
    ///
    /// Example at [`ExpiryWindow`].
    pub fn epoch(&self) -> Duration {
        Duration::from_nanos(self.epoch_nanos)
    }

    /// How long after the start of its epoch a key is certainly forgotten: one epoch more
    /// than it is seen.
    ///
    /// Example at [`ExpiryWindow`].
    pub fn forgotten_after(&self) -> Duration {
        self.epoch() * (self.generations as u32 + 1)
    }

    /// Epochs the tolerated clock difference (one second) spans, rounded up: how far a
    /// file's newest epoch may be past this machine's clock.
    ///
    /// Example at [`ExpiryWindow`].
    pub fn tolerated_lag(&self) -> u64 {
        self.lag
    }

    /// Past epochs a key stays seen (3): the window and the tolerated clock difference fit
    /// in them.
    ///
    /// Example at [`ExpiryWindow`].
    pub fn generations(&self) -> u64 {
        self.generations
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    /// Promise 1 and 2 in the arithmetic: from any point of its epoch, a key is in epochs
    /// seen for `W` (also by a clock a second ahead) and in one forgotten by `4/3 (W + 1 s)`.
    #[test]
    fn a_key_is_seen_for_its_window_and_forgotten_in_the_fourth_epoch_after_its_own() {
        for secs in [1u64, 2, 7, 3600, 30 * 86_400] {
            let w = ExpiryWindow::new(Duration::from_secs(secs)).unwrap();
            let epoch = w.epoch().as_nanos() as u64;
            let w_ns = secs * 1_000_000_000;
            for start in [0, 1, epoch / 2, epoch - 1] {
                let t0 = 1_000 * epoch + start;
                let s = t0 / epoch;
                let seen = |ns: u64| ns / epoch - s <= GENERATIONS;
                for d in [0, 1, w_ns / 2, w_ns - 1] {
                    assert!(seen(t0 + d), "{secs}s window, +{d}ns");
                    assert!(seen(t0 + d + 1_000_000_000), "{secs}s, a clock 1 s ahead");
                }
                let gone = w.forgotten_after().as_nanos() as u64;
                assert!(gone as f64 <= 4.0 / 3.0 * (w_ns + 1_000_000_000) as f64 + 4.0);
                assert!(!seen(w.start_of(s).as_nanos() as u64 + gone));
            }
        }
    }

    #[test]
    fn quarter_windows_are_redis_generations() {
        let w = ExpiryWindow::in_quarters(Duration::from_secs(8)).unwrap();
        assert_eq!(
            (w.epoch(), w.generations(), w.tolerated_lag()),
            (Duration::from_secs(2), 4, 1)
        );
        assert_eq!(w.forgotten_after(), Duration::from_secs(10));
        assert_eq!(w.epoch_of(UNIX_EPOCH + Duration::from_secs(9)), 4);
    }

    #[test]
    fn windows_shorter_than_the_skew_or_past_584_years_are_refused() {
        assert!(ExpiryWindow::new(Duration::from_millis(999)).is_err());
        assert!(ExpiryWindow::new(Duration::MAX).is_err());
        assert!(ExpiryWindow::new(Duration::from_nanos(u64::MAX - 1)).is_ok());
        assert!(ExpiryWindow::in_quarters(Duration::from_millis(999)).is_err());
        assert_eq!(
            ExpiryWindow::new(Duration::from_secs(1))
                .unwrap()
                .tolerated_lag(),
            2
        );
    }
}
