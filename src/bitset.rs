//! [`AtomicBitSet`]: an exact, lock-free set of integer ids below a fixed bound.

use core::fmt;
use std::io::{Read, Write};
use std::path::Path;

use crate::error::Error;
use crate::format::BITSET_MAGIC;
use crate::line::{or_into, LINE_BITS, LINE_BYTES};
use crate::snapshot::{load_from, read_snapshot, save_atomically, write_snapshot, Header};
use crate::storage::{HugePages, Lines};
use crate::sync::{
    AtomicU64,
    Ordering::{AcqRel, Acquire, Relaxed},
};

/// An exact set of the integers `0..universe`, one bit each, shared between threads without
/// locks: the "bitmap" of the textbooks, for dense ids (user ids, document ids, line numbers).
///
/// Where the ids are dense, it beats any filter: no false positives, no false negatives,
/// `universe / 8` bytes (125 MB for ids below 10^9), and `insert_if_absent` is a single `fetch_or`,
/// which gives *exactly* one `true` per id however many threads race. The memory is mapped
/// lazily, so a large universe costs only the pages its ids touch.
///
/// # Examples
/// ```
/// use blockbloom::AtomicBitSet;
/// let seen = AtomicBitSet::new(1_000_000)?;
/// assert!(seen.insert_if_absent(42));
/// assert!(!seen.insert_if_absent(42));
/// assert!(seen.contains(42) && !seen.contains(43));
/// seen.insert(7);
/// assert_eq!(seen.iter().collect::<Vec<_>>(), [7, 42]);
/// assert_eq!(seen.len(), 2);
/// # Ok::<(), blockbloom::Error>(())
/// ```
pub struct AtomicBitSet {
    lines: Lines,
    universe: u64,
}

impl AtomicBitSet {
    /// A set for the ids `0..universe`, all absent.
    ///
    /// # Errors
    /// [`Error::EmptyUniverse`] for 0; [`Error::TooLarge`] / [`Error::AllocationFailed`] when
    /// the memory cannot be had.
    ///
    /// Example at [`len`](Self::len).
    pub fn new(universe: u64) -> Result<Self, Error> {
        if universe == 0 {
            return Err(Error::EmptyUniverse);
        }
        let nlines = universe.div_ceil(LINE_BITS);
        let len = usize::try_from(nlines).map_err(|_| Error::TooLarge {
            bytes: nlines as u128 * LINE_BYTES as u128,
        })?;
        Ok(AtomicBitSet {
            lines: Lines::zeroed(len)?,
            universe,
        })
    }

    #[inline(always)]
    fn word(&self, i: u64) -> (&AtomicU64, u64) {
        let b = &self.lines[(i / LINE_BITS) as usize];
        (b.word((i / 64 % 8) as usize), 1u64 << (i % 64))
    }

    /// The ids are `0..universe()`.
    ///
    /// Example at [`len`](Self::len).
    pub fn universe(&self) -> u64 {
        self.universe
    }

    /// Adds `i`; `true` if it was absent. One `fetch_or`: of several threads inserting the
    /// same id at once, exactly one gets `true`.
    ///
    /// # Panics
    /// If `i >= universe()` (like indexing a slice out of bounds). Use
    /// [`try_insert_if_absent`](Self::try_insert_if_absent) for ids that come from outside.
    ///
    /// ```
    /// use blockbloom::AtomicBitSet;
    /// let s = AtomicBitSet::new(100)?;
    /// assert!(s.insert_if_absent(7));
    /// assert!(!s.insert_if_absent(7));
    /// s.insert(8);
    /// assert!(s.contains(8) && s.len() == 2);
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    #[inline]
    pub fn insert_if_absent(&self, i: u64) -> bool {
        assert!(
            i < self.universe,
            "id {i} out of range for a bitset of universe {}",
            self.universe
        );
        let (w, bit) = self.word(i);
        w.fetch_or(bit, AcqRel) & bit == 0
    }

