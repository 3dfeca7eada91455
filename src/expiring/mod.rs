//! [`ExpiringBloomFilter`]: keys are forgotten a fixed time after their insert.

mod batch;
mod builder;
mod claim;
mod epochs;
mod estimates;
pub(crate) mod in_place;
mod persist;
pub(crate) mod planes;
#[cfg(feature = "internals")]
pub(crate) mod planes_model;
pub(crate) mod window;

use core::fmt;
use core::hash::Hash;
use core::time::Duration;
use std::time::SystemTime;

use crate::error::Error;
use crate::layout::Layout;
use crate::line::LINE_BYTES;
use crate::storage::{HugePages, Lines};
use crate::store::Store;
use crate::sync::Ordering::Relaxed;

pub use builder::{Arrival, ExpiringBuilder};
pub use window::ExpiryWindow;

/// A Bloom filter whose keys expire: a key is "seen" for `expire_after` after the insert
/// that added it, and "new" again at most a third later — a crawler's re-fetch interval.
///
/// Each 64-byte line is four *planes* of 120 bits (two words of 60, each with a 4-bit
/// label), and a key's `k` bits lie in one line (`⌈k/2⌉` in one word of a plane, the rest
/// in the other), so an operation costs one cache miss. Time is cut
/// into *epochs* of a third of the window (plus a third of a second); a key inserted in
/// epoch `x` sets its bits in plane `x mod 4` under `x`'s label, and is present while a
/// plane holds all of them under a label of the last four epochs. The first writer of a new
/// epoch claims its plane's dead word with one compare-exchange that writes its label and
/// bits together: nothing has to be cleared to make room (lock-free). Words that no one
/// reclaims are cleared by a *sweep* over the filter every eighth epoch, 64 KiB per call by
/// the epoch's calls, before their label could come round again; a call far ahead of the
/// last sweep (an idle filter, a replay) sweeps the whole filter before it writes.
///
/// ```
/// use blockbloom::ExpiringBloomFilter;
/// use std::time::{Duration, SystemTime};
///
/// let day = Duration::from_secs(86_400);
/// let seen = ExpiringBloomFilter::builder()
///     .expire_after(30 * day)  // seen for at least this long after its insert
///     .capacity(100_000)       // distinct keys inserted per 30 days
///     .fpr(0.01)
///     .build()?;
/// assert!(seen.insert_if_absent("https://example.com/"));  // new: fetch it
/// assert!(!seen.insert_if_absent("https://example.com/")); // fetched within 30 days
///
/// // With an explicit time (replaying a log, tests), at most this machine's clock:
/// let log = ExpiringBloomFilter::builder().expire_after(30 * day).capacity(100_000).build()?;
/// let t = SystemTime::now() - 60 * day;
/// log.insert_at("https://example.com/a", t);
/// assert!(log.contains_at("https://example.com/a", t + 29 * day));
/// assert!(!log.contains_at("https://example.com/a", t + log.forgotten_after()));
/// // A time ahead of the clock is taken as the clock (guarantee 6): nothing is forgotten.
/// seen.insert_at("https://example.com/b", SystemTime::now() + 400 * day);
/// assert!(seen.contains("https://example.com/"));
/// # Ok::<(), blockbloom::Error>(())
/// ```
///
/// # Guarantees
/// With `W` = `expire_after` and `E` = ⌈(`W` + 1 s) / 3⌉ (an *epoch*; [`epoch`](Self::epoch)):
/// 1. **No false negatives inside the window.** A key whose insert (or winning
///    `insert_if_absent`) ran at time `t`, in epoch `s`, is seen at every `t′` in
///    `[t, t + W)`. Its bits are in plane `s mod 4` under `s`'s label (or a later epoch's
///    plane); callers in epochs `s ..= s + 3` read that plane as live, and no one
///    reclaims it before epoch `s + 4`, which begins at `start(s) + 4E ≥ t + 3E ≥
///    t + W + 1 s`: after the window even for a caller whose clock is a second ahead.
/// 2. **Forgotten on time.** From `start(s) + 4E` on ([`forgotten_after`](Self::forgotten_after)
///    after the start of its epoch: at most `4/3 (W + 1 s)` plus 4 ns of rounding after `t`)
///    the key's plane holds a newer epoch or reads as dead, so the key is new again unless
///    it is a false positive (or was inserted again meanwhile). The slack is one epoch: a
///    third of the window and of a second, at most.
/// 3. **The rate you asked for.** The planes live at once hold the keys of the last 3 to 4
///    epochs: with `capacity` distinct keys per `W` at a steady rate, each plane holds an
///    epoch's share, and the filter is sized by default ([`Arrival::Steady`]) so that the
///    rate is at most the target at the worst moment (an epoch's end, all four planes
///    full). When the keys bunch up (one window's keys at its end, the next one's at its
///    start) a plane holds a whole window's: [`Arrival::WorstBurst`] sizes for that. Past
///    what it was sized for the rate rises, and is never hidden:
///    [`estimated_fpr`](Self::estimated_fpr) reads it from the live bits at any moment
///    (measured against the true rate in the tests), and the CLI and the Scrapy
///    dupefilters warn once it passes twice the target.
/// 4. **At most one winner** among concurrent `insert_if_absent` calls for one new key, also
///    across an epoch change and between callers whose clocks differ by up to one second:
///    the protocol and proof are at [`insert_if_absent_at`](Self::insert_if_absent_at).
/// 5. **Time going backwards never makes a key inside its window new.** The filter keeps the
///    newest epoch any call has used, and every call works in it (or in its own, if
///    later): a call whose clock is behind (a slow clock, an NTP step back, `_at` with an
///    earlier time) reads and writes as the newest clock does.
/// 6. **A clock ahead never makes a key inside its window new.** A call whose time is ahead
///    of this machine's clock by more than the tolerated skew (one second) — a host whose
///    clock runs a year ahead, an `_at` time in the future — is worked at this machine's
///    clock plus the skew: it never moves the filter's newest epoch past the epoch of
///    `now + 1 s`, so no key inserted inside its window reads as dead (by 1, every key
///    inserted at `t ≤ now` is seen until `t + W` by a clock a second ahead). Its own
///    inserts go into that epoch, seen for a whole window from now. A machine whose clock
///    is right is never held back: a filter reopened two months after its last use forgets
///    what is older than the window at the first call. (A filter shared through Redis
///    takes the server's clock as this reference.)
///
/// Windows are at least one second long ([`Error::InvalidWindow`]). Epochs are counted
/// from 1970 in the caller's `SystemTime`: every user of one filter must share a clock to
/// within a second (NTP). The calls without `_at` work in the wall clock's epoch at the
/// call, mostly without reading the clock: a thread reads it again once its CPU's
/// time-stamp counter has run 1 ms since its last reading, and decides from the counter
/// only while the next 2 ms lie in the newest epoch (Linux on x86-64 where the kernel keeps
/// time by the counter; elsewhere each call reads the clock). In the 1 ms after the clock
/// is stepped, a call may work as at a reading from before the step, as a caller that read
/// the clock 1 ms before calling `_at` would.
///
/// **Memory**: at 1%, 22.39 bits (2.80 bytes) per key of the window for a steady rate, 56.7
/// sized for the worst burst (each sized for 0.97% at its worst moment, so that a filter's
/// own fill, which varies, stays at or under the target there) (docs/PERFORMANCE.md, "The expiring filter against its
/// goals"); in memory on huge pages from the first touch by default
/// ([`ExpiringBuilder::huge_pages`]).
pub struct ExpiringBloomFilter {
    /// Line 0 is the clock (the words below), shared by every user, also of a file; lines
    /// 1.. hold the keys' planes. In memory or a file (its format: `format.rs`).
    store: Store,
    /// The key lines (1..): which one holds a key (the line of [`Layout::probe`]); its bits in the
    /// line's planes are `layout::plane_mask`'s.
    layout: Layout,
    window: ExpiryWindow,
    /// Keys per window it was sized for, how they arrive, and the rate asked for.
    capacity: u64,
    arrival: Arrival,
    target_fpr: f64,
    /// How the keys were made from their input ([`ExpiringBuilder::key_format`]).
    key_format: u64,
}

