//! `blockbloom stats`: a snapshot's (or a state's) parameters, fill and estimates.

use std::io::{self, Write};
use std::path::Path;

use blockbloom::{BloomFilter, Error, GrowableBloomFilter};

use crate::{human_bytes, write_err, Failure};

pub(crate) fn run(file: &Path) -> Result<(), Failure> {
    let fail = |e: Error| Failure::Io(format!("{}: {e}", file.display()));
    // A state in use by a `dedup` (or one whose last user was killed) is no valid snapshot
    // until closed: read it as the file-backed filter it is (closing it then seals it). A
    // growing state (made by `dedup --state` without --capacity) is a chain of layer files.
    let f = match BloomFilter::load(file) {
        Err(Error::InUse) => BloomFilter::open_file_existing(file),
        other => other,
    };
    let s = match f {
        Ok(f) => fixed(file, &f),
        Err(Error::Conflict { what: "kind", .. }) => growing(
            file,
            &GrowableBloomFilter::open_file_existing(file).map_err(fail)?,
        ),
        Err(Error::InvalidSnapshot(why)) if why.contains("GrowableBloomFilter") => growing(
            file,
            &GrowableBloomFilter::open_file_existing(file).map_err(fail)?,
        ),
        Err(e) => return Err(fail(e)),
    };
    io::stdout()
        .lock()
        .write_all(s.as_bytes())
        .map_err(write_err)
}

fn fixed(file: &Path, f: &BloomFilter) -> String {
    let ones = f.count_ones();
    format!(
        "file {}\nbits {} ({} blocks of {}), hashes {}, memory {}\ncapacity {}, target fpr {}\n\
         bits set {} ({:.2}%)\nestimated distinct keys {}\nestimated fpr now {:.6}%\n",
        file.display(),
        f.num_bits(),
        f.num_bits() / u64::from(f.block_bits()),
        f.block_bits(),
        f.num_hashes(),
        human_bytes(f.memory_bytes() as f64),
        f.capacity(),
        f.target_fpr(),
        ones,
        100.0 * ones as f64 / f.num_bits() as f64,
        f.estimated_len(),
        100.0 * f.estimated_fpr()
    )
}

fn growing(file: &Path, g: &GrowableBloomFilter) -> String {
    format!(
        "file {} (growing)\nlayers {}, memory {}\ninitial capacity {}, target fpr {}\n\
         distinct keys {}\nestimated fpr now {:.6}%\n",
        file.display(),
        g.num_layers(),
        human_bytes(g.memory_bytes() as f64),
        g.initial_capacity(),
        g.target_fpr(),
        g.estimated_len(),
        100.0 * g.estimated_fpr()
    )
}
