//! [`BloomFilter`]: the filter and its hot operations (one key at a time and batched).
//! Sizing is in [`Builder`](crate::Builder) and `math`; unions, intersections and byte
//! access in `combine`; snapshots in `snapshot`.

use core::fmt;
use core::hash::Hash;

use crate::layout::{by_block_size, Layout, Probe};
use crate::line::{Line, LINE_BITS, LINE_BYTES};
use crate::storage::Lines;
use crate::store::Store;
use crate::sync::Ordering::{Acquire, Relaxed};

/// How many keys ahead the batched operations ([`BloomFilter::insert_if_absent_many`] and
/// friends) hash and prefetch: enough misses in flight to cover DRAM latency (~100–170 ns)
/// with one key's work (~10–30 ns), few enough to stay within the CPU's fill buffers.
pub const PREFETCH_DISTANCE: usize = 16;

/// A lock-free, cache-line-blocked Bloom filter, shared by reference between threads.
///
/// Every key maps to one 512-bit, 64-byte-aligned block and sets `k` bits inside it, so each
/// operation costs one cache miss whatever `k` is. All methods take `&self`: wrap the filter
/// in an `Arc` or borrow it from scoped threads / rayon.
///
/// # Examples
///
/// ```
/// use blockbloom::BloomFilter;
///
/// let seen = BloomFilter::with_capacity(1_000_000, 0.01)?;
/// assert!(seen.insert_if_absent("https://example.com/"));   // new: crawl it
/// assert!(!seen.insert_if_absent("https://example.com/"));  // seen before: skip
/// assert!(seen.contains("https://example.com/"));
/// # Ok::<(), blockbloom::Error>(())
/// ```
///
/// With rayon, the crawler's "which of these links are new?":
///
/// ```
/// use blockbloom::BloomFilter;
/// use rayon::prelude::*;
///
/// let seen = BloomFilter::with_capacity(10_000, 0.001)?;
/// let links = vec!["https://a.example/", "https://b.example/", "https://a.example/"];
/// let new: Vec<&str> = links.par_iter().copied().filter(|u| seen.insert_if_absent(u)).collect();
/// assert_eq!(new.len(), 2);
/// # Ok::<(), blockbloom::Error>(())
/// ```
///
/// # Guarantees
///
/// 1. **No false negatives.** Bits only ever go from 0 to 1. Once `insert` or
///    `insert_if_absent` of a key has returned, every `contains` or `insert_if_absent` of that
///    key that *happens after* it (program order, a join, a channel, a mutex, any
///    release/acquire pair) reports it present.
/// 2. **Sequential calls.** For one key, the first `insert_if_absent` returns `true` unless
///    the key is a false positive (its bits were all set by other keys), and every later call
///    returns `false`.
/// 3. **At most one winner.** When several threads call `insert_if_absent` with the same new
///    key at the same time, at most one of them gets `true` (exactly one if no other key sets
///    one of its bits during the race). A crawler that fetches a URL only on `true` fetches
///    it at most once. See [`insert_if_absent`](Self::insert_if_absent) for the protocol and
///    the proof; the `loom-tests` crate model-checks it.
/// 4. **Wait-free.** No mutex, spin or compare-exchange loop: `contains` is at most `k`
///    loads (`k` = [`num_hashes`](Self::num_hashes)), `insert_if_absent` `k` loads plus, for
///    a new key, `k + 1` `fetch_or`s in a 512-bit block (one per word plus one in a smaller
///    block; with 64-bit blocks, one compare-exchange, or two `fetch_or`s if another thread
///    changed the word meanwhile), and a key already present writes nothing (its cache line
///    stays shared between cores).
///
/// The false-positive rate is the one asked for, computed with the blocked-filter formula
/// ([`math::blocked_fpr`](crate::math::blocked_fpr)), as long as at most [`capacity`](Self::capacity) distinct keys are
/// inserted; past that it grows (see [`estimated_fpr`](Self::estimated_fpr)).
pub struct BloomFilter {
    /// The lines, and the file of a file-backed filter (closed, and sealed by its last
    /// user, on drop).
    store: Store,
    layout: Layout,
    capacity: u64,
    target_fpr: f64,
    /// How the keys were made from their input ([`Builder::key_format`]).
    pub(crate) key_format: u64,
}

