//! [`ExpiringBloomFilter`]'s estimates: the rate, the keys remembered and the false
//! positives, from the bits live at a time in each line's planes (each reads the whole
//! filter).

use std::time::SystemTime;

use super::planes::{line_fpr, live_bits, PLANES};
use super::ExpiringBloomFilter;
use crate::layout::PLANE_BITS;
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
    /// mean over lines of `1 − Π (1 − f^k)`, `f` the share of a plane's 120 bits set under
    /// a live label. It changes nothing, the filter's clock included: for a `t` before the
    /// newest epoch any call has used, the rate in it (where every call works); past it,
    /// the rate of what is still live then, and 0 once `t` is a whole window past it.
    ///
    /// Example at [`memory_bytes`](Self::memory_bytes).
    pub fn estimated_fpr_at(&self, t: SystemTime) -> f64 {
        let Some(n) = self.estimate_epoch(t) else {
            return 0.0;
        };
        let k = self.num_hashes();
        let sum: f64 = self
            .key_lines()
            .iter()
            .map(|l| line_fpr(&words(l), n, k))
            .sum();
        sum / self.key_lines().len() as f64
    }

    /// Estimated number of distinct keys remembered now (offered in the last three to four
    /// epochs: past its capacity, the filter's false positives among them count too, as
    /// they set no bit), from each plane's count of live bits. Reads the whole filter.
    ///
    /// Example at [`memory_bytes`](Self::memory_bytes).
    pub fn estimated_len(&self) -> u64 {
        self.keys_per_age().iter().sum::<f64>().round() as u64
    }

    /// The epoch an estimate at `t` reads in: the newest, or `t`'s if later; `None` once
    /// every epoch written is forgotten at `t`.
    fn estimate_epoch(&self, t: SystemTime) -> Option<u64> {
        let newest = self.clock(super::NEWEST).load(Acquire);
        let n = self.window.epoch_of(t).max(newest);
        (n < newest + PLANES).then_some(n)
    }

    /// The keys in the planes live now, by age (`[0]` the newest epoch's): from the live
    /// bits of each plane, the inverse of a 120-bit block's expected fill.
    fn keys_per_age(&self) -> [f64; PLANES as usize] {
        let mut ones = [0u64; PLANES as usize];
        if let Some(n) = self.estimate_epoch(SystemTime::now()) {
            for line in self.key_lines() {
                for (o, b) in ones.iter_mut().zip(live_bits(&words(line), n)) {
                    *o += u64::from(b);
                }
            }
        }
        let bits = self.key_lines().len() as u64 * u64::from(PLANE_BITS);
        ones.map(|o| crate::math::keys_from_ones(o, bits, self.num_hashes(), PLANE_BITS))
            .map(|x| if x.is_finite() { x } else { 0.0 })
    }

    /// The expected number of new keys taken for repeats while the keys remembered now
    /// were offered (the last three to four epochs), from the live bits: each plane's keys
    /// arrived while it filled (a key taken for a repeat sets no bit, so the fill counts
    /// every key offered) and the older live planes were as they are now. Epochs already
    /// forgotten are not counted.
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
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn estimated_false_positives(&self) -> f64 {
        let bits = self.key_lines().len() as f64 * f64::from(PLANE_BITS);
        let k = self.num_hashes();
        let keys = self.keys_per_age();
        // The plane's rate with `x` keys in it: the blocked filter's, as its estimated keys.
        let rate = |x: f64| match x > 0.0 {
            true => crate::math::fpr_in_blocks(bits / x, k, f64::from(PLANE_BITS)),
            false => 0.0,
        };
        (0..PLANES as usize)
            .map(|age| {
                // The older live planes, full: a new key is also taken for one of theirs.
                let older: f64 = keys[age + 1..].iter().map(|&x| 1.0 - rate(x)).product();
                crate::math::false_positives_among_offered(keys[age], |x| {
                    1.0 - (1.0 - rate(x)) * older
                })
            })
            .sum()
    }
}

/// A line's words (Relaxed: an estimate).
fn words(line: &crate::line::Line) -> [u64; WORDS] {
    core::array::from_fn(|i| line.word(i).load(Relaxed))
}
