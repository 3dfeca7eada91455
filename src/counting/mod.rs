//! [`CountingBloomFilter`]: a blocked Bloom filter with 4-bit counters, so keys can be removed.

use core::fmt;
use core::hash::Hash;

use crate::error::Error;
use crate::hash::random_seed;
use crate::layout::slot_mask;
use crate::layout::Layout;
use crate::line::{LINE_BYTES, WORDS};
use crate::math::{self, COUNTERS_PER_BLOCK};
use crate::storage::Lines;
use crate::store::Store;
use crate::sync::{
    AtomicU64,
    Ordering::{AcqRel, Acquire, Relaxed},
};

mod snapshot;

/// The low bit of every 4-bit counter of a word.
const LOW: u64 = 0x1111_1111_1111_1111;
/// Largest counter value: a counter that reaches it stays there (see [`CountingBloomFilter`]).
///
/// ```
/// use blockbloom::{CountingBloomFilter, COUNTER_MAX};
/// let f = CountingBloomFilter::with_capacity(1000, 0.01)?;
/// for _ in 0..=COUNTER_MAX {
///     f.insert("hot");
/// }
/// f.remove("hot"); // its counters saturated: they stay, so it is never lost
/// assert!(f.contains("hot"));
/// # Ok::<(), blockbloom::Error>(())
/// ```
pub const COUNTER_MAX: u8 = 15;

/// Low bit of each nonzero counter of `v`.
#[inline(always)]
fn nonzero(v: u64) -> u64 {
    (v | v >> 1 | v >> 2 | v >> 3) & LOW
}

/// Low bit of each saturated (= 15) counter of `v`.
#[inline(always)]
fn saturated(v: u64) -> u64 {
    v & v >> 1 & v >> 2 & v >> 3 & LOW
}

/// A Bloom filter whose keys can be removed: a lock-free, cache-line-blocked *counting*
/// filter.
///
/// Each key owns `k` 4-bit counters, all in one 64-byte block (128 counters, packed sixteen
/// to an `AtomicU64`), so an operation costs one cache miss, like [`BloomFilter`]'s.
/// Counters change by compare-exchange loops (lock-free: a retry happens only because another
/// thread's update of the same word succeeded). A counter that reaches
/// [`COUNTER_MAX`] (15) *saturates*: it is never incremented or decremented again, because its
/// true count is no longer known and decrementing it could cause a false negative. Saturation
/// needs 15 keys on one counter: about one counter in 10^12 at the sizes this filter picks.
///
/// Memory: about 4.4 times a plain [`BloomFilter`] at the same rate (each slot is 4 bits, and
/// blocks of 128 slots need more slots per key: [`math::counting_params`]). Use it when keys
/// must be deleted; otherwise the plain filter is smaller and faster.
///
/// # Examples
/// ```
/// use blockbloom::CountingBloomFilter;
/// let f = CountingBloomFilter::with_capacity(10_000, 0.01)?;
/// assert!(f.insert_if_absent("https://example.com/"));
/// assert!(f.contains("https://example.com/"));
/// assert!(f.remove("https://example.com/"));       // it must be re-crawled later
/// assert!(!f.contains("https://example.com/"));
/// assert!(!f.remove("https://example.com/"));      // refused: not present
/// # Ok::<(), blockbloom::Error>(())
/// ```
///
/// # Guarantees
/// 1. **No false negatives** for a key whose inserts (those that returned, plus
///    `insert_if_absent` calls that returned `true`) outnumber its removes: every one of its
///    counters holds at least that difference, or is saturated, which only ever keeps a key
///    present.
/// 2. **Independent keys**: concurrent inserts and removes of different keys sharing a block,
///    or even a word, never corrupt each other's counters (each update is one compare-exchange
///    of the whole word; no nibble ever carries or borrows into its neighbour).
/// 3. **At most one winner**: concurrent `insert_if_absent` calls for the same new key return
///    `true` at most once (protocol and proof at
///    [`insert_if_absent`](Self::insert_if_absent); model-checked by `loom-tests`).
///
/// **The one misuse**: removing a key that was never inserted (or removing it more often than
/// it was inserted) decrements counters that belong to other keys and can make *them* vanish.
/// [`remove`](Self::remove) refuses when one of the key's counters is 0, which catches most
/// such calls, but a key that is a false positive looks present and is "removed" anyway. Only
/// remove keys you inserted.
///
/// [`BloomFilter`]: crate::BloomFilter
pub struct CountingBloomFilter {
    store: Store,
    /// Lines of 128 four-bit counters: `Layout`'s hash and line ([`Layout::locate`] of a
    /// 512-bit layout), and the one position formula over 128 slots ([`slot_mask`](crate::layout::slot_mask)).
    layout: Layout,
    capacity: u64,
    target_fpr: f64,
}

