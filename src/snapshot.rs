//! Snapshots: saving a filter to bytes or a file and loading it back, in the format of
//! [`crate::format`] (`docs/FILES.md` shows the same table, checked by `tests/docs.rs`).
//!
//! Readers refuse (with an [`Error`]) any other magic, version or hash id, out-of-range
//! fields, a short file, trailing bytes or a checksum mismatch.

use std::fs::{self, File};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

use xxhash_rust::xxh3::Xxh3;

use crate::error::Error;
use crate::format::{
    BITSET_MAGIC, COUNTING_MAGIC, EXPIRES, GROWS, HEADER_BYTES, HEADER_CHECK_AT, IN_USE,
    KEY_FORMAT_AT, LEGACY_HEADER_BYTES, MAGIC, WINDOW_AT,
};
use crate::line::{Line, LINE_BYTES};
use crate::storage::{byte_size, HugePages, Lines};
use crate::{HASH_ALGORITHM_ID, MAX_HASHES};
/// Lines per I/O chunk (64 KiB).
const CHUNK_LINES: usize = 1024;

/// How much of an existing file an open checks before using it. The header's checksum is
/// checked on every open (O(1)); the lines can be checked against the checksum after them
/// only in a file whose last user closed it (its checksum is then current).
///
/// ```
/// use blockbloom::{BloomFilter, Verification};
/// # let dir = std::env::temp_dir().join(format!("bb-verification-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("huge.bloom");
/// drop(BloomFilter::open_file(&path, 1_000_000, 0.01)?); // created, then sealed
/// // Reads the whole file (as `load` does): the default.
/// let checked = BloomFilter::open_file_existing(&path)?;
/// drop(checked);
/// // Reads the header only, trusting the lines: O(1) for a file of any size.
/// let trusted = BloomFilter::open_file_existing_with(&path, Verification::HeaderOnly)?;
/// # drop(trusted);
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), blockbloom::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Verification {
    /// The header's checksum, and the lines of a cleanly closed file against the checksum
    /// after them (reading the whole file once: `docs/FILES.md` gives the cost). The default.
    #[default]
    Full,
    /// The header's checksum only; the lines are trusted. For huge files whose lines are
    /// known good (a file system with checksums of its own, say).
    HeaderOnly,
}