impl BloomFilter {
    /// Assembles a filter from validated parts (the builder and the snapshot reader).
    pub(crate) fn from_parts(
        blocks: Lines,
        layout: Layout,
        capacity: u64,
        target_fpr: f64,
    ) -> Self {
        Self::from_store(Store::in_memory(blocks), layout, capacity, target_fpr)
    }

    /// A filter on `store` (in memory or a file), of validated parameters.
    pub(crate) fn from_store(store: Store, layout: Layout, capacity: u64, target_fpr: f64) -> Self {
        debug_assert_eq!(store.lines.len() as u64, layout.num_lines());
        BloomFilter {
            store,
            layout,
            capacity,
            target_fpr,
            key_format: 0,
        }
    }

    /// Its store (the file-backed methods, `filter/file.rs`).
    #[cfg_attr(any(not(unix), blockbloom_loom), allow(dead_code))]
    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    /// Its store, to close.
    #[cfg_attr(any(not(unix), blockbloom_loom), allow(dead_code))]
    pub(crate) fn store_mut(&mut self) -> &mut Store {
        &mut self.store
    }

    /// The lines (for the snapshot writer, `combine` and the prefetches).
    pub(crate) fn lines(&self) -> &[Line] {
        &self.store.lines
    }

    /// Where `key` lives: its line and its bits there (example at [`Probe`]).
    #[inline]
    pub fn probe<K: Hash + ?Sized>(&self, key: &K) -> Probe {
        self.layout.probe(key)
    }

    /// Whether `key` may have been inserted: `false` is certain, `true` is wrong with
    /// probability about [`estimated_fpr`](Self::estimated_fpr).
    ///
    /// ```
    /// use blockbloom::BloomFilter;
    /// let f = BloomFilter::with_capacity(100, 0.01)?;
    /// f.insert(&42u64);
    /// assert!(f.contains(&42u64));
    /// assert!(!f.contains(&43u64)); // (barring a 1% false positive; not with this seed)
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    #[inline]
    pub fn contains<K: Hash + ?Sized>(&self, key: &K) -> bool {
        self.contains_u64(self.layout.hasher.hash(key))
    }

    #[inline(always)]
    pub(crate) fn contains_u64(&self, h: u64) -> bool {
        by_block_size!(self: BloomFilter, contains_sized(h) -> bool)
    }

    /// [`contains`](Self::contains) in blocks of `2^L` bits. Relaxed: a bit, once set, stays
    /// set; if the insert happened-before this call, coherence alone guarantees that this
    /// load sees it (guarantee 1).
    #[inline(always)]
    fn contains_sized<const L: u32, const N: usize>(&self, h: u64) -> bool {
        let (line, first) = self.layout.locate::<L>(h);
        let bits = self.layout.bits::<L>(h, first);
        self.store.lines[line].all_set(bits, Relaxed)
    }

    /// log2 of the block size, for [`by_block_size!`].
    #[inline(always)]
    fn log2_block_bits(&self) -> u32 {
        self.layout.log2_block_bits()
    }

    /// The line holding the block of hash `h` (for prefetching).
    #[inline(always)]
    pub(crate) fn line_of(&self, h: u64) -> usize {
        by_block_size!(self: BloomFilter, line_sized(h) -> usize)
    }

    #[inline(always)]
    fn line_sized<const L: u32, const N: usize>(&self, h: u64) -> usize {
        self.layout.locate::<L>(h).0
    }

