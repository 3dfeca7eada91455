//! The expiring filter in a file shared by processes, and its snapshots: the format of
//! `format.rs` with flag `EXPIRES`, the clock in the first line. The file's life (creation
//! by hard link, `flock`, the in-use flag, sealing by the last closer) is every filter's:
//! `src/file/` opens it, the filter's [`Store`] closes it.
// Loom builds leave out the files (`file/`), whose items these are too.
#![cfg_attr(blockbloom_loom, allow(unused_imports, unused_mut, dead_code))]

use core::time::Duration;
use std::io::{Read, Write};
use std::path::Path;

use super::window::ExpiryWindow;
use super::{
    sizing, Arrival, ExpiringBloomFilter, ExpiringBuilder, Params, IN_MEMORY_PAGES, WINDOW,
};
use crate::error::Error;
use crate::format::{EXPIRES, MAGIC};
use crate::snapshot::{load_from, read_snapshot, save_atomically, write_snapshot, Header};
use crate::store::Store;
use crate::sync::Ordering::Relaxed;

/// The header checks of an expiring filter beyond a plain filter's: the planes layout
/// (format version 4 on), a clock line and at least one key line, of 512 bits.
fn check_header(h: &Header) -> Result<(), Error> {
    h.check_expiring_version()?;
    h.check_filter()?;
    if h.nlines < 2 || h.block_bits != 512 {
        return Err(Error::InvalidSnapshot(
            "an expiring filter has 512-bit lines, at least two",
        ));
    }
    Ok(())
}

/// The expiring filter made of `store`'s lines (a clock line, then planes) and header `h`,
/// with the window its clock line records, which must be the header's (0 in a snapshot of
/// format version 1 or 2, which has none); [`Error::Conflict`] if `wanted` is another.
fn with_window(
    (mut store, h): (Store, Header),
    wanted: Option<ExpiryWindow>,
) -> Result<ExpiringBloomFilter, Error> {
    let nanos = store.lines[0].words()[WINDOW].load(Relaxed);
    let window = (|| {
        check_header(&h)?;
        if h.window_nanos != 0 && h.window_nanos != nanos {
            return Err(Error::InvalidSnapshot(
                "the window in the clock line is not the header's",
            ));
        }
        let window = ExpiryWindow::new(Duration::from_nanos(nanos))
            .map_err(|_| Error::InvalidSnapshot("the window is out of range"))?;
        match wanted.filter(|w| *w != window) {
            Some(w) => Err(window_conflict(window, w)),
            None => Ok(window),
        }
    })();
    match window {
        Ok(window) => {
            let params = Params {
                seed: h.seed,
                hashes: h.k,
                capacity: h.capacity,
                target_fpr: f64::from_bits(h.fpr_bits),
                key_format: h.key_format,
            };
            Ok(ExpiringBloomFilter::from_store(store, params, window))
        }
        Err(e) => {
            #[cfg(all(unix, not(blockbloom_loom)))]
            store.abandon(); // refused: a file as it was, not sealed
            Err(e)
        }
    }
}

/// The [`Error::Conflict`] of a file made with the window `file` opened for `asked`.
fn window_conflict(file: ExpiryWindow, asked: ExpiryWindow) -> Error {
    Error::Conflict {
        what: "expire_after",
        file: format!("{:?}", file.expire_after()),
        requested: format!("{:?}", asked.expire_after()),
    }
}

