//! `blockbloom merge`: the union of states or snapshots, of either kind.
//!
//! Fixed-size inputs (snapshots, `--capacity` states) are ORed together and saved to OUT
//! atomically. Growing states are merged layer by layer (chains of different lengths
//! included) into OUT: a new growing state with the inputs' parameters and seed, or, if OUT
//! is one of the inputs, that state in place. Inputs must share one seed (`dedup --seed`).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use blockbloom::GrowableBloomFilter;

use crate::filter::Filter;
use crate::Failure;

pub(crate) fn run(out: &Path, inputs: &[PathBuf]) -> Result<(), Failure> {
    let filters = inputs
        .iter()
        .map(|p| Filter::inspect(p))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some((p, _)) = inputs
        .iter()
        .zip(&filters)
        .find(|(_, f)| matches!(f, Filter::Expiring(_)))
    {
        return Err(Failure::Io(format!(
            "{} is an expiring state: merge combines fixed-size or growing ones only",
            p.display()
        )));
    }
    let seed = filters[0].seed();
    if let Some((p, f)) = inputs.iter().zip(&filters).find(|(_, f)| f.seed() != seed) {
        return Err(Failure::Io(format!(
            "seeds differ: {} has seed {seed}, {} has seed {}; only states made with the same \
             --seed can be merged",
            inputs[0].display(),
            p.display(),
            f.seed()
        )));
    }
    let io = |p: &Path, e: blockbloom::Error| Failure::Io(format!("{}: {e}", p.display()));
    let kinds = |p: &Path| {
        Failure::Io(format!(
            "{} and {} are of different kinds (one growing, one fixed-size): merge needs one \
             kind",
            inputs[0].display(),
            p.display()
        ))
    };
    match &filters[0] {
        Filter::Expiring(_) => unreachable!("refused above"),
        Filter::Fixed(acc) => {
            for (p, f) in inputs.iter().zip(&filters).skip(1) {
                let Filter::Fixed(f) = f else {
                    return Err(kinds(p));
                };
                acc.union(f).map_err(|e| io(p, e))?;
            }
            acc.save(out).map_err(|e| io(out, e))
        }
        Filter::Growing(first) => {
            let mut chains = Vec::new();
            for (p, f) in inputs.iter().zip(&filters) {
                let Filter::Growing(g) = f else {
                    return Err(kinds(p));
                };
                chains.push((p, g));
            }
            let made;
            let acc: &GrowableBloomFilter = match inputs.iter().position(|p| same_file(p, out)) {
                Some(i) => chains[i].1,
                None if out.exists() => {
                    return Err(Failure::Io(format!(
                        "{} exists and is not one of the inputs: name it as an input too to \
                         merge into it, or remove it",
                        out.display()
                    )))
                }
                None => {
                    made = GrowableBloomFilter::builder()
                        .initial_capacity(first.initial_capacity())
                        .fpr(first.target_fpr())
                        .seed(seed)
                        .open_file(out)
                        .map_err(|e| io(out, e))?;
                    &made
                }
            };
            for (p, g) in &chains {
                if !std::ptr::eq(*g, acc) {
                    acc.union(g).map_err(|e| io(p, e))?;
                }
            }
            acc.flush().map_err(|e| io(out, e))
        }
    }
}

/// Whether `a` and `b` name one file.
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}