    /// Adds `key`. Sets only the bits that are missing; a key already present writes nothing.
    ///
    /// ```
    /// use blockbloom::BloomFilter;
    /// let f = BloomFilter::with_capacity(100, 0.01)?;
    /// f.insert("a");
    /// assert!(f.contains("a"));
    /// assert!(!f.insert_if_absent("a"));
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    #[inline]
    pub fn insert<K: Hash + ?Sized>(&self, key: &K) {
        self.insert_u64(self.layout.hasher.hash(key));
    }

    #[inline(always)]
    pub(crate) fn insert_u64(&self, h: u64) {
        by_block_size!(self: BloomFilter, insert_sized(h) -> ());
        self.store.lines.count_new_key(h); // (a repeat counted too: it only promotes sooner)
    }

    /// [`insert`](Self::insert) in blocks of `2^L` bits: a 512-bit block bit by bit, a
    /// smaller one word by word (one load per word, one `fetch_or` per word missing bits).
    #[inline(always)]
    fn insert_sized<const L: u32, const N: usize>(&self, h: u64) {
        let (line, first) = self.layout.locate::<L>(h);
        if L == 9 {
            let bits = self.layout.bits::<L>(h, first);
            self.store.lines[line].or_missing_bits(bits);
        } else {
            let (mask, word) = (self.layout.block_mask::<L, N>(h), (first / 64) as usize);
            self.store.lines[line].or_missing_words::<N>(word, mask);
        }
    }

    /// Inserts `key` and returns `true` if it was not present before: the crawler's "should I
    /// fetch this URL?". `false` means seen before — or, with probability about
    /// [`estimated_fpr`](Self::estimated_fpr), a false positive.
    ///
    /// ```
    /// use blockbloom::BloomFilter;
    /// let f = BloomFilter::builder().capacity(1000).fpr(0.001).seed(1).build()?;
    /// let urls = ["https://a.example/", "https://b.example/", "https://a.example/"];
    /// let fresh: Vec<_> = urls.iter().filter(|u| f.insert_if_absent(*u)).collect();
    /// assert_eq!(fresh, [&"https://a.example/", &"https://b.example/"]);
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    ///
    /// # Protocol and proof of "at most one winner"
    ///
    /// 1. Load the key's bits in its block (Acquire). If none is missing, return `false`
    ///    without writing.
    /// 2. Let `t` be the *highest-positioned* missing bit (highest word, then highest bit).
    ///    `fetch_or` (AcqRel) every other missing bit — one by one in a 512-bit block, word
    ///    by word in a smaller one, in any order, bits already set ORed in too (no-ops) —
    ///    then `t` alone.
    /// 3. Return `true` iff that last `fetch_or` flipped `t` from 0 to 1.
    ///
    /// *Claim:* two calls with the same key cannot both return `true`.
    /// Suppose A and B both do, having flipped their top bits `tA` and `tB`. Only one
    /// `fetch_or` can flip a given bit, so `tA ≠ tB`; say `tA > tB`. Since `tB` is B's
    /// highest missing bit, B's load of `tA`'s word saw `tA` set, i.e. read a value at or
    /// after A's `fetch_or` in that word's modification order (A flipped it, so nothing set
    /// it before). Now look at `tB`:
    /// * if A's load saw `tB` set, it read from B's `fetch_or` of `tB`'s word or later (B
    ///   flipped it); that release sequence synchronises with A's Acquire load;
    /// * otherwise `tB` was in A's missing set, and since `tB < tA`, A `fetch_or`ed it before
    ///   `tA`, without flipping it — so after B's `fetch_or`, which synchronises with A's
    ///   (AcqRel) `fetch_or`.
    ///
    /// Either way B's load of `tA`'s word (sequenced before B's `fetch_or`s)
    /// happens-before A's `fetch_or` of `tA`, so by read-write coherence it cannot read A's
    /// value or any later one — contradicting that it saw `tA` set. ∎ Relaxed orderings would break the synchronisation steps; on x86 the
    /// Acquire/AcqRel orderings cost nothing (locked instructions are full barriers).
    ///
    /// The rule "true if any `fetch_or` changed a bit" fails this: two threads can each flip a
    /// different word first. The price of the highest-bit rule: if *another* key sets `t` during
    /// the race, nobody wins — exactly an ordinary false positive.
    #[inline]
    pub fn insert_if_absent<K: Hash + ?Sized>(&self, key: &K) -> bool {
        self.insert_if_absent_u64(self.layout.hasher.hash(key))
    }

