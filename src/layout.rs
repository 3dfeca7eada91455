//! [`Layout`]: where a key lives in a filter (its block and its bits there), and [`Probe`],
//! one key's answer. Every key of every blocked filter goes through [`Layout::hash`] and
//! [`Layout::block_of`] / [`Layout::bits`]: one path from key to bits.

use core::fmt;
use core::hash::Hash;

use crate::block::WORDS;
use crate::error::Error;
use crate::hash::{block_index, positions, positions_in, KeyHasher, MAX_HASHES};
use crate::simd::line_mask;

/// Where a key lives in a filter: its block and the bits it sets there.
///
/// Two filters with the same seed and the same number of blocks give every key the same
/// probe, which is what makes snapshots, unions and shared (e.g. Redis) filters possible.
///
/// ```
/// use blockbloom::BloomFilter;
/// let f = BloomFilter::builder().capacity(1000).seed(7).build()?;
/// let p = f.probe("https://example.com/");
/// assert!(p.block() < f.num_blocks());
/// let bits: u32 = p.mask().iter().map(|w| w.count_ones()).sum();
/// assert!(bits >= 1 && bits <= f.num_hashes());
/// # Ok::<(), blockbloom::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Probe {
    block: usize,
    mask: [u64; WORDS],
}

impl Probe {
    /// Index of the key's 64-byte line: its 512-bit block, or the line that holds its
    /// smaller block.
    pub fn block(&self) -> usize {
        self.block
    }

    /// The key's bits within its line, as eight little-endian-ordered 64-bit words: bit `b`
    /// of the line is bit `b % 64` of word `b / 64` (with blocks smaller than 512 bits, only
    /// the words of the key's block are nonzero).
    pub fn mask(&self) -> [u64; WORDS] {
        self.mask
    }
}

/// The key-to-probe mapping of a filter — seed, number of blocks, number of hashes — without
/// the filter's memory: what a filter stored elsewhere (e.g. in Redis, by
/// `blockbloom-redis`) needs to place keys exactly as a local [`BloomFilter`] would.
///
/// ```
/// use blockbloom::{BloomFilter, Layout};
/// let f = BloomFilter::builder().capacity(1000).seed(9).build()?;
/// let l = Layout::new(9, f.num_blocks() as u64, f.num_hashes())?;
/// assert_eq!(l.probe("https://example.com/"), f.probe("https://example.com/"));
/// assert_eq!(f.layout().probe(&7u64), l.probe(&7u64));
/// # Ok::<(), blockbloom::Error>(())
/// ```
///
/// [`BloomFilter`]: crate::BloomFilter
#[derive(Clone)]
pub struct Layout {
    /// 64-byte lines (512 bits each).
    nblocks: u64,
    k: u32,
    seed: u128,
    hasher: KeyHasher,
    /// log2 of the blocks per line: 0 for 512-bit blocks … 3 for 64-bit ones.
    sub_shift: u32,
    /// log2 of the bits per block: 9 for 512 … 6 for 64.
    log2_bits: u32,
    /// Blocks in all: `nblocks << sub_shift`.
    nsub: u64,
}

impl Layout {
    /// The mapping of a filter of `num_blocks` 512-bit blocks and `hashes` bits per key,
    /// hashing with `seed`.
    ///
    /// # Errors
    /// [`Error::InvalidBits`] for 0 blocks, [`Error::InvalidHashes`] outside
    /// `1..=MAX_HASHES`.
    pub fn new(seed: u128, num_blocks: u64, hashes: u32) -> Result<Layout, Error> {
        Layout::with_block_bits(seed, num_blocks, hashes, 512)
    }

