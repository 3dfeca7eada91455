//! [`Layout`]: where a key lives in a filter (its block and its bits there), and [`Probe`],
//! one key's answer. Every key of every blocked filter goes through [`Layout::hash`] and
//! [`Layout::block_of`] / [`Layout::bits`]: one path from key to bits.

use core::fmt;
use core::hash::Hash;

use crate::block::WORDS;
use crate::error::Error;
use crate::hash::{bit_positions, block_index, block_mask, KeyHasher, MAX_HASHES};

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
    /// Index of the key's 512-bit block.
    pub fn block(&self) -> usize {
        self.block
    }

    /// The key's bits within its block, as eight little-endian-ordered 64-bit words: bit `b`
    /// of the block is bit `b % 64` of word `b / 64`.
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
    nblocks: u64,
    k: u32,
    seed: u128,
    hasher: KeyHasher,
}

impl Layout {
    /// The mapping of a filter of `num_blocks` 512-bit blocks and `hashes` bits per key,
    /// hashing with `seed`.
    ///
    /// # Errors
    /// [`Error::InvalidBits`] for 0 blocks, [`Error::InvalidHashes`] outside
    /// `1..=MAX_HASHES`.
    pub fn new(seed: u128, num_blocks: u64, hashes: u32) -> Result<Layout, Error> {
        if num_blocks == 0 {
            return Err(Error::InvalidBits(0));
        }
        if hashes == 0 || hashes > MAX_HASHES {
            return Err(Error::InvalidHashes(hashes));
        }
        Ok(Layout::from_validated(seed, num_blocks, hashes))
    }

    /// As [`new`](Self::new), for parameters already checked (by sizing or a header check).
    pub(crate) fn from_validated(seed: u128, num_blocks: u64, hashes: u32) -> Layout {
        debug_assert!(num_blocks > 0 && (1..=MAX_HASHES).contains(&hashes));
        Layout {
            nblocks: num_blocks,
            k: hashes,
            seed,
            hasher: KeyHasher::new(seed),
        }
    }

    /// Where `key` lives: as [`BloomFilter::probe`](crate::BloomFilter::probe).
    #[inline]
    pub fn probe<K: Hash + ?Sized>(&self, key: &K) -> Probe {
        let h = self.hash(key);
        Probe {
            block: self.block_of(h),
            mask: self.mask(h),
        }
    }

    /// Number of blocks.
    pub fn num_blocks(&self) -> u64 {
        self.nblocks
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

    /// The block of hash `h`.
    #[inline(always)]
    pub(crate) fn block_of(&self, h: u64) -> usize {
        block_index(h, self.nblocks)
    }

    /// The bit positions (0..512) of hash `h` in its block, one by one.
    #[inline(always)]
    pub(crate) fn bits(&self, h: u64) -> impl Iterator<Item = u32> {
        bit_positions(h, self.k)
    }

    /// The bits of hash `h` in its block as an eight-word mask.
    #[inline(always)]
    pub(crate) fn mask(&self, h: u64) -> [u64; WORDS] {
        block_mask(h, self.k)
    }

    /// Whether `self` and `other` place every key identically; else what differs.
    pub(crate) fn same_as(&self, other: &Layout) -> Result<(), Error> {
        let what = if self.nblocks != other.nblocks {
            "size"
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
            .finish_non_exhaustive()
    }
}
