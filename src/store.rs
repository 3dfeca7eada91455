//! [`Store`]: a filter's lines and, for a file-backed filter, its file — what the plain and
//! the expiring filters each own (a growing chain's layers are plain filters). Flushing,
//! closing and sealing a file are here, once for every kind.

use crate::storage::Lines;

#[cfg(all(unix, not(blockbloom_loom)))]
use crate::{
    error::Error,
    file::state::{FileCondition, FileKind, FileState},
    sync::AtomicU64,
};

/// A filter's lines, and its file if it has one (closed, and sealed by its last user, when
/// the store drops).
pub(crate) struct Store {
    /// The lines (in memory, or a mapping of the file).
    pub(crate) lines: Lines,
    /// The file of a file-backed filter.
    #[cfg(all(unix, not(blockbloom_loom)))]
    file: Option<FileState>,
}

impl Store {
    /// Lines in memory.
    pub(crate) fn in_memory(lines: Lines) -> Store {
        Store {
            lines,
            #[cfg(all(unix, not(blockbloom_loom)))]
            file: None,
        }
    }
}

#[cfg(all(unix, not(blockbloom_loom)))]
impl Store {
    /// Lines that map the file of `state`.
    pub(crate) fn mapped(lines: Lines, state: FileState) -> Store {
        Store {
            lines,
            file: Some(state),
        }
    }

    /// The file, if file-backed.
    pub(crate) fn file_state(&self) -> Option<&FileState> {
        self.file.as_ref()
    }

    /// The file, to change how it was found (a creator's open).
    pub(crate) fn file_state_mut(&mut self) -> Option<&mut FileState> {
        self.file.as_mut()
    }

    /// How an open found the file (`None` in memory).
    pub(crate) fn file_condition(&self) -> Option<FileCondition> {
        self.file.as_ref().map(|s| s.found)
    }

    /// The live counter at trailer offset `at` of a growing chain's layer file; `None` for
    /// any other store.
    pub(crate) fn chain_word(&self, at: usize) -> Option<&AtomicU64> {
        if self.file.as_ref()?.kind != FileKind::Layer {
            return None;
        }
        let trailer = crate::file::checks::trailer_at(self.lines.len() as u64) as usize;
        self.lines.file_word(trailer + at)
    }

    /// Writes the mapping's changed pages to the file and waits for the disk (`msync`).
    pub(crate) fn flush(&self) -> Result<(), Error> {
        self.lines.flush()
    }

    /// Lets go of a file that was opened but not used (see `file::state::FileState::abandon`).
    pub(crate) fn abandon(&mut self) {
        if let Some(state) = self.file.take() {
            state.abandon();
        }
    }

    /// Flushes and, if this is the last user, seals the file; afterwards the store is in
    /// memory only (called by the filters' `close` and by `Drop`).
    pub(crate) fn close(&mut self) -> Result<(), Error> {
        let Some(state) = self.file.take() else {
            return Ok(());
        };
        self.flush()?;
        state.seal(&self.lines)
    }
}

#[cfg(all(unix, not(blockbloom_loom)))]
impl Drop for Store {
    /// A file-backed store is flushed and, if this was the last handle on its file, sealed
    /// (errors are ignored here: the filters' `close` reports them).
    fn drop(&mut self) {
        let _ = self.close();
    }
}
