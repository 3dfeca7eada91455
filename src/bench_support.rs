//! Not public API: the prefetch hints and raw cache lines, for the benchmark report's
//! physical-limit microbenchmark (which must use the very instructions and memory the filter
//! uses), and the coarse clock the expiring filter does not use. Exposed as `blockbloom::__bench`, hidden from the docs.

pub use crate::storage::{
    coarse_clock_nanos, coarse_clock_resolution, prefetch_read, prefetch_write,
};
use crate::storage::{HugePages, Lines as FilterLines};
use crate::{line::Line, sync::Ordering::Relaxed, Error};

/// An array of zeroed, 64-byte-aligned cache lines allocated exactly like a filter's.
pub struct Lines(FilterLines);

impl Lines {
    /// `len` lines, with transparent huge pages at once if asked (as
    /// `Builder::huge_pages(true)`), else never.
    pub fn new(len: usize, huge_pages: bool) -> Result<Self, Error> {
        Ok(Lines(FilterLines::zeroed_with(
            len,
            HugePages::from_choice(Some(huge_pages)),
        )?))
    }
    /// Commits every page now (as `Builder::populate(true)`); call before any write.
    pub fn populate(&self) {
        self.0.populate_fresh();
    }
    /// Number of lines.
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// Always false (at least one line).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// Prefetches line `i` with write intent.
    #[inline(always)]
    pub fn prefetch(&self, i: usize) {
        prefetch_write::<Line>(&self.0[i]);
    }
    /// `fetch_or(bits)` on word `w` of line `i`.
    #[inline(always)]
    pub fn fetch_or(&self, i: usize, w: usize, bits: u64) -> u64 {
        self.0[i].word(w).fetch_or(bits, Relaxed)
    }
    /// Word `w` of line `i` (a relaxed load).
    #[inline(always)]
    pub fn load(&self, i: usize, w: usize) -> u64 {
        self.0[i].word(w).load(Relaxed)
    }
    /// The same OR as a plain load and store (not an atomic read-modify-write: a
    /// concurrent OR into the word can be lost). What a non-atomic filter does; the
    /// report measures it to price the `lock` prefix of `fetch_or`.
    #[inline(always)]
    pub fn or_plain(&self, i: usize, w: usize, bits: u64) -> u64 {
        let word = self.0[i].word(w);
        let old = word.load(Relaxed);
        word.store(old | bits, Relaxed);
        old
    }
}

/// The batched paths' software pipeline (`filter/batch.rs`), for the benchmarks' loops that
/// stand for a filter doing the least work in it.
#[inline(always)]
pub fn pipeline<K: core::hash::Hash>(
    keys: &[K],
    bytes: usize,
    hash: impl Fn(&K) -> u64,
    prefetch: impl Fn(u64),
    op: impl FnMut(usize, u64),
) {
    crate::filter::pipeline(keys, bytes, hash, prefetch, op)
}