/// What an expiring filter is, beside its lines: its parameters as a header gives them.
pub(crate) struct Params {
    pub(crate) seed: u128,
    pub(crate) hashes: u32,
    pub(crate) capacity: u64,
    pub(crate) target_fpr: f64,
    pub(crate) key_format: u64,
}

/// Huge pages for a filter in memory, built or loaded, unless the builder opts out: at its
/// capacity the filter touches nearly every page early in its first window
/// ([`ExpiringBuilder::huge_pages`]).
const IN_MEMORY_PAGES: HugePages = HugePages::Now;

/// The clock line's words: the newest epoch any call has used (fetch_max).
const NEWEST: usize = 0;
/// 1 + the epoch of the last completed sweep (0: none needed yet, the filter is empty).
const SWEPT: usize = 1;
/// The window in nanoseconds, written at creation (a file's, checked when it is opened).
const WINDOW: usize = 2;
/// 1 + the first epoch any call used (0: never used).
const FIRST: usize = 3;
/// The sweep pass in progress (`epochs.rs`): its epoch, and how many of its chunks are
/// claimed.
const PASS: usize = 4;
/// The pass whose chunks are being counted done, and how many are.
const PASS_DONE: usize = 5;
/// The time of the first call, in nanoseconds since 1970 (0: never used, or a file of a
/// build that did not record it).
const FIRST_AT: usize = 6;

