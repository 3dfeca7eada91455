//! What a file-backed filter keeps of its file, which filter a file holds, and what an open
//! asks for: the file layer's types, which the filters hold without importing the code that
//! opens files.

use std::fs::File;

use crate::format::{EXPIRES, GROWS, IN_USE};
use crate::line::LINE_BYTES;
use crate::snapshot::{Header, Verification};
use crate::storage::FileLock;

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
    pub(crate) fn of_flags(flags: u16) -> Option<FileKind> {
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
    pub(crate) lock: FileLock,
    pub(crate) file: File,
    pub(crate) kind: FileKind,
    /// How the file was found when it was opened.
    pub(crate) found: FileCondition,
    /// The header it was opened with: what a seal finds again, or refuses to seal.
    pub(crate) header: Header,
}

/// How an open found a filter's file: what `blockbloom stats` reports of a state.
///
/// Example at [`BloomFilter::file_condition`](crate::BloomFilter::file_condition).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
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
    /// The open created the file.
    Created,
}

/// The parameters a caller asked for, to compare with an existing file's.
pub(crate) struct Wanted {
    pub(crate) header: Header,
    /// Whether the caller fixed the seed (else any seed of the file is accepted).
    pub(crate) seed_fixed: bool,
    pub(crate) kind: FileKind,
    /// The first line of a new file (an expiring filter's clock line), else zeros.
    pub(crate) first_line: Option<[u8; LINE_BYTES]>,
    /// Whether the caller fixed the key format (else any key format of the file is accepted).
    pub(crate) key_format_fixed: bool,
    /// What an open of an existing file checks.
    pub(crate) verification: Verification,
}
