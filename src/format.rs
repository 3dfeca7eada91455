//! The on-disk format's constants (the snapshot format, and the file-backed filter, which
//! is a snapshot mapped into memory). A leaf module: the error messages quote the version,
//! and the readers and writers in `snapshot` use the rest.
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `BLKBLOOM` (`BLKBITST` for an `AtomicBitSet`, `BLKCOUNT` for a `CountingBloomFilter`: 4-bit counters, 128 to a line) |
//! | 8 | 4 | format version: 4 ([`FORMAT_VERSION`]); version 3 is the same but for an expiring filter's lines (4-bit stamps, refused: [`EXPIRING_SINCE`]); versions 1 and 2 (a 64-byte header without the fields from offset 64 on) are read as snapshots only |
//! | 12 | 4 | hash algorithm id ([`HASH_ALGORITHM_ID`](crate::HASH_ALGORITHM_ID)) |
//! | 16 | 16 | hash key (seed, `u128`) |
//! | 32 | 8 | number of 64-byte lines `B` (≥ 1): 512-bit blocks, or `512 / block bits` smaller blocks each |
//! | 40 | 4 | bits set per key `k` (1..=32) |
//! | 44 | 2 | flags: 0 in a snapshot; bit 0 ([`IN_USE`]) while a file-backed filter has the file open; bit 1 ([`GROWS`]) in the layer files of a file-backed growable filter; bit 2 ([`EXPIRES`]) in an expiring filter's file or snapshot |
//! | 46 | 2 | bits per block (64, 128, 256 or 512; version 1: 0, meaning 512) |
//! | 48 | 8 | capacity (≥ 1) |
//! | 56 | 8 | target false-positive rate (`f64` bits, in (0, 1)) |
//! | 64 | 8 | an expiring filter's window in nanoseconds (the clock line's word 2 holds the same), else 0 |
//! | 72 | 8 | key format: how the keys were made from their input (0: as given; the CLI records its `--canonical-urls` options) |
//! | 80 | 40 | reserved: zeros |
//! | 120 | 8 | header checksum: XXH3-64 (seed 0, default secret) of bytes 0..120 with flag bit 0 cleared |
//! | 128 | 64·B | the lines: 8 words (`u64`) per line; bit `b` of a line is bit `b % 64` of word `b / 64`; block `j` of a line holds its bits `j·block_bits ..` |
//! | 128 + 64·B | 8 | XXH3-64 (seed 0, default secret) of all preceding bytes, flag bit 0 cleared |
//!
//!
//! A layer file of a file-backed [`GrowableBloomFilter`](crate::GrowableBloomFilter) (flag
//! [`GROWS`]) continues after the checksum: zero padding to the next multiple of 64, then
//! [`TRAILER_BYTES`] of live counters, each in a cache line of its own — at trailer offset 0
//! the keys the layer took ([`COUNT_AT`]), at 64 (used in layer 0 only) the number of layers
//! after the first ([`LAYERS_AT`]). The checksum's digest covers them too, after the lines
//! (as the closer that seals the file found them): header, lines, the key count, the layer
//! count.
//!
//! An [`ExpiringBloomFilter`](crate::ExpiringBloomFilter)'s file or snapshot (flag
//! [`EXPIRES`]) is a filter of `B` lines whose first line is its clock:
//! word 0 the newest epoch any user has used, word 1 one more than the epoch of the last
//! sweep (0: none yet), word 2 the window in nanoseconds, word 3 one more than the first
//! epoch used (0: none), words 4 and 5 the sweep in progress (one more than its epoch in the
//! high 40 bits; the chunks claimed, and done, in the low 24), word 6 the time of the first
//! call in nanoseconds since 1970 (0: none), word 7 0. Its other lines hold four planes
//! each: plane `p` is words `2p` and `2p + 1`, each with a label in its top 4 bits (an
//! epoch mod 15, plus 1; 0: empty) and 60 bits of keys below (`k` bits per key, the
//! capacity per window).
//!
//! Integrity: every open checks the header checksum (O(1)), so no parameter of a damaged
//! file is ever used; a file whose flag bit 0 is clear (its last user closed it) also has
//! its lines checked against the checksum after them, unless the caller opts out
//! ([`Verification`](crate::Verification)). A refused file is left as it was, and a closer
//! re-checks the header before it seals: no damaged file is sealed with a fresh checksum.
//!
//! All integers little-endian.
// Loom builds leave out the files (`file/`), whose items these are too.
#![cfg_attr(blockbloom_loom, allow(unused_imports, dead_code))]