impl ExpiringBloomFilter {
    /// Options for a new filter: [`expire_after`](ExpiringBuilder::expire_after) and
    /// [`capacity`](ExpiringBuilder::capacity) are required.
    ///
    /// Example at [`ExpiringBloomFilter`].
    pub fn builder() -> ExpiringBuilder {
        ExpiringBuilder::default()
    }

    fn from_parts(
        p: &builder::Checked,
        seed: u128,
        huge: HugePages,
        populate: bool,
    ) -> Result<Self, Error> {
        let s = sizing(p.capacity, p.fpr, p.arrival, &p.window)?;
        let len =
            usize::try_from(s.blocks + 1).map_err(|_| Error::TooLarge { bytes: s.bytes() })?;
        let lines = Lines::zeroed_with(len, huge)?;
        if populate {
            lines.populate_fresh(); // before the clock line is written
        }
        lines[0].words()[WINDOW].store(p.window.nanos(), Relaxed);
        let params = Params {
            seed,
            hashes: s.hashes,
            capacity: p.capacity,
            target_fpr: s.target_fpr,
            key_format: 0,
        };
        Ok(Self::from_store(Store::in_memory(lines), params, p.window))
    }

    /// The filter whose clock and key lines are `store`'s (checked by the caller).
    pub(crate) fn from_store(store: Store, p: Params, window: ExpiryWindow) -> Self {
        let lines = store.lines.len() as u64 - 1;
        // Steady arrival's size, or (a larger one) the worst burst's.
        let steady = sizing(p.capacity, p.target_fpr, Arrival::Steady, &window).map(|s| s.blocks);
        ExpiringBloomFilter {
            arrival: if steady == Ok(lines) {
                Arrival::Steady
            } else {
                Arrival::WorstBurst
            },
            layout: Layout::from_validated(p.seed, lines, p.hashes, 512),
            store,
            window,
            capacity: p.capacity,
            target_fpr: p.target_fpr,
            key_format: p.key_format,
        }
    }

    /// Whether `key` was inserted within the window, now: [`contains_at`](Self::contains_at)
    /// with [`SystemTime::now`].
    ///
    /// Example at [`ExpiringBloomFilter`].
    #[inline]
    pub fn contains<K: Hash + ?Sized>(&self, key: &K) -> bool {
        let (h, line) = self.hash_fetching(key, false);
        self.contains_one_in(h, line, &self.epoch_now())
    }

    /// Whether `key` was inserted within the window before `t`: `false` is certain; `true`
    /// is wrong with about the target probability.
    ///
    /// Example at [`ExpiringBloomFilter`].
    pub fn contains_at<K: Hash + ?Sized>(&self, key: &K, t: SystemTime) -> bool {
        let (h, line) = self.hash_fetching(key, false);
        self.contains_one_in(h, line, &self.epoch_at(t))
    }

    /// Inserts `key` now: [`insert_at`](Self::insert_at) with [`SystemTime::now`].
    ///
    /// Example at [`ExpiringBloomFilter`].
    #[inline]
    pub fn insert<K: Hash + ?Sized>(&self, key: &K) {
        let (h, line) = self.hash_fetching(key, true);
        self.insert_in(h, line, &self.epoch_now())
    }

