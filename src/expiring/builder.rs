//! [`ExpiringBuilder`]: an [`ExpiringBloomFilter`]'s parameters, checked once.

use core::time::Duration;

use super::window::ExpiryWindow;
use super::ExpiringBloomFilter;
use crate::error::Error;
use crate::filter::builder::DEFAULT_FPR;
use crate::hash::random_seed;
use crate::storage::HugePages;
use crate::Layout;

/// How the keys of an [`ExpiringBloomFilter`] arrive, which sets how many can be live
/// (remembered) at once and so the filter's size ([`ExpiringBuilder::arrival`]).
///
/// ```
/// use blockbloom::{Arrival, ExpiringBloomFilter};
/// use std::time::Duration;
/// let b = || ExpiringBloomFilter::builder().expire_after(Duration::from_secs(86_400)).capacity(1_000_000);
/// let steady = b().build()?;
/// let burst = b().arrival(Arrival::WorstBurst).build()?;
/// assert_eq!((steady.arrival(), burst.arrival()), (Arrival::Steady, Arrival::WorstBurst));
/// assert!(burst.memory_bytes() > steady.memory_bytes() * 3 / 2);
/// # Ok::<(), blockbloom::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Arrival {
    /// `capacity` keys per window at a steady rate, as a crawl counts them ("10 million new
    /// URLs a month"): each epoch (a third of the window) brings its share, and the filter
    /// keeps its rate at every moment, with four epochs' planes full. The default.
    #[default]
    Steady,
    /// `capacity` keys in any span of a window, however bunched: one epoch may bring all
    /// of them, and two such epochs can be live at once (a window's keys, then the next
    /// window's), at 2.5 times the memory of [`Steady`](Self::Steady) (56.7 bits per key
    /// at 1%, against 22.39). A steady filter under that burst has a higher rate for a while
    /// (25% where 1% was asked), which its `estimated_fpr` shows.
    WorstBurst,
}

/// Configures an [`ExpiringBloomFilter`]; made by [`ExpiringBloomFilter::builder`].
///
/// ```
/// use blockbloom::{Error, ExpiringBloomFilter};
/// use std::time::Duration;
/// let hour = Duration::from_secs(3600);
/// let f = ExpiringBloomFilter::builder().expire_after(hour).capacity(1000).fpr(0.001).seed(7).build()?;
/// assert_eq!((f.expire_after(), f.target_fpr(), f.seed()), (hour, 0.001, 7));
/// assert_eq!(ExpiringBloomFilter::builder().capacity(10).build().unwrap_err(), Error::MissingWindow);
/// assert_eq!(ExpiringBloomFilter::builder().expire_after(hour).build().unwrap_err(), Error::MissingCapacity);
/// let too_short = Duration::from_millis(500);
/// assert_eq!(
///     ExpiringBloomFilter::builder().expire_after(too_short).capacity(10).build().unwrap_err(),
///     Error::InvalidWindow(too_short)
/// );
/// # Ok::<(), blockbloom::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
#[must_use]
pub struct ExpiringBuilder {
    expire_after: Option<Duration>,
    capacity: Option<u64>,
    fpr: Option<f64>,
    arrival: Arrival,
    seed: Option<u128>,
    huge_pages: Option<bool>,
    populate: bool,
    key_format: Option<u64>,
    verification: crate::Verification,
}

impl ExpiringBuilder {
    /// How long a key stays seen after its insert (required; at least one second). It is
    /// forgotten at most a third of this and 1.34 s later: by `4/3 (window + 1 s)`
    /// ([`ExpiringBloomFilter::forgotten_after`]).
    ///
    /// Example at [`ExpiringBuilder`].
    pub fn expire_after(mut self, window: Duration) -> Self {
        self.expire_after = Some(window);
        self
    }

    /// Distinct keys inserted per `expire_after` (required).
    ///
    /// Example at [`ExpiringBuilder`].
    pub fn capacity(mut self, keys: u64) -> Self {
        self.capacity = Some(keys);
        self
    }

    /// False-positive rate at any moment while at most `capacity` keys are inserted per
    /// window as [`arrival`](Self::arrival) says (default 0.01).
    ///
    /// Example at [`ExpiringBuilder`].
    pub fn fpr(mut self, fpr: f64) -> Self {
        self.fpr = Some(fpr);
        self
    }

    /// What `capacity` is sized for: [`Arrival::Steady`] (the default) or
    /// [`Arrival::WorstBurst`] (example there). Recorded in the filter's size: a file made
    /// for one is refused when opened for the other.
    pub fn arrival(mut self, arrival: Arrival) -> Self {
        self.arrival = arrival;
        self
    }

