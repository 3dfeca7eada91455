//! [`ExpiringBloomFilter`]'s estimates: the rate, the keys remembered and the false
//! positives, from the stamps live at a time (each reads the whole filter).

use std::time::SystemTime;

use super::window::live_slots;
use super::ExpiringBloomFilter;
use crate::math::COUNTERS_PER_BLOCK;
use crate::sync::Ordering::{Acquire, Relaxed};

impl ExpiringBloomFilter {
    /// The false-positive rate now: [`estimated_fpr_at`](Self::estimated_fpr_at) with
    /// [`SystemTime::now`].
    ///
    /// Example at [`memory_bytes`](Self::memory_bytes).
    pub fn estimated_fpr(&self) -> f64 {
        self.estimated_fpr_at(SystemTime::now())
    }

    /// The false-positive rate at `t`, from the stamps live then (reads the whole filter):
    /// the mean over lines of `(live stamps / 128)^k`. It changes nothing, the filter's clock
    /// included: for a `t` past the newest epoch any call has used, the rate at that epoch
    /// (an upper bound), and 0 once `t` is a whole window past it.
    ///
    /// Example at [`memory_bytes`](Self::memory_bytes).
    pub fn estimated_fpr_at(&self, t: SystemTime) -> f64 {
        let fills = self.live_per_line(t);
        crate::math::fpr_of_fills(fills, COUNTERS_PER_BLOCK, self.num_hashes())
    }

    /// Estimated number of distinct keys with live stamps now (inserted in the last four to
    /// five epochs), from each line's count of live stamps. Reads the whole filter.
    ///
    /// Example at [`memory_bytes`](Self::memory_bytes).
    pub fn estimated_len(&self) -> u64 {
        let slots = COUNTERS_PER_BLOCK as f64;
        let per_key = self.num_hashes() as f64 * (1.0 - 1.0 / slots).ln();
        let n: f64 = self
            .live_per_line(SystemTime::now())
            .map(|live| (1.0 - live as f64 / slots).max(0.5 / slots).ln() / per_key)
            .sum();
        n.round() as u64
    }

    /// Each line's count of stamps live at `t`, read without moving the filter's clock (an
    /// estimate changes nothing): at an epoch past the newest any call used, the stamps
    /// live at the newest (an upper bound), none once `t` is a whole window past it.
    fn live_per_line(&self, t: SystemTime) -> impl Iterator<Item = u32> + '_ {
        let newest = self.clock(super::NEWEST).load(Acquire);
        let own = self.window.epoch_of(t);
        let forgotten = own > newest.saturating_add(super::window::GENERATIONS);
        let read = own.clamp(newest.saturating_sub(self.window.lag()), newest);
        let e = self.window.at(read);
        self.stamp_lines().iter().map(move |b| {
            if forgotten {
                return 0;
            }
            b.words()
                .iter()
                .map(|w| live_slots(w.load(Relaxed), 0x1111_1111_1111_1111, &e).count_ones())
                .sum()
        })
    }

    /// The expected number of new keys taken for repeats while the keys remembered now
    /// were inserted (the last four to five epochs), from the live stamps, as
    /// [`BloomFilter::estimated_false_positives`](crate::BloomFilter::estimated_false_positives)
    /// does from a fill. Epochs already forgotten are not counted.
    ///
    /// ```
    /// use blockbloom::ExpiringBloomFilter;
    /// use std::time::Duration;
    /// let f = ExpiringBloomFilter::builder()
    ///     .expire_after(Duration::from_secs(86_400))
    ///     .capacity(100_000)
    ///     .fpr(0.01)
    ///     .build()?;
    /// let lost = (0..200_000u64).filter(|i| !f.insert_if_absent(i)).count() as f64;
    /// let estimate = f.estimated_false_positives();
    /// assert!((0.7 * lost..1.3 * lost).contains(&estimate), "{estimate} for {lost}");
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn estimated_false_positives(&self) -> f64 {
        let counters = self.num_lines() as f64 * COUNTERS_PER_BLOCK as f64;
        crate::math::blocked_false_positives(
            self.estimated_len() as f64,
            counters,
            self.num_hashes(),
            COUNTERS_PER_BLOCK,
        )
    }
}