    /// Inserts `key` at `t`: it is seen until `t + expire_after` at least, even if it was
    /// present (an insert renews the window; `insert_if_absent` of a present key does not).
    ///
    /// Example at [`ExpiringBloomFilter`].
    pub fn insert_at<K: Hash + ?Sized>(&self, key: &K, t: SystemTime) {
        let (h, line) = self.hash_fetching(key, true);
        self.insert_in(h, line, &self.epoch_at(t))
    }

    /// Inserts `key` if it was not seen within the window, now:
    /// [`insert_if_absent_at`](Self::insert_if_absent_at) with [`SystemTime::now`].
    ///
    /// Example at [`ExpiringBloomFilter`].
    #[inline]
    pub fn insert_if_absent<K: Hash + ?Sized>(&self, key: &K) -> bool {
        let (h, line) = self.hash_fetching(key, true);
        self.insert_if_absent_in(h, line, &self.epoch_now())
    }

    /// Inserts `key` at `t` and returns `true` if it was not seen within the window (fetch
    /// it); returns `false` without writing anything if it was (or is a false positive). A
    /// `false` does not renew the window: the page was fetched when the winning call ran.
    ///
    /// # Protocol and proof of "at most one winner"
    /// A call works in the newest epoch `n` it read (SeqCst, as every access below), and
    /// writes in plane `n mod 4` under `n`'s label (`planes.rs`):
    /// 1. Load the line. If a plane holds all of the key's bits under a label live in `n`
    ///    (the epochs `n − 3 ..= n`, and those up to `n + 4` that a newer caller wrote),
    ///    return `false`. (The labels after `n` are tested only if the newest epoch, read
    ///    again after the line, has moved on: a writer moves it on before it writes, so
    ///    otherwise the loaded line holds none.)
    /// 2. Claim the key's bits in plane `n mod 4` under `n`'s label as the plain filter
    ///    claims its bits
    ///    ([`BloomFilter::insert_if_absent`](crate::BloomFilter::insert_if_absent)): the
    ///    missing bits of the word without the highest missing bit, then the highest with
    ///    the rest of its word in a compare-exchange that fails if it is set (each
    ///    compare-exchange from the word as step 1 loaded it, reloaded only if it failed).
    ///    A dead epoch's word is replaced in the same compare-exchange; a newer epoch's word
    ///    in the way means `n` is stale: read the newest epoch again and start over.
    /// 3. Having set the deciding bit, read the newest epoch again. Still `n`: return
    ///    `true`. Moved on to `m`: run steps 1–3 again in `m`, where step 1 ignores the
    ///    planes of epochs up to `n` (holding this call's own bits).
    ///
    /// *Claim:* calls A and B for one key cannot both return `true`. Let A's decisive
    /// claim be in epoch `a`, B's in `b`, `a ≤ b`, and both see their epoch unchanged when
    /// they read the newest after it.
    /// * `a = b`: both claims are in one plane under one label, and the plain filter's
    ///   argument holds: the second to set the highest bit finds it set and loses (a dead
    ///   word replaced meanwhile carries the same label, so the bits stay).
    /// * `a < b`: B read the newest as `b` before its step 1, and A read it as `a` after its
    ///   winning write. In the single total order of SeqCst operations, A's read of `a`
    ///   precedes the fetch_max to `b` (the newest only grows), which precedes B's read of
    ///   `b`, which precedes B's step-1 loads: so those loads see A's winning write, and
    ///   all of A's bits (written before it), in plane `a mod 4` under `a`'s label, which
    ///   is live for B (`b − a ≤ 3`: clocks within a second and callers at the newest
    ///   span at most one epoch change during a call; a plane of `a` is reclaimed only in
    ///   `a + 4`). B returns `false` in step 1, unless that step 1 leaves plane `a` out,
    ///   being a decision again after a win of B's own in an epoch `c` with `a ≤ c < b`:
    ///   then B's win in `c` is a decisive claim too, and the same two cases, for `a` and
    ///   `c`, show it impossible. ∎
    ///
    /// A loser may have set some of the key's bits: the same bits the winner sets.
    ///
    /// ```
    /// use blockbloom::ExpiringBloomFilter;
    /// use std::time::{Duration, SystemTime};
    /// let week = Duration::from_secs(7 * 86_400);
    /// let f = ExpiringBloomFilter::builder().expire_after(week).capacity(1000).build()?;
    /// let t = SystemTime::now() - 2 * week; // times up to this machine's clock (guarantee 6)
    /// assert!(f.insert_if_absent_at("https://example.com/", t));
    /// assert!(!f.insert_if_absent_at("https://example.com/", t + week / 2)); // not renewed
    /// assert!(f.insert_if_absent_at("https://example.com/", t + f.forgotten_after()));
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn insert_if_absent_at<K: Hash + ?Sized>(&self, key: &K, t: SystemTime) -> bool {
        let (h, line) = self.hash_fetching(key, true);
        self.insert_if_absent_in(h, line, &self.epoch_at(t))
    }

