//! [`BloomFilter`] and its [`Builder`].

use core::fmt;
use core::hash::Hash;

use crate::block::{or_into, Block, BLOCK_BITS, BLOCK_BYTES, WORDS};
use crate::error::Error;
use crate::hash::{block_index, block_mask, KeyHasher, MAX_HASHES, SALTS};
use crate::math;
use crate::storage::{byte_size, prefetch_read, prefetch_write, Blocks};
use crate::sync::Ordering::{AcqRel, Acquire, Relaxed};

/// How many keys ahead the batched operations ([`BloomFilter::insert_if_absent_batch`] and
/// friends) hash and prefetch: enough misses in flight to cover DRAM latency (~100–170 ns)
/// with one key's work (~10–30 ns), few enough to stay within the CPU's fill buffers.
pub const PREFETCH_DISTANCE: usize = 16;

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
    /// The probe of hash `h` in a filter of `nblocks` blocks and `k` bits per key.
    #[inline(always)]
    fn of(h: u64, nblocks: u64, k: u32) -> Probe {
        Probe {
            block: block_index(h, nblocks),
            mask: block_mask(h, k),
        }
    }

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
#[derive(Clone)]
pub struct Layout {
    nblocks: u64,
    k: u32,
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
        Ok(Layout {
            nblocks: num_blocks,
            k: hashes,
            hasher: KeyHasher::new(seed),
        })
    }

    /// Where `key` lives: as [`BloomFilter::probe`].
    #[inline]
    pub fn probe<K: Hash + ?Sized>(&self, key: &K) -> Probe {
        Probe::of(self.hasher.hash(key), self.nblocks, self.k)
    }

    /// Number of blocks.
    pub fn num_blocks(&self) -> u64 {
        self.nblocks
    }

    /// Bits per key.
    pub fn num_hashes(&self) -> u32 {
        self.k
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
/// 4. **Lock-free.** No mutex, spin or compare-exchange loop: `contains` is eight loads,
///    `insert_if_absent` eight loads plus at most eight `fetch_or`s, and a key already present
///    writes nothing (its cache line stays shared between cores).
///
/// The false-positive rate is the one asked for, computed with the blocked-filter formula
/// ([`math::blocked_fpr`]), as long as at most [`capacity`](Self::capacity) distinct keys are
/// inserted; past that it grows (see [`estimated_fpr`](Self::estimated_fpr)).
pub struct BloomFilter {
    blocks: Blocks,
    nblocks: u64,
    k: u32,
    hasher: KeyHasher,
    seed: u128,
    capacity: u64,
    target_fpr: f64,
}

/// Configures a [`BloomFilter`]; made by [`BloomFilter::builder`].
///
/// * [`capacity`](Self::capacity) (required): the number of distinct keys the filter is sized
///   for.
/// * [`fpr`](Self::fpr) (default 0.01): the false-positive rate wanted at capacity.
/// * [`seed`](Self::seed) (default: random): the 128-bit hashing key. Filters that must agree
///   bit for bit (tests, unions, shared filters) need the same seed.
/// * [`bits`](Self::bits) / [`hashes`](Self::hashes): set the size (rounded up to whole
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
/// let g = BloomFilter::builder().capacity(1000).bits(1 << 16).hashes(5).build()?;
/// assert_eq!((g.num_bits(), g.num_hashes()), (1 << 16, 5));
/// assert!(BloomFilter::builder().fpr(0.01).build().is_err()); // no capacity
/// # Ok::<(), blockbloom::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
#[must_use]
pub struct Builder {
    capacity: Option<u64>,
    fpr: Option<f64>,
    seed: Option<u128>,
    bits: Option<u64>,
    hashes: Option<u32>,
    huge_pages: bool,
}

impl Builder {
    /// Number of distinct keys the filter is sized for.
    pub fn capacity(mut self, capacity: u64) -> Self {
        self.capacity = Some(capacity);
        self
    }

    /// False-positive rate wanted at capacity, strictly between 0 and 1.
    pub fn fpr(mut self, fpr: f64) -> Self {
        self.fpr = Some(fpr);
        self
    }

    /// Fixes the 128-bit hashing key (default: drawn at random for each filter).
    pub fn seed(mut self, seed: u128) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Sets the filter size in bits (rounded up to a multiple of 512) instead of deriving it.
    pub fn bits(mut self, bits: u64) -> Self {
        self.bits = Some(bits);
        self
    }

    /// Sets the number of hash functions (bits per key, `1..=MAX_HASHES`).
    pub fn hashes(mut self, hashes: u32) -> Self {
        self.hashes = Some(hashes);
        self
    }

    /// Asks the OS to back a filter of 2 MiB or more with transparent huge pages (Linux
    /// `madvise(MADV_HUGEPAGE)`; ignored elsewhere). Default: off.
    ///
    /// For a large filter that fills up (the usual case), huge pages save most TLB misses on
    /// its random accesses: see the benchmark report for what it buys on your machine. The
    /// cost: memory is committed 2 MiB at a time, so a huge, sparsely used filter becomes
    /// resident much sooner than with 4 KiB pages.
    ///
    /// ```
    /// use blockbloom::BloomFilter;
    /// let f = BloomFilter::builder().capacity(10_000_000).huge_pages(true).build()?;
    /// assert!(f.insert_if_absent("https://example.com/"));
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn huge_pages(mut self, on: bool) -> Self {
        self.huge_pages = on;
        self
    }

    /// Allocates the filter (zeroed lazily by the OS: O(1) whatever its size).
    ///
    /// # Errors
    /// [`Error::MissingCapacity`], [`Error::ZeroCapacity`], [`Error::InvalidFpr`],
    /// [`Error::UnreachableFpr`], [`Error::InvalidHashes`], [`Error::InvalidBits`],
    /// [`Error::TooLarge`] or [`Error::AllocationFailed`].
    pub fn build(self) -> Result<BloomFilter, Error> {
        let capacity = self.capacity.ok_or(Error::MissingCapacity)?;
        if capacity == 0 {
            return Err(Error::ZeroCapacity);
        }
        let fpr = self.fpr.unwrap_or(0.01);
        if !(fpr > 0.0 && fpr < 1.0) {
            return Err(Error::InvalidFpr(fpr));
        }
        if let Some(k) = self.hashes {
            if k == 0 || k > MAX_HASHES {
                return Err(Error::InvalidHashes(k));
            }
        }
        let blocks_for = |bits_per_key: f64| -> Result<u64, Error> {
            let blocks = (bits_per_key * capacity as f64 / BLOCK_BITS as f64).ceil();
            if blocks >= u64::MAX as f64 {
                return Err(Error::TooLarge {
                    bytes: blocks as u128 * BLOCK_BYTES as u128,
                });
            }
            Ok((blocks as u64).max(1))
        };
        let (nblocks, k) = match (self.bits, self.hashes) {
            (Some(0), _) => return Err(Error::InvalidBits(0)),
            (Some(bits), Some(k)) => (bits.div_ceil(BLOCK_BITS), k),
            (Some(bits), None) => {
                let nblocks = bits.div_ceil(BLOCK_BITS);
                let bits_per_key = (nblocks as f64 * BLOCK_BITS as f64) / capacity as f64;
                (nblocks, math::best_hashes(bits_per_key))
            }
            (None, Some(k)) => {
                let c = math::bits_per_key_for(fpr, k).ok_or(Error::UnreachableFpr(fpr))?;
                (blocks_for(c)?, k)
            }
            (None, None) => {
                let (c, k) = math::optimal_params(fpr)?;
                (blocks_for(c)?, k)
            }
        };
        let len = usize::try_from(nblocks).map_err(|_| Error::TooLarge {
            bytes: nblocks as u128 * BLOCK_BYTES as u128,
        })?;
        byte_size(len)?;
        nblocks.checked_mul(BLOCK_BITS).ok_or(Error::TooLarge {
            bytes: nblocks as u128 * BLOCK_BYTES as u128,
        })?;
        let bits_per_key = (nblocks as f64 * BLOCK_BITS as f64) / capacity as f64;
        let target_fpr = if self.bits.is_some() || self.hashes.is_some() {
            math::blocked_fpr(bits_per_key, k)
        } else {
            fpr
        };
        let seed = self.seed.unwrap_or_else(random_seed);
        Ok(BloomFilter::from_parts(
            Blocks::zeroed_with(len, self.huge_pages)?,
            k,
            seed,
            capacity,
            target_fpr,
        ))
    }
}

/// 128 random bits from std's per-process random hashing keys (seeded by the OS), mixed
/// with a counter so that filters built in a row get different seeds.
pub(crate) fn random_seed() -> u128 {
    use std::collections::hash_map::RandomState;
    use std::hash::BuildHasher;
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let state = RandomState::new();
    let lo = state.hash_one((n, 0u8));
    let hi = state.hash_one((n, 1u8));
    (hi as u128) << 64 | lo as u128
}

impl BloomFilter {
    /// Assembles a filter from validated parts (the builder and the snapshot reader).
    pub(crate) fn from_parts(
        blocks: Blocks,
        k: u32,
        seed: u128,
        capacity: u64,
        target_fpr: f64,
    ) -> Self {
        BloomFilter {
            nblocks: blocks.len() as u64,
            blocks,
            k,
            hasher: KeyHasher::new(seed),
            seed,
            capacity,
            target_fpr,
        }
    }

    /// The block array (for the snapshot writer).
    pub(crate) fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// A filter for `capacity` distinct keys at false-positive rate `fpr`, with a random
    /// hashing key.
    ///
    /// Sizing uses the blocked-filter formula ([`math::optimal_params`]): about 9.9 bits
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

    /// A [`Builder`] for full control (seed, size, number of hashes).
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// Where `key` lives: its block and its bits there.
    #[inline]
    pub fn probe<K: Hash + ?Sized>(&self, key: &K) -> Probe {
        Probe::of(self.hasher.hash(key), self.nblocks, self.k)
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
        self.contains_hash(self.hasher.hash(key))
    }

    #[inline(always)]
    pub(crate) fn contains_hash(&self, h: u64) -> bool {
        // Relaxed: a bit, once set, stays set; if the insert happened-before this call,
        // coherence alone guarantees this load sees it (guarantee 1).
        self.all_set(&self.blocks[block_index(h, self.nblocks)], h, Relaxed)
    }

    /// Whether every bit of hash `h` is set in its block `b`, testing each bit where it lies instead of
    /// building the eight-word mask: fewer instructions per key, so more keys' cache misses
    /// overlap. The loads hit one cache line.
    ///
    /// Branch-free: the set bits are *counted*. Written as "OR together the missing bits,
    /// compare with 0", LLVM turns the test into one early exit per bit, and for a new key or
    /// a non-member the first missing bit sits at a random position: a mispredicted branch
    /// on almost every such call (A/B at 10^6 keys: insert_if_absent on a 50%-duplicate
    /// stream 27.6 → 26 ns, contains 14 → 12 ns; ARCHITECTURE.md, the hot path).
    #[inline(always)]
    fn all_set(&self, b: &Block, h: u64, order: crate::sync::Ordering) -> bool {
        let mut present = 0u32;
        for salt in &SALTS[..self.k as usize] {
            let bit = h.wrapping_mul(*salt) >> 55; // as in `block_mask`
            present += ((b.0[(bit >> 6) as usize].load(order) >> (bit & 63)) & 1) as u32;
        }
        present == self.k
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
        self.insert_hash(self.hasher.hash(key));
    }

    #[inline(always)]
    fn insert_hash(&self, h: u64) {
        let b = &self.blocks[block_index(h, self.nblocks)];
        let mut missing = [0u64; WORDS];
        let mut nonzero = 0u32;
        for (w, (word, m)) in b.0.iter().zip(block_mask(h, self.k)).enumerate() {
            // Relaxed suffices: `insert` promises only guarantee 1, which the modification
            // order of each word gives (a later reader that happens-after this call cannot
            // read an older value of the word). Skipping present bits avoids dirtying the line.
            missing[w] = m & !word.load(Relaxed);
            nonzero |= ((missing[w] != 0) as u32) << w;
        }
        while nonzero != 0 {
            let w = nonzero.trailing_zeros() as usize;
            nonzero &= nonzero - 1;
            b.0[w].fetch_or(missing[w], Relaxed);
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
    /// 1. Load the block's eight words (Acquire) and compute `missing[w] = mask[w] & !word[w]`.
    ///    If nothing is missing, return `false` without writing.
    /// 2. Let `t` be the *highest-positioned* missing bit (highest word, then highest bit).
    ///    `fetch_or` (AcqRel) every other missing bit, word by word in ascending order (the
    ///    rest of `t`'s word last), then `t` alone.
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
        self.insert_if_absent_hash(self.hasher.hash(key))
    }

    #[inline(always)]
    pub(crate) fn insert_if_absent_hash(&self, h: u64) -> bool {
        // Duplicates (most of a crawl's links) leave through the cheap test of `contains`.
        // Its Acquire twin: seeing every bit set means a duplicate (bits never clear), and
        // the Acquire loads give the same synchronisation as step 1 below would.
        let b = &self.blocks[block_index(h, self.nblocks)];
        if self.all_set(b, h, Acquire) {
            return false;
        }
        let mut missing = [0u64; WORDS];
        let mut nonzero = 0u32; // bit w set <=> word w has missing bits
        for (w, (word, m)) in b.0.iter().zip(block_mask(h, self.k)).enumerate() {
            // Acquire: pairs with the AcqRel fetch_or of whoever set a bit we see, so that
            // everything that thread did before (its lower-word fetch_ors) is visible to us:
            // the synchronisation step of the proof above.
            missing[w] = m & !word.load(Acquire);
            nonzero |= ((missing[w] != 0) as u32) << w;
        }
        if nonzero == 0 {
            return false; // every bit present: no write, the cache line stays clean
        }
        let top = (31 - nonzero.leading_zeros()) as usize;
        let top_bit = 1u64 << (63 - missing[top].leading_zeros());
        // Every missing bit but the deciding one: the lower words, then the rest of the top
        // word, in ascending order. Walking the set bits of a word mask costs one loop-exit
        // misprediction instead of one per word.
        missing[top] &= !top_bit;
        let mut rest = nonzero & !(1 << top) | ((missing[top] != 0) as u32) << top;
        while rest != 0 {
            let w = rest.trailing_zeros() as usize;
            rest &= rest - 1;
            // AcqRel: Release publishes our earlier writes to whoever later reads this word;
            // Acquire orders us after whoever set bits here before us. Result unused, so on
            // x86 this is one `lock or`.
            b.0[w].fetch_or(missing[w], AcqRel);
        }
        // The deciding operation, AcqRel for the same reasons. A single-bit fetch_or whose
        // result is tested for that bit compiles to `lock bts` on x86 (a multi-bit one whose
        // old value is used would be a compare-exchange loop).
        let before = b.0[top].fetch_or(top_bit, AcqRel);
        before & top_bit == 0
    }

    /// [`insert_if_absent`](Self::insert_if_absent) for every key of `keys`, answers in
    /// `out[i]`, faster on large filters: the keys are hashed [`PREFETCH_DISTANCE`] ahead of
    /// their probe and their blocks prefetched (with write intent where the build target has
    /// it), so up to that many cache misses are in flight at once instead of one.
    ///
    /// The answers are exactly those of calling `insert_if_absent` on each key in order
    /// (a key repeated within the batch gets `true` at most once), and the concurrency
    /// contract is the same: each key goes through the same protocol.
    ///
    /// # Panics
    /// If `out.len() != keys.len()`.
    ///
    /// # Examples
    /// ```
    /// use blockbloom::BloomFilter;
    /// let seen = BloomFilter::builder().capacity(1000).fpr(0.001).seed(3).build()?;
    /// let links = ["https://a.example/", "https://b.example/", "https://a.example/"];
    /// let mut fresh = [false; 3];
    /// seen.insert_if_absent_batch(&links, &mut fresh);
    /// assert_eq!(fresh, [true, true, false]);
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn insert_if_absent_batch<K: Hash>(&self, keys: &[K], out: &mut [bool]) {
        assert_eq!(keys.len(), out.len(), "one answer slot per key");
        self.pipelined(keys, true, |i, h| out[i] = self.insert_if_absent_hash(h));
    }

    /// [`contains`](Self::contains) for every key of `keys`, answers in `out[i]`, with the
    /// hashing and prefetching of [`insert_if_absent_batch`](Self::insert_if_absent_batch).
    ///
    /// # Panics
    /// If `out.len() != keys.len()`.
    ///
    /// # Examples
    /// ```
    /// use blockbloom::BloomFilter;
    /// let f = BloomFilter::builder().capacity(1000).fpr(0.001).seed(3).build()?;
    /// f.insert_batch(&[1u64, 2, 3]);
    /// let mut found = [false; 2];
    /// f.contains_batch(&[3u64, 4], &mut found);
    /// assert_eq!(found, [true, false]);
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn contains_batch<K: Hash>(&self, keys: &[K], out: &mut [bool]) {
        assert_eq!(keys.len(), out.len(), "one answer slot per key");
        self.pipelined(keys, false, |i, h| out[i] = self.contains_hash(h));
    }

    /// [`insert`](Self::insert) for every key of `keys`, with the hashing and prefetching of
    /// [`insert_if_absent_batch`](Self::insert_if_absent_batch).
    pub fn insert_batch<K: Hash>(&self, keys: &[K]) {
        self.pipelined(keys, true, |_, h| self.insert_hash(h));
    }

    /// Software pipeline: hash key `i + PREFETCH_DISTANCE` and prefetch its block, then run
    /// `op` on key `i`, whose block was prefetched `PREFETCH_DISTANCE` keys ago.
    #[inline(always)]
    fn pipelined<K: Hash>(&self, keys: &[K], write: bool, mut op: impl FnMut(usize, u64)) {
        const D: usize = PREFETCH_DISTANCE;
        let mut ring = [0u64; D];
        let prefetch = |h: u64| {
            let b = &self.blocks[block_index(h, self.nblocks)];
            if write {
                prefetch_write(b);
            } else {
                prefetch_read(b);
            }
        };
        for (slot, key) in ring.iter_mut().zip(keys) {
            *slot = self.hasher.hash(key);
            prefetch(*slot);
        }
        for i in 0..keys.len() {
            let slot = &mut ring[i % D];
            let h = *slot;
            if let Some(ahead) = keys.get(i + D) {
                *slot = self.hasher.hash(ahead);
                prefetch(*slot);
            }
            op(i, h);
        }
    }

    /// The filter's key-to-probe mapping, detached from its memory.
    pub fn layout(&self) -> Layout {
        Layout {
            nblocks: self.nblocks,
            k: self.k,
            hasher: self.hasher.clone(),
        }
    }

    /// Appends blocks `first..first + count` to `out` as bytes, in the snapshot format's
    /// layout (eight little-endian `u64` words per block): the bytes a filter stored as one
    /// byte string elsewhere (e.g. a Redis string) holds at offset `64 · first`.
    ///
    /// # Errors
    /// [`Error::Incompatible`] if the range is not inside the filter.
    ///
    /// ```
    /// use blockbloom::BloomFilter;
    /// let f = BloomFilter::builder().capacity(1000).seed(1).build()?;
    /// f.insert("a");
    /// let mut bytes = Vec::new();
    /// f.block_bytes(0, f.num_blocks(), &mut bytes)?;
    /// let g = BloomFilter::builder().capacity(1000).seed(1).build()?;
    /// g.or_block_bytes(0, &bytes)?;
    /// assert!(g.contains("a"));
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn block_bytes(&self, first: usize, count: usize, out: &mut Vec<u8>) -> Result<(), Error> {
        let end = first
            .checked_add(count)
            .filter(|&e| e <= self.blocks.len())
            .ok_or(Error::Incompatible {
                what: "block range",
            })?;
        out.reserve(count * BLOCK_BYTES);
        for b in &self.blocks[first..end] {
            for w in &b.0 {
                out.extend_from_slice(&w.load(Relaxed).to_le_bytes());
            }
        }
        Ok(())
    }

    /// ORs `bytes` (whole blocks, in the layout of [`block_bytes`](Self::block_bytes)) into
    /// the blocks starting at `first`: the union with a filter stored elsewhere. Safe while
    /// other threads use the filter (bits only go up).
    ///
    /// # Errors
    /// [`Error::Incompatible`] if `bytes` is not a whole number of blocks or does not fit.
    pub fn or_block_bytes(&self, first: usize, bytes: &[u8]) -> Result<(), Error> {
        let bad = Error::Incompatible {
            what: "block range",
        };
        if bytes.len() % BLOCK_BYTES != 0 {
            return Err(bad);
        }
        let count = bytes.len() / BLOCK_BYTES;
        let end = first
            .checked_add(count)
            .filter(|&e| e <= self.blocks.len())
            .ok_or(bad)?;
        for (b, chunk) in self.blocks[first..end]
            .iter()
            .zip(bytes.chunks_exact(BLOCK_BYTES))
        {
            for (w, word) in b.0.iter().zip(chunk.chunks_exact(8)) {
                let v = u64::from_le_bytes(word.try_into().expect("8 bytes"));
                if v & !w.load(Relaxed) != 0 {
                    w.fetch_or(v, AcqRel);
                }
            }
        }
        Ok(())
    }

    /// Total bits (a multiple of 512).
    pub fn num_bits(&self) -> u64 {
        self.nblocks * BLOCK_BITS
    }

    /// Number of 512-bit blocks.
    pub fn num_blocks(&self) -> usize {
        self.blocks.len()
    }

    /// Bits set per key (the number of hash functions), all within one block.
    pub fn num_hashes(&self) -> u32 {
        self.k
    }

    /// Bytes of memory the filter occupies (its bit array and this handle).
    pub fn memory_bytes(&self) -> usize {
        self.blocks.len() * BLOCK_BYTES + core::mem::size_of::<Self>()
    }

    /// The number of distinct keys the filter was sized for.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// The false-positive rate the filter was sized for, at [`capacity`](Self::capacity)
    /// keys (with explicit `bits`/`hashes`: the rate the blocked formula predicts there).
    pub fn target_fpr(&self) -> f64 {
        self.target_fpr
    }

    /// The 128-bit hashing key. Keep it private if inputs may be adversarial: with it, one
    /// can craft keys that look already inserted.
    pub fn seed(&self) -> u128 {
        self.seed
    }

    fn block_fills(&self) -> impl Iterator<Item = u32> + '_ {
        self.blocks
            .iter()
            .map(|b| b.0.iter().map(|w| w.load(Relaxed).count_ones()).sum())
    }

    /// Number of bits set (reads the whole filter: O(size)).
    pub fn count_ones(&self) -> u64 {
        self.block_fills().map(u64::from).sum()
    }

    /// Estimated number of distinct keys inserted, from the fill (reads the whole filter).
    ///
    /// Inverts the expected fill of blocks with Poisson-distributed loads:
    /// `fill = 1 − exp(−λ·(1 − (1 − 1/512)^k))`, `n = λ · blocks`. Saturates at `u64::MAX`
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
        let fill = self.count_ones() as f64 / self.num_bits() as f64;
        let per_key = -(self.k as f64 * (1.0 - 1.0 / BLOCK_BITS as f64).ln()).exp_m1();
        let lambda = -(-fill).ln_1p() / per_key;
        (lambda * self.nblocks as f64).round() as u64 // `as` saturates (inf -> u64::MAX)
    }

    /// The false-positive rate at the current fill (reads the whole filter): the mean over
    /// blocks of `(bits set / 512)^k`, the chance that a key never inserted finds all of its
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
        let k = self.k as i32;
        let sum: f64 = self
            .block_fills()
            .map(|ones| (ones as f64 / BLOCK_BITS as f64).powi(k))
            .sum();
        sum / self.nblocks as f64
    }
}

