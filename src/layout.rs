//! Placement: where a key's hash lives in a filter — its line ([`Layout::locate`]) and the
//! bits or slots it touches there ([`Layout::bits`], [`positions`], [`slot_mask`]) — and
//! [`Layout`] and [`Probe`], one key's answer. The hash comes from `hash.rs`; what is done to
//! the line is `line.rs`'s. [`by_block_size!`] is the one place the block size is chosen.

use core::fmt;
use core::hash::Hash;

use crate::error::Error;
use crate::format::MAX_HASHES;
use crate::hash::{fmix64, KeyHash, KeyHasher, PHI};
use crate::line::WORDS;

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

// Placement: where a hash goes. The one place that turns a 64-bit hash into a line and the
// bits or 4-bit slots to touch in it, for every block size and slot width; the filters'
// line operations take what these give and know no keys.

const fn make_salts() -> [u64; MAX_HASHES as usize] {
    let mut out = [0u64; MAX_HASHES as usize];
    let mut i = 0;
    while i < out.len() {
        out[i] = fmix64(0xB10C_B100_u64.wrapping_add((i as u64 + 1).wrapping_mul(PHI))) | 1;
        i += 1;
    }
    out
}

/// Odd multipliers that turn one 64-bit hash into up to [`MAX_HASHES`] positions.
pub(crate) const SALTS: [u64; MAX_HASHES as usize] = make_salts();

/// Index of hash `h` among `n` lines or blocks (multiply-shift).
#[inline(always)]
pub(crate) fn block_index(h: u64, n: u64) -> usize {
    ((h as u128 * n as u128) >> 64) as usize
}

/// The `k` positions of hash `h` among `2^LOG2_SLOTS`: the top `LOG2_SLOTS` bits of
/// `h · SALT[i]`. The one formula for where a key's bits (512 per line: `LOG2_SLOTS = 9`,
/// or fewer in a smaller block) or 4-bit slots (128 per line: 7) lie.
#[inline(always)]
pub(crate) fn positions<const LOG2_SLOTS: u32>(
    h: u64,
    k: u32,
) -> impl Iterator<Item = u32> + Clone {
    SALTS[..k as usize]
        .iter()
        .map(move |salt| position::<LOG2_SLOTS>(h, *salt))
}

#[inline(always)]
fn position<const LOG2_SLOTS: u32>(h: u64, salt: u64) -> u32 {
    (h.wrapping_mul(salt) >> (64 - LOG2_SLOTS)) as u32
}

/// `N` words (a line's eight, or a smaller block's) with bits `bits` (positions in them)
/// set.
#[inline(always)]
pub(crate) fn bit_mask<const N: usize>(bits: impl Iterator<Item = u32>) -> [u64; N] {
    let mut mask = [0u64; N];
    for bit in bits {
        mask[(bit >> 6) as usize] |= 1u64 << (bit & 63);
    }
    mask
}

/// Where 4-bit slot `slot` (0..128) of a line lies: its word, and its shift in the word.
#[inline(always)]
pub(crate) fn slot_word_and_shift(slot: u32) -> (usize, u32) {
    ((slot >> 4) as usize, (slot & 15) * 4)
}

/// A key's 4-bit slots (a counting filter's counters, Redis's expiring stamps): for
/// each word, the low bit of each of its distinct slots there.
#[inline(always)]
pub(crate) fn slot_mask(h: u64, k: u32) -> [u64; WORDS] {
    let mut m = [0u64; WORDS];
    for slot in positions::<7>(h, k) {
        let (w, shift) = slot_word_and_shift(slot);
        m[w] |= 1u64 << shift;
    }
    m
}