fn u32_at(h: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(h[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(h: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(h[at..at + 8].try_into().expect("8 bytes"))
}

/// The header fields of a snapshot (see the format table above). An [`AtomicBitSet`]
/// snapshot uses the same layout with its own magic, hash id 0, seed 0, `k` 0, the universe
/// in the capacity field and 0 for the rate.
///
/// [`AtomicBitSet`]: crate::AtomicBitSet
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Header {
    pub(crate) magic: [u8; 8],
    pub(crate) hash_id: u32,
    pub(crate) seed: u128,
    pub(crate) nlines: u64,
    pub(crate) k: u32,
    pub(crate) capacity: u64,
    pub(crate) fpr_bits: u64,
    /// Bits per block (64, 128, 256 or 512).
    pub(crate) block_bits: u32,
    /// An expiring filter's window in nanoseconds; 0 for the other kinds.
    pub(crate) window_nanos: u64,
    /// How the keys were made from their input (0: as given).
    pub(crate) key_format: u64,
    /// The format version it was read with ([`FORMAT_VERSION`](crate::format::FORMAT_VERSION) in a header made here).
    pub(crate) version: u32,
}

/// The header checksum of `header` (its bytes before [`HEADER_CHECK_AT`], flag `IN_USE`
/// cleared: setting and clearing it while the file is used does not change the check).
pub(crate) fn header_check(header: &[u8]) -> u64 {
    let mut bytes = [0u8; HEADER_CHECK_AT];
    bytes.copy_from_slice(&header[..HEADER_CHECK_AT]);
    let flags = u16::from_le_bytes([bytes[44], bytes[45]]) & !IN_USE;
    bytes[44..46].copy_from_slice(&flags.to_le_bytes());
    xxhash_rust::xxh3::xxh3_64(&bytes)
}

impl Header {
    /// The header's bytes (its version: [`FORMAT_VERSION`](crate::format::FORMAT_VERSION) for a header made here, a file's
    /// own for one read from it; with its checksum), with `flags` in the field at offset 44
    /// (0 in a snapshot).
    pub(crate) fn encode(&self, flags: u16) -> [u8; HEADER_BYTES] {
        let mut header = [0u8; HEADER_BYTES];
        header[0..8].copy_from_slice(&self.magic);
        header[8..12].copy_from_slice(&self.version.to_le_bytes());
        header[12..16].copy_from_slice(&self.hash_id.to_le_bytes());
        header[16..32].copy_from_slice(&self.seed.to_le_bytes());
        header[32..40].copy_from_slice(&self.nlines.to_le_bytes());
        header[40..44].copy_from_slice(&self.k.to_le_bytes());
        header[44..46].copy_from_slice(&flags.to_le_bytes());
        header[46..48].copy_from_slice(&(self.block_bits as u16).to_le_bytes());
        header[48..56].copy_from_slice(&self.capacity.to_le_bytes());
        header[56..64].copy_from_slice(&self.fpr_bits.to_le_bytes());
        header[WINDOW_AT..WINDOW_AT + 8].copy_from_slice(&self.window_nanos.to_le_bytes());
        header[KEY_FORMAT_AT..KEY_FORMAT_AT + 8].copy_from_slice(&self.key_format.to_le_bytes());
        let check = header_check(&header);
        header[HEADER_CHECK_AT..].copy_from_slice(&check.to_le_bytes());
        header
    }

    /// The length of the header that starts with `start` (its first 64 bytes): 128 bytes
    /// for the current version, 64 for versions 1 and 2.
    pub(crate) fn len_of(start: &[u8]) -> usize {
        match u32_at(start, 8) {
            1 | 2 => LEGACY_HEADER_BYTES,
            _ => HEADER_BYTES,
        }
    }

    /// Parses a header with magic `magic` (all of it: [`len_of`](Self::len_of) its first 64
    /// bytes): checks the magic, the version, the header checksum (versions 3 and 4) and the
    /// reserved bytes, and returns the fields and the flags (the field at offset 44).
    pub(crate) fn decode(header: &[u8], magic: [u8; 8]) -> Result<(Header, u16), Error> {
        if header.len() < LEGACY_HEADER_BYTES {
            return Err(Error::BadMagic);
        }
        if header[0..8] != magic {
            return Err(wrong_magic(&header[0..8]));
        }
        let version = u32_at(header, 8);
        let block_field = u16::from_le_bytes([header[46], header[47]]);
        let block_bits = match version {
            1 if block_field == 0 => 512,
            1 => return Err(Error::InvalidSnapshot("unknown flags in the header")),
            2..=4 if crate::math::BLOCK_SIZES.contains(&u32::from(block_field)) => {
                u32::from(block_field)
            }
            2..=4 => return Err(Error::InvalidSnapshot("block size out of range")),
            _ => return Err(Error::UnsupportedVersion(version)),
        };
        let (window_nanos, key_format) = if version >= 3 {
            if header.len() < HEADER_BYTES {
                return Err(Error::Truncated);
            }
            let stored = u64_at(header, HEADER_CHECK_AT);
            let computed = header_check(header);
            if stored != computed {
                return Err(Error::HeaderChecksumMismatch { stored, computed });
            }
            if header[KEY_FORMAT_AT + 8..HEADER_CHECK_AT]
                .iter()
                .any(|&b| b != 0)
            {
                return Err(Error::InvalidSnapshot("reserved header bytes are not zero"));
            }
            (u64_at(header, WINDOW_AT), u64_at(header, KEY_FORMAT_AT))
        } else {
            (0, 0)
        };
        let h = Header {
            magic,
            hash_id: u32_at(header, 12),
            seed: u128::from_le_bytes(header[16..32].try_into().expect("16 bytes")),
            nlines: u64_at(header, 32),
            k: u32_at(header, 40),
            capacity: u64_at(header, 48),
            fpr_bits: u64_at(header, 56),
            block_bits,
            window_nanos,
            key_format,
            version,
        };
        Ok((h, u16::from_le_bytes([header[44], header[45]])))
    }

    /// Refuses an expiring filter of a version before the planes layout, with how to
    /// rebuild it.
    pub(crate) fn check_expiring_version(&self) -> Result<(), Error> {
        if self.version < crate::format::EXPIRING_SINCE {
            return Err(Error::InvalidSnapshot(
                "an expiring filter of format version 3 or earlier (4-bit stamps), which this \
                 build does not read: rebuild it by deleting it and creating it again with \
                 the same options (`--expire-after` on the command line); what it remembered \
                 is new once more",
            ));
        }
        Ok(())
    }

    /// Checks a filter's header fields (everything [`decode`](Self::decode) does not).
    pub(crate) fn check_filter(&self) -> Result<(), Error> {
        if self.hash_id != HASH_ALGORITHM_ID {
            return Err(Error::UnknownHash(self.hash_id));
        }
        if self.nlines == 0 {
            return Err(Error::InvalidSnapshot("zero lines"));
        }
        if self.k == 0 || self.k > MAX_HASHES {
            return Err(Error::InvalidSnapshot("number of hashes out of range"));
        }
        if self.capacity == 0 {
            return Err(Error::InvalidSnapshot("zero capacity"));
        }
        let fpr = f64::from_bits(self.fpr_bits);
        if !(fpr > 0.0 && fpr < 1.0) {
            return Err(Error::InvalidSnapshot("target fpr out of (0, 1)"));
        }
        Ok(())
    }
}

/// The error for magic bytes `found` where another kind's were expected: another member's
/// snapshot says whose it is and how to read it; anything else is [`Error::BadMagic`].
fn wrong_magic(found: &[u8]) -> Error {
    Error::InvalidSnapshot(match found {
        m if m == MAGIC => {
            "a Bloom filter's snapshot or file (BloomFilter::load reads it; ExpiringBloomFilter::load \
             if it expires; a growing one's state is its files)"
        }
        m if m == COUNTING_MAGIC => {
            "a CountingBloomFilter's snapshot (CountingBloomFilter::load reads it)"
        }
        m if m == BITSET_MAGIC => "an AtomicBitSet's snapshot (AtomicBitSet::load reads it)",
        _ => return Error::BadMagic,
    })
}

/// Feeds the lines to `sink` as bytes of the format, 64 KiB at a time.
pub(crate) fn for_line_bytes(
    lines: &[Line],
    mut sink: impl FnMut(&[u8]) -> Result<(), Error>,
) -> Result<(), Error> {
    let mut buf = Vec::with_capacity(CHUNK_LINES * LINE_BYTES);
    for chunk in lines.chunks(CHUNK_LINES) {
        buf.clear();
        for line in chunk {
            line.append_le_bytes(&mut buf);
        }
        sink(&buf)?;
    }
    Ok(())
}

/// Writes `header` (with the kind's `flags`: 0, or [`EXPIRES`]), the lines and the
/// checksum.
pub(crate) fn write_snapshot<W: Write>(
    mut out: W,
    h: &Header,
    flags: u16,
    lines: &[Line],
) -> Result<(), Error> {
    let mut digest = Xxh3::new();
    let header = h.encode(flags);
    digest.update(&header);
    out.write_all(&header)
        .map_err(|e| Error::io(&e, "writing snapshot"))?;
    for_line_bytes(lines, |bytes| {
        digest.update(bytes);
        out.write_all(bytes)
            .map_err(|e| Error::io(&e, "writing snapshot"))
    })?;
    out.write_all(&digest.digest().to_le_bytes())
        .map_err(|e| Error::io(&e, "writing snapshot"))?;
    out.flush().map_err(|e| Error::io(&e, "writing snapshot"))
}

/// Reads a snapshot with magic `magic` and the kind's flags `kind` (0, or [`EXPIRES`]):
/// checks the magic, version and flags field, lets
/// `validate` check the other header fields *before* anything is allocated, then streams the
/// lines into a lazily zeroed allocation with huge pages as `huge` says, and checks the
/// checksum and the end of input.
pub(crate) fn read_snapshot<R: Read>(
    mut input: R,
    magic: [u8; 8],
    kind: u16,
    huge: HugePages,
    validate: impl FnOnce(&Header) -> Result<(), Error>,
) -> Result<(Header, Lines), Error> {
    let mut digest = Xxh3::new();
    let mut header = [0u8; HEADER_BYTES];
    input
        .read_exact(&mut header[..LEGACY_HEADER_BYTES])
        .map_err(|e| Error::io(&e, "reading snapshot"))?;
    if header[0..8] != magic {
        return Err(wrong_magic(&header[0..8]));
    }
    let header_len = Header::len_of(&header);
    let header = &mut header[..header_len];
    input
        .read_exact(&mut header[LEGACY_HEADER_BYTES..])
        .map_err(|e| Error::io(&e, "reading snapshot"))?;
    let (h, flags) = Header::decode(header, magic)?;
    if flags & GROWS != 0 {
        return Err(Error::InvalidSnapshot(
            "a layer of a growing file-backed filter: open it with \
             GrowableBloomFilter::open_file_existing",
        ));
    }
    if flags & IN_USE != 0 {
        return Err(Error::InUse);
    }
    if flags & EXPIRES != kind {
        return Err(Error::InvalidSnapshot(if kind == 0 {
            "an expiring filter: open it with ExpiringBloomFilter::load"
        } else {
            "not an expiring filter"
        }));
    }
    if flags & !EXPIRES != 0 {
        return Err(Error::InvalidSnapshot("unknown flags in the header"));
    }
    validate(&h)?;
    if h.nlines == 0 {
        return Err(Error::InvalidSnapshot("zero lines"));
    }
    let len = usize::try_from(h.nlines).map_err(|_| Error::TooLarge {
        bytes: h.nlines as u128 * LINE_BYTES as u128,
    })?;
    byte_size(len)?;
    digest.update(header);

    let lines = Lines::zeroed_with(len, huge)?;
    let mut buf = vec![0u8; CHUNK_LINES * LINE_BYTES];
    let mut written = 0u64;
    for chunk in lines.chunks(CHUNK_LINES) {
        let bytes = &mut buf[..chunk.len() * LINE_BYTES];
        input
            .read_exact(bytes)
            .map_err(|e| Error::io(&e, "reading snapshot"))?;
        digest.update(bytes);
        for (line, b) in chunk.iter().zip(bytes.chunks_exact(LINE_BYTES)) {
            // Zero words are not written: their pages stay untouched.
            written += line.store_le_bytes(b) as u64;
        }
    }
    // Huge pages as `huge` says; by default a dense snapshot gets them as a filter filled in
    // memory would (huge.rs).
    lines.count_loaded_lines(written);
    let mut stored = [0u8; 8];
    input
        .read_exact(&mut stored)
        .map_err(|e| Error::io(&e, "reading snapshot"))?;
    let stored = u64::from_le_bytes(stored);
    let computed = digest.digest();
    if stored != computed {
        return Err(Error::ChecksumMismatch { stored, computed });
    }
    let mut extra = [0u8; 1];
    match input.read(&mut extra) {
        Ok(0) => {}
        Ok(_) => return Err(Error::InvalidSnapshot("data after the checksum")),
        Err(e) => return Err(Error::io(&e, "reading snapshot")),
    }
    Ok((h, lines))
}

/// Reads the snapshot at `path` with `read_from` (a kind's reader), through a 1 MiB
/// buffer; a file that cannot be opened is an [`Error::Io`] naming `path`.
pub(crate) fn load_from<T>(
    path: &Path,
    read_from: impl FnOnce(BufReader<File>) -> Result<T, Error>,
) -> Result<T, Error> {
    let file = File::open(path).map_err(|e| Error::io(&e, &path.display().to_string()))?;
    read_from(BufReader::with_capacity(1 << 20, file))
}

/// Writes through `write` to a temporary file next to `path`, fsyncs it, renames it over
/// `path` and fsyncs the directory (see [`BloomFilter::save`]).
pub(crate) fn save_atomically(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> Result<(), Error>,
) -> Result<(), Error> {
    let ctx = path.display().to_string();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| Error::Io {
            kind: std::io::ErrorKind::InvalidInput,
            message: format!("{ctx}: not a file path"),
        })?
        .to_string_lossy()
        .into_owned();
    use crate::sync::unmodeled::{next, AtomicU64};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = next(&COUNTER);
    let tmp = dir.join(format!(".{name}.tmp.{}.{n}", std::process::id()));
    let result = (|| {
        // Errors name the path the caller gave, not the temporary file.
        let file = File::create(&tmp).map_err(|e| Error::io(&e, &ctx))?;
        let mut w = BufWriter::with_capacity(1 << 20, file);
        write(&mut w)?;
        let file = w.into_inner().map_err(|e| Error::io(e.error(), &ctx))?;
        file.sync_all().map_err(|e| Error::io(&e, &ctx))?;
        drop(file);
        fs::rename(&tmp, path).map_err(|e| Error::io(&e, &ctx))?;
        #[cfg(unix)]
        File::open(&dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| Error::io(&e, &dir.display().to_string()))?;
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}
