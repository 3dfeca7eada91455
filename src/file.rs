//! The file-backed filter: [`BloomFilter::open_file`] maps a file in the snapshot format
//! (`format.rs`) `MAP_SHARED`, so the filter's blocks *are* the file's bytes, shared by every
//! thread and every process that opens it.
//!
//! # The file's life
//!
//! * **Create** (the file is missing): the header is written to a temporary file next to
//!   the path, the file is extended to its full size (sparse: O(1) whatever the size),
//!   synced, and hard-linked to the path — which fails if another process got there first,
//!   in which case its file is used. So the path only ever holds a complete header.
//! * **Open**: the header is checked (magic, version, its checksum, ranges, and the file's
//!   length against it) before anything else is done with the file. An opener that can
//!   take an exclusive `flock` is the file's only user: if its last user closed it (flag
//!   [`IN_USE`] clear), the lines are checked against the checksum after them
//!   ([`Verification::Full`], the default: the whole file read once), then the flag is set
//!   (and synced) so that snapshot readers refuse the file while its checksum is not
//!   current, and the lock turns shared. An opener that finds other users takes a shared
//!   lock and finds the flag set. The shared lock is held for as long as the filter lives.
//!   A file that fails a check is refused as it was: nothing is written to it.
//! * **Close** (drop, or [`BloomFilter::close`]): the mapping is flushed (`msync`); if no
//!   other handle has the file open (an exclusive `flock` can be had), the header is checked
//!   again (a header damaged while in use is never sealed over), the checksum of header and
//!   blocks is written after the blocks and the flag cleared: the file is then
//!   an ordinary snapshot (`load`, `blockbloom stats`, `merge` read it). Computing the
//!   checksum reads the whole file once.

use std::fs::{self, File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use xxhash_rust::xxh3::Xxh3;

use crate::block::BLOCK_BYTES;
use crate::error::Error;
use crate::format::{
    CHECKSUM_BYTES, EXPIRES, GROWS, HEADER_BYTES, IN_USE, LEGACY_HEADER_BYTES, MAGIC, TRAILER_BYTES,
};
use crate::hash::random_seed;
use crate::layout::Layout;
use crate::math;
use crate::snapshot::{for_block_bytes, Header, Verification};
use crate::storage::{reserve, Blocks, FileLock};
use crate::sync::AtomicU64;
use crate::{BloomFilter, Builder, HASH_ALGORITHM_ID};

/// Which filter a file holds: its flag in the header (format.rs), kept when it is sealed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FileKind {
    /// A fixed-size `BloomFilter` (no flag).
    Fixed,
    /// A layer of a growable chain (flag [`GROWS`], live counters after the checksum).
    Layer,
    /// An `ExpiringBloomFilter` (flag [`EXPIRES`]; its first line is its clock).
    Expiring,
}

impl FileKind {
    /// The kind's flag in the header.
    pub(crate) fn flag(self) -> u16 {
        match self {
            FileKind::Fixed => 0,
            FileKind::Layer => GROWS,
            FileKind::Expiring => EXPIRES,
        }
    }

    /// The kind whose flag is in `flags` (`None`: unknown flags).
    fn of_flags(flags: u16) -> Option<FileKind> {
        match flags & !IN_USE {
            0 => Some(FileKind::Fixed),
            GROWS => Some(FileKind::Layer),
            EXPIRES => Some(FileKind::Expiring),
            _ => None,
        }
    }

    /// The kind in words, for errors.
    pub(crate) fn name(self) -> &'static str {
        match self {
            FileKind::Fixed => "a fixed-size filter",
            FileKind::Layer => "a growable filter's layer",
            FileKind::Expiring => "an expiring filter",
        }
    }
}

/// What a file-backed filter keeps of its file: the open file (which holds the shared lock).
pub(crate) struct FileState {
    /// Registered for `fork` (storage/fork.rs); dropped before `file` is closed.
    lock: FileLock,
    file: File,
    kind: FileKind,
    /// How the file was found when it was opened.
    pub(crate) found: FileCondition,
}

/// How an open found a filter's file: what `blockbloom stats` reports of a state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileCondition {
    /// Its last user closed it: its checksum was current (and was checked against the lines
    /// unless the open asked for [`Verification::HeaderOnly`]).
    ClosedCleanly {
        /// Whether the lines were checked against the checksum.
        lines_verified: bool,
    },
    /// Other handles (threads or processes) had it open.
    InUse,
    /// Flagged in use, but nobody had it open: its last user was killed (or lost power)
    /// before it closed the file. Its header was checked; its lines cannot be.
    NotClosedCleanly,
}

