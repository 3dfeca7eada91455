//! What an open checks of a filter file before it uses it: the header (its checksum, the
//! version), a cleanly closed file's lines against the checksum after them, an expiring
//! file's window word, and the parameters a caller asked for.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

use xxhash_rust::xxh3::Xxh3;

use super::state::{FileKind, Wanted};
use crate::error::Error;
use crate::format::{
    CHECKSUM_BYTES, COUNT_AT, HEADER_BYTES, LAYERS_AT, LEGACY_HEADER_BYTES, MAGIC,
};
use crate::line::LINE_BYTES;
use crate::snapshot::Header;

/// The header and flags of the filter file at `path`, read without opening it for use
/// (no lock, no flag set): what a growable chain checks of a file in its layers' place.
pub(crate) fn peek_header(path: &Path) -> Result<(Header, u16), Error> {
    let file = File::open(path).map_err(|e| io_err(e, path))?;
    read_header(&file, path)
}

/// Reads and decodes the header of the filter file `file` (at `path`, for errors): its
/// checksum checked. A file of format version 1 or 2 (no header checksum) is refused with
/// how to convert it.
pub(crate) fn read_header(file: &File, path: &Path) -> Result<(Header, u16), Error> {
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

/// Checks the lines of the cleanly closed file `file` (`len` bytes, `header` of `nlines`
/// lines) against the checksum after them, reading it once (1 MiB at a time).
pub(super) fn verify_lines(
    file: &File,
    path: &Path,
    header: &[u8],
    nlines: u64,
    kind: FileKind,
) -> Result<(), Error> {
    let mut digest = Xxh3::new();
    digest.update(header);
    let end = HEADER_BYTES as u64 + nlines * LINE_BYTES as u64;
    let mut buf = vec![0u8; 1 << 20];
    let mut at = HEADER_BYTES as u64;
    while at < end {
        let n = (end - at).min(buf.len() as u64) as usize;
        file.read_exact_at(&mut buf[..n], at)
            .map_err(|e| io_err(e, path))?;
        digest.update(&buf[..n]);
        at += n as u64;
    }
    if kind == FileKind::Layer {
        for word in [COUNT_AT, LAYERS_AT] {
            digest.update(&trailer_word(file, path, nlines, word)?.to_le_bytes());
        }
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

/// An expiring filter's window, in its header and in its clock line (word 2), must agree:
/// checked before the file is used (the lines of a file in use are not covered by a
/// checksum, so a damaged clock line would otherwise set the window).
pub(super) fn check_first_line(
    file: &File,
    path: &Path,
    h: &Header,
    kind: FileKind,
    live: bool,
) -> Result<(), Error> {
    if kind != FileKind::Expiring {
        return Ok(());
    }
    let word = |i: u64| -> Result<u64, Error> {
        let mut w = [0u8; 8];
        file.read_exact_at(&mut w, HEADER_BYTES as u64 + 8 * i)
            .map_err(|e| io_err(e, path))?;
        Ok(u64::from_le_bytes(w))
    };
    if word(2)? != h.window_nanos {
        return Err(Error::InvalidSnapshot(
            "the window in the clock line is not the header's",
        ));
    }
    // A file no checksum vouches for (in use, or left in use by a crash): its newest epoch
    // (word 0, live state no header can cover) is bounded by this machine's clock, as every
    // call keeps it (guarantee 6 of `ExpiringBloomFilter`); one further ahead is damaged,
    // and would make every key in the filter new.
    if live {
        let window = crate::expiring::window::ExpiryWindow::new(std::time::Duration::from_nanos(
            h.window_nanos,
        ))
        .map_err(|_| Error::InvalidSnapshot("the window is out of range"))?;
        let latest =
            window.epoch_of(std::time::SystemTime::now() + std::time::Duration::from_secs(1));
        if word(0)? > latest + window.tolerated_lag() {
            return Err(Error::InvalidSnapshot(
                "the clock line's newest epoch is ahead of this machine's clock: damaged, or \
                 written by a clock that ran ahead (move the file away to start anew)",
            ));
        }
    }
    Ok(())
}

/// The live counter at trailer offset `at` of a growable chain's layer file of `nlines`
/// lines (`format::COUNT_AT`, `format::LAYERS_AT`), read from the file.
pub(crate) fn trailer_word(file: &File, path: &Path, nlines: u64, at: usize) -> Result<u64, Error> {
    let mut w = [0u8; 8];
    file.read_exact_at(&mut w, trailer_at(nlines) + at as u64)
        .map_err(|e| io_err(e, path))?;
    Ok(u64::from_le_bytes(w))
}

/// [`Error::Conflict`] unless the file's filter is the one asked for.
pub(super) fn check_same(file: &Header, w: &Wanted) -> Result<(), Error> {
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
    } else if file.nlines != want.nlines {
        ("lines", file.nlines.to_string(), want.nlines.to_string())
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

pub(crate) fn io_err(e: std::io::Error, path: &Path) -> Error {
    Error::io(&e, &path.display().to_string())
}

/// Byte offset of a layer file's trailer (format.rs): after the checksum, padded to 64.
pub(crate) fn trailer_at(nlines: u64) -> u64 {
    HEADER_BYTES as u64 + nlines * LINE_BYTES as u64 + LINE_BYTES as u64
}
