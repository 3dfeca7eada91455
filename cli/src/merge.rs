//! `blockbloom merge`: the union of states or snapshots, of either kind.
//!
//! Fixed-size inputs (snapshots, `--capacity` states) are ORed together and saved to OUT
//! atomically (through a symlink, to its target). Growing states are merged layer by layer
//! (chains of different lengths included) into OUT: a new growing state with the inputs'
//! parameters and seed, or, if OUT holds such a state, into it in place. Inputs must share
//! one seed (`dedup --seed`) and one key format (`--canonical-urls` options).
//!
//! An existing OUT that is not one of the inputs is never destroyed: holding a filter of
//! the inputs' kind and parameters, it is merged in as one more input; holding anything
//! else (another kind, other parameters, a file that is no filter) it is refused, unless
//! `--force` says to replace it.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use blockbloom::GrowableBloomFilter;

use crate::filter::{describe_key_format, Filter};
use crate::Failure;

pub(crate) fn run(out: &Path, inputs: &[PathBuf], force: bool) -> Result<(), Failure> {
    let out = &real_target(out);
    let mut inputs = inputs.to_vec();
    let mut filters = inputs
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
    if out.exists() && !inputs.iter().any(|p| same_file(p, out)) {
        let replace = |why: String| {
            Failure::Io(format!(
                "{} exists and {why}: it is left as it is. Name another OUT, or give --force \
                 to replace it",
                out.display()
            ))
        };
        match Filter::inspect(out) {
            Ok(existing) if force => drop(existing),
            Ok(existing) => match mergeable(&filters[0], &existing) {
                Ok(()) => {
                    // The same kind and parameters: merged in, as an input.
                    inputs.push(out.clone());
                    filters.push(existing);
                }
                Err(why) => return Err(replace(format!("holds {why}"))),
            },
            Err(_) if force => {}
            Err(Failure::Io(why) | Failure::Usage(why)) => {
                return Err(replace(format!(
                    "is not a blockbloom state or snapshot ({why})"
                )))
            }
            Err(e) => return Err(e),
        }
        if force {
            std::fs::remove_file(out)
                .map_err(|e| Failure::Io(format!("replacing {}: {e}", out.display())))?;
        }
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
    let keys = filters[0].key_format();
    if let Some((p, f)) = inputs
        .iter()
        .zip(&filters)
        .find(|(_, f)| f.key_format() != keys)
    {
        return Err(Failure::Io(format!(
            "{} has keys from {}, {} from {}: a union of keys made two ways answers for neither",
            inputs[0].display(),
            describe_key_format(keys),
            p.display(),
            describe_key_format(f.key_format())
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
                None => {
                    made = GrowableBloomFilter::builder()
                        .initial_capacity(first.initial_capacity())
                        .fpr(first.target_fpr())
                        .seed(seed)
                        .key_format(keys)
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

/// `Ok` if `existing` is a filter the inputs (of which `first` is one) can be merged into:
/// the same kind and parameters; else what it is instead.
fn mergeable(first: &Filter, existing: &Filter) -> Result<(), String> {
    match (first, existing) {
        (Filter::Fixed(a), Filter::Fixed(b))
            if (
                a.num_bits(),
                a.num_hashes(),
                a.block_bits(),
                a.seed(),
                a.key_format(),
            ) == (
                b.num_bits(),
                b.num_hashes(),
                b.block_bits(),
                b.seed(),
                b.key_format(),
            ) =>
        {
            Ok(())
        }
        (Filter::Growing(a), Filter::Growing(b))
            if (
                a.initial_capacity(),
                a.target_fpr(),
                a.seed(),
                a.key_format(),
            ) == (
                b.initial_capacity(),
                b.target_fpr(),
                b.seed(),
                b.key_format(),
            ) =>
        {
            Ok(())
        }
        (Filter::Fixed(_), Filter::Fixed(_)) | (Filter::Growing(_), Filter::Growing(_)) => {
            Err("a filter with other parameters (size, rate, seed or keys) than the inputs'".into())
        }
        (_, Filter::Expiring(_)) => Err("an expiring state".into()),
        (_, Filter::Growing(_)) => Err("a growing state, and the inputs are fixed-size".into()),
        (_, Filter::Fixed(_)) => Err("a fixed-size filter, and the inputs are growing".into()),
    }
}

/// `path` with its symlinks resolved (a dangling one to the file it would create), so that
/// the output is written through a link to its target, as `dedup --state` does.
fn real_target(path: &Path) -> PathBuf {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::read_link(&p) {
            Ok(target) => {
                p = match p.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                }
            }
            Err(_) => return p,
        }
    }
    p
}

/// Whether `a` and `b` name one file.
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}
