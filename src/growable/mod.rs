//! [`GrowableBloomFilter`]: a chain of blocked filters that grows as keys arrive.

use core::fmt;
use core::hash::Hash;

use crate::error::Error;
use crate::hash::KeyHasher;
use crate::storage::Published;
use crate::sync::{fence, AtomicBool, AtomicU64, Ordering::Relaxed, Ordering::SeqCst};
use crate::{BloomFilter, KeyHash};

mod batch;
mod builder;
#[cfg(all(unix, not(blockbloom_loom)))]
mod file;

pub use builder::GrowableBuilder;

pub use crate::format::MAX_LAYERS;

struct Layer {
    filter: BloomFilter,
    /// Keys this layer said `true` for (its fill, in keys). In a cache line of its own: it is
    /// written on every new key, and must not evict the filter's read-mostly fields, which
    /// every call reads, from the other cores' caches.
    count: Padded,
}

#[repr(align(128))]
struct Padded(AtomicU64);

impl Layer {
    /// The layer's key count: its own, or in a file-backed chain the count in the layer
    /// file's trailer, shared with every process.
    #[inline]
    fn count(&self) -> &AtomicU64 {
        #[cfg(all(unix, not(blockbloom_loom)))]
        if let Some(shared) = self.filter.chain_word(crate::format::COUNT_AT) {
            return shared;
        }
        &self.count.0
    }
}

/// A Bloom filter for an unknown number of keys: a chain of lock-free blocked layers, each
/// `growth` times larger than the last (×2 by default) and with a rate `tightening` times
/// lower (×0.5), so that the sum of the layers' rates — an upper bound on the whole chain's —
/// stays at or below the target however many layers there are.
///
/// New keys go into the newest layer; lookups check every layer. When the newest layer has
/// taken as many keys as it was sized for, the thread that notices allocates the next one
/// (O(1): memory is mapped lazily) and installs it with a single compare-exchange; other
/// threads never wait for it. Layers are never freed or moved while the filter lives.
///
/// A fixed [`BloomFilter`] fed past its capacity silently degrades (4.6% at twice its
/// capacity when sized for 1%); this one keeps its rate.
///
/// # Examples
/// ```
/// use blockbloom::GrowableBloomFilter;
/// let seen = GrowableBloomFilter::new(1_000, 0.01)?;
/// let mut fresh = 0;
/// for i in 0..100_000u64 {
///     if seen.insert_if_absent(&i) { fresh += 1; }
/// }
/// assert!(seen.num_layers() >= 7);           // 1k + 2k + 4k + … ≥ 100k
/// assert!(fresh > 99_000);                    // few false positives along the way
/// assert!((0..100_000u64).all(|i| seen.contains(&i))); // no false negatives
/// # Ok::<(), blockbloom::Error>(())
/// ```
///
/// # Guarantees
/// 1. **No false negatives**, across growth steps: a key stays in the layer it went into,
///    and every layer is checked.
/// 2. **At most one winner**, also across a growth step (protocol and proof at
///    [`insert_if_absent`](Self::insert_if_absent); model-checked by `loom-tests`).
/// 3. **Rate**: at most the target after any number of keys (the layers' rates sum to it),
///    unless growth fails (see [`growth_failed`](Self::growth_failed)).
/// 4. **Lock-free**: no mutex or spin; growth is one compare-exchange.
pub struct GrowableBloomFilter {
    layers: Published<Layer, MAX_LAYERS>,
    hasher: KeyHasher,
    shape: Shape,
    growth_failed: AtomicBool,
    /// The chain's files, if file-backed ([`open_file`](Self::open_file)).
    #[cfg(all(unix, not(blockbloom_loom)))]
    file: Option<file::ChainFile>,
}

/// What every layer is derived from (validated by [`GrowableBuilder::build`]).
struct Shape {
    seed: u128,
    initial_capacity: u64,
    fpr: f64,
    growth: u64,
    tightening: f64,
    huge_pages: Option<bool>,
}