    /// Which line holds each key (the line of [`Layout::probe`]; the clock line is not
    /// counted). Its bits within the line's planes are not the layout's blocks.
    ///
    /// ```
    /// use blockbloom::ExpiringBloomFilter;
    /// use std::time::Duration;
    /// let f = ExpiringBloomFilter::builder()
    ///     .expire_after(Duration::from_secs(3600)).capacity(1000).build()?;
    /// assert_eq!(f.layout().num_lines(), f.num_lines());
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The epochs of its window. Example at [`ExpiryWindow`].
    pub fn window(&self) -> &ExpiryWindow {
        &self.window
    }

    /// The window asked for.
    ///
    /// Example at [`forgotten_after`](Self::forgotten_after).
    pub fn expire_after(&self) -> Duration {
        self.window.expire_after()
    }

    /// One epoch, ⌈(`expire_after` + 1 s) / 3⌉: the unit in which keys age, and the slack.
    ///
    /// Example at [`forgotten_after`](Self::forgotten_after).
    pub fn epoch(&self) -> Duration {
        self.window.epoch()
    }

    /// How long after the start of its insert's epoch a key is certainly forgotten (but for
    /// false positives): four epochs, at most `4/3 (expire_after + 1 s)` (+ 4 ns of
    /// rounding) after the insert.
    ///
    /// ```
    /// use blockbloom::ExpiringBloomFilter;
    /// use std::time::Duration;
    /// let f = ExpiringBloomFilter::builder()
    ///     .expire_after(Duration::from_secs(3600)).capacity(1000).build()?;
    /// assert_eq!(f.expire_after(), Duration::from_secs(3600));
    /// assert_eq!(f.epoch(), Duration::from_nanos(1_200_333_333_334));
    /// assert_eq!(f.forgotten_after(), Duration::from_nanos(4_801_333_333_336));
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn forgotten_after(&self) -> Duration {
        self.window.forgotten_after()
    }

    /// When the oldest generation of keys still seen now began: the start of the epoch
    /// three before the current one, or the filter's first use if that is later; `None` if
    /// no call has used the filter yet. Keys inserted since then can still be seen.
    ///
    /// ```
    /// use blockbloom::ExpiringBloomFilter;
    /// use std::time::{Duration, SystemTime};
    /// let f = ExpiringBloomFilter::builder()
    ///     .expire_after(Duration::from_secs(3600)).capacity(1000).build()?;
    /// assert_eq!(f.oldest_generation_start(), None);
    /// f.insert("https://example.com/");
    /// let started = f.oldest_generation_start().unwrap();
    /// assert!(started <= SystemTime::now() && started + f.epoch() > SystemTime::now());
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn oldest_generation_start(&self) -> Option<SystemTime> {
        let first = self.clock(FIRST).load(Relaxed).checked_sub(1)?;
        let now = self.window.epoch_of(SystemTime::now());
        let oldest = first.max(now.saturating_sub(window::GENERATIONS));
        let start = self.window.start_of(oldest);
        // The first call's own time, once its epoch is the oldest (a new filter's first
        // generation began then, not at the start of its epoch).
        let first_at = Duration::from_nanos(self.clock(FIRST_AT).load(Relaxed));
        let in_oldest = first_at >= start && first_at < start + self.window.epoch();
        Some(std::time::UNIX_EPOCH + if in_oldest { first_at } else { start })
    }

    /// Not public API: the key's bits in its plane (two words), for the loom models, which
    /// need keys spread over both words.
    #[cfg(feature = "internals")]
    #[doc(hidden)]
    pub fn __plane_bits<K: Hash + ?Sized>(&self, key: &K) -> [u64; 2] {
        crate::layout::plane_mask(self.layout.hasher.hash(key), self.layout.num_hashes())
    }

