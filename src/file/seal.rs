//! The end of a file's use: the last closer's seal (the checksum of header and lines, the
//! flag cleared) after it checks the header again, or an unused open let go of.

use std::io::ErrorKind;
use std::os::unix::fs::FileExt;
use std::path::Path;

use xxhash_rust::xxh3::Xxh3;

use super::checks::{read_header, trailer_at};
use super::state::{FileCondition, FileKind, FileState};
use crate::error::Error;
use crate::format::{COUNT_AT, HEADER_BYTES, LAYERS_AT};
use crate::line::LINE_BYTES;
use crate::snapshot::for_line_bytes;
use crate::storage::Lines;

impl FileState {
    /// Lets go of a file that was opened but is not used (a chain refused after its first
    /// layer was opened): no seal — nothing was written through it — and the in-use flag
    /// cleared again if this open set it on a cleanly closed file that nobody else holds
    /// now, so the file is left byte for byte as it was.
    pub(crate) fn abandon(self) {
        let was_clean = matches!(self.found, FileCondition::ClosedCleanly { .. });
        if was_clean && self.lock.is_own() && self.file.try_lock().is_ok() {
            let flags = self.kind.flag();
            let _ = self
                .file
                .write_all_at(&flags.to_le_bytes(), 44)
                .and_then(|()| self.file.sync_data());
        }
    }

    /// Seals the file of `lines` (flushed) if this is its last user: its header read and
    /// checked against the one it was opened with, then the checksum written and the
    /// in-use flag cleared.
    pub(crate) fn seal(self, lines: &Lines) -> Result<(), Error> {
        if !self.lock.is_own() {
            // A forked child sharing its parent's open file description (and lock): taking
            // that lock exclusively would take it from the parent too. The parent seals.
            return Ok(());
        }
        match self.file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => return Ok(()), // others still use it
            Err(std::fs::TryLockError::Error(e)) => return Err(Error::io(&e, "locking")),
        }
        // The header as the file holds it, checked again: one damaged while in use is left
        // flagged in use (the next open refuses it), never sealed with a fresh checksum.
        let (header, _) =
            read_header(&self.file, Path::new("the filter file")).map_err(|e| Error::Io {
                kind: ErrorKind::InvalidData,
                message: format!("not sealing the filter file, whose header is damaged: {e}"),
            })?;
        if header != self.header {
            return Err(Error::Io {
                kind: ErrorKind::InvalidData,
                message: "not sealing the filter file, whose header no longer describes it".into(),
            });
        }
        let flags = self.kind.flag();
        let mut digest = Xxh3::new();
        digest.update(&header.encode(flags));
        for_line_bytes(lines, |b| {
            digest.update(b);
            Ok(())
        })?;
        // A layer's live counters too (no other user can change them now): a damaged
        // layer count would hide the layers after it.
        let nlines = lines.len() as u64;
        if self.kind == FileKind::Layer {
            let trailer = trailer_at(nlines) as usize;
            for at in [COUNT_AT, LAYERS_AT] {
                let word = lines.file_word(trailer + at);
                let value = word.map_or(0, |w| w.load(crate::sync::Ordering::Acquire));
                digest.update(&value.to_le_bytes());
            }
        }
        let end = HEADER_BYTES as u64 + nlines * LINE_BYTES as u64;
        let f = &self.file;
        f.write_all_at(&digest.digest().to_le_bytes(), end)
            .and_then(|()| f.sync_data())
            .and_then(|()| f.write_all_at(&flags.to_le_bytes(), 44))
            .and_then(|()| f.sync_data())
            .map_err(|e| Error::io(&e, "sealing the filter file"))
    }
}