/// The parameters a caller asked for, to compare with an existing file's.
pub(crate) struct Wanted {
    pub(crate) header: Header,
    /// Whether the caller fixed the seed (else any seed of the file is accepted).
    pub(crate) seed_fixed: bool,
    pub(crate) kind: FileKind,
    /// The first line of a new file (an expiring filter's clock line), else zeros.
    pub(crate) first_line: Option<[u8; BLOCK_BYTES]>,
    /// Whether the caller fixed the key format (else any key format of the file is accepted).
    pub(crate) key_format_fixed: bool,
    /// What an open of an existing file checks.
    pub(crate) verification: Verification,
}

fn io_err(e: std::io::Error, path: &Path) -> Error {
    Error::io(&e, &path.display().to_string())
}

/// The error of reserving the `len` bytes of the filter file at `path`.
fn no_room(e: std::io::Error, path: &Path, len: u64) -> Error {
    Error::io(
        &e,
        &format!("reserving {len} bytes on disk for {}", path.display()),
    )
}

/// Byte offset of a layer file's trailer (format.rs): after the checksum, padded to 64.
pub(crate) fn trailer_at(nblocks: u64) -> u64 {
    HEADER_BYTES as u64 + nblocks * BLOCK_BYTES as u64 + BLOCK_BYTES as u64
}

/// Bytes of a filter file of `kind` with `nblocks` blocks (a layer has a trailer).
fn file_len(nblocks: u64, kind: FileKind) -> Result<u64, Error> {
    let extra = if kind == FileKind::Layer {
        (BLOCK_BYTES + TRAILER_BYTES) as u64 // checksum padded to 64, then the trailer
    } else {
        CHECKSUM_BYTES as u64
    };
    nblocks
        .checked_mul(BLOCK_BYTES as u64)
        .and_then(|b| b.checked_add(HEADER_BYTES as u64 + extra))
        .filter(|&b| b <= isize::MAX as u64)
        .ok_or(Error::TooLarge {
            bytes: nblocks as u128 * BLOCK_BYTES as u128,
        })
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
        let s = math::size_filter_in(capacity, fpr, self.bits, self.hashes, block_bits)?;
        file_len(s.blocks, kind)?;
        let wanted = Wanted {
            header: Header {
                magic: MAGIC,
                hash_id: HASH_ALGORITHM_ID,
                seed: seed.unwrap_or_else(random_seed),
                nblocks: s.blocks,
                k: s.hashes,
                capacity,
                fpr_bits: s.target_fpr.to_bits(),
                block_bits,
                window_nanos: 0,
                key_format: self.key_format.unwrap_or(0),
            },
            seed_fixed: seed.is_some(),
            kind,
            first_line: None,
            key_format_fixed: self.key_format.is_some(),
            verification: self.verification,
        };
        if create {
            open_or_create(path, &wanted)
        } else {
            open_existing(
                &resolve_dangling_link(path)?,
                Some(&wanted),
                kind,
                self.verification,
            )
        }
    }
}

/// Opens `path`, creating it first if it is missing.
pub(crate) fn open_or_create(path: &Path, wanted: &Wanted) -> Result<BloomFilter, Error> {
    let path = resolve_dangling_link(path)?;
    for _ in 0..8 {
        match open_existing(&path, Some(wanted), wanted.kind, wanted.verification) {
            Err(Error::Io {
                kind: ErrorKind::NotFound,
                ..
            }) => create(&path, wanted)?, // then open what is there
            other => return other,
        }
    }
    Err(Error::Io {
        kind: ErrorKind::Other,
        message: format!("{}: created and removed again repeatedly", path.display()),
    })
}

/// A symlink whose target does not exist yet stands for that target (so that creating the
/// file creates the target, and the link keeps pointing at it).
pub(crate) fn resolve_dangling_link(path: &Path) -> Result<PathBuf, Error> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() && !p.exists() => {
                let target = fs::read_link(&p).map_err(|e| io_err(e, &p))?;
                p = match p.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            _ => return Ok(p),
        }
    }
    Ok(p)
}