impl CountingBloomFilter {
    /// A counting filter for `capacity` keys present at once at false-positive rate `fpr`,
    /// with a random hashing key. Sized with [`math::counting_params`]: about 10.9 counters
    /// (5.4 bytes) per key at 1%.
    ///
    /// # Errors
    /// As [`BloomFilter::with_capacity`](crate::BloomFilter::with_capacity):
    /// [`Error::ZeroCapacity`], [`Error::InvalidFpr`], [`Error::UnreachableFpr`],
    /// [`Error::TooLarge`], [`Error::AllocationFailed`].
    ///
    /// ```
    /// use blockbloom::CountingBloomFilter;
    /// let f = CountingBloomFilter::with_capacity(1_000_000, 0.01)?;
    /// assert!(f.memory_bytes() < 6_000_000);
    /// assert!(CountingBloomFilter::with_capacity(0, 0.01).is_err());
    /// assert!(CountingBloomFilter::with_capacity(10, f64::NAN).is_err());
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn with_capacity(capacity: u64, fpr: f64) -> Result<Self, Error> {
        Self::with_seed(capacity, fpr, random_seed())
    }

    /// As [`with_capacity`](Self::with_capacity), with a fixed 128-bit hashing key (for
    /// reproducible tests, or filters that must agree).
    ///
    /// Example at [`num_counters`](Self::num_counters).
    pub fn with_seed(capacity: u64, fpr: f64, seed: u128) -> Result<Self, Error> {
        let s = math::size_counting(capacity, fpr)?;
        let len = usize::try_from(s.blocks).map_err(|_| Error::TooLarge { bytes: s.bytes() })?;
        Ok(CountingBloomFilter {
            store: Store::in_memory(Lines::zeroed(len)?),
            layout: Layout::from_validated(seed, s.blocks, s.hashes, 512),
            capacity,
            target_fpr: s.target_fpr,
        })
    }

    #[inline(always)]
    fn locate<K: Hash + ?Sized>(&self, key: &K) -> (&[AtomicU64; WORDS], [u64; WORDS]) {
        let h = self.layout.hasher.hash(key);
        (
            self.store.lines[self.layout.locate::<9>(h).0].words(),
            slot_mask(h, self.layout.num_hashes()),
        )
    }

    /// Whether `key` may be present: `false` is certain; `true` is wrong with probability
    /// about the target rate (at capacity).
    ///
    /// Example at [`num_counters`](Self::num_counters).
    #[inline]
    pub fn contains<K: Hash + ?Sized>(&self, key: &K) -> bool {
        let (words, m) = self.locate(key);
        let mut present = true;
        for (word, m) in words.iter().zip(m) {
            // Relaxed: a counter that an insert which happened-before us raised cannot read
            // lower (coherence), unless removes happened in between. Branch-free (a word
            // without counters of the key passes trivially): the eight loads hit one line.
            present &= nonzero(word.load(Relaxed)) & m == m;
        }
        present
    }

    /// The smallest of the key's counters: an upper bound on how many times it is present
    /// (inserts minus removes), exact unless other keys share all of its counters; 15 means
    /// "15 or more".
    ///
    /// ```
    /// use blockbloom::CountingBloomFilter;
    /// let f = CountingBloomFilter::with_seed(1000, 0.001, 7)?;
    /// f.insert("a"); f.insert("a");
    /// assert_eq!(f.estimated_count("a"), 2);
    /// assert_eq!(f.estimated_count("b"), 0);
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn estimated_count<K: Hash + ?Sized>(&self, key: &K) -> u8 {
        let (words, m) = self.locate(key);
        let mut min = COUNTER_MAX;
        for (word, mut m) in words.iter().zip(m) {
            let v = word.load(Relaxed);
            while m != 0 {
                let shift = m.trailing_zeros();
                m &= m - 1;
                min = min.min((v >> shift & 15) as u8);
            }
        }
        min
    }

