//! [`Layout`]: where a key lives in a filter (its block and its bits there), and [`Probe`],
//! one key's answer. Every key of every blocked filter goes the same three steps, each in one
//! place: [`Layout::hash`], [`Layout::locate`] (its block) and [`Layout::bits`] (its bits
//! there), monomorphized per block size by [`by_block_size!`], the one place the size is
//! chosen.

use core::fmt;
use core::hash::Hash;

use crate::block::WORDS;
use crate::error::Error;
use crate::hash::{block_index, positions, KeyHash, KeyHasher, MAX_HASHES};

/// `$r.$op::<L, N>(h)` for the block size of `$r` (a [`Layout`] or a filter with a
/// `log2_block_bits()`): `L` = log2 of the block's bits, `N` its words. The one place the
/// block size is chosen: every operation is one generic path, monomorphized per size. 512-bit
/// blocks (the default) take the inlined path; the smaller sizes share one call out of line,
/// so that the default path stays compact.
macro_rules! by_block_size {
    ($r:ident : $ty:ty, $op:ident($h:expr) -> $ret:ty) => {{
        #[inline(never)]
        fn smaller(r: &$ty, h: u64) -> $ret {
            match r.log2_block_bits() {
                8 => r.$op::<8, 4>(h),
                7 => r.$op::<7, 2>(h),
                _ => r.$op::<6, 1>(h),
            }
        }
        let h: u64 = $h;
        if $r.log2_block_bits() == 9 {
            $r.$op::<9, 8>(h)
        } else {
            smaller($r, h)
        }
    }};
}
pub(crate) use by_block_size;

/// Where a key lives in a filter: its block and the bits it sets there.
///
/// Two filters with the same seed and the same number of blocks give every key the same
/// probe, which is what makes snapshots, unions and shared (e.g. Redis) filters possible.
///
/// ```
/// use blockbloom::BloomFilter;
/// let f = BloomFilter::builder().capacity(1000).seed(7).build()?;
/// let p = f.probe("https://example.com/");
/// assert!(p.line() < f.num_lines());
/// let bits: u32 = p.mask().iter().map(|w| w.count_ones()).sum();
/// assert!(bits >= 1 && bits <= f.num_hashes());
/// # Ok::<(), blockbloom::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Probe {
    line: usize,
    mask: [u64; WORDS],
}

impl Probe {
    /// Index of the key's 64-byte line: its 512-bit block, or the line that holds its
    /// smaller block (example at [`Probe`]).
    pub fn line(&self) -> usize {
        self.line
    }


    /// The key's bits within its line, as eight little-endian-ordered 64-bit words: bit `b`
    /// of the line is bit `b % 64` of word `b / 64` (with blocks smaller than 512 bits, only
    /// the words of the key's block are nonzero; example at [`Probe`]).
    pub fn mask(&self) -> [u64; WORDS] {
        self.mask
    }
}

/// Where a key's 4-bit slots lie in a [`CountingBloomFilter`](crate::CountingBloomFilter)
/// (its counters) or an [`ExpiringBloomFilter`](crate::ExpiringBloomFilter) (its stamps):
/// the line and which of its 128 slots (slot `s` is bits `4s..4s+4` of the line).
///
/// ```
/// use blockbloom::{ExpiringBloomFilter, Layout};
/// use std::time::Duration;
/// let b = ExpiringBloomFilter::builder().expire_after(Duration::from_secs(60)).capacity(1000).seed(3);
/// let l: Layout = b.clone().layout()?;
/// let p = l.probe_slots("https://example.com/");
/// assert!(p.line() < l.num_lines() as usize);
/// assert!(p.slots().count_ones() >= 1 && p.slots().count_ones() <= l.num_hashes());
/// assert_eq!(b.build()?.layout().probe_slots("https://example.com/"), p);
/// # Ok::<(), blockbloom::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SlotProbe {
    line: usize,
    slots: u128,
}

impl SlotProbe {
    /// Index of the key's 64-byte line (example at [`SlotProbe`]).
    pub fn line(&self) -> usize {
        self.line
    }

    /// The key's slots in its line: bit `s` set for slot `s` (0..128; example at
    /// [`SlotProbe`]).
    pub fn slots(&self) -> u128 {
        self.slots
    }
}