/// Creates the file at `path` with the wanted header and zeroed blocks (but the first
/// line, if given), atomically (see the module docs); `Ok` also when another process
/// created it first.
fn create(path: &Path, wanted: &Wanted) -> Result<(), Error> {
    let header = &wanted.header;
    use crate::sync::unmodeled::{next, AtomicU64};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| Error::Io {
            kind: ErrorKind::InvalidInput,
            message: format!("{}: not a file path", path.display()),
        })?
        .to_string_lossy()
        .into_owned();
    let tmp = dir.join(format!(
        ".{name}.new.{}.{}",
        std::process::id(),
        next(&COUNTER)
    ));
    let result = (|| {
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| io_err(e, path))?;
        // Created in use: no checksum yet (its first user writes it on close).
        let flags = IN_USE | wanted.kind.flag();
        file.write_all_at(&header.encode(flags), 0)
            .map_err(|e| io_err(e, path))?;
        if let Some(line) = &wanted.first_line {
            file.write_all_at(line, HEADER_BYTES as u64)
                .map_err(|e| io_err(e, path))?;
        }
        let len = file_len(header.nblocks, wanted.kind)?;
        file.set_len(len).map_err(|e| io_err(e, path))?;
        reserve(&file, len).map_err(|e| no_room(e, path, len))?;
        file.sync_all().map_err(|e| io_err(e, path))?;
        match fs::hard_link(&tmp, path) {
            Ok(()) => {
                File::open(&dir)
                    .and_then(|d| d.sync_all())
                    .map_err(|e| io_err(e, &dir))?;
                Ok(())
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()), // another process won
            Err(e) => Err(io_err(e, path)),
        }
    })();
    let _ = fs::remove_file(&tmp);
    result
}

/// The header and flags of the filter file at `path`, read without opening it for use
/// (no lock, no flag set): what a growable chain checks of a file in its layers' place.
pub(crate) fn peek_header(path: &Path) -> Result<(Header, u16), Error> {
    let file = File::open(path).map_err(|e| io_err(e, path))?;
    read_header(&file, path)
}

/// Reads and decodes the header of the filter file `file` (at `path`, for errors): its
/// checksum checked. A file of format version 1 or 2 (no header checksum) is refused with
/// how to convert it.
fn read_header(file: &File, path: &Path) -> Result<(Header, u16), Error> {
    let mut bytes = [0u8; HEADER_BYTES];
    file.read_exact_at(&mut bytes[..LEGACY_HEADER_BYTES], 0)
        .map_err(|e| io_err(e, path))?;
    if bytes[0..8] == MAGIC && Header::len_of(&bytes) == LEGACY_HEADER_BYTES {
        return Err(Error::InvalidSnapshot(
            "a file of format version 1 or 2, whose header has no checksum: convert it to \
             the current version by loading it and saving it again (BloomFilter::load, then \
             save; `blockbloom merge NEW OLD` on the command line)",
        ));
    }
    file.read_exact_at(&mut bytes, 0)
        .map_err(|e| io_err(e, path))?;
    Header::decode(&bytes, MAGIC)
}

/// Checks the lines of the cleanly closed file `file` (`len` bytes, `header` of `nblocks`
/// lines) against the checksum after them, reading it once (1 MiB at a time).
fn verify_lines(file: &File, path: &Path, header: &[u8], nblocks: u64) -> Result<(), Error> {
    let mut digest = Xxh3::new();
    digest.update(header);
    let end = HEADER_BYTES as u64 + nblocks * BLOCK_BYTES as u64;
    let mut buf = vec![0u8; 1 << 20];
    let mut at = HEADER_BYTES as u64;
    while at < end {
        let n = (end - at).min(buf.len() as u64) as usize;
        file.read_exact_at(&mut buf[..n], at)
            .map_err(|e| io_err(e, path))?;
        digest.update(&buf[..n]);
        at += n as u64;
    }
    let mut stored = [0u8; CHECKSUM_BYTES];
    file.read_exact_at(&mut stored, end)
        .map_err(|e| io_err(e, path))?;
    let (stored, computed) = (u64::from_le_bytes(stored), digest.digest());
    if stored != computed {
        return Err(Error::ChecksumMismatch { stored, computed });
    }
    Ok(())
}

/// Opens the existing filter file at `path`, which must hold a filter of `kind`; with
/// `wanted`, its parameters must be those. See the module docs for the checks and the locks.
pub(crate) fn open_existing(
    path: &Path,
    wanted: Option<&Wanted>,
    kind: FileKind,
    verification: Verification,
) -> Result<BloomFilter, Error> {
    // A file found flagged clean under a shared lock was being sealed, or checked by its
    // next user: try again (a few rounds settle it; the bound only stops a livelock).
    for _ in 0..1000 {
        if let Some(f) = try_open_existing(path, wanted, kind, verification)? {
            return Ok(f);
        }
        std::thread::yield_now();
    }
    Err(Error::Io {
        kind: ErrorKind::WouldBlock,
        message: format!(
            "{}: sealed and reopened by others repeatedly",
            path.display()
        ),
    })
}

