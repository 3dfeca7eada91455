//! The planes layout as a whole filter in memory (issue 53, branch): lines, the newest
//! epoch, sizing by [`size_planes`], the batched pipeline. Not the expiring filter yet (no
//! file, no sweep: correct for 55 epochs of use), but every call takes the path the filter
//! will take, so that its memory, rate and speed can be measured against the goals before
//! the filter is rebuilt on it (`report/examples/expiring_planes.rs`, feature `internals`).

use core::hash::Hash;

use super::planes::{
    contains, insert_if_absent, insert_if_absent_in, line_fpr, PlaneEpoch, EPOCHS_PER_WINDOW,
};
use crate::error::Error;
use crate::filter::pipeline;
use crate::hash::{random_seed, KeyHasher};
use crate::layout::{block_index, plane_mask};
use crate::line::WORDS;
use crate::math::planes::size_planes;
use crate::storage::{nanos_since_1970, prefetch_write, wall_clock_nanos, Lines};
use crate::sync::{AtomicU64, Ordering::SeqCst};
use crate::Arrival;

/// Tolerated clock difference: an epoch is a third of the window plus a third of this.
const SKEW_NANOS: u64 = 1_000_000_000;

/// The planes prototype: `capacity` keys per window of `window_nanos`.
pub struct PlanesPrototype {
    lines: Lines,
    newest: AtomicU64,
    hasher: KeyHasher,
    k: u32,
    epoch_nanos: u64,
}

impl PlanesPrototype {
    /// Sized for `capacity` keys per window at `fpr`, as `arrival` says.
    ///
    /// # Errors
    /// [`Error::TooLarge`] if the lines cannot be allocated.
    pub fn new(
        capacity: u64,
        fpr: f64,
        arrival: Arrival,
        window: core::time::Duration,
    ) -> Result<PlanesPrototype, Error> {
        let window_nanos = window.as_nanos() as u64;
        let epoch_nanos = (window_nanos + SKEW_NANOS).div_ceil(EPOCHS_PER_WINDOW);
        let (n, k) = size_planes(capacity, fpr, arrival, window_nanos, epoch_nanos);
        Ok(PlanesPrototype {
            // On huge pages from the first touch, as the expiring filter in memory.
            lines: Lines::zeroed_with(n as usize, crate::storage::HugePages::Now)?,
            newest: AtomicU64::new(0),
            hasher: KeyHasher::new(random_seed()),
            k,
            epoch_nanos,
        })
    }

    /// Bytes of the lines.
    pub fn memory_bytes(&self) -> usize {
        self.lines.len() * 64
    }

    /// Bits set per key.
    pub fn num_hashes(&self) -> u32 {
        self.k
    }

    /// The epoch a call at `nanos` (since 1970) works in: its own or the newest, whichever
    /// is later (moving the newest on).
    #[inline(always)]
    fn epoch(&self, nanos: u64) -> u64 {
        let own = nanos / self.epoch_nanos;
        let newest = self.newest.load(SeqCst);
        if own <= newest {
            return newest;
        }
        self.newest.fetch_max(own, SeqCst).max(own)
    }

    #[inline(always)]
    fn line(&self, h: u64) -> &crate::line::Line {
        &self.lines[block_index(h, self.lines.len() as u64)]
    }

    /// `insert_if_absent` at `t` nanoseconds since 1970.
    #[inline]
    pub fn insert_if_absent_at<K: Hash + ?Sized>(&self, key: &K, t: u64) -> bool {
        let h = self.hasher.hash(key);
        let n = self.epoch(t);
        insert_if_absent(self.line(h), &self.newest, n, plane_mask(h, self.k))
    }

    /// `insert_if_absent` now (the wall clock read per call).
    #[inline]
    pub fn insert_if_absent<K: Hash + ?Sized>(&self, key: &K) -> bool {
        self.insert_if_absent_at(key, wall_clock_nanos())
    }

    /// `contains` at `t` nanoseconds since 1970.
    #[inline]
    pub fn contains_at<K: Hash + ?Sized>(&self, key: &K, t: u64) -> bool {
        let h = self.hasher.hash(key);
        let n = (t / self.epoch_nanos).max(self.newest.load(SeqCst));
        contains(self.line(h), n, plane_mask(h, self.k))
    }

    /// `insert_if_absent` of a batch at `t` (one epoch for the batch), through the plain
    /// filter's prefetch pipeline.
    pub fn insert_if_absent_many_at<K: Hash>(&self, keys: &[K], t: u64, out: &mut [bool]) {
        let e = PlaneEpoch::at(self.epoch(t));
        pipeline(
            keys,
            |k| self.hasher.hash(k),
            |h| prefetch_write(self.line(h)),
            |i, h| {
                out[i] = insert_if_absent_in(self.line(h), &self.newest, &e, plane_mask(h, self.k))
            },
        );
    }

    /// The rate at `t` estimated from the live bits (the mean of every line's).
    pub fn estimated_fpr_at(&self, t: u64) -> f64 {
        let n = (t / self.epoch_nanos).max(self.newest.load(SeqCst));
        let sum: f64 = self
            .lines
            .iter()
            .map(|l| {
                let words: [u64; WORDS] = core::array::from_fn(|i| l.word(i).load(SeqCst));
                line_fpr(&words, n, self.k)
            })
            .sum();
        sum / self.lines.len() as f64
    }

    /// Nanoseconds since 1970 of a `SystemTime`.
    pub fn nanos(t: std::time::SystemTime) -> u64 {
        nanos_since_1970(t)
    }

    /// The epoch's length in nanoseconds.
    pub fn epoch_nanos(&self) -> u64 {
        self.epoch_nanos
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steady_arrival_keeps_the_rate_at_the_worst_moment() {
        let month = core::time::Duration::from_secs(30 * 86_400);
        let capacity = 30_000u64;
        let f = PlanesPrototype::new(capacity, 0.01, Arrival::Steady, month).unwrap();
        let e = f.epoch_nanos();
        let t0 = 1_600_000_000_000_000_000 / e * e;
        let per_epoch = (capacity as u128 * e as u128 / month.as_nanos()) as u64;
        let mut key = 0u64;
        let mut won = 0;
        for epoch in 0..5 {
            for _ in 0..per_epoch {
                won += f.insert_if_absent_at(&key, t0 + epoch * e + 1) as u64;
                key += 1;
            }
        }
        let end = t0 + 5 * e - 1;
        let probes = 200_000u64;
        let fp = (0..probes)
            .filter(|i| f.contains_at(&(u64::MAX - i), end))
            .count() as f64
            / probes as f64;
        let est = f.estimated_fpr_at(end);
        eprintln!(
            "won {won} of {key}, per epoch {per_epoch}, lines {}, fp {fp}, est {est}",
            f.memory_bytes() / 64
        );
        assert!(fp > 0.005 && fp < 0.0115, "{fp}");
    }
}