/// The key-to-probe mapping of a filter — seed, number of blocks, number of hashes — without
/// the filter's memory: what a filter stored elsewhere (e.g. in Redis, by
/// `blockbloom-redis`) needs to place keys exactly as a local [`BloomFilter`] would.
///
/// ```
/// use blockbloom::{BloomFilter, Layout};
/// let f = BloomFilter::builder().capacity(1000).seed(9).build()?;
/// let l = Layout::new(9, f.num_lines() as u64, f.num_hashes())?;
/// assert_eq!(l.probe("https://example.com/"), f.probe("https://example.com/"));
/// assert_eq!(f.layout().probe(&7u64), l.probe(&7u64));
/// # Ok::<(), blockbloom::Error>(())
/// ```
///
/// [`BloomFilter`]: crate::BloomFilter
#[derive(Clone)]
pub struct Layout {
    /// 64-byte lines (512 bits each).
    nlines: u64,
    k: u32,
    seed: u128,
    hasher: KeyHasher,
    /// log2 of the bits per block: 9 for 512 … 6 for 64.
    log2_bits: u32,
}

impl Layout {
    /// The mapping of a filter of `num_lines` 512-bit blocks (64-byte lines) and `hashes`
    /// bits per key,
    /// hashing with `seed`.
    ///
    /// # Errors
    /// [`Error::InvalidBits`] for 0 blocks, [`Error::InvalidHashes`] outside
    /// `1..=MAX_HASHES`.
    ///
    /// Example at [`Layout`].
    pub fn new(seed: u128, num_lines: u64, hashes: u32) -> Result<Layout, Error> {
        Layout::with_block_bits(seed, num_lines, hashes, 512)
    }

