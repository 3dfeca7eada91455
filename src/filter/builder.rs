//! [`Builder`]: a [`BloomFilter`]'s parameters, sized by [`math::size_filter`].

use crate::error::Error;
use crate::hash::random_seed;
use crate::layout::Layout;
use crate::math;
use crate::storage::{HugePages, Lines};
use crate::BloomFilter;

/// The false-positive rate of every builder that is not given one.
pub(crate) const DEFAULT_FPR: f64 = 0.01;

/// Configures a [`BloomFilter`]; made by [`BloomFilter::builder`].
///
/// * [`capacity`](Self::capacity) (required): the number of distinct keys the filter is sized
///   for.
/// * [`fpr`](Self::fpr) (default 0.01): the false-positive rate wanted at capacity.
/// * [`seed`](Self::seed) (default: random): the 128-bit hashing key. Filters that must agree
///   bit for bit (tests, unions, shared filters) need the same seed.
/// * [`bits`](Self::bits) / [`num_hashes`](Self::num_hashes): set the size (rounded up to whole
///   512-bit blocks) and/or the number of hash functions yourself instead of deriving them
///   from the rate. When either is given, [`BloomFilter::target_fpr`] reports the rate the
///   blocked formula predicts at capacity.
///
/// ```
/// use blockbloom::BloomFilter;
/// let f = BloomFilter::builder()
///     .capacity(100_000)
///     .fpr(0.001)
///     .seed(0x5eed)
///     .build()?;
/// assert_eq!(f.capacity(), 100_000);
/// assert!(f.num_bits() >= 100_000 * 14);
///
/// let g = BloomFilter::builder().capacity(1000).bits(1 << 16).num_hashes(5).build()?;
/// assert_eq!((g.num_bits(), g.num_hashes()), (1 << 16, 5));
/// assert!(BloomFilter::builder().fpr(0.01).build().is_err()); // no capacity
/// # Ok::<(), blockbloom::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
#[must_use]
pub struct Builder {
    pub(crate) capacity: Option<u64>,
    pub(crate) fpr: Option<f64>,
    pub(crate) seed: Option<u128>,
    pub(crate) bits: Option<u64>,
    pub(crate) hashes: Option<u32>,
    pub(crate) huge_pages: Option<bool>,
    pub(crate) populate: bool,
    pub(crate) block_bits: Option<u32>,
    pub(crate) key_format: Option<u64>,
    pub(crate) verification: crate::Verification,
}

impl BloomFilter {
    /// A filter for `capacity` distinct keys at false-positive rate `fpr`, with a random
    /// hashing key.
    ///
    /// Sizing uses the blocked-filter formula ([`math::size_filter`](crate::math::size_filter)): about 9.9 bits
    /// (1.24 bytes) per key at 1%, 15.5 at 0.1%.
    ///
    /// # Errors
    /// [`Error::ZeroCapacity`], [`Error::InvalidFpr`] (not in (0, 1), or NaN),
    /// [`Error::TooLarge`] / [`Error::AllocationFailed`] when the memory cannot be had.
    ///
    /// # Examples
    /// ```
    /// use blockbloom::BloomFilter;
    /// let f = BloomFilter::with_capacity(1_000_000, 0.01)?;
    /// assert!(f.memory_bytes() < 1_300_000);
    /// assert!(BloomFilter::with_capacity(0, 0.01).is_err());
    /// assert!(BloomFilter::with_capacity(1000, 1.5).is_err());
    /// assert!(BloomFilter::with_capacity(1_000_000_000_000_000, 0.01).is_err()); // 1.2 PB
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn with_capacity(capacity: u64, fpr: f64) -> Result<Self, Error> {
        Self::builder().capacity(capacity).fpr(fpr).build()
    }

    /// A [`Builder`] for full control (seed, size, number of hashes; example at
    /// [`num_lines`](Self::num_lines) and [`Builder`]).
    pub fn builder() -> Builder {
        Builder::default()
    }
}

