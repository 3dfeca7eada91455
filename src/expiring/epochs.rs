//! The epoch each call works in (the filter's newest), and the sweeps that clear dead words
//! before their label comes round again (`planes.rs` has the rule).
//!
//! A newest epoch [`PASS_EVERY`] past the last recorded pass's owes a *pass*: a sweep of
//! the whole filter. It is done a chunk of [`CHUNK_LINES`] lines per call, by the calls
//! that find a pass owed, so that no call stalls for the whole filter: the chunks are
//! claimed from a cursor in the clock line ([`PASS`]), the finished ones counted in another
//! word ([`PASS_DONE`]), and the call that finishes the last chunk records the pass in
//! [`SWEPT`]. A pass not done when the next epoch begins is continued, then, while one is
//! still owed, a new one starts for the newest epoch. A chunk whose call dies (SIGKILL) is
//! never counted, so its pass is never recorded: the next epoch's pass covers it. Words
//! that are dead but not yet cleared read as dead; they could come round as live only
//! [`SWEEP_MARGIN`] epochs after the last recorded pass, and no call moves the newest epoch
//! that far without sweeping the whole filter first (an idle filter, a replay, passes that
//! never complete).

use super::planes::{swept, PlaneEpoch, SWEEP_MARGIN};
use super::{ExpiringBloomFilter, FIRST, FIRST_AT, NEWEST, PASS, PASS_DONE, SWEPT};

#[cfg(test)]
std::thread_local! {
    /// Key lines swept on this thread (`sweep` counts them, for the tests).
    pub(super) static SWEPT_LINES: core::cell::Cell<u64> = const { core::cell::Cell::new(0) };
}
use crate::line::Line;
use crate::storage::{nanos_since_1970, wall_clock_bounds, wall_clock_nanos};
use crate::sync::{
    AtomicU64,
    Ordering::{AcqRel, Acquire, Relaxed, SeqCst},
};
use core::cmp::Ordering::{Equal, Greater, Less};
use std::time::SystemTime;

#[cfg(not(blockbloom_loom))]
std::thread_local! {
    /// The end of the last epoch a call on this thread found `t` in, as a `SystemTime`,
    /// with the epoch length and number it is of ([`ExpiringBloomFilter::epoch_at`]).
    static EPOCH_END: core::cell::Cell<(u64, u64, SystemTime)> =
        const { core::cell::Cell::new((0, 0, SystemTime::UNIX_EPOCH)) };
}

/// The latest time a call may work at (guarantee 6), in nanoseconds since 1970: this
/// machine's clock plus the tolerated skew. Read only by calls that would move the newest
/// epoch.
#[cold]
fn latest_nanos() -> u64 {
    wall_clock_nanos().saturating_add(super::window::SKEW.as_nanos() as u64)
}

/// Lines a call sweeps at most for its epoch's pass: 64 KiB, about 26 µs at the sweep's
/// speed (docs/PERFORMANCE.md, "The sweep"). One under loom, whose models race the calls
/// that split a pass over a filter of a few lines.
pub(super) const CHUNK_LINES: usize = if cfg!(blockbloom_loom) { 1 } else { 1024 };
/// Epochs from one pass to the next: a pass is owed once the newest epoch is this far past
/// the last recorded pass's. Writers reclaim most dead words in their own claims; a pass is
/// for the words no one reclaims, which it must clear within [`SWEEP_MARGIN`] epochs, so a
/// pass every 8 leaves 44 epochs to complete it (at least 14 windows) and costs an eighth of
/// a pass per epoch. Under loom, every epoch, whose models race the calls that split a
/// pass.
pub(crate) const PASS_EVERY: u64 = if cfg!(blockbloom_loom) { 1 } else { 8 };
/// The low bits of the [`PASS`] and [`PASS_DONE`] words count chunks; the bits above hold
/// the pass's epoch (below 2^37: epochs are at least 250 ms long).
pub(super) const CHUNK_BITS: u32 = 24;
const CHUNK_MASK: u64 = (1 << CHUNK_BITS) - 1;

impl ExpiringBloomFilter {
    /// The clock line's word `i` ([`NEWEST`], [`SWEPT`], [`WINDOW`]).
    #[inline(always)]
    pub(super) fn clock(&self, i: usize) -> &AtomicU64 {
        &self.store.lines[0].words()[i]
    }

    /// The epoch a call at `t` works in: the newest any call has used, moved on to `t`'s
    /// own if that is later (guarantee 5: a clock behind works in the newest epoch).
    ///
    /// A `t` inside the newest epoch or behind it is recognised by comparing it with the
    /// epoch's end as a `SystemTime`, remembered per thread for an epoch length and epoch
    /// number (a pure function of the two, so any filter may use it): turning `t` into
    /// nanoseconds (`duration_since`, 56 instructions) is only for the other calls.
    #[inline(always)]
    pub(super) fn epoch_at(&self, t: SystemTime) -> PlaneEpoch {
        #[cfg(not(blockbloom_loom))]
        {
            let newest = self.clock(NEWEST).load(SeqCst);
            let (length, n, end) = EPOCH_END.with(core::cell::Cell::get);
            let mine = n == newest && length == self.window.nanos_per_epoch() && newest != 0;
            // A time before the newest epoch's end is in it or behind it: either way the
            // call works in the newest (as `epoch_off_the_newest` decides for one behind).
            if mine && t < end {
                self.sweep_if_owed(newest);
                return PlaneEpoch::at(newest);
            }
        }
        let nanos = nanos_since_1970(t);
        #[cfg(not(blockbloom_loom))]
        self.remember_end(nanos);
        self.epoch_at_nanos(nanos)
    }