impl Shape {
    /// Capacity and rate of layer `i`.
    fn layer_params(&self, i: usize) -> (u64, f64) {
        let cap = (self.initial_capacity as f64 * (self.growth as f64).powi(i as i32))
            .min(u64::MAX as f64) as u64;
        let fpr = self.fpr * (1.0 - self.tightening) * self.tightening.powi(i as i32);
        (cap, fpr)
    }

    fn make_layer(&self, i: usize) -> Result<Layer, Error> {
        let (capacity, fpr) = self.layer_params(i);
        let mut builder = BloomFilter::builder()
            .capacity(capacity)
            .fpr(fpr)
            .seed(self.seed);
        if let Some(on) = self.huge_pages {
            builder = builder.huge_pages(on);
        }
        // The first layer's rate is the chain's own, split over the layers to come.
        let filter = builder.build().map_err(|e| {
            if i == 0 {
                e.for_rate_asked(self.fpr)
            } else {
                e
            }
        })?;
        Ok(Layer {
            filter,
            count: Padded(AtomicU64::new(0)),
        })
    }
}

impl GrowableBloomFilter {
    /// A growable filter whose first layer holds `initial_capacity` keys, for a total
    /// false-positive rate of `fpr`, growing ×2 with rates ×0.5, with a random hashing key.
    ///
    /// # Errors
    /// As [`GrowableBuilder::build`].
    ///
    /// Example at [`GrowableBloomFilter`] and [`num_layers`](Self::num_layers).
    pub fn new(initial_capacity: u64, fpr: f64) -> Result<Self, Error> {
        Self::builder()
            .initial_capacity(initial_capacity)
            .fpr(fpr)
            .build()
    }

    /// A [`GrowableBuilder`] with the defaults (rate 1%, growth ×2, tightening ×0.5).
    ///
    /// Example at [`GrowableBloomFilter`] and [`num_layers`](Self::num_layers).
    pub fn builder() -> GrowableBuilder {
        GrowableBuilder {
            initial_capacity: None,
            fpr: crate::filter::builder::DEFAULT_FPR,
            growth: 2,
            tightening: 0.5,
            seed: None,
            huge_pages: None,
            key_format: None,
            verification: crate::Verification::Full,
        }
    }

    /// Index of the newest layer: slots are scanned from 0 so that the load of every slot
    /// up to it is part of this call (the proof at `insert_if_absent` relies on it).
    /// In a file-backed chain, the count of installed layers is the shared word in the first
    /// layer's file instead (see `file.rs`).
    #[inline]
    fn newest(&self) -> usize {
        #[cfg(all(unix, not(blockbloom_loom)))]
        if self.file.is_some() {
            return self.newest_in_files();
        }
        let mut top = 0;
        while self.layers.get(top + 1).is_some() {
            top += 1;
        }
        top
    }

    fn layer(&self, i: usize) -> &Layer {
        self.layers
            .get(i)
            .expect("installed layers are never removed")
    }

    /// The keyed hash of `key` (as [`BloomFilter::key_hash`]): every layer hashes a key
    /// alike, so a caller can hash keys where they are cheap to read and probe the filter
    /// later with [`insert_if_absent_hash`](Self::insert_if_absent_hash) and
    /// [`contains_hash`](Self::contains_hash), e.g. a Python binding that must read its keys
    /// while holding the interpreter lock but can probe without it. It depends only on the
    /// seed: the same value as [`BloomFilter::key_hash`] in a filter with the same
    /// [`seed`](Self::seed), and in a filter with another seed the hash of some other key.
    ///
    /// ```
    /// use blockbloom::GrowableBloomFilter;
    /// let g = GrowableBloomFilter::new(1000, 0.01)?;
    /// let hs: Vec<_> = ["a", "b", "a"].iter().map(|k| g.key_hash(k)).collect();
    /// let fresh: Vec<bool> = hs.iter().map(|&h| g.insert_if_absent_hash(h)).collect();
    /// assert_eq!(fresh, [true, true, false]);
    /// assert!(g.contains("b") && g.contains_hash(hs[1]));
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    #[inline]
    pub fn key_hash<K: Hash + ?Sized>(&self, key: &K) -> KeyHash {
        KeyHash(self.hasher.hash(key))
    }

