//! `blockbloom stats`: a snapshot's parameters, fill and estimates.

use std::io::{self, Write};
use std::path::Path;

use blockbloom::BloomFilter;

use crate::{human_bytes, write_err, Failure};

pub(crate) fn run(file: &Path) -> Result<(), Failure> {
    // A state in use by a `dedup` (or one whose last user was killed) is no valid snapshot
    // until closed: read it as the file-backed filter it is (closing it then seals it).
    let f = match BloomFilter::load(file) {
        Err(blockbloom::Error::InUse) => BloomFilter::open_file_existing(file),
        other => other,
    }
    .map_err(|e| Failure::Io(format!("{}: {e}", file.display())))?;
    let ones = f.count_ones();
    let s = format!(
        "file {}\nbits {} ({} blocks of 512), hashes {}, memory {}\ncapacity {}, target fpr {}\n\
         bits set {} ({:.2}%)\nestimated distinct keys {}\nestimated fpr now {:.6}%\n",
        file.display(),
        f.num_bits(),
        f.num_blocks(),
        f.num_hashes(),
        human_bytes(f.memory_bytes() as f64),
        f.capacity(),
        f.target_fpr(),
        ones,
        100.0 * ones as f64 / f.num_bits() as f64,
        f.estimated_len(),
        100.0 * f.estimated_fpr()
    );
    io::stdout()
        .lock()
        .write_all(s.as_bytes())
        .map_err(write_err)
}
