//! The crate's error type.

use core::fmt;

/// Everything that can go wrong when building a filter. Every fallible constructor returns
/// this; nothing in the crate panics or aborts on bad parameters or a failed allocation.
///
/// ```
/// use blockbloom::{BloomFilter, Error};
/// assert_eq!(BloomFilter::with_capacity(1000, 1.5).unwrap_err(), Error::InvalidFpr(1.5));
/// assert_eq!(BloomFilter::with_capacity(0, 0.01).unwrap_err(), Error::ZeroCapacity);
/// match BloomFilter::with_capacity(u64::MAX, 1e-9) {
///     Err(Error::TooLarge { bytes }) => println!("would need {bytes} bytes"),
///     other => panic!("{other:?}"),
/// }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// The false-positive rate is not a number strictly between 0 and 1.
    InvalidFpr(f64),
    /// The false-positive rate is so small that no blocked filter with at most
    /// [`MAX_HASHES`](crate::format::MAX_HASHES) hash functions and
    /// [`MAX_BITS_PER_KEY`](crate::math::MAX_BITS_PER_KEY) bits per key reaches it.
    UnreachableFpr(f64),
    /// A capacity of zero keys was requested.
    ZeroCapacity,
    /// [`Builder::build`](crate::Builder::build) was called without
    /// [`capacity`](crate::Builder::capacity).
    MissingCapacity,
    /// A number of hash functions outside `1..=MAX_HASHES`.
    InvalidHashes(u32),
    /// A [`GrowableBloomFilter`](crate::GrowableBloomFilter) growth factor below 2 or a
    /// tightening ratio outside (0, 1).
    InvalidGrowth(&'static str),
    /// An [`AtomicBitSet`](crate::AtomicBitSet) of universe 0 was requested.
    EmptyUniverse,
    /// A filter of zero bits was requested.
    InvalidBits(u64),
    /// A block size other than 64, 128, 256 or 512 bits was requested
    /// ([`Builder::block_bits`](crate::Builder::block_bits)).
    InvalidBlockBits(u32),
    /// [`ExpiringBuilder::build`](crate::ExpiringBuilder::build) was called without
    /// [`expire_after`](crate::ExpiringBuilder::expire_after).
    MissingWindow,
    /// An [`ExpiringBloomFilter`](crate::ExpiringBloomFilter) window shorter than one second
    /// (the clock difference it tolerates between callers), or too long to count in
    /// nanoseconds.
    InvalidWindow(core::time::Duration),
    /// The requested filter does not fit this machine's address space.
    TooLarge {
        /// Bytes the filter would need.
        bytes: u128,
    },
    /// Two filters combined by [`union`](crate::BloomFilter::union) or
    /// [`intersect`](crate::BloomFilter::intersect) differ in size, number of hashes or seed,
    /// so the same key has different bits in each.
    Incompatible {
        /// What differs.
        what: &'static str,
    },
    /// Reading or writing a snapshot failed at the I/O level.
    Io {
        /// The kind of I/O error.
        kind: std::io::ErrorKind,
        /// The I/O error's message, with the path where there is one.
        message: String,
    },
    /// The data is not a blockbloom snapshot (wrong magic bytes; another member's snapshot
    /// is an [`Error::InvalidSnapshot`] that says whose it is).
    BadMagic,
    /// A snapshot format version this build cannot read.
    UnsupportedVersion(u32),
    /// A snapshot made with a hash algorithm this build does not implement: loading it
    /// would give false negatives, so it is refused.
    UnknownHash(u32),
    /// The snapshot ends before its header says it should.
    Truncated,
    /// The snapshot's checksum does not match its contents.
    ChecksumMismatch {
        /// Checksum stored in the snapshot.
        stored: u64,
        /// Checksum of the bytes read.
        computed: u64,
    },
    /// The header's own checksum does not match its fields: one of them (the seed, a size,
    /// the window…) is damaged, so none of them can be trusted.
    HeaderChecksumMismatch {
        /// Checksum stored in the header.
        stored: u64,
        /// Checksum of the header's bytes.
        computed: u64,
    },
    /// A snapshot header field is out of range, or the file is longer than its header says.
    InvalidSnapshot(&'static str),
    /// The file is open in a file-backed filter (or its last user did not close it), so its
    /// checksum is not current: open it with
    /// [`BloomFilter::open_file_existing`](crate::BloomFilter::open_file_existing) instead of
    /// loading it as a snapshot.
    InUse,
    /// A file-backed filter's file holds a filter with other parameters than those asked for
    /// (see [`BloomFilter::open_file`](crate::BloomFilter::open_file)).
    Conflict {
        /// The parameter that differs.
        what: &'static str,
        /// Its value in the file.
        file: String,
        /// The value asked for.
        requested: String,
    },
    /// A file-backed [`GrowableBloomFilter`](crate::GrowableBloomFilter) found, where one of
    /// its layers goes (`PATH.1`, `PATH.2`, …), something that is not that layer: a layer of
    /// another chain left behind when its first file was removed, a directory, a file that
    /// is no filter. Using it would make the chain unable to grow, so the chain refuses to
    /// open (or to grow) until it is moved away.
    ForeignLayer {
        /// The path in the way.
        path: String,
        /// What it is.
        reason: &'static str,
    },
    /// A [`GrowableBloomFilter`](crate::GrowableBloomFilter) already has
    /// [`MAX_LAYERS`](crate::MAX_LAYERS) layers and cannot add another.
    TooManyLayers,
    /// The operating system refused the memory.
    AllocationFailed {
        /// Bytes that were requested.
        bytes: usize,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidFpr(p) => write!(
                f,
                "false-positive rate must be strictly between 0 and 1, got {p}"
            ),
            Error::UnreachableFpr(p) => write!(
                f,
                "false-positive rate {p:e} is below what a blocked Bloom filter can be sized for"
            ),
            Error::ZeroCapacity => f.write_str("capacity must be at least 1 key"),
            Error::MissingCapacity => {
                f.write_str("no capacity given: call .capacity(n) before .build()")
            }
            Error::InvalidHashes(k) => write!(
                f,
                "number of hash functions must be in 1..={}, got {k}",
                crate::format::MAX_HASHES
            ),
            Error::InvalidGrowth(why) => write!(f, "invalid growth parameters: {why}"),
            Error::EmptyUniverse => f.write_str("a bitset needs a universe of at least 1 id"),
            Error::InvalidBits(b) => write!(f, "a filter needs at least 1 bit, got {b}"),
            Error::InvalidBlockBits(b) => {
                write!(f, "block size {b} bits: must be 64, 128, 256 or 512")
            }
            Error::MissingWindow => {
                f.write_str("no window given: call .expire_after(duration) before .build()")
            }
            Error::InvalidWindow(w) => write!(
                f,
                "expiry window {w:?}: must be at least 1 s (the clock skew tolerated) and under 584 years"
            ),
            Error::TooLarge { bytes } => write!(
                f,
                "a filter of {bytes} bytes does not fit this machine's address space"
            ),
            Error::Incompatible { what } => write!(
                f,
                "filters differ in {what}: only filters with identical size, hashes and seed can be combined"
            ),
            Error::Io { message, .. } => write!(f, "I/O error: {message}"),
            Error::BadMagic => f.write_str("not a blockbloom snapshot (bad magic bytes)"),
            Error::UnsupportedVersion(v) => write!(
                f,
                "snapshot format version {v} is not supported by this build (it reads versions 1 to {})",
                crate::format::FORMAT_VERSION
            ),
            Error::UnknownHash(id) => write!(
                f,
                "snapshot uses hash algorithm {id}, which this build does not implement (it has {})",
                crate::HASH_ALGORITHM_ID
            ),
            Error::Truncated => f.write_str("snapshot is truncated"),
            Error::ChecksumMismatch { stored, computed } => write!(
                f,
                "checksum mismatch (stored {stored:#018x}, computed {computed:#018x}): the file \
                 is damaged, so it is not used"
            ),
            Error::HeaderChecksumMismatch { stored, computed } => write!(
                f,
                "header checksum mismatch (stored {stored:#018x}, computed {computed:#018x}): the \
                 file's parameters are damaged, so the file is not used"
            ),
            Error::InvalidSnapshot(why) => write!(f, "invalid snapshot: {why}"),
            Error::InUse => f.write_str(
                "the file is in use by a file-backed filter, or its last user did not close it: \
                 open it with BloomFilter::open_file_existing",
            ),
            Error::Conflict {
                what,
                file,
                requested,
            } => write!(
                f,
                "the file holds a filter with {what} {file}, but {requested} was asked for \
                 (open it with its own parameters, or use another file)"
            ),
            Error::AllocationFailed { bytes } => {
                write!(f, "could not allocate {bytes} bytes for the filter")
            }
            Error::ForeignLayer { path, reason } => write!(
                f,
                "{path} is in the way of this filter's layers: {reason}; move it away (or use \
                 another path) before using this filter"
            ),
            Error::TooManyLayers => write!(
                f,
                "the growable filter has its maximum of {} layers",
                crate::format::MAX_LAYERS
            ),
        }
    }
}

impl std::error::Error for Error {}

impl Error {
    /// This error of a filter sized for a share of the rate `fpr` asked for (a growable
    /// filter's first layer, the expiring filter's planes), with a rate too small to size
    /// for reported as `fpr` itself.
    pub(crate) fn for_rate_asked(self, fpr: f64) -> Self {
        match self {
            Error::UnreachableFpr(_) => Error::UnreachableFpr(fpr),
            e => e,
        }
    }

    /// An I/O error, keeping its kind and message (the error itself is neither `Clone` nor
    /// `PartialEq`, which `Error` is).
    pub(crate) fn io(e: &std::io::Error, context: &str) -> Self {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            return Error::Truncated;
        }
        Error::Io {
            kind: e.kind(),
            message: if context.is_empty() {
                e.to_string()
            } else {
                format!("{context}: {e}")
            },
        }
    }
}