mod planes;
pub(crate) use planes::{plane_mask, PLANE_BITS};

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
/// (its counters) or in `blockbloom-redis`'s expiring filter (its stamps): the line and
/// which of its 128 slots (slot `s` is bits `4s..4s+4` of the line).
///
/// ```
/// use blockbloom::Layout;
/// let l = Layout::new(3, 100, 7)?;
/// let p = l.probe_slots("https://example.com/");
/// assert!(p.line() < l.num_lines() as usize);
/// assert!(p.slots().count_ones() >= 1 && p.slots().count_ones() <= l.num_hashes());
/// assert_eq!(Layout::new(3, 100, 7)?.probe_slots("https://example.com/"), p);
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
    pub(crate) hasher: KeyHasher,
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
        let h = self.hasher.hash(key);
        by_block_size!(self: Layout, probe_sized(h) -> Probe)
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
        KeyHash(self.hasher.hash(key))
    }

    /// Where the key of hash `h` lives: [`probe`](Self::probe) of that key, without the
    /// key (example at [`key_hash`](Self::key_hash)).
    pub fn probe_hash(&self, h: KeyHash) -> Probe {
        by_block_size!(self: Layout, probe_sized(h.0) -> Probe)
    }

    /// Where `key`'s slots lie in a counting or expiring filter of this layout (512-bit
    /// blocks only: those filters have no others).
    ///
    /// Example at [`SlotProbe`].
    pub fn probe_slots<K: Hash + ?Sized>(&self, key: &K) -> SlotProbe {
        let h = self.hasher.hash(key);
        let mut slots = 0u128;
        for slot in positions::<7>(h, self.k) {
            slots |= 1u128 << slot;
        }
        SlotProbe {
            line: self.locate::<9>(h).0,
            slots,
        }
    }

    /// [`probe`](Self::probe) for blocks of `2^L` bits (`N` words).
    #[inline(always)]
    fn probe_sized<const L: u32, const N: usize>(&self, h: u64) -> Probe {
        let (line, first) = self.locate::<L>(h);
        Probe {
            line,
            mask: bit_mask(self.bits::<L>(h, first)),
        }
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
        bit_mask(positions::<L>(h, self.k))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Golden vectors of placement (the hash's own are in `hash.rs`): part of the on-disk
    /// and shared-filter format. If this fails, every existing filter would give false
    /// negatives: do not update the numbers, bump `HASH_ALGORITHM_ID` instead.
    #[test]
    fn golden_vectors() {
        let h =
            KeyHasher::new(0x0123_4567_89AB_CDEF_FEDC_BA98_7654_3210).hash("https://example.com/");
        assert_eq!(SALTS[0], 0xa88a_e7ba_885c_a9dd);
        let mask: [u64; WORDS] = bit_mask(positions::<9>(h, 7));
        assert_eq!(
            mask,
            [
                0x0000_0000_1000_0000,
                0,
                0,
                0x0000_0000_0000_0002,
                0x0000_0200_0000_0000,
                0x0000_0000_0000_0040,
                0x0000_0000_0000_0001,
                0x0200_0000_2000_0000,
            ]
        );
    }

    #[test]
    fn masks_have_between_1_and_k_bits() {
        let h = KeyHasher::new(5);
        for i in 0..10_000u64 {
            for k in [1, 7, MAX_HASHES] {
                let bits: u32 = bit_mask::<WORDS>(positions::<9>(h.hash(&i), k))
                    .iter()
                    .map(|w| w.count_ones())
                    .sum();
                assert!(bits >= 1 && bits <= k);
            }
        }
    }

    #[test]
    fn block_index_is_in_range_and_uniform() {
        let h = KeyHasher::new(11);
        let n = 7u64; // not a power of two
        let mut counts = [0u32; 7];
        for i in 0..70_000u64 {
            let b = block_index(h.hash(&i), n);
            counts[b] += 1;
        }
        for c in counts {
            assert!((9_500..10_500).contains(&c), "{counts:?}");
        }
        assert_eq!(block_index(u64::MAX, 1), 0);
        assert_eq!(block_index(u64::MAX, u64::MAX), (u64::MAX - 1) as usize);
    }
}