#[cfg(all(unix, not(blockbloom_loom)))]
impl ExpiringBuilder {
    /// Opens the expiring filter in the file at `path`, creating it (empty, recording this
    /// window) if it is missing: one filter shared by every process that opens the path.
    /// An existing file must have been made with the same window, capacity, rate and
    /// [`arrival`](Self::arrival) ([`Error::Conflict`]), and the same seed if one is fixed
    /// here.
    ///
    /// Everything [`BloomFilter::open_file`](crate::BloomFilter::open_file) promises holds: the planes and the clock (the
    /// newest epoch, the last sweep) are the file's bytes, mapped shared, so the guarantees
    /// at [`ExpiringBloomFilter`] hold between processes as between threads — the epoch
    /// change is agreed through the file, the first process to see it sweeps — and a
    /// process killed even with `SIGKILL` loses nothing it was told was inserted.
    ///
    /// ```
    /// use blockbloom::ExpiringBloomFilter;
    /// use std::time::{Duration, SystemTime};
    /// # let dir = std::env::temp_dir().join(format!("bb-exp-file-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir).unwrap();
    /// let path = dir.join("seen.bloom");
    /// let day = Duration::from_secs(86_400);
    /// let open = || ExpiringBloomFilter::builder().expire_after(30 * day).capacity(100_000)
    ///     .open_file(&path);
    /// let seen = open()?;                                   // created
    /// let t = SystemTime::now() - 40 * day;                 // a replay: up to the clock
    /// assert!(seen.insert_if_absent_at("https://example.com/", t));
    /// assert!(seen.is_file_backed());
    /// seen.flush()?;                                        // on disk now
    /// seen.close()?;                                        // sealed, errors reported
    /// let again = open()?;                                  // the same planes and clock
    /// assert!(!again.insert_if_absent_at("https://example.com/", t + day));
    /// assert!(again.insert_if_absent_at("https://example.com/", t + 38 * day));
    /// // Another window is refused; the file's own parameters:
    /// let week = ExpiringBloomFilter::builder().expire_after(7 * day).capacity(100_000);
    /// assert!(week.open_file(&path).is_err());
    /// assert_eq!(ExpiringBloomFilter::open_file_existing(&path)?.expire_after(), 30 * day);
    /// # drop(again);
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    ///
    /// # Errors
    /// Those of [`build`](Self::build) and of [`BloomFilter::open_file`](crate::BloomFilter::open_file), and
    /// [`Error::Conflict`] with `what` `"kind"` for a file that holds another kind of filter.
    pub fn open_file<P: AsRef<Path>>(self, path: P) -> Result<ExpiringBloomFilter, Error> {
        let p = self.checked()?;
        let s = sizing(p.capacity, p.fpr, p.arrival, &p.window)?;
        let mut first_line = [0u8; crate::line::LINE_BYTES];
        first_line[WINDOW * 8..WINDOW * 8 + 8].copy_from_slice(&p.window.nanos().to_le_bytes());
        let wanted = crate::file::Wanted {
            header: Header {
                magic: MAGIC,
                hash_id: crate::HASH_ALGORITHM_ID,
                seed: p.seed.unwrap_or_else(crate::hash::random_seed),
                nlines: s.blocks + 1,
                k: s.hashes,
                capacity: p.capacity,
                fpr_bits: s.target_fpr.to_bits(),
                block_bits: 512,
                window_nanos: p.window.nanos(),
                key_format: p.key_format.unwrap_or(0),
                version: crate::format::FORMAT_VERSION,
            },
            seed_fixed: p.seed.is_some(),
            kind: crate::file::FileKind::Expiring,
            first_line: Some(first_line),
            key_format_fixed: p.key_format.is_some(),
            verification: p.verification,
        };
        // The window is compared first, so that another window is named as such.
        if let Ok((h, _)) = crate::file::peek_header(path.as_ref()) {
            if h.window_nanos != p.window.nanos() && h.window_nanos != 0 {
                if let Ok(file_window) = ExpiryWindow::new(Duration::from_nanos(h.window_nanos)) {
                    return Err(window_conflict(file_window, p.window));
                }
            }
            // Then the arrival it was sized for, where that is the only difference.
            let other = match p.arrival {
                Arrival::Steady => Arrival::WorstBurst,
                Arrival::WorstBurst => Arrival::Steady,
            };
            let theirs = sizing(p.capacity, p.fpr, other, &p.window).map(|s| s.blocks + 1);
            let ours = (p.capacity, s.target_fpr.to_bits());
            if ((h.capacity, h.fpr_bits), Ok(h.nlines)) == (ours, theirs) {
                return Err(Error::Conflict {
                    what: "arrival",
                    file: format!("{other:?}"),
                    requested: format!("{:?}", p.arrival),
                });
            }
        }
        with_window(
            crate::file::open_or_create(path.as_ref(), &wanted)?,
            Some(p.window),
        )
    }
}

