//! The file-backed [`BloomFilter`]'s own methods: `open_file` and its documentation (the
//! crash contract), `flush`, `close`, `file_condition` (the file's life is the store's:
//! `store.rs`, `file/`).

use std::path::Path;

use crate::error::Error;
use crate::file::{
    file_len, open_existing, open_or_create, resolve_dangling_link, FileCondition, FileKind, Wanted,
};
use crate::filter::Builder;
use crate::format::MAGIC;
use crate::hash::{random_seed, HASH_ALGORITHM_ID};
use crate::layout::Layout;
use crate::math;
use crate::snapshot::{Header, Verification};
use crate::store::Store;
use crate::sync::AtomicU64;
use crate::BloomFilter;

impl BloomFilter {
    /// The filter stored in the file at `path`, shared by every thread and every process
    /// that opens the same file: a filter for `capacity` keys at rate `fpr`, created (zeroed,
    /// with a random seed) if the file is missing.
    ///
    /// The returned filter is an ordinary `BloomFilter` whose blocks are the file's bytes,
    /// mapped `MAP_SHARED`: every method works on it, at the speed of memory, and the
    /// concurrency contract — no false negatives, at most one winner per new key — holds
    /// between the threads of one process **and between processes**. The atomic
    /// instructions operate on physical memory (the file's pages in the page cache), which
    /// every mapping of the file shares; the proof in
    /// [`insert_if_absent`](Self::insert_if_absent)'s docs is about operations on memory
    /// locations, and lock-free atomics are address-free (C++ [atomics.lockfree]: the same
    /// location seen through two mappings communicates atomically), so it holds unchanged.
    ///
    /// Opening is O(1) whatever the size: only the header is read, and pages are read from
    /// disk as keys touch them. The file is in the snapshot format (`docs/FILES.md`); while open its
    /// header carries an in-use flag and its checksum is not current, so
    /// [`load`](Self::load) refuses it; the last handle to close it writes the checksum
    /// (reading the file once), after which it is an ordinary snapshot again.
    ///
    /// # Crash contract
    /// * A process killed (even `SIGKILL`) loses nothing: every insert that returned is in
    ///   the shared pages, which the kernel writes to the file. The next `open_file` uses
    ///   the file as it is (it stays flagged in use until someone closes it).
    /// * A power loss or kernel crash can lose the pages not yet written back since the last
    ///   [`flush`](Self::flush): keys inserted since then may be reported new again (fetched
    ///   twice), never the reverse. Bits only go 0 → 1, so any mix of older and newer pages
    ///   is a filter whose keys are a subset of those inserted.
    /// * The path never holds a half-written header: creation writes it to a temporary file
    ///   and links it into place.
    /// * A full disk is an error here, never a crash later: the file's blocks are reserved
    ///   (`fallocate`, Linux) when it is created or opened with holes, so no write through
    ///   the mapping needs space (which would be `SIGBUS`). Where the file system cannot
    ///   reserve, the file stays sparse.
    ///
    /// A process may `fork` with the filter open: the child's copy uses the same file, and
    /// parent and child may close in either order — the last one seals it (on Linux the child
    /// gets an open file description and lock of its own at the fork; elsewhere a child never
    /// seals, its parent does).
    ///
    /// ```
    /// use blockbloom::BloomFilter;
    /// # let dir = std::env::temp_dir().join(format!("bb-open-file-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir).unwrap();
    /// let path = dir.join("seen.bloom");
    /// let seen = BloomFilter::open_file(&path, 1_000_000, 0.01)?;   // created
    /// assert!(seen.insert_if_absent("https://example.com/"));
    /// drop(seen);                                                    // flushed and sealed
    /// let again = BloomFilter::open_file(&path, 1_000_000, 0.01)?;  // the same bits
    /// assert!(!again.insert_if_absent("https://example.com/"));
    /// assert!(BloomFilter::open_file(&path, 2_000_000, 0.01).is_err()); // other parameters
    /// assert!(again.is_file_backed());
    /// again.flush()?;                                                // on disk now
    /// again.close()?;                                                // sealed, errors reported
    /// assert!(BloomFilter::load(&path)?.contains("https://example.com/")); // a snapshot
    ///
    /// // The file's own parameters, or a builder's (64-bit blocks, a known seed).
    /// let same = BloomFilter::open_file_existing(&path)?;
    /// assert_eq!(same.capacity(), 1_000_000);
    /// let small = BloomFilter::builder().capacity(1_000).block_bits(64).seed(1)
    ///     .open_file(dir.join("small.bloom"))?;
    /// assert_eq!(small.block_bits(), 64);
    /// # drop((same, small));
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    ///
    /// # Errors
    /// The sizing errors of [`with_capacity`](Self::with_capacity); [`Error::Conflict`] if
    /// the file holds a filter with another capacity or rate (use
    /// [`open_file_existing`](Self::open_file_existing) to take the file's own); every
    /// error of [`read_from`](Self::read_from) for a damaged header or a file whose length
    /// does not match it; [`Error::Io`] for the file system (missing directory, no
    /// permission, a read-only file; kind `StorageFull` when the disk has no room for it).
    pub fn open_file<P: AsRef<Path>>(
        path: P,
        capacity: u64,
        fpr: f64,
    ) -> Result<BloomFilter, Error> {
        Self::builder().capacity(capacity).fpr(fpr).open_file(path)
    }