    /// Adds `i` ([`insert_if_absent`](Self::insert_if_absent) without the answer, as
    /// [`BloomFilter::insert`](crate::BloomFilter::insert)).
    ///
    /// # Panics
    /// If `i >= universe()`.
    ///
    /// Example at [`insert_if_absent`](Self::insert_if_absent).
    #[inline]
    pub fn insert(&self, i: u64) {
        self.insert_if_absent(i);
    }

    /// As [`insert_if_absent`](Self::insert_if_absent), but `None` instead of a panic when
    /// `i` is out of range.
    ///
    /// ```
    /// use blockbloom::AtomicBitSet;
    /// let s = AtomicBitSet::new(10)?;
    /// assert_eq!(s.try_insert_if_absent(9), Some(true));
    /// assert_eq!(s.try_insert_if_absent(10), None);
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn try_insert_if_absent(&self, i: u64) -> Option<bool> {
        (i < self.universe).then(|| self.insert_if_absent(i))
    }

    /// Whether `i` is in the set (`false` for ids out of range).
    ///
    /// Example at [`len`](Self::len).
    #[inline]
    pub fn contains(&self, i: u64) -> bool {
        if i >= self.universe {
            return false;
        }
        let (w, bit) = self.word(i);
        w.load(Acquire) & bit != 0
    }

    /// Removes `i`; `true` if it was present (`false` for ids out of range). One
    /// `fetch_and`: of several threads removing the same id, exactly one gets `true`.
    ///
    /// Example at [`len`](Self::len).
    pub fn remove(&self, i: u64) -> bool {
        if i >= self.universe {
            return false;
        }
        let (w, bit) = self.word(i);
        w.fetch_and(!bit, AcqRel) & bit != 0
    }

    /// Number of ids in the set (a popcount of the whole set: O(universe / 64)).
    ///
    /// ```
    /// use blockbloom::AtomicBitSet;
    /// let s = AtomicBitSet::new(1_000)?;
    /// assert!(s.is_empty() && s.universe() == 1_000);
    /// s.insert(5);
    /// s.insert(999);
    /// assert_eq!((s.len(), s.iter().collect::<Vec<_>>()), (2, vec![5, 999]));
    /// assert!(s.remove(5) && !s.remove(5) && !s.contains(5));
    /// assert!(s.memory_bytes() >= 1_000 / 8);
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn len(&self) -> u64 {
        self.words().map(|w| w.count_ones() as u64).sum()
    }

    /// Whether the set is empty (O(universe / 64)).
    ///
    /// Example at [`len`](Self::len).
    pub fn is_empty(&self) -> bool {
        self.words().all(|w| w == 0)
    }

