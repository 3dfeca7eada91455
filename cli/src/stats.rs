//! `blockbloom stats`: a snapshot's (or a state's) parameters, fill and estimates.

use std::io::{self, Write};
use std::path::Path;

use std::time::{Duration, SystemTime};

use blockbloom::{BloomFilter, ExpiringBloomFilter, GrowableBloomFilter};

use crate::filter::{describe_key_format, human_duration, Filter};
use crate::{estimate, human_bytes, write_err, Failure};

pub(crate) fn run(file: &Path) -> Result<(), Failure> {
    // A state in use by a `dedup` (or one whose last user was killed) is read as the
    // file-backed filter it is; a growing state is a chain of layer files, each listed. A
    // file in the way of its layers makes the open fail, with the path and what to do.
    let filter = Filter::inspect(file)?;
    let mut s = match &filter {
        Filter::Fixed(f) => fixed(file, f),
        Filter::Growing(g) => growing(file, g),
        Filter::Expiring(e) => expiring(file, e),
    };
    s.push_str(&format!(
        "keys from {}\n{}\n",
        describe_key_format(filter.key_format()),
        condition(filter.condition())
    ));
    io::stdout()
        .lock()
        .write_all(s.as_bytes())
        .map_err(write_err)
}

/// How the file was found, in words.
fn condition(c: Option<blockbloom::FileCondition>) -> &'static str {
    use blockbloom::FileCondition::{ClosedCleanly, InUse, NotClosedCleanly};
    match c {
        None | Some(ClosedCleanly { .. }) => "closed cleanly: header and lines verified",
        Some(InUse) => "in use by another run: header verified (lines are checked once closed)",
        Some(NotClosedCleanly) => {
            "not closed cleanly (its last run was killed, or the machine lost power): header \
             verified, lines not verifiable"
        }
        Some(_) => "just created",
    }
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
        estimate(f.estimated_len() as f64),
        100.0 * f.estimated_fpr()
    )
}

fn growing(file: &Path, g: &GrowableBloomFilter) -> String {
    let files: Vec<String> = g
        .layer_paths()
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    format!(
        "file {} (growing)\nlayers {}, memory {}\nlayer files {}\ninitial capacity {}, target \
         fpr {}\ndistinct keys {}\nestimated fpr now {:.6}%\n",
        file.display(),
        g.num_layers(),
        human_bytes(g.memory_bytes() as f64),
        files.join(", "),
        g.initial_capacity(),
        g.target_fpr(),
        g.estimated_len(),
        100.0 * g.estimated_fpr()
    )
}

fn expiring(file: &Path, e: &ExpiringBloomFilter) -> String {
    let oldest = match e.oldest_generation_start() {
        Some(t) => {
            let age = SystemTime::now().duration_since(t).unwrap_or_default();
            format!(
                "started {} ago",
                human_duration(Duration::from_secs(age.as_secs()))
            )
        }
        None => "none (never used)".into(),
    };
    format!(
        "file {} (expiring)\nwindow {} (epochs of {}; forgotten after {} at most)\n\
         oldest generation {}\nlines {} of 4 planes (a generation each), hashes {}, memory {}\n\
         capacity {} per window ({}), target fpr {}\nestimated distinct keys live {}\n\
         estimated fpr now {:.6}%\n",
        file.display(),
        human_duration(e.expire_after()),
        human_duration(e.epoch()),
        human_duration(e.forgotten_after()),
        oldest,
        e.num_lines(),
        e.num_hashes(),
        human_bytes(e.memory_bytes() as f64),
        e.capacity(),
        match e.arrival() {
            blockbloom::Arrival::Steady => "at a steady rate",
            blockbloom::Arrival::WorstBurst => "in any order: sized for the worst burst",
        },
        e.target_fpr(),
        estimate(e.estimated_len() as f64),
        100.0 * e.estimated_fpr()
    )
}