    /// Whether `key` may have been inserted (checks every layer, newest first; example at
    /// [`insert`](Self::insert)).
    pub fn contains<K: Hash + ?Sized>(&self, key: &K) -> bool {
        self.contains_hash(self.key_hash(key))
    }

    /// [`contains`](Self::contains) for a key hashed by [`key_hash`](Self::key_hash)
    /// (example there).
    pub fn contains_hash(&self, h: KeyHash) -> bool {
        let h = h.0;
        (0..=self.newest())
            .rev()
            .any(|i| self.layer(i).filter.contains_u64(h))
    }

    /// Adds `key` (into the newest layer, unless a layer already has it).
    ///
    /// ```
    /// use blockbloom::GrowableBloomFilter;
    /// let g = GrowableBloomFilter::new(1000, 0.01)?;
    /// g.insert("a");
    /// assert!(g.contains("a") && !g.insert_if_absent("a"));
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn insert<K: Hash + ?Sized>(&self, key: &K) {
        self.insert_if_absent(key);
    }

    /// Inserts `key` and returns `true` if no layer had it: the crawler's "fetch this URL?".
    ///
    /// # Protocol and proof of "at most one winner" across growth
    /// With `from = 0`:
    /// 1. Find the newest layer `top` (loading every slot up to it). If `from < top`, issue a
    ///    SeqCst fence `Y`, then check layers `from..top`: if one contains the key, return
    ///    `false`.
    /// 2. `insert_if_absent` into layer `top` (the single-filter protocol). If it says
    ///    `false`, return `false`.
    /// 3. SeqCst fence `X`, then load slot `top + 1`. Empty: return `true` (and, if the layer
    ///    is now full, install the next one). Installed: our layer went stale while we
    ///    worked; set `from = top + 1` and go back to 1 (our key stays where it is; the
    ///    decision moves to the newer layers).
    ///
    /// *Claim:* two calls A and B for one key cannot both return `true`. Two calls that
    /// both won the same layer's step 2 are excluded by the single-filter protocol
    /// ([`BloomFilter::insert_if_absent`]). So say A returned `true` from layer `n` and B
    /// from a layer `j > n`. Take B's first round with `top > n`. B did not win layer `n` in
    /// an earlier round (that would be a second winner of layer `n`), so that round's `from`
    /// is at most `n`, and it checks layer `n` after its fence `Y`. A's load in step 3 found
    /// slot `n + 1` empty, so A's fence `X` precedes the compare-exchange `I` that installed
    /// slot `n + 1` in the single total order `S` of SeqCst operations (C++20
    /// [atomics.order] ¶4.3). B's scan loaded slot `n + 1` after `I`, before `Y`, so `I`
    /// precedes `Y` in `S` (¶4.2). Hence `X` precedes `Y`, and A's writes to layer `n`
    /// (sequenced before `X`) are visible to B's loads after `Y` (¶4.4): B finds the key
    /// in layer `n` and returns `false`. ∎
    ///
    /// The price: one SeqCst fence per new key, and one more per call once there are two
    /// layers or more (an `mfence` on x86; the benchmark report measures it).
    ///
    /// Example at [`key_hash`](Self::key_hash) and [`insert_if_absent_many`](Self::insert_if_absent_many).
    pub fn insert_if_absent<K: Hash + ?Sized>(&self, key: &K) -> bool {
        self.insert_if_absent_hash(self.key_hash(key))
    }

