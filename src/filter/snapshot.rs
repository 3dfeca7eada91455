//! [`BloomFilter`]'s snapshots: `write_to`, `read_from`, `save`, `load` (the format and its
//! readers and writers are in `snapshot`).

use std::io::{Read, Write};
use std::path::Path;

use crate::error::Error;
use crate::format::MAGIC;
use crate::hash::HASH_ALGORITHM_ID;
use crate::layout::Layout;
use crate::snapshot::{load_from, read_snapshot, save_atomically, write_snapshot, Header};
use crate::storage::HugePages;
use crate::BloomFilter;

impl Header {
    /// The header of `f`.
    pub(crate) fn of_filter(f: &BloomFilter) -> Header {
        Header {
            magic: MAGIC,
            hash_id: HASH_ALGORITHM_ID,
            seed: f.seed(),
            nlines: f.num_lines() as u64,
            k: f.num_hashes(),
            capacity: f.capacity(),
            fpr_bits: f.target_fpr().to_bits(),
            block_bits: f.block_bits(),
            window_nanos: 0,
            key_format: f.key_format(),
            version: crate::format::FORMAT_VERSION,
        }
    }
}

impl BloomFilter {
    /// Writes the filter in the snapshot format (the table in `docs/FILES.md`) to `out`.
    ///
    /// Safe while other threads insert: bits only go from 0 to 1, so every insert that
    /// returned before the call began is in the snapshot; inserts that race with it may or
    /// may not be. The checksum covers exactly the bytes written.
    ///
    /// ```
    /// use blockbloom::BloomFilter;
    /// let f = BloomFilter::with_capacity(1000, 0.01)?;
    /// f.insert("https://example.com/");
    /// let mut bytes = Vec::new();
    /// f.write_to(&mut bytes)?;
    /// let g = BloomFilter::read_from(&bytes[..])?;
    /// assert!(g.contains("https://example.com/"));
    /// assert_eq!((g.num_bits(), g.num_hashes(), g.seed()), (f.num_bits(), f.num_hashes(), f.seed()));
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Io`] when `out` fails.
    pub fn write_to<W: Write>(&self, out: W) -> Result<(), Error> {
        write_snapshot(out, &Header::of_filter(self), 0, self.lines())
    }

    /// Reads a filter written by [`write_to`](Self::write_to) or [`save`](Self::save),
    /// streaming the blocks straight into a lazily zeroed allocation (no second copy).
    ///
    /// Every kind of damage is an error, never a panic and never a filter that answers
    /// wrongly: [`Error::BadMagic`], [`Error::UnsupportedVersion`], [`Error::UnknownHash`],
    /// [`Error::InvalidSnapshot`] (a field out of range, or bytes after the checksum),
    /// [`Error::Truncated`], [`Error::ChecksumMismatch`], [`Error::Io`], and
    /// [`Error::TooLarge`] / [`Error::AllocationFailed`] for a header that asks for more
    /// memory than the machine has.
    ///
    /// ```
    /// use blockbloom::{BloomFilter, Error};
    /// assert_eq!(BloomFilter::read_from(&b"not a filter"[..]).unwrap_err(), Error::Truncated);
    /// assert_eq!(BloomFilter::read_from(&[0u8; 100][..]).unwrap_err(), Error::BadMagic);
    /// ```
    pub fn read_from<R: Read>(input: R) -> Result<BloomFilter, Error> {
        let (h, blocks) =
            read_snapshot(input, MAGIC, 0, HugePages::WhenDense, Header::check_filter)?;
        let layout = Layout::from_validated(h.seed, h.nlines, h.k, h.block_bits);
        let mut f = BloomFilter::from_parts(blocks, layout, h.capacity, f64::from_bits(h.fpr_bits));
        f.key_format = h.key_format;
        Ok(f)
    }

    /// Saves the filter to `path` atomically: it is written to a temporary file in the same
    /// directory, flushed to disk (`fsync`), renamed over `path`, and the directory is
    /// synced. A crash or `kill -9` at any moment leaves either the previous file at `path`
    /// or the complete new one, never a mix.
    ///
    /// Safe while other threads insert (see [`write_to`](Self::write_to)).
    ///
    /// ```
    /// use blockbloom::BloomFilter;
    /// let dir = std::env::temp_dir().join(format!("blockbloom-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir).unwrap();
    /// let path = dir.join("seen.bloom");
    /// let f = BloomFilter::with_capacity(1000, 0.01)?;
    /// f.insert("https://example.com/");
    /// f.save(&path)?;
    /// assert!(BloomFilter::load(&path)?.contains("https://example.com/"));
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Io`] (the temporary file is removed).
    pub fn save<P: AsRef<Path>>(&self, path: P) -> Result<(), Error> {
        save_atomically(path.as_ref(), |w| self.write_to(w))
    }

    /// Loads a filter saved with [`save`](Self::save); see [`read_from`](Self::read_from) for
    /// the errors.
    ///
    /// Example at [`save`](Self::save).
    pub fn load<P: AsRef<Path>>(path: P) -> Result<BloomFilter, Error> {
        load_from(path.as_ref(), Self::read_from)
    }
}
