//! The wall clock as nanoseconds since 1970, read without `SystemTime`'s conversions.
//!
//! `SystemTime::now()` reads the same clock (`CLOCK_REALTIME`), but turning it into a number
//! through `duration_since(UNIX_EPOCH)` is a call of its own (56 instructions under
//! callgrind, `examples/hot_path expiring_at`); reading the number directly, with the epoch
//! found without a division, took the expiring filter's `insert_if_absent` at 10^4 keys
//! from 88 to 75 ns (`report/examples/expiring`, three alternations, AMD EPYC).

use std::time::{SystemTime, UNIX_EPOCH};

/// Nanoseconds from 1970 to `t`: 0 before 1970, `u64::MAX` after 2554.
#[inline]
pub(crate) fn nanos_since_1970(t: SystemTime) -> u64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d
            .as_secs()
            .saturating_mul(1_000_000_000)
            .saturating_add(d.subsec_nanos() as u64),
        Err(_) => 0,
    }
}

/// [`nanos_since_1970`] of now: one `clock_gettime(CLOCK_REALTIME)`, the clock
/// `SystemTime::now` reads.
#[inline]
pub(crate) fn wall_clock_nanos() -> u64 {
    #[cfg(all(unix, not(blockbloom_loom)))]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec; CLOCK_REALTIME always exists, so the
        // call cannot fail (a failure leaves `ts` zeroed: 1970, never a time ahead).
        unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
        match u64::try_from(ts.tv_sec) {
            Ok(s) => s
                .saturating_mul(1_000_000_000)
                .saturating_add(ts.tv_nsec as u64),
            Err(_) => 0,
        }
    }
    #[cfg(not(all(unix, not(blockbloom_loom))))]
    nanos_since_1970(SystemTime::now())
}

/// The coarse wall clock (`CLOCK_REALTIME_COARSE`, the time at the kernel's last tick) in
/// nanoseconds since 1970: not used by any filter (its lag behind the wall clock has no
/// bound that promise 1 could rest on), only measured by the benchmark report
/// (`report/examples/expiring.rs`). `None` where there is no such clock.
#[cfg(feature = "internals")]
pub fn coarse_clock_nanos() -> Option<u64> {
    coarse(false)
}

/// The coarse clock's resolution in nanoseconds (its tick), as [`coarse_clock_nanos`].
#[cfg(feature = "internals")]
pub fn coarse_clock_resolution() -> Option<u64> {
    coarse(true)
}

/// `clock_gettime` (or, for `resolution`, `clock_getres`) of the coarse clock.
#[cfg(feature = "internals")]
fn coarse(resolution: bool) -> Option<u64> {
    #[cfg(all(target_os = "linux", not(blockbloom_loom)))]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec.
        let ok = unsafe {
            if resolution {
                libc::clock_getres(libc::CLOCK_REALTIME_COARSE, &mut ts)
            } else {
                libc::clock_gettime(libc::CLOCK_REALTIME_COARSE, &mut ts)
            }
        } == 0;
        ok.then(|| {
            (ts.tv_sec as u64)
                .saturating_mul(1_000_000_000)
                .saturating_add(ts.tv_nsec as u64)
        })
    }
    #[cfg(not(all(target_os = "linux", not(blockbloom_loom))))]
    {
        let _ = resolution;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_is_system_times() {
        let before = nanos_since_1970(SystemTime::now());
        let ours = wall_clock_nanos();
        let after = nanos_since_1970(SystemTime::now());
        assert!(before <= ours && ours <= after, "{before} {ours} {after}");
        assert_eq!(nanos_since_1970(UNIX_EPOCH), 0);
        assert_eq!(
            nanos_since_1970(UNIX_EPOCH - std::time::Duration::from_secs(1)),
            0
        );
    }
}