    #[inline(always)]
    pub(crate) fn insert_if_absent_u64(&self, h: u64) -> bool {
        let won = by_block_size!(self: BloomFilter, insert_if_absent_sized(h) -> bool);
        if won {
            self.store.lines.count_new_key(h); // huge pages once dense (storage/huge.rs)
        }
        won
    }

    /// [`insert_if_absent`](Self::insert_if_absent) in blocks of `2^L` bits, the protocol
    /// above in each block operation:
    /// * 512 bits: the cheap test of `contains` first, with Acquire loads (the
    ///   synchronisation of step 1: duplicates, most of a crawl's links, leave here, and
    ///   seeing every bit set means a duplicate since bits never clear), then
    ///   [`claim_bits`](Line::claim_bits), bit by bit;
    /// * smaller: one pass over the block's own words (one to four loads, cheaper than a
    ///   separate test of the k bits), [`claim_words`](Line::claim_words) word by word, or with
    ///   one word [`claim_word`](Line::claim_word)'s single compare-exchange.
    #[inline(always)]
    fn insert_if_absent_sized<const L: u32, const N: usize>(&self, h: u64) -> bool {
        // Placed first (layout.rs), then the line touched (line.rs): the key goes down once.
        let (line, first) = self.layout.locate::<L>(h);
        if L == 9 {
            let bits = self.layout.bits::<L>(h, first);
            let line = &self.store.lines[line];
            return !line.all_set(bits.clone(), Acquire) && line.claim_bits(bits);
        }
        let (mask, word) = (self.layout.block_mask::<L, N>(h), (first / 64) as usize);
        let line = &self.store.lines[line];
        if N == 1 {
            line.claim_word(word, mask[0])
        } else {
            line.claim_words::<N>(word, mask)
        }
    }

    /// The filter's key-to-probe mapping (clone it to keep it without the filter; example
    /// at [`Layout`]).
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Total bits (a multiple of 512; example at [`num_lines`](Self::num_lines)).
    pub fn num_bits(&self) -> u64 {
        self.layout.num_lines() * LINE_BITS
    }

    /// Number of 64-byte lines: the 512-bit blocks, or the lines holding `512 /
    /// block_bits` smaller blocks each.
    ///
    /// ```
    /// use blockbloom::BloomFilter;
    /// let f = BloomFilter::builder().capacity(1000).block_bits(128).build()?;
    /// assert_eq!(f.num_bits(), 512 * f.num_lines() as u64);
    /// assert_eq!(f.memory_bytes(), 64 * f.num_lines() + std::mem::size_of::<BloomFilter>());
    ///
    /// // what it was built with
    /// assert_eq!((f.capacity(), f.target_fpr(), f.block_bits()), (1000, 0.01, 128));
    /// assert!((1..=blockbloom::MAX_HASHES).contains(&f.num_hashes()));
    /// let g = BloomFilter::builder().capacity(1000).block_bits(128).seed(f.seed()).build()?;
    /// assert_eq!(g.probe("a"), f.probe("a")); // same seed and size: same bits
    /// f.insert("a");
    /// assert!(f.count_ones() >= 1 && f.count_ones() <= f.num_hashes() as u64);
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn num_lines(&self) -> usize {
        self.store.lines.len()
    }