impl BloomFilter {
    fn check_compatible(&self, other: &BloomFilter) -> Result<(), Error> {
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

    /// Adds every key of `other` to `self` (word-wise `fetch_or`): afterwards `self` contains
    /// every key either filter contained — the way per-node filters of a crawl are merged.
    /// Safe while other threads use either filter (bits only go up); keys inserted into
    /// `other` during the call may or may not be carried over.
    ///
    /// # Errors
    /// [`Error::Incompatible`] unless both filters have the same size, number of hashes and
    /// seed (build them with the same [`Builder`] settings, including `.seed(..)`).
    ///
    /// ```
    /// use blockbloom::BloomFilter;
    /// let node = || BloomFilter::builder().capacity(1000).seed(42).build();
    /// let (a, b) = (node()?, node()?);
    /// a.insert("https://a.example/");
    /// b.insert("https://b.example/");
    /// a.union(&b)?;
    /// assert!(a.contains("https://a.example/") && a.contains("https://b.example/"));
    /// assert!(a.union(&BloomFilter::with_capacity(1000, 0.01)?).is_err()); // other seed
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn union(&self, other: &BloomFilter) -> Result<(), Error> {
        self.check_compatible(other)?;
        or_into(&self.blocks, &other.blocks);
        Ok(())
    }

    /// Keeps only the bits set in both filters (word-wise `fetch_and`): afterwards `self`
    /// contains every key that both contained (and, as always, some false positives — an
    /// intersection has a higher rate than a filter built from the common keys alone).
    ///
    /// This clears bits, so it is the one operation that can make a key inserted into `self`
    /// alone disappear: do not run it while other threads rely on `self`'s answers.
    ///
    /// # Errors
    /// [`Error::Incompatible`], as for [`union`](Self::union).
    ///
    /// ```
    /// use blockbloom::BloomFilter;
    /// let node = || BloomFilter::builder().capacity(1000).fpr(0.001).seed(42).build();
    /// let (a, b) = (node()?, node()?);
    /// a.insert("both"); b.insert("both");
    /// a.insert("only a");
    /// a.intersect(&b)?;
    /// assert!(a.contains("both"));
    /// assert!(!a.contains("only a"));
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn intersect(&self, other: &BloomFilter) -> Result<(), Error> {
        self.check_compatible(other)?;
        for (mine, theirs) in self.blocks.iter().zip(other.blocks.iter()) {
            for (w, o) in mine.0.iter().zip(&theirs.0) {
                w.fetch_and(o.load(Relaxed), AcqRel);
            }
        }
        Ok(())
    }

    /// Removes every key (sets every bit to 0). O(size). Like
    /// [`intersect`](Self::intersect), it breaks "no false negatives" for threads using the
    /// filter meanwhile; call it when no one else does.
    ///
    /// ```
    /// use blockbloom::BloomFilter;
    /// let f = BloomFilter::with_capacity(100, 0.01)?;
    /// f.insert("a");
    /// f.clear();
    /// assert!(!f.contains("a") && f.count_ones() == 0);
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn clear(&self) {
        for b in self.blocks.iter() {
            for w in &b.0 {
                w.store(0, Relaxed);
            }
        }
    }
}

impl fmt::Debug for BloomFilter {
    /// Parameters only: neither the bits nor the (secret) seed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BloomFilter")
            .field("num_bits", &self.num_bits())
            .field("num_hashes", &self.k)
            .field("capacity", &self.capacity)
            .field("target_fpr", &self.target_fpr)
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(blockbloom_loom)))]
mod tests {
    use super::*;

    fn is_send_sync<T: Send + Sync>() {}

    #[test]
    fn send_sync() {
        is_send_sync::<BloomFilter>();
    }

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
