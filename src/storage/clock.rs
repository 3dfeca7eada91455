//! The wall clock as nanoseconds since 1970, read without `SystemTime`'s conversions.
//!
//! `SystemTime::now()` reads the same clock (`CLOCK_REALTIME`), but turning it into a number
//! through `duration_since(UNIX_EPOCH)` is a call of its own (56 instructions under
//! callgrind, `examples/hot_path expiring_at`); reading the number directly, with the epoch
//! found without a division, took the expiring filter's `insert_if_absent` at 10^4 keys
//! from 88 to 75 ns (`report/examples/expiring`, three alternations, AMD EPYC).
//! [`wall_clock_bounds`] mostly does without the reading: bounds on the wall clock from the
//! thread's last reading and the CPU's time-stamp counter, enough to tell the epoch.

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

/// Where the wall clock is now, mostly without reading it: `(lo, hi)`, the reading the
/// wall clock would give at this instant in `lo..=hi` unless it was stepped in the last
/// [`TSC_SPAN`] (then it is as a reading from before the step). `lo == hi` is a reading
/// this call took; otherwise `hi − lo` is [`TSC_SPAN`], 2 ms: a thread re-reads the wall
/// clock once its time-stamp counter has run 1 ms of ticks since its last reading
/// (`clock_gettime` costs 21 ns, a counter read 9: docs/PERFORMANCE.md). Only where the
/// kernel keeps time by an invariant TSC (Linux on x86-64, clock source `tsc`); elsewhere
/// every call reads the wall clock.
#[inline(always)]
pub(crate) fn wall_clock_bounds() -> (u64, u64) {
    #[cfg(all(target_os = "linux", target_arch = "x86_64", not(blockbloom_loom)))]
    if let Some(bounds) = tsc::cached_bounds() {
        return bounds;
    }
    let now = wall_clock_nanos();
    (now, now)
}

/// The most a [`wall_clock_bounds`] interval spans: twice the 1 ms of ticks after which a
/// thread re-reads the wall clock, a margin for a counter whose rate fell up to half its
/// measured one since (it does not move on a machine whose kernel keeps time by it).
pub(crate) const TSC_SPAN: u64 = 2 * tsc::CAP_NANOS;

#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64", not(blockbloom_loom))),
    allow(dead_code)
)]
mod tsc {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    use std::sync::Once;

    /// Wall-clock time a thread goes on from one reading: 1 ms.
    pub(super) const CAP_NANOS: u64 = 1_000_000;

    /// Ticks in [`CAP_NANOS`], measured once per process (at most: a measured rate is
    /// never above the counter's); 0 before, and where the counter is not used.
    static CAP_TICKS: AtomicU64 = AtomicU64::new(0);
    static MEASURED: Once = Once::new();

    std::thread_local! {
        /// The counter before this thread's last wall-clock reading, and the reading.
        static LAST: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn ticks() -> u64 {
        // SAFETY: RDTSC exists on every x86-64 CPU and reads only the counter.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    fn ticks() -> u64 {
        0
    }

    /// [`wall_clock_bounds`](super::wall_clock_bounds) from this thread's last reading,
    /// or from a new one; `None` where the counter is not used.
    #[inline(always)]
    pub(super) fn cached_bounds() -> Option<(u64, u64)> {
        let cap = CAP_TICKS.load(Relaxed);
        if cap != 0 {
            let now = ticks();
            let (at, nanos) = LAST.get();
            // Wrapping: a counter behind the reading's (another CPU's, a reset) re-reads.
            if now.wrapping_sub(at) < cap {
                return Some((nanos, nanos + super::TSC_SPAN));
            }
        }
        read_again(cap)
    }

    /// A new wall-clock reading, remembered with the counter read before it: a later call
    /// on this thread is at or after the reading, and less than 1 ms after the counter.
    #[cold]
    #[inline(never)]
    fn read_again(cap: u64) -> Option<(u64, u64)> {
        if cap == 0 {
            MEASURED.call_once(measure);
            if CAP_TICKS.load(Relaxed) == 0 {
                return None;
            }
        }
        let at = ticks();
        let nanos = super::wall_clock_nanos();
        LAST.set((at, nanos));
        Some((nanos, nanos))
    }

    /// Measures the counter's rate against `CLOCK_MONOTONIC` (which runs as the wall clock
    /// but is never stepped) over 200 µs, if the counter runs at a constant rate on every
    /// CPU: the CPU says it is invariant, and the kernel keeps time by it (it checked that
    /// the CPUs' counters agree). Read in the order monotonic, counter … counter,
    /// monotonic, so that a pause between two reads can only lower the rate (a shorter
    /// span of ticks, a later reading): the measured rate is never above the true one.
    fn measure() {
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        {
            if !invariant_counter() || !kernel_keeps_time_by_it() {
                return;
            }
            let (start_nanos, start) = (monotonic_nanos(), ticks());
            let mut end_nanos = start_nanos;
            let mut end = start;
            while end_nanos - start_nanos < 200_000 {
                end = ticks();
                end_nanos = monotonic_nanos();
            }
            let per_cap = u128::from(end.wrapping_sub(start)) * u128::from(CAP_NANOS)
                / u128::from(end_nanos - start_nanos);
            // Between 50 MHz and 20 GHz, or something is wrong: the wall clock every call.
            if (50_000..=20_000_000).contains(&per_cap) {
                CAP_TICKS.store(per_cap as u64, Relaxed);
            }
        }
    }

    /// CPUID: the counter runs at a constant rate in every state (leaf 0x8000_0007, EDX bit 8).
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    fn invariant_counter() -> bool {
        use core::arch::x86_64::__cpuid;
        // SAFETY: CPUID exists on every x86-64 CPU; an extended leaf is read only if the
        // CPU lists it. (Safe to call from Rust 1.94; this crate builds from 1.89.)
        #[allow(unused_unsafe)]
        unsafe {
            __cpuid(0x8000_0000).eax >= 0x8000_0007 && __cpuid(0x8000_0007).edx & (1 << 8) != 0
        }
    }

    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    fn kernel_keeps_time_by_it() -> bool {
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .is_ok_and(|s| s.trim() == "tsc")
    }

    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    fn monotonic_nanos() -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
    }

    /// Whether this process uses the counter (measured on first use).
    #[cfg(test)]
    pub(super) fn in_use() -> bool {
        let _ = cached_bounds();
        CAP_TICKS.load(Relaxed) != 0
    }
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

    /// The wall clock at each call lies in the bounds, also across the 1 ms after which a
    /// thread reads it again and across pauses of up to 3 ms; the bounds span at most 2 ms.
    #[test]
    fn the_wall_clock_is_within_the_bounds() {
        let (mut cached, mut read) = (0, 0);
        for i in 0..20_000u64 {
            let before = wall_clock_nanos();
            let (lo, hi) = wall_clock_bounds();
            let after = wall_clock_nanos();
            assert!(
                lo <= after && before <= hi,
                "{i}: {before} {lo}..={hi} {after}"
            );
            assert!(hi - lo <= TSC_SPAN);
            if lo == hi {
                read += 1
            } else {
                cached += 1
            }
            // Pauses: none, a few µs, and now and then 0.5–3 ms.
            match i % 1000 {
                0..=899 => {}
                900..=990 => std::thread::sleep(std::time::Duration::from_micros(i % 20)),
                _ => std::thread::sleep(std::time::Duration::from_micros(500 + (i % 11) * 250)),
            }
        }
        if tsc::in_use() {
            assert!(
                cached > read,
                "{cached} answered from a reading, {read} read"
            );
        } else {
            assert_eq!(cached, 0);
        }
    }

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