    /// Adds `key` once (increments each of its counters that is not saturated).
    ///
    /// Example at [`num_counters`](Self::num_counters).
    #[inline]
    pub fn insert<K: Hash + ?Sized>(&self, key: &K) {
        let (words, m) = self.locate(key);
        for (word, m) in words.iter().zip(m) {
            if m != 0 {
                increment(word, m);
            }
        }
    }

    /// Adds `key` if it is absent and returns `true`; returns `false` without writing anything
    /// if all of its counters are nonzero (present, or a false positive).
    ///
    /// # Protocol and proof of "at most one winner"
    /// 1. Load the block's words (Acquire). If none of the key's counters is 0, return
    ///    `false`. Otherwise let `t` be its highest zero counter and `W` the word holding it.
    /// 2. Increment the key's counters in every other word (ascending; each word one
    ///    compare-exchange loop, AcqRel), remembering what was added.
    /// 3. Last, in `W`: if `t` is no longer 0, *lose*: undo step 2 (decrement exactly what was
    ///    added, except counters that saturated meanwhile) and return `false`. Otherwise
    ///    increment the key's counters of `W` in the same compare-exchange and return `true`.
    ///
    /// *Claim:* two calls A and B for one key cannot both return `true` (no `remove` of that
    /// key meanwhile). A winner never undoes, so each of its increments stays (a saturated
    /// counter stays at 15), and it increments every counter of the key, its deciding word
    /// last. Say A and B decided on counters `tA` and `tB`.
    /// * Same word: both deciding compare-exchanges write that word, one first in its
    ///   modification order; the second sees the first's increment of its own `t` (every
    ///   winner increments all of the key's counters in that word), so it loses.
    /// * Different words: B increments `tA`'s word in step 2. If that write precedes A's
    ///   deciding compare-exchange in the word's modification order, A sees `tA ≥ 1` and
    ///   loses. Otherwise B's write reads A's (or a later value in its release sequence: all
    ///   writes here are read-modify-writes), so A's deciding write — and A's step-2
    ///   increment of `tB`, sequenced before it — happen-before B's step 3, which then reads
    ///   `tB ≥ 1` (coherence) and loses. ∎
    ///
    /// A loser's increments exist for a moment and are undone; while they exist they can
    /// only make other calls see keys as present (a false positive), never absent.
    ///
    /// ```
    /// use blockbloom::CountingBloomFilter;
    /// let f = CountingBloomFilter::with_capacity(1000, 0.01)?;
    /// assert!(f.insert_if_absent(&1u64));
    /// assert!(!f.insert_if_absent(&1u64));
    /// assert_eq!(f.estimated_count(&1u64), 1); // the second call wrote nothing
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn insert_if_absent<K: Hash + ?Sized>(&self, key: &K) -> bool {
        let (words, m) = self.locate(key);
        let mut zero = [0u64; WORDS];
        let mut top = None;
        for (w, (word, m)) in words.iter().zip(m).enumerate() {
            if m != 0 {
                zero[w] = m & !nonzero(word.load(Acquire));
                if zero[w] != 0 {
                    top = Some(w);
                }
            }
        }
        let Some(top) = top else {
            return false;
        };
        let t = 1u64 << (63 - zero[top].leading_zeros()); // low bit of the highest zero counter
        let mut added = [0u64; WORDS];
        for (w, (word, m)) in words.iter().zip(m).enumerate() {
            if m != 0 && w != top {
                added[w] = increment(word, m);
            }
        }
        let word = &words[top];
        let mut cur = word.load(Acquire);
        loop {
            if nonzero(cur) & t != 0 {
                // Lost: someone else's increment of `t` came first. Undo ours.
                for (word, a) in words.iter().zip(added) {
                    if a != 0 {
                        decrement(word, a);
                    }
                }
                return false;
            }
            let new = cur + (m[top] & !saturated(cur));
            match word.compare_exchange_weak(cur, new, AcqRel, Acquire) {
                Ok(_) => return true,
                Err(now) => cur = now,
            }
        }
    }

