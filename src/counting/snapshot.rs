//! [`CountingBloomFilter`]'s snapshots: `write_to`, `read_from`, `save`, `load`, in the
//! snapshot format (`snapshot`) with the counting filter's own magic.

use std::io::{Read, Write};
use std::path::Path;

use super::CountingBloomFilter;
use crate::error::Error;
use crate::format::COUNTING_MAGIC;
use crate::hash::HASH_ALGORITHM_ID;
use crate::layout::Layout;
use crate::snapshot::{load_from, read_snapshot, save_atomically, write_snapshot, Header};
use crate::storage::HugePages;
use crate::store::Store;

impl CountingBloomFilter {
    /// Writes the filter in the snapshot format of [`BloomFilter::write_to`] with its own
    /// magic (`BLKCOUNT`): the lines of 4-bit counters as they are.
    ///
    /// Safe while other threads insert and remove: each word of counters is read at once,
    /// so a key inserted before the call began, and not removed since, is in the snapshot
    /// (guarantee 1 holds word by word).
    ///
    /// ```
    /// use blockbloom::CountingBloomFilter;
    /// let f = CountingBloomFilter::with_capacity(1000, 0.01)?;
    /// f.insert("a"); f.insert("a"); f.insert("b");
    /// f.remove("b");
    /// let mut bytes = Vec::new();
    /// f.write_to(&mut bytes)?;
    /// let g = CountingBloomFilter::read_from(&bytes[..])?;
    /// assert_eq!((g.estimated_count("a"), g.contains("b")), (2, false));
    /// assert_eq!((g.seed(), g.num_counters(), g.capacity()), (f.seed(), f.num_counters(), 1000));
    /// g.remove("a"); // a copy: `f` still counts "a" twice
    /// assert_eq!((f.estimated_count("a"), g.estimated_count("a")), (2, 1));
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Io`] when `out` fails.
    ///
    /// [`BloomFilter::write_to`]: crate::BloomFilter::write_to
    pub fn write_to<W: Write>(&self, out: W) -> Result<(), Error> {
        let h = Header {
            magic: COUNTING_MAGIC,
            hash_id: HASH_ALGORITHM_ID,
            seed: self.seed(),
            nlines: self.store.lines.len() as u64,
            k: self.num_hashes(),
            capacity: self.capacity,
            fpr_bits: self.target_fpr.to_bits(),
            block_bits: 512,
            window_nanos: 0,
            key_format: 0,
            version: crate::format::FORMAT_VERSION,
        };
        write_snapshot(out, &h, 0, &self.store.lines)
    }

    /// Reads a filter written by [`write_to`](Self::write_to) or [`save`](Self::save);
    /// every kind of damage is an [`Error`], as for [`BloomFilter::read_from`], never a
    /// panic. Another member's snapshot is an [`Error::InvalidSnapshot`] that says whose it
    /// is.
    ///
    /// ```
    /// use blockbloom::{BloomFilter, CountingBloomFilter};
    /// let mut plain = Vec::new();
    /// BloomFilter::with_capacity(1000, 0.01)?.write_to(&mut plain)?;
    /// let e = CountingBloomFilter::read_from(&plain[..]).unwrap_err();
    /// assert!(e.to_string().contains("BloomFilter::load reads it"));
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    ///
    /// [`BloomFilter::read_from`]: crate::BloomFilter::read_from
    pub fn read_from<R: Read>(input: R) -> Result<Self, Error> {
        let (h, lines) = read_snapshot(input, COUNTING_MAGIC, 0, HugePages::WhenDense, |h| {
            h.check_filter()?;
            if h.block_bits != 512 || h.window_nanos != 0 || h.key_format != 0 {
                return Err(Error::InvalidSnapshot(
                    "a counting filter's blocks are 512 bits, with no window or key format",
                ));
            }
            Ok(())
        })?;
        Ok(CountingBloomFilter {
            store: Store::in_memory(lines),
            layout: Layout::from_validated(h.seed, h.nlines, h.k, 512),
            capacity: h.capacity,
            target_fpr: f64::from_bits(h.fpr_bits),
        })
    }

    /// Saves the filter to `path` atomically (as [`BloomFilter::save`]: the previous file or
    /// the complete new one, whatever happens).
    ///
    /// ```
    /// use blockbloom::CountingBloomFilter;
    /// let path = std::env::temp_dir().join(format!("blockbloom-doc-counting-{}", std::process::id()));
    /// let f = CountingBloomFilter::with_capacity(1000, 0.01)?;
    /// f.insert("https://example.com/");
    /// f.save(&path)?;
    /// let g = CountingBloomFilter::load(&path)?;
    /// assert!(g.remove("https://example.com/") && !g.contains("https://example.com/"));
    /// # std::fs::remove_file(&path).unwrap();
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Io`] (the temporary file is removed).
    ///
    /// [`BloomFilter::save`]: crate::BloomFilter::save
    pub fn save<P: AsRef<Path>>(&self, path: P) -> Result<(), Error> {
        save_atomically(path.as_ref(), |w| self.write_to(w))
    }

    /// Loads a filter saved with [`save`](Self::save); errors as
    /// [`read_from`](Self::read_from), and [`Error::Io`] if the file cannot be read.
    ///
    /// Example at [`save`](Self::save).
    pub fn load<P: AsRef<Path>>(path: P) -> Result<Self, Error> {
        load_from(path.as_ref(), Self::read_from)
    }
}