#[cfg(all(unix, not(blockbloom_loom)))]
impl ExpiringBloomFilter {
    /// The expiring filter in the existing file at `path`, with the file's own window and
    /// parameters (see [`ExpiringBuilder::open_file`]).
    ///
    /// # Errors
    /// [`Error::Io`] with kind `NotFound` if there is no such file; otherwise as
    /// [`ExpiringBuilder::open_file`].
    ///
    /// Example at [`ExpiringBuilder::open_file`].
    pub fn open_file_existing<P: AsRef<Path>>(path: P) -> Result<ExpiringBloomFilter, Error> {
        Self::open_file_existing_with(path, crate::Verification::Full)
    }

    /// [`open_file_existing`](Self::open_file_existing), checking what `verification` says
    /// (see [`BloomFilter::open_file_existing_with`](crate::BloomFilter::open_file_existing_with)).
    ///
    /// ```
    /// use blockbloom::{ExpiringBloomFilter, Verification};
    /// use std::time::Duration;
    /// # let dir = std::env::temp_dir().join(format!("bb-exp-existing-with-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir).unwrap();
    /// let path = dir.join("s.bloom");
    /// drop(ExpiringBloomFilter::builder().expire_after(Duration::from_secs(60)).capacity(100)
    ///     .open_file(&path)?);
    /// let f = ExpiringBloomFilter::open_file_existing_with(&path, Verification::HeaderOnly)?;
    /// assert_eq!(f.expire_after(), Duration::from_secs(60));
    /// # drop(f);
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`open_file_existing`](Self::open_file_existing).
    pub fn open_file_existing_with<P: AsRef<Path>>(
        path: P,
        verification: crate::Verification,
    ) -> Result<ExpiringBloomFilter, Error> {
        let path = crate::file::resolve_dangling_link(path.as_ref())?;
        let opened =
            crate::file::open_existing(&path, None, crate::file::FileKind::Expiring, verification)?;
        with_window(opened, None)
    }

    /// How the file was found when it was opened (see [`BloomFilter::file_condition`](crate::BloomFilter::file_condition));
    /// `None` in memory.
    ///
    /// Example at [`BloomFilter::file_condition`](crate::BloomFilter::file_condition).
    pub fn file_condition(&self) -> Option<crate::FileCondition> {
        self.store.file_condition()
    }

    /// How the keys were made from their input, as recorded by
    /// [`ExpiringBuilder::key_format`] (0 unless one was given).
    ///
    /// Example at [`ExpiringBuilder::key_format`].
    pub fn key_format(&self) -> u64 {
        self.key_format
    }

    /// Writes a file-backed filter's changed pages to the file and waits for the disk (see
    /// [`BloomFilter::flush`](crate::BloomFilter::flush)). Does nothing for a filter in memory.
    ///
    /// # Errors
    /// [`Error::Io`] if the write-back fails.
    ///
    /// Example at [`ExpiringBuilder::open_file`].
    pub fn flush(&self) -> Result<(), Error> {
        self.store.flush()
    }

    /// Closes a file-backed filter, reporting what dropping it would ignore (see
    /// [`BloomFilter::close`](crate::BloomFilter::close)). For a filter in memory, the same as dropping it.
    ///
    /// # Errors
    /// [`Error::Io`] if the write-back or the checksum cannot be written.
    ///
    /// Example at [`ExpiringBuilder::open_file`].
    pub fn close(mut self) -> Result<(), Error> {
        self.store.close()
    }

    /// Whether the filter is a file ([`ExpiringBuilder::open_file`]).
    ///
    /// Example at [`ExpiringBuilder::open_file`].
    pub fn is_file_backed(&self) -> bool {
        self.store.file_state().is_some()
    }
}