impl Builder {
    /// Number of distinct keys the filter is sized for.
    ///
    /// Example at [`Builder`].
    pub fn capacity(mut self, capacity: u64) -> Self {
        self.capacity = Some(capacity);
        self
    }

    /// False-positive rate wanted at capacity, strictly between 0 and 1.
    ///
    /// Example at [`Builder`].
    pub fn fpr(mut self, fpr: f64) -> Self {
        self.fpr = Some(fpr);
        self
    }

    /// Fixes the 128-bit hashing key (default: drawn at random for each filter).
    ///
    /// Example at [`Builder`].
    pub fn seed(mut self, seed: u128) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Sets the filter size in bits (rounded up to a multiple of 512) instead of deriving it.
    ///
    /// Example at [`Builder`].
    pub fn bits(mut self, bits: u64) -> Self {
        self.bits = Some(bits);
        self
    }

    /// Sets the number of hash functions (bits per key, `1..=MAX_HASHES`).
    ///
    /// Example at [`Builder`].
    pub fn num_hashes(mut self, hashes: u32) -> Self {
        self.hashes = Some(hashes);
        self
    }

    /// Bits per block: 512 (the default), 256, 128 or 64. Every key's bits lie in one block,
    /// and a new key costs one locked read-modify-write per 64-bit word of its block that
    /// lacks one of its bits: about 4.7 at 512 bits, 1 or 2 at 64. Smaller blocks spread keys
    /// less evenly, so they need more bits per key for the same rate — the sizing prices
    /// that in ([`math::blocked_fpr_sized`]): at 1%, 9.9 bits per key at 512, 12.1 at 64.
    /// `docs/PERFORMANCE.md`'s "Line size" table compares them; snapshots and files record the size.
    ///
    /// ```
    /// use blockbloom::BloomFilter;
    /// let f = BloomFilter::builder().capacity(1_000_000).fpr(0.01).block_bits(64).build()?;
    /// assert_eq!(f.block_bits(), 64);
    /// assert!(f.insert_if_absent("https://example.com/"));
    /// assert!(BloomFilter::builder().capacity(10).block_bits(100).build().is_err());
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn block_bits(mut self, bits: u32) -> Self {
        self.block_bits = Some(bits);
        self
    }

    /// Transparent huge pages (Linux; ignored elsewhere). By default a filter of 16 MiB or
    /// more gets them once it is dense: after about four new keys per 4 KiB page (0.1% of
    /// its capacity at 1%), when 98% of its pages are touched anyway, the kernel is asked
    /// to back it with 2 MiB pages (`MADV_HUGEPAGE` and `MADV_COLLAPSE`, Linux 6.1+), so
    /// a sparsely used filter still costs only the 4 KiB pages it touches. `true` asks at
    /// construction, for filters of 2 MiB or more (each region is then committed 2 MiB at
    /// its first touch); `false` never asks.
    ///
    /// Huge pages save most TLB misses on a big filter's random accesses: the benchmark
    /// report's scale section measures what they buy (docs/PERFORMANCE.md).
    ///
    /// ```
    /// use blockbloom::BloomFilter;
    /// let f = BloomFilter::builder().capacity(10_000_000).huge_pages(true).build()?;
    /// assert!(f.insert_if_absent("https://example.com/"));
    /// let small_pages = BloomFilter::builder().capacity(100_000_000).huge_pages(false).build()?;
    /// assert!(small_pages.insert_if_absent("https://example.com/"));
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn huge_pages(mut self, on: bool) -> Self {
        self.huge_pages = Some(on);
        self
    }

