//! Combining filters and moving their bits: [`BloomFilter::union`],
//! [`BloomFilter::intersect`], [`BloomFilter::clear`], and the byte access through which a
//! filter stored elsewhere (Redis) is exported and merged. None of these is on the hot path.

use crate::error::Error;
use crate::line::{or_into, Line, LINE_BYTES};
use crate::BloomFilter;

impl BloomFilter {
    fn check_compatible(&self, other: &BloomFilter) -> Result<(), Error> {
        self.layout().same_as(other.layout())
    }

    /// Adds every key of `other` to `self` (word-wise `fetch_or`): afterwards `self` contains
    /// every key either filter contained — the way per-node filters of a crawl are merged.
    /// Safe while other threads use either filter (bits only go up); keys inserted into
    /// `other` during the call may or may not be carried over.
    ///
    /// # Errors
    /// [`Error::Incompatible`] unless both filters have the same size, number of hashes and
    /// seed (build them with the same [`Builder`](crate::Builder) settings, including `.seed(..)`).
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
        or_into(self.lines(), other.lines());
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
        for (mine, theirs) in self.lines().iter().zip(other.lines()) {
            mine.and_line(theirs);
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
        self.lines().iter().for_each(Line::clear);
    }

    /// Appends lines `first..first + count` to `out` as bytes, in the snapshot format's
    /// layout (eight little-endian `u64` words per line): the bytes a filter stored as one
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
    /// f.line_bytes(0, f.num_lines(), &mut bytes)?;
    /// let g = BloomFilter::builder().capacity(1000).seed(1).build()?;
    /// g.or_line_bytes(0, &bytes)?;
    /// assert!(g.contains("a"));
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn line_bytes(&self, first: usize, count: usize, out: &mut Vec<u8>) -> Result<(), Error> {
        let end = first
            .checked_add(count)
            .filter(|&e| e <= self.num_lines())
            .ok_or(Error::Incompatible { what: "line range" })?;
        out.reserve(count * LINE_BYTES);
        for b in &self.lines()[first..end] {
            b.append_le_bytes(out);
        }
        Ok(())
    }

    /// ORs `bytes` (whole lines, in the layout of [`line_bytes`](Self::line_bytes)) into
    /// the lines starting at `first`: the union with a filter stored elsewhere. Safe while
    /// other threads use the filter (bits only go up).
    ///
    /// # Errors
    /// [`Error::Incompatible`] if `bytes` is not a whole number of lines or does not fit.
    ///
    /// Example at [`line_bytes`](Self::line_bytes).
    pub fn or_line_bytes(&self, first: usize, bytes: &[u8]) -> Result<(), Error> {
        let bad = Error::Incompatible { what: "line range" };
        if !bytes.len().is_multiple_of(LINE_BYTES) {
            return Err(bad);
        }
        let count = bytes.len() / LINE_BYTES;
        let end = first
            .checked_add(count)
            .filter(|&e| e <= self.num_lines())
            .ok_or(bad)?;
        for (b, chunk) in self.lines()[first..end]
            .iter()
            .zip(bytes.chunks_exact(LINE_BYTES))
        {
            b.or_le_bytes(chunk);
        }
        Ok(())
    }
}