    /// [`insert_if_absent`](Self::insert_if_absent) for a key hashed by
    /// [`key_hash`](Self::key_hash): the same answer, the same protocol (example there).
    pub fn insert_if_absent_hash(&self, h: KeyHash) -> bool {
        let h = h.0;
        let mut from = 0;
        loop {
            let top = self.newest();
            if from < top {
                fence(SeqCst); // Y
                for i in from..top {
                    if self.layer(i).filter.contains_u64(h) {
                        return false;
                    }
                }
            }
            let layer = self.layer(top);
            if !layer.filter.insert_if_absent_u64(h) {
                return false;
            }
            fence(SeqCst); // X
            if !self.installed(top + 1) {
                let n = layer.count().fetch_add(1, Relaxed) + 1;
                if n >= layer.filter.capacity() {
                    self.grow(top);
                }
                return true;
            }
            from = top + 1;
        }
    }

    /// Whether layer `i` is installed (step 3 of the protocol).
    #[inline]
    fn installed(&self, i: usize) -> bool {
        #[cfg(all(unix, not(blockbloom_loom)))]
        if self.file.is_some() {
            return self.newest_in_files() >= i;
        }
        self.layers.get(i).is_some()
    }

    /// Installs layer `top + 1` unless someone already did (or growth has failed before).
    #[cold]
    fn grow(&self, top: usize) {
        if !self.growth_failed.load(Relaxed) && self.try_grow(top).is_err() {
            self.growth_failed.store(true, Relaxed);
        }
    }

    /// Installs layer `top + 1` unless someone already did; the cause if it cannot be made.
    #[cold]
    fn try_grow(&self, top: usize) -> Result<(), Error> {
        #[cfg(all(unix, not(blockbloom_loom)))]
        if self.file.is_some() {
            return self.try_grow_in_files(top);
        }
        if self.layers.get(top + 1).is_some() {
            return Ok(());
        }
        if top + 1 >= MAX_LAYERS {
            return Err(Error::TooManyLayers);
        }
        // Err from `install`: another thread installed it first; ours is dropped (its memory
        // was never touched).
        drop(
            self.layers
                .install(top + 1, Box::new(self.shape.make_layer(top + 1)?)),
        );
        Ok(())
    }

    /// Makes room for `additional` more new keys before they come: if the newest layer
    /// cannot take that many more without passing its capacity, the next layer is added
    /// now. Then inserting them keeps the rate at the target — unless other threads or
    /// processes insert at the same time, which may fill the layer sooner (it then grows
    /// as usual).
    ///
    /// Use it where running on at a rising rate would be silent data loss (a new key taken
    /// for a repeat): reserve before each batch, and stop when it fails. Without it, a
    /// failed growth is only reported by [`growth_failed`](Self::growth_failed).
    ///
    /// ```
    /// use blockbloom::GrowableBloomFilter;
    /// let seen = GrowableBloomFilter::new(1_000, 0.01)?;
    /// seen.try_reserve(3_000)?; // the third layer (4k) can take them all
    /// assert_eq!(seen.num_layers(), 3);
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    ///
    /// # Errors
    /// Why the next layer could not be added: [`Error::AllocationFailed`],
    /// [`Error::TooManyLayers`], and for a file-backed chain [`Error::Io`] (no space, no
    /// permission to create the file) or [`Error::ForeignLayer`]. [`growth_failed`](Self::growth_failed)
    /// is then `true` as well.
    pub fn try_reserve(&self, additional: u64) -> Result<(), Error> {
        loop {
            let top = self.newest();
            let layer = self.layer(top);
            let fill = layer.count().load(Relaxed);
            if fill.saturating_add(additional) <= layer.filter.capacity() {
                return Ok(());
            }
            if let Err(e) = self.try_grow(top) {
                self.growth_failed.store(true, Relaxed);
                return Err(e);
            }
        }
    }