    /// Remembers on this thread the end of the newest epoch if `nanos` lies in it.
    #[cfg(not(blockbloom_loom))]
    #[cold]
    #[inline(never)]
    fn remember_end(&self, nanos: u64) {
        let newest = self.clock(NEWEST).load(Relaxed);
        let length = self.window.nanos_per_epoch();
        if newest == 0 || !self.window.is_in(nanos, newest) {
            return;
        }
        let start = std::time::UNIX_EPOCH + std::time::Duration::from_nanos(newest * length);
        let end = start + std::time::Duration::from_nanos(length);
        EPOCH_END.with(|b| b.set((length, newest, end)));
    }

    /// [`epoch_at`](Self::epoch_at) now: the clock as a number, not a `SystemTime`, and
    /// mostly not read: bounds on it from this thread's last reading
    /// ([`wall_clock_bounds`]) decide the call when both lie in the newest epoch; the
    /// clock is read for the rest (the 2 ms before an epoch's end, a new epoch).
    #[inline(always)]
    pub(super) fn epoch_now(&self) -> PlaneEpoch {
        let (lo, hi) = wall_clock_bounds();
        if lo != hi {
            // SeqCst: as in `epoch_at_nanos`.
            let newest = self.clock(NEWEST).load(SeqCst);
            if self.window.is_in(lo, newest) && self.window.is_in(hi, newest) && newest != 0 {
                self.sweep_if_owed(newest);
                return PlaneEpoch::at(newest);
            }
            return self.epoch_at_nanos(wall_clock_nanos());
        }
        self.epoch_at_nanos(lo)
    }

    /// [`epoch_at`](Self::epoch_at) of the time `nanos` after 1970; a call in the newest
    /// epoch sweeps a chunk of its pass while one is owed.
    #[inline(always)]
    fn epoch_at_nanos(&self, nanos: u64) -> PlaneEpoch {
        // SeqCst: the planes' proof orders this read before the line's (`planes.rs`).
        let newest = self.clock(NEWEST).load(SeqCst);
        // (Newest epoch 0 is also a filter no call has used: its first call goes on, to
        // record its first epoch, even in epoch 0.)
        if self.window.is_in(nanos, newest) && newest != 0 {
            // Most calls: no division, and the pass of this epoch done.
            self.sweep_if_owed(newest);
            return PlaneEpoch::at(newest);
        }
        self.epoch_off_the_newest(nanos, newest)
    }

    /// [`epoch_at_nanos`](Self::epoch_at_nanos) of a time outside the newest epoch (or of
    /// a filter no call has used): the newest epoch for a time behind it, else the time's
    /// own, at most this machine's clock and the skew, to which the newest epoch moves on.
    #[cold]
    #[inline(never)]
    fn epoch_off_the_newest(&self, nanos: u64, newest: u64) -> PlaneEpoch {
        let mut own = self.window.epoch_of_nanos(nanos);
        let mut nanos = nanos;
        if own > newest {
            // Guarantee 6: no call moves the filter past this machine's clock and the skew
            // it tolerates (a time further ahead is a wrong clock, or a wrong `_at`).
            let latest = latest_nanos();
            if nanos > latest {
                (own, nanos) = (self.window.epoch_of_nanos(latest), latest);
            }
        }
        if own < newest || (own == newest && self.clock(FIRST).load(Relaxed) != 0) {
            self.sweep_if_owed(newest);
            return PlaneEpoch::at(newest);
        }
        self.advance(own, nanos)
    }

    /// Moves the newest epoch on to `n`, sweeping the whole filter first where words could
    /// otherwise alias: the newest epoch never gets [`SWEEP_MARGIN`] epochs past the last
    /// completed pass's, so that every word in the filter reads unambiguously against it.
    /// Otherwise `n`'s pass is owed, and this call sweeps its first chunk.
    /// `nanos`: the call's time, recorded if it is the filter's first.
    #[cold]
    fn advance(&self, n: u64, nanos: u64) -> PlaneEpoch {
        let mut swept = self.clock(SWEPT).load(Acquire);
        if swept == 0 {
            if self
                .clock(FIRST)
                .compare_exchange(0, n + 1, Relaxed, Relaxed)
                .is_ok()
            {
                self.clock(FIRST_AT).store(nanos, Relaxed);
            }
            match self
                .clock(SWEPT)
                .compare_exchange(0, n + 1, AcqRel, Acquire)
            {
                // The filter's first advance: every call passes here before it writes a
                // word, and the others' compare-exchanges fail after ours, so there is no
                // word yet and nothing to sweep (a sweep would read every page of the new
                // filter).
                Ok(_) => {
                    self.clock(NEWEST).fetch_max(n, SeqCst);
                    return PlaneEpoch::at(n);
                }
                Err(now) => swept = now,
            }
        }
        if n >= swept - 1 + SWEEP_MARGIN {
            // Far ahead (an idle filter, a replay): clear what is dead at `n` before any
            // call can write in `n`'s plane.
            self.sweep(self.key_lines(), n);
            self.clock(SWEPT).fetch_max(n + 1, AcqRel);
        }
        // SeqCst (so also Release): a call that reads this epoch also sees everything we
        // did before, and the planes' proof has it in the order of SeqCst operations.
        self.clock(NEWEST).fetch_max(n, SeqCst);
        self.sweep_if_owed(n);
        PlaneEpoch::at(n)
    }