    /// The mapping of a filter of `num_lines` 64-byte lines, each holding `512 / block_bits`
    /// blocks of `block_bits` bits ([`BLOCK_SIZES`](crate::math::BLOCK_SIZES)), and
    /// `hashes` bits per key, hashing with `seed`. With 512 it is [`new`](Self::new).
    ///
    /// ```
    /// use blockbloom::{BloomFilter, Layout};
    /// let f = BloomFilter::builder().capacity(1000).block_bits(64).seed(9).build()?;
    /// let l = Layout::with_block_bits(9, f.num_lines() as u64, f.num_hashes(), 64)?;
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
        num_lines: u64,
        hashes: u32,
        block_bits: u32,
    ) -> Layout {
        debug_assert!(num_lines > 0 && (1..=MAX_HASHES).contains(&hashes));
        debug_assert!(crate::math::check_block_bits(block_bits).is_ok());
        Layout {
            nlines: num_lines,
            k: hashes,
            seed,
            hasher: KeyHasher::new(seed),
            log2_bits: block_bits.trailing_zeros(),
        }
    }

    /// Where `key` lives: as [`BloomFilter::probe`](crate::BloomFilter::probe).
    ///
    /// Example at [`Layout`].
    #[inline]
    pub fn probe<K: Hash + ?Sized>(&self, key: &K) -> Probe {
        let h = self.hash(key);
        by_block_size!(self: Layout, probe_at(h) -> Probe)
    }

    /// The keyed hash of `key` in this layout: [`BloomFilter::key_hash`] of a filter with
    /// the same seed, for placing it later or elsewhere with
    /// [`probe_hash`](Self::probe_hash).
    ///
    /// ```
    /// use blockbloom::{BloomFilter, Layout};
    /// let f = BloomFilter::builder().capacity(1000).seed(4).build()?;
    /// let l = f.layout();
    /// let h = l.key_hash("https://example.com/");
    /// assert_eq!(h, f.key_hash("https://example.com/"));
    /// assert_eq!(l.probe_hash(h), f.probe("https://example.com/"));
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    ///
    /// [`BloomFilter::key_hash`]: crate::BloomFilter::key_hash
    pub fn key_hash<K: Hash + ?Sized>(&self, key: &K) -> KeyHash {
        KeyHash(self.hash(key))
    }

    /// Where the key of hash `h` lives: [`probe`](Self::probe) of that key, without the
    /// key (example at [`key_hash`](Self::key_hash)).
    pub fn probe_hash(&self, h: KeyHash) -> Probe {
        by_block_size!(self: Layout, probe_at(h.0) -> Probe)
    }

    /// Where `key`'s slots lie in a counting or expiring filter of this layout (512-bit
    /// blocks only: those filters have no others).
    ///
    /// Example at [`SlotProbe`].
    pub fn probe_slots<K: Hash + ?Sized>(&self, key: &K) -> SlotProbe {
        let h = self.hash(key);
        let mut slots = 0u128;
        for (w, m) in crate::counting::counter_mask(h, self.k)
            .into_iter()
            .enumerate()
        {
            let mut m = m;
            while m != 0 {
                slots |= 1u128 << (w as u32 * 16 + m.trailing_zeros() / 4);
                m &= m - 1;
            }
        }
        SlotProbe {
            line: self.locate::<9>(h).0,
            slots,
        }
    }

    /// [`probe`](Self::probe) for blocks of `2^L` bits (`N` words).
    #[inline(always)]
    fn probe_at<const L: u32, const N: usize>(&self, h: u64) -> Probe {
        let (line, first) = self.locate::<L>(h);
        let mut mask = [0u64; WORDS];
        for bit in self.bits::<L>(h, first) {
            mask[(bit >> 6) as usize] |= 1u64 << (bit & 63);
        }
        Probe { line, mask }
    }

    /// Number of 64-byte lines (each a 512-bit block at the default block size).
    ///
    /// ```
    /// use blockbloom::Layout;
    /// let l = Layout::with_block_bits(1, 100, 7, 256)?;
    /// assert_eq!((l.num_lines(), l.block_bits(), l.num_hashes()), (100, 256, 7));
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn num_lines(&self) -> u64 {
        self.nlines
    }


    /// Bits per block: 512 (the default), 256, 128 or 64.
    ///
    /// Example at [`num_lines`](Self::num_lines).
    pub fn block_bits(&self) -> u32 {
        1 << self.log2_bits
    }

    /// log2 of [`block_bits`](Self::block_bits): 9 … 6, what [`by_block_size!`] chooses by.
    #[inline(always)]
    pub(crate) fn log2_block_bits(&self) -> u32 {
        self.log2_bits
    }

    /// Bits per key.
    ///
    /// Example at [`num_lines`](Self::num_lines).
    pub fn num_hashes(&self) -> u32 {
        self.k
    }

    /// The hashing key.
    pub(crate) fn seed(&self) -> u128 {
        self.seed
    }

    /// Step one of every operation: the keyed 64-bit hash of `key`.
    #[inline(always)]
    pub(crate) fn hash<K: Hash + ?Sized>(&self, key: &K) -> u64 {
        self.hasher.hash(key)
    }

    /// Step two: the block of hash `h`, for blocks of `2^L` bits, as its line and the
    /// position of its first bit in that line. One multiply-shift over all blocks; with
    /// 512-bit blocks (`L` = 9) the block is the line and the offset a constant 0 (the
    /// golden vectors pin the arithmetic).
    #[inline(always)]
    pub(crate) fn locate<const L: u32>(&self, h: u64) -> (usize, u32) {
        debug_assert_eq!(L, self.log2_bits);
        let per_line = 9 - L; // log2 of the blocks per line
        let sub = block_index(h, self.nlines << per_line);
        let first = ((sub & ((1 << per_line) - 1)) as u32) << L;
        (sub >> per_line, first)
    }

    /// Step three: the `k` bit positions (0..512) of hash `h` in its line, for blocks of
    /// `2^L` bits whose first bit is `first` ([`locate`](Self::locate)): the one position
    /// formula, [`positions`], offset by the block's place in the line.
    #[inline(always)]
    pub(crate) fn bits<const L: u32>(
        &self,
        h: u64,
        first: u32,
    ) -> impl Iterator<Item = u32> + Clone {
        positions::<L>(h, self.k).map(move |p| p + first)
    }

    /// The bits of hash `h` within its block of `N` words (`2^L` bits, `N` = `2^L / 64`),
    /// built in registers: what the word-wise operations on blocks smaller than a line take.
    #[inline(always)]
    pub(crate) fn block_mask<const L: u32, const N: usize>(&self, h: u64) -> [u64; N] {
        debug_assert_eq!(N, 1 << (L - 6));
        let mut mask = [0u64; N];
        for bit in positions::<L>(h, self.k) {
            mask[(bit >> 6) as usize] |= 1u64 << (bit & 63);
        }
        mask
    }

    /// Whether `self` and `other` place every key identically; else what differs.
    pub(crate) fn same_as(&self, other: &Layout) -> Result<(), Error> {
        let what = if self.nlines != other.nlines {
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
            .field("num_lines", &self.nlines)
            .field("num_hashes", &self.k)
            .field("block_bits", &self.block_bits())
            .finish_non_exhaustive()
    }
}