/// One round of [`open_existing`]: `None` if the file was found clean while others held it.
fn try_open_existing(
    path: &Path,
    wanted: Option<&Wanted>,
    kind: FileKind,
    verification: Verification,
) -> Result<Option<BloomFilter>, Error> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| io_err(e, path))?;
    // Alone (exclusive), an opener may check the lines and set the flag; with others
    // (shared), the file is theirs and in use. A closing user that seals the file holds it
    // exclusively too.
    let alone = match file.try_lock() {
        Ok(()) => true,
        Err(std::fs::TryLockError::WouldBlock) => {
            file.lock_shared().map_err(|e| io_err(e, path))?;
            false
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(io_err(e, path)),
    };
    let (h, flags) = read_header(&file, path)?;
    h.check_filter()?;
    let Some(found) = FileKind::of_flags(flags) else {
        return Err(Error::InvalidSnapshot("unknown flags in the header"));
    };
    if found != kind {
        return Err(Error::Conflict {
            what: "kind",
            file: found.name().into(),
            requested: kind.name().into(),
        });
    }
    let len = file_len(h.nblocks, kind)?;
    let meta = file.metadata().map_err(|e| io_err(e, path))?;
    let actual = meta.len();
    if actual < len {
        return Err(Error::Truncated);
    }
    if actual > len {
        return Err(Error::InvalidSnapshot(
            "the file is longer than its header says",
        ));
    }
    if let Some(w) = wanted {
        check_same(&h, w)?;
    }
    check_first_line(&file, path, &h, kind)?;
    let clean = flags & IN_USE == 0;
    if clean && !alone {
        return Ok(None);
    }
    let condition = match (clean, alone) {
        (true, _) => FileCondition::ClosedCleanly {
            lines_verified: verification == Verification::Full,
        },
        (false, true) => FileCondition::NotClosedCleanly,
        (false, false) => FileCondition::InUse,
    };
    if clean && verification == Verification::Full {
        verify_lines(&file, path, &h.encode(kind.flag()), h.nblocks)?;
    }
    // A file with holes (made by an older version, a sparse copy, a file system that could
    // not reserve) gets its blocks now, while running out of space is still an error — and
    // before the file is marked in use, so that a failed open leaves it as it was. One
    // whose allocated blocks cover its length has none: no call (`fallocate` would walk
    // its extents, ~10 ms for a GB).
    if std::os::unix::fs::MetadataExt::blocks(&meta).saturating_mul(512) < len {
        reserve(&file, len).map_err(|e| no_room(e, path, len))?;
    }
    let blocks = Blocks::map_file(&file, len as usize, HEADER_BYTES, h.nblocks as usize)?;
    let set_in_use = |flags: u16| {
        file.write_all_at(&(flags | IN_USE).to_le_bytes(), 44) // the u16 flags only
            .and_then(|()| file.sync_data())
            .map_err(|e| io_err(e, path))
    };
    if clean {
        set_in_use(flags)?;
    }
    if alone {
        // Shared from now on. The conversion is not atomic: a user that opened and closed
        // the file in between sealed it, so the flag is set again if it was cleared.
        file.lock_shared().map_err(|e| io_err(e, path))?;
        let mut now = [0u8; 2];
        file.read_exact_at(&mut now, 44)
            .map_err(|e| io_err(e, path))?;
        if u16::from_le_bytes(now) & IN_USE == 0 {
            set_in_use(flags)?;
        }
    }
    let mut f = BloomFilter::from_parts(
        blocks,
        Layout::from_validated(h.seed, h.nblocks, h.k, h.block_bits),
        h.capacity,
        f64::from_bits(h.fpr_bits),
    );
    f.key_format = h.key_format;
    f.set_file(FileState {
        lock: FileLock::register(&file),
        file,
        kind,
        found: condition,
    });
    Ok(Some(f))
}