    /// Fixes the 128-bit hashing key (default: random).
    ///
    /// Example at [`ExpiringBuilder`].
    pub fn seed(mut self, seed: u128) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Transparent huge pages for a filter in memory (Linux; ignored elsewhere; a file of
    /// [`open_file`](Self::open_file) is advised once dense, as every file-backed filter's
    /// mapping). By default (`true`) a filter of 2 MiB or more is advised `MADV_HUGEPAGE`
    /// at construction (as is one read from a snapshot), so each 2 MiB region is
    /// committed at its first touch. At its `capacity` an expiring filter gets about 377
    /// new keys per 4 KiB page per window, so 97% of its pages are touched within the
    /// first 1% of its first window anyway; its first fill then skips the 4 KiB faults and
    /// the later copy into huge pages that [`BloomFilter`](crate::BloomFilter)'s default
    /// (huge pages once dense) spends: 9–11% of the batched calls' time in a fill of twice
    /// its capacity at 10^6 and 10^7 keys (docs/PERFORMANCE.md, "The expiring filter
    /// against its goals"). `false` keeps 4 KiB pages: for a filter sized a hundred times
    /// or more above the keys it will get, where each sparse key would commit a 2 MiB
    /// region.
    ///
    /// ```
    /// use blockbloom::ExpiringBloomFilter;
    /// use std::time::Duration;
    /// let f = ExpiringBloomFilter::builder()
    ///     .expire_after(Duration::from_secs(86_400))
    ///     .capacity(100_000_000) // at most 10^6 keys a day are expected: 4 KiB pages
    ///     .huge_pages(false)
    ///     .build()?;
    /// assert!(f.insert_if_absent("https://example.com/"));
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn huge_pages(mut self, on: bool) -> Self {
        self.huge_pages = Some(on);
        self
    }

    /// Commits the filter's memory at construction, every page of it, as
    /// [`Builder::populate`](crate::Builder::populate) says (a filter in memory; a file of
    /// [`open_file`](Self::open_file) is committed as it is used).
    ///
    /// ```
    /// use blockbloom::ExpiringBloomFilter;
    /// use std::time::Duration;
    /// let f = ExpiringBloomFilter::builder()
    ///     .expire_after(Duration::from_secs(86_400))
    ///     .capacity(1_000_000)
    ///     .populate(true)
    ///     .build()?;
    /// assert!(f.insert_if_absent("https://example.com/"));
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn populate(mut self, on: bool) -> Self {
        self.populate = on;
        self
    }

    /// How the keys are made from their input, recorded in the filter's files and checked
    /// when they are opened, as [`Builder::key_format`](crate::Builder::key_format) does
    /// (example there); `key_format()` reads it back.
    pub fn key_format(mut self, key_format: u64) -> Self {
        self.key_format = Some(key_format);
        self
    }

    /// What opening an existing file checks, as
    /// [`Builder::verification`](crate::Builder::verification) says (example there).
    pub fn verification(mut self, verification: crate::Verification) -> Self {
        self.verification = verification;
        self
    }

    /// The filter, empty.
    ///
    /// # Errors
    /// [`Error::MissingWindow`], [`Error::MissingCapacity`], [`Error::InvalidWindow`], and
    /// those of [`CountingBloomFilter::with_capacity`](crate::CountingBloomFilter::with_capacity).
    ///
    /// Example at [`ExpiringBuilder`].
    pub fn build(self) -> Result<ExpiringBloomFilter, Error> {
        let huge = match self.huge_pages {
            Some(false) => HugePages::Never,
            _ => super::IN_MEMORY_PAGES,
        };
        let populate = self.populate;
        let p = self.checked()?;
        let seed = p.seed.unwrap_or_else(random_seed);
        ExpiringBloomFilter::from_parts(&p, seed, huge, populate)
    }

    /// Which line the filter these options build gives each key (the line of
    /// [`Layout::probe`]), and its lines and bits per key, without its memory. Fix the
    /// [`seed`](Self::seed) first (else each call draws one).
    ///
    /// # Errors
    /// Those of [`build`](Self::build).
    ///
    /// ```
    /// use blockbloom::ExpiringBloomFilter;
    /// use std::time::Duration;
    /// let b = ExpiringBloomFilter::builder().expire_after(Duration::from_secs(60)).capacity(1000).seed(3);
    /// let l = b.clone().layout()?;
    /// assert_eq!((l.num_lines(), l.num_hashes()), (b.build()?.num_lines(), 7));
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn layout(self) -> Result<Layout, Error> {
        let p = self.checked()?;
        let s = super::sizing(p.capacity, p.fpr, p.arrival, &p.window)?;
        Layout::new(p.seed.unwrap_or_else(random_seed), s.blocks, s.hashes)
    }

    /// The parameters, checked (`build` and `open_file`).
    pub(super) fn checked(self) -> Result<Checked, Error> {
        Ok(Checked {
            window: ExpiryWindow::new(self.expire_after.ok_or(Error::MissingWindow)?)?,
            capacity: self.capacity.ok_or(Error::MissingCapacity)?,
            fpr: self.fpr.unwrap_or(DEFAULT_FPR),
            arrival: self.arrival,
            seed: self.seed,
            key_format: self.key_format,
            verification: self.verification,
        })
    }
}

/// A builder's parameters, checked; the seed if one was fixed.
// Loom builds leave out the files, which read the key format and the verification.
#[cfg_attr(blockbloom_loom, allow(dead_code))]
pub(super) struct Checked {
    pub(super) window: ExpiryWindow,
    pub(super) capacity: u64,
    pub(super) fpr: f64,
    pub(super) arrival: Arrival,
    pub(super) seed: Option<u128>,
    pub(super) key_format: Option<u64>,
    pub(super) verification: crate::Verification,
}