/// The first 8 bytes of a filter's snapshot.
pub(crate) const MAGIC: [u8; 8] = *b"BLKBLOOM";
/// The first 8 bytes of an [`AtomicBitSet`](crate::AtomicBitSet)'s snapshot.
pub(crate) const BITSET_MAGIC: [u8; 8] = *b"BLKBITST";
/// The first 8 bytes of a [`CountingBloomFilter`](crate::CountingBloomFilter)'s snapshot.
pub(crate) const COUNTING_MAGIC: [u8; 8] = *b"BLKCOUNT";
/// The newest format version, the one this build writes: a 128-byte header with its own
/// checksum. Versions 1 and 2 (a 64-byte header, no header checksum) are read as snapshots,
/// whose checksum covers everything, but never opened as files.
pub(crate) const FORMAT_VERSION: u32 = 4;
/// The first version whose expiring filters are planes (`expiring/planes.rs`); an expiring
/// filter of an earlier version is refused, with how to rebuild it.
pub(crate) const EXPIRING_SINCE: u32 = 4;
/// Flag (header offset 44): a file-backed filter has the file open, or its last user did
/// not close it; the checksum is then not current. Snapshot readers refuse such a file.
pub(crate) const IN_USE: u16 = 1;
/// Bytes before the first block.
pub(crate) const HEADER_BYTES: usize = 128;
/// Bytes before the first block in versions 1 and 2 (no fields from offset 64 on).
pub(crate) const LEGACY_HEADER_BYTES: usize = 64;
/// Header offset of an expiring filter's window in nanoseconds (`u64`).
pub(crate) const WINDOW_AT: usize = 64;
/// Header offset of the key format (`u64`).
pub(crate) const KEY_FORMAT_AT: usize = 72;
/// Header offset of the header checksum (`u64`), which covers the bytes before it.
pub(crate) const HEADER_CHECK_AT: usize = 120;
/// Bytes of the checksum after the last block.
pub(crate) const CHECKSUM_BYTES: usize = 8;
/// Flag (header offset 44): the file is a layer of a file-backed growable filter (its
/// siblings hold the other layers); snapshot readers refuse it.
pub(crate) const GROWS: u16 = 2;
/// Flag (header offset 44): the file or snapshot holds an expiring filter; readers of the
/// other kinds refuse it.
pub(crate) const EXPIRES: u16 = 4;
/// Bytes of a layer file's live counters after the checksum's padding.
pub(crate) const TRAILER_BYTES: usize = 128;
/// Trailer offset of a layer's key count (`u64`).
pub(crate) const COUNT_AT: usize = 0;
/// Trailer offset of the number of layers after the first (`u64`, layer 0's file).
pub(crate) const LAYERS_AT: usize = 64;

/// Most layers a [`GrowableBloomFilter`](crate::GrowableBloomFilter) can have (its files:
/// the first and `.1` … `.63`). With the default growth (×2) the last
/// would hold 2^63 times the initial capacity: in practice memory runs out first.
///
/// ```
/// use blockbloom::{GrowableBloomFilter, MAX_LAYERS};
/// let g = GrowableBloomFilter::new(100, 0.01)?;
/// (0..10_000u32).for_each(|i| g.insert(&i));
/// assert!(g.num_layers() > 1 && g.num_layers() <= MAX_LAYERS);
/// # Ok::<(), blockbloom::Error>(())
/// ```
pub const MAX_LAYERS: usize = 64;

/// Largest number of hash functions (bits set per key) a filter may use. Example at
/// [`HASH_ALGORITHM_ID`](crate::HASH_ALGORITHM_ID).
pub const MAX_HASHES: u32 = 32;
