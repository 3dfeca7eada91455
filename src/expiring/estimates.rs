//! [`ExpiringBloomFilter`]'s estimates: the rate, the keys remembered and the false
//! positives, from the bits live at a time in each line's planes (each reads the whole
//! filter): a line's live bits and rate are `in_place.rs`' (`PlanesCensus` sums them).

use std::time::SystemTime;

use super::in_place::PlanesCensus;
use super::planes::PLANES;
use super::ExpiringBloomFilter;
use crate::line::WORDS;
use crate::sync::Ordering::{Acquire, Relaxed};

impl ExpiringBloomFilter {
    /// The false-positive rate now: [`estimated_fpr_at`](Self::estimated_fpr_at) with
    /// [`SystemTime::now`].
    ///
    /// Example at [`memory_bytes`](Self::memory_bytes).
    pub fn estimated_fpr(&self) -> f64 {
        self.estimated_fpr_at(SystemTime::now())
    }

    /// The false-positive rate at `t`, from the bits live then (reads the whole filter): the
    /// mean over lines of `1 − Π (1 − r)` over the live planes, `r` the chance that a key's
    /// bits (`⌈k/2⌉` in one word of the plane, `⌊k/2⌋` in the other) all lie on bits set
    /// under a live label. It changes nothing, the filter's clock included: for a `t` before the
    /// newest epoch any call has used, the rate in it (where every call works); past it,
    /// the rate of what is still live then, and 0 once `t` is a whole window past it.
    ///
    /// Example at [`memory_bytes`](Self::memory_bytes).
    pub fn estimated_fpr_at(&self, t: SystemTime) -> f64 {
        self.census(t).fpr()
    }

    /// Estimated number of distinct keys remembered now (offered in the last three to four
    /// epochs: past its capacity, the filter's false positives among them count too, as
    /// they set no bit), from each plane's count of live bits. Reads the whole filter.
    /// Saturates at `u64::MAX` while a live plane has every bit set in every line (its
    /// fill then bounds no count; [`estimated_false_positives`](Self::estimated_false_positives)
    /// is infinite).
    ///
    /// Example at [`memory_bytes`](Self::memory_bytes).
    pub fn estimated_len(&self) -> u64 {
        self.census(SystemTime::now())
            .len(self.num_hashes())
            .round() as u64
    }

    /// The epoch an estimate at `t` reads in: the newest, or `t`'s if later; `None` once
    /// every epoch written is forgotten at `t`.
    fn estimate_epoch(&self, t: SystemTime) -> Option<u64> {
        let newest = self.clock(super::NEWEST).load(Acquire);
        let n = self.window.epoch_of(t).max(newest);
        (n < newest + PLANES).then_some(n)
    }

    /// The census of the lines as a caller at `t` reads them (empty once everything
    /// written is forgotten).
    fn census(&self, t: SystemTime) -> PlanesCensus {
        let mut c = PlanesCensus::default();
        if let Some(n) = self.estimate_epoch(t) {
            for line in self.key_lines() {
                c.add_line(&words(line), n, self.num_hashes());
            }
        }
        c
    }

    /// The expected number of new keys taken for repeats while the keys remembered now
    /// were offered (the last three to four epochs), from the live bits: each plane's keys
    /// arrived while it filled (a key taken for a repeat sets no bit, so the fill counts
    /// every key offered) and the older live planes were as they are now. Epochs already
    /// forgotten are not counted. Infinite while a live plane has every bit set: then
    /// neither the keys offered nor those lost are bounded by the fill.
    ///
    /// ```
    /// use blockbloom::ExpiringBloomFilter;
    /// use std::time::Duration;
    /// let f = ExpiringBloomFilter::builder()
    ///     .expire_after(Duration::from_secs(86_400))
    ///     .capacity(100_000)
    ///     .fpr(0.01)
    ///     .build()?;
    /// let lost = (0..100_000u64).filter(|i| !f.insert_if_absent(i)).count() as f64;
    /// let estimate = f.estimated_false_positives();
    /// assert!((0.7 * lost..1.3 * lost).contains(&estimate), "{estimate} for {lost}");
    ///
    /// let full = ExpiringBloomFilter::builder() // a thousand times its capacity
    ///     .expire_after(Duration::from_secs(86_400))
    ///     .capacity(100)
    ///     .build()?;
    /// for i in 0..100_000u64 { full.insert(&i); }
    /// assert_eq!(full.estimated_len(), u64::MAX);
    /// assert_eq!(full.estimated_false_positives(), f64::INFINITY);
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn estimated_false_positives(&self) -> f64 {
        self.census(SystemTime::now())
            .false_positives(self.num_hashes())
    }
}

/// A line's words (Relaxed: an estimate).
fn words(line: &crate::line::Line) -> [u64; WORDS] {
    core::array::from_fn(|i| line.word(i).load(Relaxed))
}