    /// Bits per block: 512 (the default), 256, 128 or 64
    /// ([`Builder::block_bits`](crate::Builder::block_bits); example at
    /// [`num_lines`](Self::num_lines)).
    pub fn block_bits(&self) -> u32 {
        self.layout.block_bits()
    }

    /// Bits set per key (the number of hash functions), all within one block (example at
    /// [`num_lines`](Self::num_lines)).
    pub fn num_hashes(&self) -> u32 {
        self.layout.num_hashes()
    }

    /// Bytes of memory the filter occupies (its bit array and this handle; example at
    /// [`num_lines`](Self::num_lines)).
    pub fn memory_bytes(&self) -> usize {
        self.store.lines.len() * LINE_BYTES + core::mem::size_of::<Self>()
    }

    /// The number of distinct keys the filter was sized for (example at
    /// [`num_lines`](Self::num_lines)).
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// The false-positive rate the filter was sized for, at [`capacity`](Self::capacity)
    /// keys (with explicit `bits`/`hashes`: the rate the blocked formula predicts there;
    /// example at [`num_lines`](Self::num_lines)).
    pub fn target_fpr(&self) -> f64 {
        self.target_fpr
    }

    /// The 128-bit hashing key. Keep it private if inputs may be adversarial: with it, one
    /// can craft keys that look already inserted (example at [`num_lines`](Self::num_lines)).
    pub fn seed(&self) -> u128 {
        self.layout.seed()
    }

    /// How the keys were made from their input, as recorded by [`Builder::key_format`]
    /// (0 unless one was given; example there).
    pub fn key_format(&self) -> u64 {
        self.key_format
    }

    /// The bits set in each block (of [`block_bits`](Self::block_bits) bits), in order.
    fn block_fills(&self) -> impl Iterator<Item = u32> + '_ {
        let words = (self.block_bits() / 64) as usize;
        self.store.lines.iter().flat_map(move |line| {
            line.words().chunks(words).map(|block| {
                block
                    .iter()
                    .map(|w| w.load(Relaxed).count_ones())
                    .sum::<u32>()
            })
        })
    }

    /// Number of bits set (reads the whole filter: O(size); example at
    /// [`num_lines`](Self::num_lines)).
    pub fn count_ones(&self) -> u64 {
        self.store
            .lines
            .iter()
            .map(|b| u64::from(b.count_ones()))
            .sum()
    }

    /// Estimated number of distinct keys inserted, from the fill (reads the whole filter).
    ///
    /// Inverts the expected fill of blocks with Poisson-distributed loads:
    /// `fill = 1 − exp(−λ·(1 − (1 − 1/B)^k))` for blocks of `B` bits, `n = λ · blocks`. Saturates at `u64::MAX`
    /// when every bit is set.
    ///
    /// ```
    /// use blockbloom::BloomFilter;
    /// let f = BloomFilter::with_capacity(100_000, 0.01)?;
    /// for i in 0..50_000u64 { f.insert(&i); }
    /// let n = f.estimated_len() as f64;
    /// assert!((n - 50_000.0).abs() < 1_000.0, "{n}");
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn estimated_len(&self) -> u64 {
        self.keys_in().round() as u64 // `as` saturates (inf -> u64::MAX)
    }

    /// [`estimated_len`](Self::estimated_len) unrounded: infinite when every bit is set.
    fn keys_in(&self) -> f64 {
        let (ones, bits) = (self.count_ones(), self.num_bits());
        crate::math::keys_from_ones(ones, bits, self.num_hashes(), self.block_bits())
    }

    /// The false-positive rate at the current fill (reads the whole filter): the mean over
    /// blocks of `(bits set / block bits)^k`, the chance that a key never inserted finds all of its
    /// `k` bits set in its block.
    ///
    /// ```
    /// use blockbloom::BloomFilter;
    /// let f = BloomFilter::with_capacity(100_000, 0.01)?;
    /// assert_eq!(f.estimated_fpr(), 0.0);
    /// for i in 0..100_000u64 { f.insert(&i); }
    /// assert!((0.006..0.014).contains(&f.estimated_fpr()));
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn estimated_fpr(&self) -> f64 {
        crate::math::fpr_of_fills(self.block_fills(), self.block_bits(), self.num_hashes())
    }

    /// The expected number of new keys taken for repeats so far (false positives: a new URL
    /// not fetched), from the fill: while `x` keys were in, a new key was taken for a
    /// repeat with the rate at `x` keys, summed over the [`estimated_len`](Self::estimated_len)
    /// keys in. A 1% filter filled to capacity has lost about 0.2% of its new keys; size for
    /// fewer than one lost page per crawl with a smaller `fpr` (README, "Which structure?").
    /// Infinite once every bit is set: the fill then bounds neither the keys in
    /// (`estimated_len` saturates at `u64::MAX`) nor those lost.
    ///
    /// ```
    /// use blockbloom::BloomFilter;
    /// let f = BloomFilter::with_capacity(100_000, 0.01)?;
    /// let lost = (0..100_000u64).filter(|i| !f.insert_if_absent(i)).count() as f64;
    /// let estimate = f.estimated_false_positives();
    /// assert!((0.7 * lost..1.3 * lost).contains(&estimate), "{estimate} for {lost}");
    ///
    /// let full = BloomFilter::with_capacity(100, 0.01)?; // a thousand times its capacity
    /// for i in 0..100_000u64 { full.insert(&i); }
    /// assert_eq!(full.estimated_len(), u64::MAX);
    /// assert_eq!(full.estimated_false_positives(), f64::INFINITY);
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn estimated_false_positives(&self) -> f64 {
        let n = self.keys_in();
        let (bits, k) = (self.num_bits(), self.num_hashes());
        crate::math::false_positives_over_fill(n, bits, k, self.block_bits())
    }
}