    /// The filter in the existing file at `path`, with the file's own parameters (see
    /// [`open_file`](Self::open_file)).
    ///
    /// # Errors
    /// [`Error::Io`] with kind `NotFound` if there is no such file; otherwise as
    /// [`open_file`](Self::open_file).
    ///
    /// Example at [`BloomFilter::open_file`].
    pub fn open_file_existing<P: AsRef<Path>>(path: P) -> Result<BloomFilter, Error> {
        Self::open_file_existing_with(path, Verification::Full)
    }

    /// [`open_file_existing`](Self::open_file_existing), checking what `verification` says:
    /// [`Verification::HeaderOnly`] opens a cleanly closed file of any size in O(1).
    ///
    /// # Errors
    /// As [`open_file_existing`](Self::open_file_existing).
    ///
    /// Example at [`Verification`].
    pub fn open_file_existing_with<P: AsRef<Path>>(
        path: P,
        verification: Verification,
    ) -> Result<BloomFilter, Error> {
        let path = resolve_dangling_link(path.as_ref())?;
        open_existing(&path, None, FileKind::Fixed, verification).map(BloomFilter::from_opened)
    }

    /// How the open found the filter's file (`None` for a filter in memory): closed cleanly
    /// (and whether its lines were checked), in use by others, or left in use by a user that
    /// never closed it (killed, or a power loss).
    ///
    /// ```
    /// use blockbloom::{BloomFilter, FileCondition};
    /// # let dir = std::env::temp_dir().join(format!("bb-condition-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir).unwrap();
    /// let path = dir.join("s.bloom");
    /// let first = BloomFilter::open_file(&path, 1000, 0.01)?;
    /// let second = BloomFilter::open_file_existing(&path)?;
    /// assert_eq!(second.file_condition(), Some(FileCondition::InUse));
    /// drop((first, second));
    /// let third = BloomFilter::open_file_existing(&path)?;
    /// assert_eq!(third.file_condition(), Some(FileCondition::ClosedCleanly { lines_verified: true }));
    /// # drop(third);
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn file_condition(&self) -> Option<FileCondition> {
        self.store().file_condition()
    }

    /// The live counter at trailer offset `at` of a growable chain's layer file
    /// (`format::COUNT_AT`, `format::LAYERS_AT`); `None` for any other filter.
    pub(crate) fn chain_word(&self, at: usize) -> Option<&AtomicU64> {
        self.store().chain_word(at)
    }

    /// Writes a file-backed filter's changed pages to the file and waits for the disk
    /// (`msync`); after it returns, every insert that returned before the call survives a
    /// power loss. Does nothing for a filter in memory.
    ///
    /// # Errors
    /// [`Error::Io`] if the write-back fails.
    ///
    /// Example at [`BloomFilter::open_file`].
    pub fn flush(&self) -> Result<(), Error> {
        self.store().flush()
    }

