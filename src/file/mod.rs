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

use crate::error::Error;
use crate::format::{CHECKSUM_BYTES, HEADER_BYTES, IN_USE, TRAILER_BYTES};

use crate::line::LINE_BYTES;
use crate::snapshot::{Header, Verification};
use crate::storage::{reserve, FileLock, Lines};
use crate::store::Store;

/// The error of reserving the `len` bytes of the filter file at `path`.
fn no_room(e: std::io::Error, path: &Path, len: u64) -> Error {
    Error::io(
        &e,
        &format!("reserving {len} bytes on disk for {}", path.display()),
    )
}

/// Bytes of a filter file of `kind` with `nlines` blocks (a layer has a trailer).
pub(crate) fn file_len(nlines: u64, kind: FileKind) -> Result<u64, Error> {
    let extra = if kind == FileKind::Layer {
        (LINE_BYTES + TRAILER_BYTES) as u64 // checksum padded to 64, then the trailer
    } else {
        CHECKSUM_BYTES as u64
    };
    nlines
        .checked_mul(LINE_BYTES as u64)
        .and_then(|b| b.checked_add(HEADER_BYTES as u64 + extra))
        .filter(|&b| b <= isize::MAX as u64)
        .ok_or(Error::TooLarge {
            bytes: nlines as u128 * LINE_BYTES as u128,
        })
}

/// Opens `path`, creating it first if it is missing.
pub(crate) fn open_or_create(path: &Path, wanted: &Wanted) -> Result<(Store, Header), Error> {
    let path = resolve_dangling_link(path)?;
    let mut created = false;
    for _ in 0..8 {
        match open_existing(&path, Some(wanted), wanted.kind, wanted.verification) {
            Err(Error::Io {
                kind: ErrorKind::NotFound,
                ..
            }) => created = create(&path, wanted)?, // then open what is there
            Ok((mut store, h)) if created => {
                // Ours, flagged in use from its creation: new, not left by a crash.
                if let Some(state) = store.file_state_mut() {
                    if state.found == FileCondition::NotClosedCleanly {
                        state.found = FileCondition::Created;
                    }
                }
                return Ok((store, h));
            }
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
/// line, if given), atomically (see the module docs); `Ok(false)` when another process
/// created it first.
fn create(path: &Path, wanted: &Wanted) -> Result<bool, Error> {
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
        let len = file_len(header.nlines, wanted.kind)?;
        file.set_len(len).map_err(|e| io_err(e, path))?;
        reserve(&file, len).map_err(|e| no_room(e, path, len))?;
        file.sync_all().map_err(|e| io_err(e, path))?;
        match fs::hard_link(&tmp, path) {
            Ok(()) => {
                File::open(&dir)
                    .and_then(|d| d.sync_all())
                    .map_err(|e| io_err(e, &dir))?;
                Ok(true)
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(false), // another process won
            Err(e) => Err(io_err(e, path)),
        }
    })();
    let _ = fs::remove_file(&tmp);
    result
}

/// Opens the existing filter file at `path`, which must hold a filter of `kind`; with
/// `wanted`, its parameters must be those. See the module docs for the checks and the locks.
pub(crate) fn open_existing(
    path: &Path,
    wanted: Option<&Wanted>,
    kind: FileKind,
    verification: Verification,
) -> Result<(Store, Header), Error> {
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
) -> Result<Option<(Store, Header)>, Error> {
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
    if kind == FileKind::Expiring {
        h.check_expiring_version()?;
    }
    let len = file_len(h.nlines, kind)?;
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
    let clean = flags & IN_USE == 0;
    check_first_line(&file, path, &h, kind, !clean)?;
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
        verify_lines(&file, path, &h.encode(kind.flag()), h.nlines, kind)?;
    }
    // A file with holes (made by an older version, a sparse copy, a file system that could
    // not reserve) gets its blocks now, while running out of space is still an error — and
    // before the file is marked in use, so that a failed open leaves it as it was. One
    // whose allocated blocks cover its length has none: no call (`fallocate` would walk
    // its extents, ~10 ms for a GB).
    if std::os::unix::fs::MetadataExt::blocks(&meta).saturating_mul(512) < len {
        reserve(&file, len).map_err(|e| no_room(e, path, len))?;
    }
    let blocks = Lines::map_file(&file, len as usize, HEADER_BYTES, h.nlines as usize)?;
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
    let state = FileState {
        lock: FileLock::register(&file),
        file,
        kind,
        found: condition,
        header: h.clone(),
    };
    Ok(Some((Store::mapped(blocks, state), h)))
}

pub(crate) mod checks;
mod seal;
pub(crate) mod state;

pub use state::FileCondition;
pub(crate) use state::{FileKind, FileState, Wanted};

pub(crate) use checks::read_header;
use checks::{check_first_line, check_same, io_err, verify_lines};
pub(crate) use checks::{peek_header, trailer_word};