impl fmt::Debug for BloomFilter {
    /// Parameters only: neither the bits nor the (secret) seed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BloomFilter")
            .field("num_bits", &self.num_bits())
            .field("num_hashes", &self.num_hashes())
            .field("block_bits", &self.block_bits())
            .field("capacity", &self.capacity)
            .field("target_fpr", &self.target_fpr)
            .finish_non_exhaustive()
    }
}

mod batch;
pub(crate) mod builder;
mod combine;
#[cfg(all(unix, not(blockbloom_loom)))]
mod file;
#[cfg(feature = "rayon")]
mod par;
mod snapshot;
pub(crate) use batch::pipeline;
pub use builder::Builder;
#[cfg(all(feature = "rayon", feature = "internals"))]
pub use par::PAR_CHUNK;

#[cfg(all(test, not(blockbloom_loom)))]
mod tests {
    use super::*;
    use crate::math;

    #[test]
    fn sizing_follows_the_blocked_formula() {
        let f = BloomFilter::with_capacity(1_000_000, 0.01).unwrap();
        let c = f.num_bits() as f64 / 1e6;
        assert!(math::blocked_fpr(c, f.num_hashes()) <= 0.01);
        // and not wastefully: one block fewer would miss the target or nearly so
        assert!(c < 10.2, "{c}");
        assert_eq!(f.num_bits() % 512, 0);
    }

    #[test]
    fn random_seeds_differ() {
        let a = BloomFilter::with_capacity(10, 0.1).unwrap();
        let b = BloomFilter::with_capacity(10, 0.1).unwrap();
        assert_ne!(a.seed(), b.seed());
    }

    #[test]
    fn debug_hides_seed() {
        let f = BloomFilter::builder()
            .capacity(10)
            .seed(0xDEAD_BEEF)
            .build()
            .unwrap();
        let s = format!("{f:?}");
        assert!(s.contains("num_bits") && !s.contains("seed"), "{s}");
    }
}