    /// Adds every key of `other` to this filter, layer by layer: afterwards this filter
    /// contains every key either contained (no false negatives), and answers for a key
    /// neither had at most the sum of the two rates. Layers this filter lacks are added;
    /// each layer's key count becomes the distinct keys of the union, estimated from its
    /// bits and bounded by the larger count and the sum (keys both had count once; a
    /// merged layer past its capacity makes the chain grow at the next new key), so
    /// [`estimated_len`](Self::estimated_len) estimates the union. Both chains must have the same
    /// seed, initial capacity, rate, growth and tightening. Concurrent inserts into either
    /// are fine (the bits are ORed atomically), but keys `other` takes meanwhile may be
    /// missed.
    ///
    /// ```
    /// use blockbloom::GrowableBloomFilter;
    /// let a = GrowableBloomFilter::builder().initial_capacity(100).seed(7).build()?;
    /// let b = GrowableBloomFilter::builder().initial_capacity(100).seed(7).build()?;
    /// for i in 0..50u32 { a.insert(&i); }
    /// for i in 0..1_000u32 { b.insert(&i); } // b has 4 layers, a 1
    /// a.union(&b)?;
    /// assert!((0..1_000u32).all(|i| a.contains(&i)));
    /// assert_eq!(a.num_layers(), b.num_layers());
    /// // 1,000 distinct keys (the 50 of `a` are among them), not 1,050:
    /// assert!((960..=1_040).contains(&a.estimated_len()), "{}", a.estimated_len());
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Incompatible`] naming what differs (nothing is changed then), or why a layer
    /// could not be added (as [`try_reserve`](Self::try_reserve)).
    pub fn union(&self, other: &GrowableBloomFilter) -> Result<(), Error> {
        let (a, b) = (&self.shape, &other.shape);
        let what = if a.seed != b.seed {
            "seed"
        } else if a.initial_capacity != b.initial_capacity {
            "initial capacity"
        } else if a.fpr != b.fpr {
            "target fpr"
        } else if a.growth != b.growth || a.tightening != b.tightening {
            "growth"
        } else {
            ""
        };
        if !what.is_empty() {
            return Err(Error::Incompatible { what });
        }
        for i in 0..other.num_layers() {
            while self.newest() < i {
                self.try_grow(self.newest())?;
            }
            let (mine, theirs) = (self.layer(i), other.layer(i));
            let (a, b) = (mine.count().load(Relaxed), theirs.count().load(Relaxed));
            mine.filter.union(&theirs.filter)?;
            // The layer now holds the union of both key sets: between the larger count and
            // the sum, where its bits say (not the sum: keys in both count once).
            let union = mine.filter.estimated_len().clamp(a.max(b), a + b);
            mine.count().fetch_max(union, Relaxed);
        }
        Ok(())
    }

    /// `true` if a new layer was needed but could not be allocated (or [`MAX_LAYERS`] was
    /// reached): the newest layer then keeps taking keys past its capacity and the rate
    /// rises above the target. Check it when memory is tight.
    ///
    /// Example at [`num_layers`](Self::num_layers).
    pub fn growth_failed(&self) -> bool {
        self.growth_failed.load(Relaxed)
    }

    /// Number of layers so far.
    ///
    /// ```
    /// use blockbloom::GrowableBloomFilter;
    /// let g = GrowableBloomFilter::builder().initial_capacity(1000).fpr(0.01).seed(7).build()?;
    /// assert_eq!((g.num_layers(), g.initial_capacity(), g.target_fpr()), (1, 1000, 0.01));
    /// for i in 0..5_000u64 { g.insert(&i); } // past the first layer: it grows
    /// assert!(g.num_layers() >= 2 && !g.growth_failed());
    /// assert!((4_900..=5_000).contains(&g.estimated_len()));
    /// assert!(g.estimated_fpr() <= g.target_fpr());
    /// assert!(g.memory_bytes() > 5_000 && g.seed() == 7 && !g.is_file_backed());
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn num_layers(&self) -> usize {
        self.newest() + 1
    }