/// An expiring filter's window, in its header and in its clock line (word 2), must agree:
/// checked before the file is used (the lines of a file in use are not covered by a
/// checksum, so a damaged clock line would otherwise set the window).
fn check_first_line(file: &File, path: &Path, h: &Header, kind: FileKind) -> Result<(), Error> {
    if kind != FileKind::Expiring {
        return Ok(());
    }
    let mut word = [0u8; 8];
    file.read_exact_at(&mut word, HEADER_BYTES as u64 + 16)
        .map_err(|e| io_err(e, path))?;
    if u64::from_le_bytes(word) != h.window_nanos {
        return Err(Error::InvalidSnapshot(
            "the window in the clock line is not the header's",
        ));
    }
    Ok(())
}

/// [`Error::Conflict`] unless the file's filter is the one asked for.
fn check_same(file: &Header, w: &Wanted) -> Result<(), Error> {
    let want = &w.header;
    let fpr = |bits: u64| f64::from_bits(bits).to_string();
    let (what, in_file, asked) = if file.capacity != want.capacity {
        (
            "capacity",
            file.capacity.to_string(),
            want.capacity.to_string(),
        )
    } else if file.fpr_bits != want.fpr_bits {
        ("target fpr", fpr(file.fpr_bits), fpr(want.fpr_bits))
    } else if file.block_bits != want.block_bits {
        (
            "block size",
            file.block_bits.to_string(),
            want.block_bits.to_string(),
        )
    } else if file.nblocks != want.nblocks {
        ("blocks", file.nblocks.to_string(), want.nblocks.to_string())
    } else if file.k != want.k {
        ("hashes", file.k.to_string(), want.k.to_string())
    } else if w.seed_fixed && file.seed != want.seed {
        ("seed", "(secret)".into(), "another seed".into())
    } else if w.key_format_fixed && file.key_format != want.key_format {
        (
            "key format",
            file.key_format.to_string(),
            want.key_format.to_string(),
        )
    } else {
        return Ok(());
    };
    Err(Error::Conflict {
        what,
        file: in_file,
        requested: asked,
    })
}

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
        open_existing(&path, None, FileKind::Fixed, verification)
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
        self.file_state().map(|s| s.found)
    }

    /// The live counter at trailer offset `at` of a growable chain's layer file
    /// (`format::COUNT_AT`, `format::LAYERS_AT`); `None` for any other filter.
    pub(crate) fn chain_word(&self, at: usize) -> Option<&AtomicU64> {
        if self.file_state()?.kind != FileKind::Layer {
            return None;
        }
        let trailer = trailer_at(self.num_lines() as u64) as usize;
        self.blocks_storage().file_word(trailer + at)
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
        self.blocks_storage().flush()
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
        self.file_state().is_some()
    }

    /// Flushes and, if last, seals the file; afterwards the filter is no longer file-backed
    /// (called by `close` and by `Drop`).
    pub(crate) fn close_file(&mut self) -> Result<(), Error> {
        let Some(state) = self.take_file() else {
            return Ok(());
        };
        self.flush()?;
        if !state.lock.is_own() {
            // A forked child sharing its parent's open file description (and lock): taking
            // that lock exclusively would take it from the parent too. The parent seals.
            return Ok(());
        }
        match state.file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Ok(()), // others still use it
            Err(std::fs::TryLockError::Error(e)) => return Err(Error::io(&e, "locking")),
        }
        // The header as the file holds it, checked again: one damaged while in use is left
        // flagged in use (the next open refuses it), never sealed with a fresh checksum.
        let (header, _) =
            read_header(&state.file, Path::new("the filter file")).map_err(|e| Error::Io {
                kind: ErrorKind::InvalidData,
                message: format!("not sealing the filter file, whose header is damaged: {e}"),
            })?;
        let expected = Header {
            window_nanos: header.window_nanos,
            ..Header::of_filter(self)
        };
        if header != expected {
            return Err(Error::Io {
                kind: ErrorKind::InvalidData,
                message: "not sealing the filter file, whose header no longer describes it".into(),
            });
        }
        let flags = state.kind.flag();
        let mut digest = Xxh3::new();
        digest.update(&header.encode(flags));
        for_block_bytes(self.blocks(), |b| {
            digest.update(b);
            Ok(())
        })?;
        let end = HEADER_BYTES as u64 + self.num_lines() as u64 * BLOCK_BYTES as u64;
        let f = &state.file;
        f.write_all_at(&digest.digest().to_le_bytes(), end)
            .and_then(|()| f.sync_data())
            .and_then(|()| f.write_all_at(&flags.to_le_bytes(), 44))
            .and_then(|()| f.sync_data())
            .map_err(|e| Error::io(&e, "sealing the filter file"))
    }
}