    /// The mapping of a filter of `num_lines` 64-byte lines, each holding `512 / block_bits`
    /// blocks of `block_bits` bits ([`BLOCK_SIZES`](crate::math::BLOCK_SIZES)), and
    /// `hashes` bits per key, hashing with `seed`. With 512 it is [`new`](Self::new).
    ///
    /// ```
    /// use blockbloom::{BloomFilter, Layout};
    /// let f = BloomFilter::builder().capacity(1000).block_bits(64).seed(9).build()?;
    /// let l = Layout::with_block_bits(9, f.num_blocks() as u64, f.num_hashes(), 64)?;
    /// assert_eq!(l.probe("https://example.com/"), f.probe("https://example.com/"));
    /// assert_eq!(l.block_bits(), 64);
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`new`](Self::new), and [`Error::InvalidBlockBits`].
    pub fn with_block_bits(
        seed: u128,
        num_lines: u64,
        hashes: u32,
        block_bits: u32,
    ) -> Result<Layout, Error> {
        crate::math::check_block_bits(block_bits)?;
        if num_lines == 0 {
            return Err(Error::InvalidBits(0));
        }
        if hashes == 0 || hashes > MAX_HASHES {
            return Err(Error::InvalidHashes(hashes));
        }
        Ok(Layout::from_validated(seed, num_lines, hashes, block_bits))
    }

    /// As [`with_block_bits`](Self::with_block_bits), for parameters already checked (by
    /// sizing or a header check).
    pub(crate) fn from_validated(
        seed: u128,
        num_blocks: u64,
        hashes: u32,
        block_bits: u32,
    ) -> Layout {
        debug_assert!(num_blocks > 0 && (1..=MAX_HASHES).contains(&hashes));
        debug_assert!(crate::math::check_block_bits(block_bits).is_ok());
        let log2_bits = block_bits.trailing_zeros();
        let sub_shift = 9 - log2_bits;
        Layout {
            nblocks: num_blocks,
            k: hashes,
            seed,
            hasher: KeyHasher::new(seed),
            sub_shift,
            log2_bits,
            nsub: num_blocks << sub_shift,
        }
    }

    /// Where `key` lives: as [`BloomFilter::probe`](crate::BloomFilter::probe).
    #[inline]
    pub fn probe<K: Hash + ?Sized>(&self, key: &K) -> Probe {
        let h = self.hash(key);
        if self.is_512() {
            return Probe {
                block: self.line_512(h),
                mask: line_mask(self.bits_512(h)),
            };
        }
        Probe {
            block: self.block_of(h),
            mask: self.mask(h),
        }
    }

    /// Number of 64-byte lines (of 512-bit blocks, at the default block size).
    pub fn num_blocks(&self) -> u64 {
        self.nblocks
    }

    /// Bits per block: 512 (the default), 256, 128 or 64.
    pub fn block_bits(&self) -> u32 {
        1 << self.log2_bits
    }

    /// Bits per key.
    pub fn num_hashes(&self) -> u32 {
        self.k
    }

    /// The hashing key.
    pub(crate) fn seed(&self) -> u128 {
        self.seed
    }

    /// The keyed 64-bit hash of `key`: step one of every operation.
    #[inline(always)]
    pub(crate) fn hash<K: Hash + ?Sized>(&self, key: &K) -> u64 {
        self.hasher.hash(key)
    }

    /// The block of hash `h` among all blocks (multiply-shift), as its line and the
    /// position of its first bit in that line. With 512-bit blocks the block is the line
    /// and the offset 0: the arithmetic of every earlier version, bit for bit.
    #[inline(always)]
    pub(crate) fn locate(&self, h: u64) -> (usize, u32) {
        let sub = block_index(h, self.nsub);
        let line = sub >> self.sub_shift;
        let first = ((sub & ((1 << self.sub_shift) - 1)) as u32) << self.log2_bits;
        (line, first)
    }

    /// The line of hash `h`.
    #[inline(always)]
    pub(crate) fn block_of(&self, h: u64) -> usize {
        self.locate(h).0
    }

    /// The bit positions (0..512) of hash `h` in its line, one by one: `k` positions within
    /// its block, offset by the block's place in the line.
    #[inline(always)]
    pub(crate) fn bits(&self, h: u64) -> impl Iterator<Item = u32> {
        let first = self.locate(h).1;
        positions_in(h, self.k, self.log2_bits).map(move |p| p + first)
    }

    /// Whether blocks are whole lines (512 bits, the default): the hot paths then take
    /// [`line_512`](Self::line_512) and [`bits_512`](Self::bits_512), the arithmetic with
    /// constant widths.
    #[inline(always)]
    pub(crate) fn is_512(&self) -> bool {
        self.sub_shift == 0
    }

    /// [`block_of`](Self::block_of) for 512-bit blocks.
    #[inline(always)]
    pub(crate) fn line_512(&self, h: u64) -> usize {
        block_index(h, self.nblocks)
    }

    /// [`bits`](Self::bits) for 512-bit blocks.
    #[inline(always)]
    pub(crate) fn bits_512(&self, h: u64) -> impl Iterator<Item = u32> + Clone {
        positions::<9>(h, self.k)
    }

    /// Words per block: 8 (512 bits), 4, 2 or 1.
    #[inline(always)]
    pub(crate) fn block_words(&self) -> usize {
        8 >> self.sub_shift
    }

    /// The bits of hash `h` within its block of `N` words (`N` = [`block_words`](Self::block_words)),
    /// built in registers: the mask of [`mask`](Self::mask) without the other words.
    #[inline(always)]
    pub(crate) fn block_mask<const N: usize>(&self, h: u64) -> [u64; N] {
        debug_assert_eq!(N, self.block_words());
        let mut mask = [0u64; N];
        for bit in positions_in(h, self.k, self.log2_bits) {
            mask[(bit >> 6) as usize] |= 1u64 << (bit & 63);
        }
        mask
    }

    /// The bits of hash `h` in its line as an eight-word mask (nonzero only in its block's
    /// words).
    #[inline(always)]
    pub(crate) fn mask(&self, h: u64) -> [u64; WORDS] {
        line_mask(self.bits(h))
    }

    /// Whether `self` and `other` place every key identically; else what differs.
    pub(crate) fn same_as(&self, other: &Layout) -> Result<(), Error> {
        let what = if self.nblocks != other.nblocks {
            "size"
        } else if self.log2_bits != other.log2_bits {
            "block size"
        } else if self.k != other.k {
            "number of hashes"
        } else if self.seed != other.seed {
            "seed"
        } else {
            return Ok(());
        };
        Err(Error::Incompatible { what })
    }
}

impl fmt::Debug for Layout {
    /// Without the (secret) seed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Layout")
            .field("num_blocks", &self.nblocks)
            .field("num_hashes", &self.k)
            .field("block_bits", &self.block_bits())
            .finish_non_exhaustive()
    }
}