    /// Removes one occurrence of `key`: returns `true` if all of its counters were nonzero and
    /// have been decremented (saturated ones excepted), `false` (changing nothing) if one of
    /// them is 0, i.e. the key is certainly absent.
    ///
    /// Only remove keys you inserted: removing a false positive decrements other keys'
    /// counters and can cause false negatives for them (see the type's docs).
    ///
    /// ```
    /// use blockbloom::CountingBloomFilter;
    /// let f = CountingBloomFilter::with_capacity(1000, 0.01)?;
    /// f.insert("k"); f.insert("k");
    /// assert!(f.remove("k"));
    /// assert!(f.contains("k"));      // inserted twice, removed once
    /// assert!(f.remove("k"));
    /// assert!(!f.contains("k"));
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn remove<K: Hash + ?Sized>(&self, key: &K) -> bool {
        let (words, m) = self.locate(key);
        for (word, m) in words.iter().zip(m) {
            if m != 0 && nonzero(word.load(Acquire)) & m != m {
                return false;
            }
        }
        for (word, m) in words.iter().zip(m) {
            if m != 0 {
                decrement(word, m);
            }
        }
        true
    }

    /// Estimated number of keys present (inserts minus removes), from the sum of all counters
    /// divided by the expected number of distinct counters per key. Reads the whole filter.
    ///
    /// ```
    /// use blockbloom::CountingBloomFilter;
    /// let f = CountingBloomFilter::with_capacity(100_000, 0.01)?;
    /// for i in 0..20_000u64 { f.insert(&i); }
    /// for i in 0..5_000u64 { f.remove(&i); }
    /// let n = f.estimated_len() as f64;
    /// assert!((n - 15_000.0).abs() < 300.0, "{n}");
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn estimated_len(&self) -> u64 {
        let mut sum = 0u64;
        for b in self.store.lines.iter() {
            for w in b.words() {
                let v = w.load(Relaxed);
                // Sum of the 16 nibbles: add pairs, then bytes.
                let pairs = (v & 0x0F0F_0F0F_0F0F_0F0F) + (v >> 4 & 0x0F0F_0F0F_0F0F_0F0F);
                sum += pairs.wrapping_mul(0x0101_0101_0101_0101) >> 56;
            }
        }
        let slots = COUNTERS_PER_BLOCK as f64;
        let distinct = slots * -(self.num_hashes() as f64 * (1.0 - 1.0 / slots).ln()).exp_m1();
        (sum as f64 / distinct).round() as u64
    }

    /// The false-positive rate at the current fill (reads the whole filter): the mean over
    /// lines of `(nonzero counters / 128)^k`, as
    /// [`BloomFilter::estimated_fpr`](crate::BloomFilter::estimated_fpr).
    ///
    /// ```
    /// use blockbloom::CountingBloomFilter;
    /// let f = CountingBloomFilter::with_capacity(100_000, 0.01)?;
    /// assert_eq!(f.estimated_fpr(), 0.0);
    /// for i in 0..100_000u64 { f.insert(&i); }
    /// assert!((0.006..0.014).contains(&f.estimated_fpr()), "{}", f.estimated_fpr());
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn estimated_fpr(&self) -> f64 {
        let fills = self.store.lines.iter().map(|b| {
            b.words()
                .iter()
                .map(|w| nonzero(w.load(Relaxed)).count_ones())
                .sum()
        });
        math::fpr_of_fills(fills, COUNTERS_PER_BLOCK, self.num_hashes())
    }

    /// The expected number of new keys taken for repeats so far, from the fill (as
    /// [`BloomFilter::estimated_false_positives`](crate::BloomFilter::estimated_false_positives);
    /// keys removed count as never inserted).
    ///
    /// ```
    /// use blockbloom::CountingBloomFilter;
    /// let f = CountingBloomFilter::with_capacity(200_000, 0.01)?;
    /// let lost = (0..200_000u64).filter(|i| !f.insert_if_absent(i)).count() as f64;
    /// let estimate = f.estimated_false_positives();
    /// assert!((0.7 * lost..1.3 * lost).contains(&estimate), "{estimate} for {lost}");
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn estimated_false_positives(&self) -> f64 {
        let counters = self.store.lines.len() as f64 * COUNTERS_PER_BLOCK as f64;
        math::blocked_false_positives(
            self.estimated_len() as f64,
            counters,
            self.num_hashes(),
            COUNTERS_PER_BLOCK,
        )
    }

    /// Not public API: the key's counters (low bit of each 4-bit counter, per word), for the
    /// loom models, which need keys spread over several words.
    #[cfg(feature = "internals")]
    #[doc(hidden)]
    pub fn __counters<K: Hash + ?Sized>(&self, key: &K) -> (usize, [u64; WORDS]) {
        let h = self.layout.hasher.hash(key);
        (
            self.layout.locate::<9>(h).0,
            slot_mask(h, self.num_hashes()),
        )
    }

