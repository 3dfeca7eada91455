//! `blockbloom merge`: the union of snapshots.

use std::path::{Path, PathBuf};

use blockbloom::BloomFilter;

use crate::Failure;

pub(crate) fn run(out: &Path, inputs: &[PathBuf]) -> Result<(), Failure> {
    let load = |p: &PathBuf| {
        BloomFilter::load(p).map_err(|e| Failure::Io(format!("{}: {e}", p.display())))
    };
    let acc = load(&inputs[0])?;
    for p in &inputs[1..] {
        acc.union(&load(p)?)
            .map_err(|e| Failure::Io(format!("{}: {e}", p.display())))?;
    }
    acc.save(out)
        .map_err(|e| Failure::Io(format!("{}: {e}", out.display())))
}