    /// Bytes of memory of all layers (as mapped; untouched pages of the newest layer are
    /// not resident yet).
    ///
    /// Example at [`num_layers`](Self::num_layers).
    pub fn memory_bytes(&self) -> usize {
        (0..self.num_layers())
            .map(|i| self.layer(i).filter.memory_bytes())
            .sum::<usize>()
            + core::mem::size_of::<Self>()
    }

    /// Number of distinct keys inserted (the layers' counts of `true` answers; exact but for
    /// false positives, which were not counted).
    ///
    /// Example at [`num_layers`](Self::num_layers).
    pub fn estimated_len(&self) -> u64 {
        (0..self.num_layers())
            .map(|i| self.layer(i).count().load(Relaxed))
            .sum()
    }

    /// The chain's false-positive rate at its current fill: `1 − Π(1 − fpr_i)` over the
    /// layers' [`estimated_fpr`](BloomFilter::estimated_fpr). Reads every layer.
    ///
    /// Example at [`num_layers`](Self::num_layers).
    pub fn estimated_fpr(&self) -> f64 {
        1.0 - (0..self.num_layers())
            .map(|i| 1.0 - self.layer(i).filter.estimated_fpr())
            .product::<f64>()
    }

    /// The expected number of new keys taken for repeats so far, across the layers: a key
    /// offered while layer `j` filled was taken for a repeat by layer `j` at its fill then,
    /// or by an older layer at its final fill.
    ///
    /// ```
    /// use blockbloom::GrowableBloomFilter;
    /// let f = GrowableBloomFilter::new(10_000, 0.01)?;
    /// let lost = (0..300_000u64).filter(|i| !f.insert_if_absent(i)).count() as f64;
    /// assert!(f.num_layers() >= 4);
    /// let estimate = f.estimated_false_positives();
    /// assert!((0.7 * lost..1.3 * lost).contains(&estimate), "{estimate} for {lost}");
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn estimated_false_positives(&self) -> f64 {
        let (mut older_pass, mut total) = (1.0, 0.0);
        for i in 0..self.num_layers() {
            let layer = self.layer(i);
            let f = &layer.filter;
            let (bits, k, block) = (f.num_bits() as f64, f.num_hashes(), f.block_bits());
            let in_layer = layer.count().load(Relaxed) as f64;
            total += crate::math::expected_false_positives(in_layer, |x| {
                1.0 - older_pass * (1.0 - crate::math::blocked_fpr_sized(bits / x, k, block))
            });
            older_pass *= 1.0 - f.estimated_fpr();
        }
        total
    }

    /// The target false-positive rate of the whole chain.
    ///
    /// Example at [`num_layers`](Self::num_layers).
    pub fn target_fpr(&self) -> f64 {
        self.shape.fpr
    }

    /// The first layer's capacity.
    ///
    /// Example at [`num_layers`](Self::num_layers).
    pub fn initial_capacity(&self) -> u64 {
        self.shape.initial_capacity
    }

    /// The 128-bit hashing key (shared by all layers).
    ///
    /// Example at [`num_layers`](Self::num_layers).
    pub fn seed(&self) -> u128 {
        self.shape.seed
    }

    /// Whether the layers are files ([`open_file`](Self::open_file)).
    ///
    /// Example at [`num_layers`](Self::num_layers).
    pub fn is_file_backed(&self) -> bool {
        #[cfg(all(unix, not(blockbloom_loom)))]
        return self.file.is_some();
        #[cfg(not(all(unix, not(blockbloom_loom))))]
        false
    }
}

impl fmt::Debug for GrowableBloomFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrowableBloomFilter")
            .field("num_layers", &self.num_layers())
            .field("initial_capacity", &self.shape.initial_capacity)
            .field("target_fpr", &self.shape.fpr)
            .field("growth", &self.shape.growth)
            .field("tightening", &self.shape.tightening)
            .field("file_backed", &self.is_file_backed())
            .finish_non_exhaustive()
    }
}