    /// Bytes of memory the filter occupies.
    ///
    /// Example at [`num_counters`](Self::num_counters).
    pub fn memory_bytes(&self) -> usize {
        self.store.lines.len() * LINE_BYTES + core::mem::size_of::<Self>()
    }

    /// Number of 4-bit counters (128 per block).
    ///
    /// ```
    /// use blockbloom::CountingBloomFilter;
    /// let f = CountingBloomFilter::with_seed(10_000, 0.01, 42)?;
    /// assert_eq!((f.capacity(), f.target_fpr(), f.seed()), (10_000, 0.01, 42));
    /// assert_eq!(f.num_counters() % 128, 0); // whole 64-byte lines of 4-bit counters
    /// assert!(f.memory_bytes() as u64 >= f.num_counters() / 2 && f.num_hashes() >= 1);
    /// f.insert("a");
    /// assert!(f.contains("a") && !f.contains("b"));
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn num_counters(&self) -> u64 {
        self.layout.num_lines() * COUNTERS_PER_BLOCK as u64
    }

    /// Counters per key (all in one block).
    ///
    /// Example at [`num_counters`](Self::num_counters).
    pub fn num_hashes(&self) -> u32 {
        self.layout.num_hashes()
    }

    /// Number of keys present at once the filter was sized for.
    ///
    /// Example at [`num_counters`](Self::num_counters).
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// The false-positive rate the filter was sized for, at capacity.
    ///
    /// Example at [`num_counters`](Self::num_counters).
    pub fn target_fpr(&self) -> f64 {
        self.target_fpr
    }

    /// The 128-bit hashing key.
    ///
    /// Example at [`num_counters`](Self::num_counters).
    pub fn seed(&self) -> u128 {
        self.layout.seed()
    }
}

/// Adds 1 to each non-saturated counter of `m` in `word`; returns the counters it added to.
#[inline]
fn increment(word: &AtomicU64, m: u64) -> u64 {
    let mut cur = word.load(Relaxed);
    loop {
        let add = m & !saturated(cur);
        if add == 0 {
            return 0;
        }
        // No carry: every counter in `add` is at most 14.
        match word.compare_exchange_weak(cur, cur + add, AcqRel, Relaxed) {
            Ok(_) => return add,
            Err(now) => cur = now,
        }
    }
}

/// Subtracts 1 from each counter of `m` in `word` that is neither 0 nor saturated.
#[inline]
fn decrement(word: &AtomicU64, m: u64) {
    let mut cur = word.load(Relaxed);
    loop {
        // No borrow: every counter in `sub` is at least 1.
        let sub = m & nonzero(cur) & !saturated(cur);
        if sub == 0 {
            return;
        }
        match word.compare_exchange_weak(cur, cur - sub, AcqRel, Relaxed) {
            Ok(_) => return,
            Err(now) => cur = now,
        }
    }
}

impl fmt::Debug for CountingBloomFilter {
    /// Parameters only: neither the counters nor the seed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CountingBloomFilter")
            .field("num_counters", &self.num_counters())
            .field("num_hashes", &self.num_hashes())
            .field("capacity", &self.capacity)
            .field("target_fpr", &self.target_fpr)
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(blockbloom_loom)))]
mod tests {
    use super::*;

    #[test]
    fn nibble_helpers() {
        let v = 0xF0E1_0000_0000_0302u64;
        assert_eq!(nonzero(v), 0x1011_0000_0000_0101);
        assert_eq!(saturated(v), 0x1000_0000_0000_0000);
        assert_eq!(saturated(u64::MAX), LOW);
    }

    #[test]
    fn saturated_counters_are_never_decremented() {
        let f = CountingBloomFilter::with_seed(100, 0.01, 1).unwrap();
        for _ in 0..20 {
            f.insert("hot");
        }
        assert_eq!(f.estimated_count("hot"), 15);
        for _ in 0..20 {
            assert!(f.remove("hot"));
        }
        assert!(
            f.contains("hot"),
            "a saturated key can no longer be removed"
        );
    }

    #[test]
    fn counters_do_not_carry_into_neighbours() {
        let w = AtomicU64::new(0);
        let m = 0x0000_0000_0000_0010;
        for _ in 0..30 {
            increment(&w, m);
        }
        assert_eq!(w.load(Relaxed), 0xF0);
        for _ in 0..30 {
            decrement(&w, 0x1);
        }
        assert_eq!(w.load(Relaxed), 0xF0);
    }
}