    fn words(&self) -> impl Iterator<Item = u64> + '_ {
        self.lines
            .iter()
            .flat_map(|b| b.words().iter().map(|w| w.load(Relaxed)))
    }

    /// The ids in the set, ascending. Each word is read once as the iterator reaches it:
    /// ids inserted or removed meanwhile elsewhere in the set may or may not show.
    ///
    /// Example at [`len`](Self::len).
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.words().enumerate().flat_map(|(wi, mut w)| {
            core::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let b = w.trailing_zeros() as u64;
                w &= w - 1;
                Some(wi as u64 * 64 + b)
            })
        })
    }

    /// Adds every id of `other` (word-wise `fetch_or`).
    ///
    /// # Errors
    /// [`Error::Incompatible`] unless both sets have the same universe.
    ///
    /// ```
    /// use blockbloom::AtomicBitSet;
    /// let (a, b) = (AtomicBitSet::new(100)?, AtomicBitSet::new(100)?);
    /// a.insert(1); b.insert(99);
    /// a.union(&b)?;
    /// assert_eq!(a.iter().collect::<Vec<_>>(), [1, 99]);
    /// assert!(a.union(&AtomicBitSet::new(101)?).is_err());
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn union(&self, other: &AtomicBitSet) -> Result<(), Error> {
        if self.universe != other.universe {
            return Err(Error::Incompatible { what: "universe" });
        }
        or_into(&self.lines, &other.lines);
        Ok(())
    }

    /// Bytes of memory the set occupies (as mapped).
    ///
    /// Example at [`len`](Self::len).
    pub fn memory_bytes(&self) -> usize {
        self.lines.len() * LINE_BYTES + core::mem::size_of::<Self>()
    }

    /// Writes the set in the snapshot format of [`BloomFilter::write_to`] with its own magic
    /// (`BLKBITST`), hash id 0, seed 0, `k` 0 and the universe in the capacity field.
    ///
    /// ```
    /// use blockbloom::AtomicBitSet;
    /// let s = AtomicBitSet::new(1000)?;
    /// s.insert(3);
    /// let mut bytes = Vec::new();
    /// s.write_to(&mut bytes)?;
    /// let t = AtomicBitSet::read_from(&bytes[..])?;
    /// assert_eq!((t.universe(), t.iter().collect::<Vec<_>>()), (1000, vec![3]));
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Io`] when `out` fails.
    ///
    /// [`BloomFilter::write_to`]: crate::BloomFilter::write_to
    pub fn write_to<W: Write>(&self, out: W) -> Result<(), Error> {
        let h = Header {
            magic: BITSET_MAGIC,
            hash_id: 0,
            seed: 0,
            nlines: self.lines.len() as u64,
            k: 0,
            capacity: self.universe,
            fpr_bits: 0,
            block_bits: 512,
            window_nanos: 0,
            key_format: 0,
            version: crate::format::FORMAT_VERSION,
        };
        write_snapshot(out, &h, 0, &self.lines)
    }

    /// Reads a set written by [`write_to`](Self::write_to) or [`save`](Self::save); every
    /// kind of damage is an [`Error`], as for [`BloomFilter::read_from`]. A filter's snapshot
    /// is an [`Error::InvalidSnapshot`] that says whose it is.
    ///
    /// [`BloomFilter::read_from`]: crate::BloomFilter::read_from
    ///
    /// Example at [`write_to`](Self::write_to).
    pub fn read_from<R: Read>(input: R) -> Result<Self, Error> {
        let (h, lines) = read_snapshot(input, BITSET_MAGIC, 0, HugePages::WhenDense, |h| {
            if h.hash_id != 0
                || h.seed != 0
                || h.k != 0
                || h.fpr_bits != 0
                || h.block_bits != 512
                || h.window_nanos != 0
                || h.key_format != 0
            {
                return Err(Error::InvalidSnapshot("bitset header fields must be 0"));
            }
            if h.capacity == 0 || h.capacity.div_ceil(LINE_BITS) != h.nlines {
                return Err(Error::InvalidSnapshot(
                    "universe does not match the number of lines",
                ));
            }
            Ok(())
        })?;
        // Bits past the universe would be ids that cannot exist.
        let set = AtomicBitSet {
            lines,
            universe: h.capacity,
        };
        if set.iter().any(|i| i >= set.universe) {
            return Err(Error::InvalidSnapshot("bits set beyond the universe"));
        }
        Ok(set)
    }

    /// Saves the set to `path` atomically (as [`BloomFilter::save`]).
    ///
    /// [`BloomFilter::save`]: crate::BloomFilter::save
    ///
    /// Example at [`write_to`](Self::write_to).
    pub fn save<P: AsRef<Path>>(&self, path: P) -> Result<(), Error> {
        save_atomically(path.as_ref(), |w| self.write_to(w))
    }

    /// Loads a set saved with [`save`](Self::save).
    ///
    /// Example at [`write_to`](Self::write_to).
    pub fn load<P: AsRef<Path>>(path: P) -> Result<Self, Error> {
        load_from(path.as_ref(), Self::read_from)
    }
}

impl fmt::Debug for AtomicBitSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AtomicBitSet")
            .field("universe", &self.universe)
            .finish_non_exhaustive()
    }
}
