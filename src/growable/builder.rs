//! [`GrowableBuilder`]: a [`GrowableBloomFilter`]'s parameters, checked once.

use super::{GrowableBloomFilter, Shape};
use crate::error::Error;
use crate::hash::{random_seed, KeyHasher};
use crate::storage::Published;
use crate::sync::AtomicBool;

/// Configures a [`GrowableBloomFilter`]; made by [`GrowableBloomFilter::builder`].
///
/// ```
/// use blockbloom::GrowableBloomFilter;
/// let f = GrowableBloomFilter::builder()
///     .initial_capacity(10_000)
///     .fpr(0.001)
///     .growth(4)         // each layer 4× the last (fewer layers, coarser steps)
///     .tightening(0.8)   // each layer's rate 0.8× the last (less memory per layer)
///     .seed(7)
///     .build()?;
/// assert_eq!(f.num_layers(), 1);
/// assert!(GrowableBloomFilter::builder().initial_capacity(10).growth(1).build().is_err());
/// # Ok::<(), blockbloom::Error>(())
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct GrowableBuilder {
    pub(super) initial_capacity: Option<u64>,
    pub(super) fpr: f64,
    pub(super) growth: u64,
    pub(super) tightening: f64,
    pub(super) seed: Option<u128>,
    pub(super) huge_pages: Option<bool>,
    pub(super) key_format: Option<u64>,
    pub(super) verification: crate::Verification,
}

impl GrowableBuilder {
    /// Keys in the first layer (required).
    ///
    /// Example at [`GrowableBuilder`].
    pub fn initial_capacity(mut self, n: u64) -> Self {
        self.initial_capacity = Some(n);
        self
    }
    /// Target false-positive rate of the whole chain (default 0.01).
    ///
    /// Example at [`GrowableBuilder`].
    pub fn fpr(mut self, fpr: f64) -> Self {
        self.fpr = fpr;
        self
    }
    /// Capacity ratio of consecutive layers, at least 2 (default 2).
    ///
    /// Example at [`GrowableBuilder`].
    pub fn growth(mut self, factor: u64) -> Self {
        self.growth = factor;
        self
    }
    /// Rate ratio of consecutive layers, in (0, 1) (default 0.5). The first layer gets
    /// `fpr × (1 − tightening)`, so that the layers' rates sum to `fpr`.
    ///
    /// Example at [`GrowableBuilder`].
    pub fn tightening(mut self, ratio: f64) -> Self {
        self.tightening = ratio;
        self
    }
    /// Fixes the 128-bit hashing key (default: random).
    ///
    /// Example at [`GrowableBuilder`].
    pub fn seed(mut self, seed: u128) -> Self {
        self.seed = Some(seed);
        self
    }
    /// Transparent huge pages for the layers, as
    /// [`Builder::huge_pages`](crate::Builder::huge_pages) says (default: big layers get
    /// them once dense).
    ///
    /// Example at [`GrowableBuilder`].
    pub fn huge_pages(mut self, on: bool) -> Self {
        self.huge_pages = Some(on);
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

    /// Builds the filter with its first layer.
    ///
    /// # Errors
    /// [`Error::MissingCapacity`], [`Error::ZeroCapacity`], [`Error::InvalidFpr`],
    /// [`Error::InvalidGrowth`], or the first layer's allocation errors.
    ///
    /// Example at [`GrowableBuilder`].
    pub fn build(self) -> Result<GrowableBloomFilter, Error> {
        let initial_capacity = self.initial_capacity.ok_or(Error::MissingCapacity)?;
        if initial_capacity == 0 {
            return Err(Error::ZeroCapacity);
        }
        if !(self.fpr > 0.0 && self.fpr < 1.0) {
            return Err(Error::InvalidFpr(self.fpr));
        }
        if self.growth < 2 {
            return Err(Error::InvalidGrowth("growth factor must be at least 2"));
        }
        if !(self.tightening > 0.0 && self.tightening < 1.0) {
            return Err(Error::InvalidGrowth(
                "tightening ratio must be strictly between 0 and 1",
            ));
        }
        let shape = Shape {
            seed: self.seed.unwrap_or_else(random_seed),
            initial_capacity,
            fpr: self.fpr,
            growth: self.growth,
            tightening: self.tightening,
            huge_pages: self.huge_pages,
        };
        Ok(GrowableBloomFilter {
            layers: Published::new(shape.make_layer(0)?),
            hasher: KeyHasher::new(shape.seed),
            shape,
            growth_failed: AtomicBool::new(false),
            #[cfg(all(unix, not(blockbloom_loom)))]
            file: None,
        })
    }
}