    /// Not public API: one more than the epoch of the last recorded sweep (Acquire; 0:
    /// none), for the loom model of a sweep split between calls and the sweep's example.
    #[cfg(feature = "internals")]
    #[doc(hidden)]
    pub fn __last_sweep(&self) -> u64 {
        self.clock(SWEPT).load(crate::sync::Ordering::Acquire)
    }

    /// Not public API: every word of the key lines (Relaxed), for the same loom model.
    #[cfg(feature = "internals")]
    #[doc(hidden)]
    pub fn __key_words(&self) -> Vec<u64> {
        let words = self.key_lines().iter().flat_map(|b| b.words());
        words.map(|w| w.load(Relaxed)).collect()
    }

    /// Bytes of memory the filter occupies.
    ///
    /// ```
    /// use blockbloom::ExpiringBloomFilter;
    /// use std::time::Duration;
    /// let f = ExpiringBloomFilter::builder()
    ///     .expire_after(Duration::from_secs(86_400)).capacity(10_000).fpr(0.01).seed(7).build()?;
    /// assert_eq!((f.capacity(), f.target_fpr(), f.seed()), (10_000, 0.01, 7));
    /// assert!(f.memory_bytes() < 10_000 * 4 && f.num_lines() * 64 <= f.memory_bytes() as u64);
    /// // An epoch's share of the window's keys (a third) at once: the rate holds.
    /// for i in 0..3_000u32 { f.insert(&i); }
    /// assert!(f.estimated_fpr() < 0.01 && f.num_hashes() > 1);
    /// assert!((2_700..3_300).contains(&f.estimated_len()));
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn memory_bytes(&self) -> usize {
        self.store.lines.len() * LINE_BYTES + core::mem::size_of::<Self>()
    }

    /// Number of 64-byte lines of keys (four planes each).
    ///
    /// Example at [`memory_bytes`](Self::memory_bytes).
    pub fn num_lines(&self) -> u64 {
        self.layout.num_lines()
    }

    /// Bits per key (all in one plane of one line).
    ///
    /// Example at [`memory_bytes`](Self::memory_bytes).
    pub fn num_hashes(&self) -> u32 {
        self.layout.num_hashes()
    }

    /// Distinct keys per window the filter was sized for.
    ///
    /// Example at [`memory_bytes`](Self::memory_bytes).
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// What [`capacity`](Self::capacity) was sized for (example at [`Arrival`]).
    pub fn arrival(&self) -> Arrival {
        self.arrival
    }

    /// The false-positive rate the filter was sized for.
    ///
    /// Example at [`memory_bytes`](Self::memory_bytes).
    pub fn target_fpr(&self) -> f64 {
        self.target_fpr
    }

    /// The 128-bit hashing key.
    ///
    /// Example at [`memory_bytes`](Self::memory_bytes).
    pub fn seed(&self) -> u128 {
        self.layout.seed()
    }
}

/// The key lines and bits per key for `capacity` keys per window of `window` at `fpr`, as
/// `arrival` says the keys arrive: four full planes at the worst moment of a steady rate,
/// each with an epoch's share of the window's keys; two in the worst burst, each with all of
/// them (`math/planes.rs` has the rate of a plane).
pub(crate) fn sizing(
    capacity: u64,
    fpr: f64,
    arrival: Arrival,
    window: &ExpiryWindow,
) -> Result<crate::math::Sizing, Error> {
    if capacity == 0 {
        return Err(Error::ZeroCapacity);
    }
    let (full, share) = match arrival {
        Arrival::Steady => (
            4,
            window.epoch().as_secs_f64() / window.expire_after().as_secs_f64(),
        ),
        Arrival::WorstBurst => (2, 1.0),
    };
    let (bits_per_key, hashes) = crate::math::planes_params(fpr, full)?;
    let bits = crate::layout::PLANE_BITS;
    Ok(crate::math::Sizing {
        blocks: crate::math::blocks_for(share * bits_per_key, capacity, bits)?,
        hashes,
        target_fpr: fpr,
    })
}

impl fmt::Debug for ExpiringBloomFilter {
    /// Parameters only: neither the bits nor the seed.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExpiringBloomFilter")
            .field("expire_after", &self.expire_after())
            .field("capacity", &self.capacity())
            .field("arrival", &self.arrival())
            .field("target_fpr", &self.target_fpr())
            .field("num_lines", &self.num_lines())
            .field("num_hashes", &self.num_hashes())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