    /// Closes a file-backed filter, reporting what dropping it would ignore: flushes it
    /// and, if this is the last handle on the file, writes its checksum (see
    /// [`open_file`](Self::open_file)). For a filter in memory, the same as dropping it.
    ///
    /// # Errors
    /// [`Error::Io`] if the write-back or the checksum cannot be written (the file then
    /// stays flagged in use, and its bits as flushed).
    ///
    /// Example at [`BloomFilter::open_file`].
    pub fn close(mut self) -> Result<(), Error> {
        self.close_file()
    }

    /// Whether the filter's blocks are a file ([`open_file`](Self::open_file)).
    ///
    /// Example at [`BloomFilter::open_file`].
    pub fn is_file_backed(&self) -> bool {
        self.store().file_state().is_some()
    }

    /// Lets go of the file of a filter that was opened but is not used (see
    /// `FileState::abandon`): the file is left byte for byte as it was.
    pub(crate) fn abandon_file(&mut self) {
        self.store_mut().abandon();
    }

    /// Flushes and, if last, seals the file; afterwards the filter is no longer file-backed.
    pub(crate) fn close_file(&mut self) -> Result<(), Error> {
        self.store_mut().close()
    }

    /// The filter on the store and header an open of its file gave.
    pub(crate) fn from_opened((store, h): (Store, Header)) -> BloomFilter {
        let mut f = BloomFilter::from_store(
            store,
            Layout::from_validated(h.seed, h.nlines, h.k, h.block_bits),
            h.capacity,
            f64::from_bits(h.fpr_bits),
        );
        f.key_format = h.key_format;
        f
    }
}

impl Builder {
    /// Opens the file-backed filter at `path` with this builder's parameters, creating the
    /// file if it is missing: see [`BloomFilter::open_file`]. A seed given with
    /// [`seed`](Self::seed) must match an existing file's; without one, a new file gets a
    /// random seed and an existing file keeps its own.
    ///
    /// # Errors
    /// As [`BloomFilter::open_file`].
    ///
    /// Example at [`BloomFilter::open_file`].
    pub fn open_file<P: AsRef<Path>>(self, path: P) -> Result<BloomFilter, Error> {
        self.open_file_kind(path.as_ref(), FileKind::Fixed, true)
    }

    /// `open_file` for a fixed filter or a growable chain's layer; with `create == false`,
    /// a missing file is an `Io` error of kind `NotFound`.
    pub(crate) fn open_file_kind(
        self,
        path: &Path,
        kind: FileKind,
        create: bool,
    ) -> Result<BloomFilter, Error> {
        let capacity = self.capacity.ok_or(Error::MissingCapacity)?;
        let (fpr, seed) = (self.fpr.unwrap_or(0.01), self.seed);
        let block_bits = self.block_bits.unwrap_or(512);
        let s = math::size_filter_sized(capacity, fpr, self.bits, self.hashes, block_bits)?;
        file_len(s.blocks, kind)?;
        let wanted = Wanted {
            header: Header {
                magic: MAGIC,
                hash_id: HASH_ALGORITHM_ID,
                seed: seed.unwrap_or_else(random_seed),
                nlines: s.blocks,
                k: s.hashes,
                capacity,
                fpr_bits: s.target_fpr.to_bits(),
                block_bits,
                window_nanos: 0,
                key_format: self.key_format.unwrap_or(0),
                version: crate::format::FORMAT_VERSION,
            },
            seed_fixed: seed.is_some(),
            kind,
            first_line: None,
            key_format_fixed: self.key_format.is_some(),
            verification: self.verification,
        };
        if create {
            open_or_create(path, &wanted).map(BloomFilter::from_opened)
        } else {
            open_existing(
                &resolve_dangling_link(path)?,
                Some(&wanted),
                kind,
                self.verification,
            )
            .map(BloomFilter::from_opened)
        }
    }
}