    /// Commits the filter's memory at construction, every page of it, as `MAP_POPULATE`
    /// does (default `false`: pages are committed at their first touch). Construction
    /// then takes the page faults the first calls would have taken, and its memory at once;
    /// on Linux with huge pages, asked at construction unless [`huge_pages(false)`](Self::huge_pages),
    /// so there is nothing to copy into them later. For a service whose calls must not
    /// wait on the kernel, and for benchmarks of the calls alone: on a virtual machine whose
    /// host takes freed memory back, a first touch can cost seconds per GB
    /// (docs/PERFORMANCE.md, "Committing memory up front"). Memory the system cannot give
    /// then meets the kernel's out-of-memory handling during `build`, as it would at a
    /// first touch later; it is not an [`Error`] (the mapping itself succeeded).
    ///
    /// ```
    /// use blockbloom::BloomFilter;
    /// let f = BloomFilter::builder().capacity(1_000_000).populate(true).build()?;
    /// assert!(f.insert_if_absent("https://example.com/"));
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn populate(mut self, on: bool) -> Self {
        self.populate = on;
        self
    }

    /// Records how the keys are made from their input (a number of the application's:
    /// the command line records its `--canonical-urls` options), in the filter's snapshots
    /// and files. A file opened with a key format fixed here must have that one
    /// ([`Error::Conflict`] with `what` `"key format"`): keys made another way would all
    /// look new. Without it, a new filter has key format 0 and a file keeps its own.
    ///
    /// ```
    /// use blockbloom::{BloomFilter, Error};
    /// # let dir = std::env::temp_dir().join(format!("bb-key-format-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir).unwrap();
    /// let path = dir.join("canonical.bloom");
    /// let f = BloomFilter::builder().capacity(1000).key_format(1).open_file(&path)?;
    /// assert_eq!(f.key_format(), 1);
    /// drop(f);
    /// let raw = BloomFilter::builder().capacity(1000).key_format(0).open_file(&path);
    /// assert!(matches!(raw, Err(Error::Conflict { what: "key format", .. })));
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn key_format(mut self, key_format: u64) -> Self {
        self.key_format = Some(key_format);
        self
    }

    /// What [`open_file`](Self::open_file) checks of an existing file: by default
    /// ([`Verification::Full`](crate::Verification::Full)) the header and, in a cleanly
    /// closed file, every line against the checksum; `HeaderOnly` skips the lines.
    ///
    /// ```
    /// use blockbloom::{BloomFilter, Verification};
    /// # let dir = std::env::temp_dir().join(format!("bb-builder-verify-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir).unwrap();
    /// let open = || BloomFilter::builder().capacity(1000).verification(Verification::HeaderOnly)
    ///     .open_file(dir.join("s.bloom"));
    /// drop(open()?);
    /// assert!(open()?.is_file_backed());
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn verification(mut self, verification: crate::Verification) -> Self {
        self.verification = verification;
        self
    }

    /// Allocates the filter (zeroed lazily by the OS: O(1) whatever its size).
    ///
    /// # Errors
    /// [`Error::MissingCapacity`], [`Error::ZeroCapacity`], [`Error::InvalidFpr`],
    /// [`Error::UnreachableFpr`], [`Error::InvalidHashes`], [`Error::InvalidBits`],
    /// [`Error::InvalidBlockBits`], [`Error::TooLarge`] or [`Error::AllocationFailed`].
    ///
    /// Example at [`Builder`].
    pub fn build(self) -> Result<BloomFilter, Error> {
        let capacity = self.capacity.ok_or(Error::MissingCapacity)?;
        let fpr = self.fpr.unwrap_or(DEFAULT_FPR);
        let block_bits = self.block_bits.unwrap_or(512);
        let s = math::size_filter_sized(capacity, fpr, self.bits, self.hashes, block_bits)?;
        let len = usize::try_from(s.blocks).map_err(|_| Error::TooLarge { bytes: s.bytes() })?;
        let seed = self.seed.unwrap_or_else(random_seed);
        let huge = match self.huge_pages {
            None if self.populate => HugePages::Now,
            choice => HugePages::from_choice(choice),
        };
        let lines = Lines::zeroed_with(len, huge)?;
        if self.populate {
            lines.populate_fresh();
        }
        let mut f = BloomFilter::from_parts(
            lines,
            Layout::from_validated(seed, s.blocks, s.hashes, block_bits),
            capacity,
            s.target_fpr,
        );
        f.key_format = self.key_format.unwrap_or(0);
        Ok(f)
    }
}