    /// Sweeps a chunk if a pass is owed: the newest epoch [`PASS_EVERY`] or more past the
    /// last recorded pass's (Relaxed: only a hint of whether to look at the pass; the
    /// pass's own words decide).
    #[inline(always)]
    fn sweep_if_owed(&self, newest: u64) {
        if self.clock(SWEPT).load(Relaxed) + (PASS_EVERY - 1) <= newest {
            self.sweep_a_chunk(newest);
        }
    }

    /// Lines per chunk: [`CHUNK_LINES`], or more where the chunks would not fit the count.
    fn chunk_lines(&self) -> usize {
        let lines = self.key_lines().len();
        lines.div_ceil(CHUNK_MASK as usize).max(CHUNK_LINES)
    }

    /// Sweeps the next unclaimed chunk of the pass in progress, or, if its chunks are all
    /// claimed (or a later sweep made it moot), of a new pass for the newest epoch
    /// (`newest`, as this call read it); records the pass in [`SWEPT`] if that was its last
    /// chunk to be done. Nothing if every chunk is claimed and no epoch is newer.
    #[cold]
    #[inline(never)]
    fn sweep_a_chunk(&self, newest: u64) {
        debug_assert!(newest + 1 < 1 << (64 - CHUNK_BITS));
        let lines = self.chunk_lines();
        let chunks = self.key_lines().len().div_ceil(lines) as u64;
        let swept = self.clock(SWEPT).load(Acquire);
        // A pass is its epoch + 1 in the words' high bits (0: none yet), like SWEPT.
        let mut cur = self.clock(PASS).load(Acquire);
        let (pass, chunk) = loop {
            let (pass, claimed) = (cur >> CHUNK_BITS, cur & CHUNK_MASK);
            let next = if pass > swept && claimed < chunks {
                cur + 1 // the pass in progress, also if an epoch began since it did
            } else if pass <= newest {
                (newest + 1) << CHUNK_BITS | 1 // a new pass, claiming its first chunk
            } else {
                return;
            };
            match self
                .clock(PASS)
                .compare_exchange_weak(cur, next, AcqRel, Acquire)
            {
                Ok(_) => break (next >> CHUNK_BITS, (next & CHUNK_MASK) as usize - 1),
                Err(now) => cur = now,
            }
        };
        // Each word is swept for the newest epoch when it is read, at least the pass's.
        let start = chunk * lines;
        let end = (start + lines).min(self.key_lines().len());
        self.sweep(&self.key_lines()[start..end], pass - 1);
        // Count the chunk in its pass (AcqRel: the call that counts the last one has every
        // chunk's sweep before it, through the chain of read-modify-writes, and publishes
        // them with SWEPT). A newer pass being counted makes ours moot.
        let mut done = self.clock(PASS_DONE).load(Acquire);
        loop {
            let next = match (done >> CHUNK_BITS).cmp(&pass) {
                Greater => return,
                Less => pass << CHUNK_BITS | 1,
                Equal => done + 1,
            };
            match self
                .clock(PASS_DONE)
                .compare_exchange_weak(done, next, AcqRel, Acquire)
            {
                Ok(_) => {
                    if next & CHUNK_MASK == chunks {
                        self.clock(SWEPT).fetch_max(pass, AcqRel);
                    }
                    return;
                }
                Err(now) => done = now,
            }
        }
    }

    /// Clears in `lines` every word that is dead for all callers once the newest epoch is
    /// `target` (compare-exchange: a word written meanwhile is kept).
    fn sweep(&self, lines: &[Line], target: u64) {
        #[cfg(test)]
        SWEPT_LINES.with(|n| n.set(n.get() + lines.len() as u64));
        for b in lines {
            for (i, w) in b.words().iter().enumerate() {
                let mut v = w.load(Acquire);
                while v != 0 {
                    // Read after the word: its epoch is at most this one (a writer
                    // publishes its epoch before writing), and at most `SWEEP_MARGIN + 3`
                    // older, so that its label and plane name it.
                    let newest = self.clock(NEWEST).load(Acquire);
                    let keep = swept(v, i / 2, newest, target);
                    if keep == v {
                        break;
                    }
                    match w.compare_exchange_weak(v, keep, AcqRel, Acquire) {
                        Ok(_) => break,
                        Err(now) => v = now,
                    }
                }
            }
        }
    }
}