impl ExpiringBloomFilter {
    /// Writes the filter — its planes, its clock and its window — in the snapshot format
    /// (flag `EXPIRES`; `docs/FILES.md`) to `out`. Safe while other threads insert: inserts
    /// that race with it may or may not be in the snapshot.
    ///
    /// ```
    /// use blockbloom::ExpiringBloomFilter;
    /// use std::time::{Duration, SystemTime};
    /// let hour = Duration::from_secs(3600);
    /// let f = ExpiringBloomFilter::builder().expire_after(hour).capacity(1000).build()?;
    /// let t = SystemTime::now() - 2 * hour;
    /// f.insert_at("https://example.com/", t);
    /// let mut bytes = Vec::new();
    /// f.write_to(&mut bytes)?;
    /// let g = ExpiringBloomFilter::read_from(&bytes[..])?;
    /// assert!(g.contains_at("https://example.com/", t + hour / 2));
    /// assert!(!g.contains_at("https://example.com/", t + g.forgotten_after()));
    /// assert_eq!((g.expire_after(), g.seed()), (hour, f.seed()));
    /// // A plain filter's reader refuses it.
    /// assert!(blockbloom::BloomFilter::read_from(&bytes[..]).is_err());
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Io`] when `out` fails.
    pub fn write_to<W: Write>(&self, out: W) -> Result<(), Error> {
        let header = Header {
            magic: MAGIC,
            hash_id: crate::HASH_ALGORITHM_ID,
            seed: self.seed(),
            nlines: self.store.lines.len() as u64,
            k: self.layout.num_hashes(),
            capacity: self.capacity,
            fpr_bits: self.target_fpr.to_bits(),
            block_bits: 512,
            window_nanos: self.window.nanos(),
            key_format: self.key_format,
            version: crate::format::FORMAT_VERSION,
        };
        write_snapshot(out, &header, EXPIRES, &self.store.lines)
    }

    /// Reads a filter written by [`write_to`](Self::write_to) or [`save`](Self::save); every
    /// kind of damage is an error, as for [`BloomFilter::read_from`](crate::BloomFilter::read_from).
    ///
    /// Example at [`write_to`](Self::write_to).
    pub fn read_from<R: Read>(input: R) -> Result<ExpiringBloomFilter, Error> {
        let (h, blocks) = read_snapshot(input, MAGIC, EXPIRES, IN_MEMORY_PAGES, check_header)?;
        with_window((Store::in_memory(blocks), h), None)
    }

    /// Saves the filter to `path` atomically, as [`BloomFilter::save`](crate::BloomFilter::save) does.
    ///
    /// ```
    /// use blockbloom::ExpiringBloomFilter;
    /// use std::time::Duration;
    /// # let dir = std::env::temp_dir().join(format!("bb-exp-save-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir).unwrap();
    /// let f = ExpiringBloomFilter::builder()
    ///     .expire_after(Duration::from_secs(86_400)).capacity(1000).build()?;
    /// f.insert("https://example.com/");
    /// f.save(dir.join("seen.snapshot"))?;
    /// assert!(ExpiringBloomFilter::load(dir.join("seen.snapshot"))?.contains("https://example.com/"));
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::Io`] (the temporary file is removed).
    pub fn save<P: AsRef<Path>>(&self, path: P) -> Result<(), Error> {
        save_atomically(path.as_ref(), |w| self.write_to(w))
    }

    /// Loads a filter saved with [`save`](Self::save); see [`read_from`](Self::read_from).
    ///
    /// Example at [`save`](Self::save).
    pub fn load<P: AsRef<Path>>(path: P) -> Result<ExpiringBloomFilter, Error> {
        load_from(path.as_ref(), Self::read_from)
    }
}
