//! `blockbloom`: deduplicate lines with a Bloom filter, size filters, inspect and merge
//! snapshots. Exit codes: 0 ok, 1 usage error, 2 I/O or snapshot error.

//!
//! One file per subcommand: `dedup.rs`, `calc.rs`, `stats.rs`, `merge.rs`; this file holds
//! the command line, the exit codes and what the subcommands share.

mod calc;
mod dedup;
mod filter;
mod merge;
mod output;
mod reader;
mod stats;

use std::io;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "blockbloom",
    version,
    about = "Deduplicate huge line streams with a lock-free blocked Bloom filter"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Print each line the first time it is seen, in input order (like awk '!seen[$0]++').
    ///
    /// A line is counted as seen if it was seen before or is a false positive (probability
    /// at most about --fpr: however many lines come without --capacity, while fewer than
    /// --capacity distinct lines have been seen with it). Lines are
    /// compared as bytes (CR and invalid UTF-8 included); every output line ends with \n.
    Dedup {
        /// Input files, read in order (default: standard input; `-` is standard input).
        files: Vec<PathBuf>,
        /// Distinct lines to size the filter for (accepts 1e8, 100M, 2G, 500k). Without it
        /// the filter grows with the input, keeping --fpr (a new --state then grows too,
        /// into FILE.1, FILE.2, … next to it).
        #[arg(long, value_parser = parse_count)]
        capacity: Option<u64>,
        /// False-positive rate at capacity, in (0, 1) (default 0.01).
        #[arg(long, value_parser = parse_fpr)]
        fpr: Option<f64>,
        /// Bits per block with --capacity: 512 (default), 256, 128 or 64. Smaller blocks make
        /// a new line cheaper to record and take more memory for the same rate (`calc
        /// --table` shows how much).
        #[arg(long, value_parser = parse_block_bits)]
        block_bits: Option<u32>,
        /// State file shared across runs and by concurrent runs: a file-backed filter,
        /// created if missing, so repeated runs print only never-seen lines, and of runs
        /// at the same time exactly one prints each line. A line is recorded when it is
        /// printed; if the output's reader stops early (`| head`), the lines recorded but
        /// not read (at most a pipe's buffer and 8,192 lines) are counted on stderr. An
        /// existing state keeps its own kind, size and seed: --capacity, --fpr,
        /// --block-bits and --seed must then match it or be omitted.
        #[arg(long)]
        state: Option<PathBuf>,
        /// The hashing key of a new filter or state (a number; default: random). States
        /// merged with `merge` need one seed; an existing state refuses another.
        #[arg(long, value_parser = parse_seed)]
        seed: Option<u128>,
        /// Forget lines after this long (units s, m, h, d: 30d, 12h, 90m; at least 1s): a
        /// line seen within it is not printed, one last printed longer ago is printed again
        /// (at most a third of it and a second later). --capacity is then the distinct lines
        /// per window at a steady rate (default 1M). A new --state records its window; an
        /// existing one refuses another.
        #[arg(long, value_parser = filter::parse_duration, conflicts_with = "block_bits")]
        expire_after: Option<std::time::Duration>,
        /// With --expire-after: size a new filter for --capacity lines per window in any
        /// order (a window's lines in one epoch: 2.5 times the memory) rather than at a
        /// steady rate. An existing state refuses it if it was not made so.
        #[arg(long, requires = "expire_after")]
        worst_burst: bool,
        /// Threads that hash and check lines (default 1). Lines are routed to threads by a
        /// cheap hash of their bytes, so every copy of a line goes to the same thread, in
        /// input order: the first occurrence is still the one printed.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=64))]
        threads: u8,
        /// Compare URLs by their canonical form, as Scrapy does (w3lib's canonicalize_url:
        /// lower-case host, sorted query arguments, no #fragment, normalized escapes): the
        /// first spelling of each page is printed as it was written. A line that is not a
        /// URL (no scheme://), or not a valid one, is compared as it is. Use it for every
        /// run of one --state.
        #[arg(long)]
        canonical_urls: bool,
        /// With --canonical-urls, lossy: drop tracking arguments (utm_*, gclid, fbclid, …).
        #[arg(long, requires = "canonical_urls")]
        strip_tracking_params: bool,
        /// With --canonical-urls, lossy: drop the query arguments named NAME (repeatable; a
        /// trailing * matches a prefix: sessionid, ref_*).
        #[arg(long, value_name = "NAME", requires = "canonical_urls")]
        strip_param: Vec<String>,
        /// With --canonical-urls: keep the #fragment (w3lib's keep_fragments=True; pages a
        /// browser renders per fragment are then told apart).
        #[arg(long, requires = "canonical_urls")]
        keep_fragments: bool,
        /// With --canonical-urls: drop query arguments without a value (a=, a), as w3lib's
        /// keep_blank_values=False.
        #[arg(long, requires = "canonical_urls")]
        drop_blank_values: bool,
        /// With --canonical-urls: the query's argument separator (w3lib's query_separator;
        /// default &).
        #[arg(long, value_name = "SEP", requires = "canonical_urls")]
        query_separator: Option<String>,
        /// With --canonical-urls: the w3lib release whose canonical forms to follow, 2.6
        /// (the default, the newest) or 2.5: the one beside the Scrapy spiders that share
        /// the keys, or the one a --state was made with before 2.6 was followed.
        #[arg(long, value_name = "VERSION", requires = "canonical_urls")]
        w3lib: Option<blockbloom::url::W3libVersion>,
        /// With --canonical-urls, lossy: drop a scheme's default port (:80, :443).
        #[arg(long, requires = "canonical_urls")]
        strip_default_port: bool,
        /// With --canonical-urls, lossy: drop the / that ends a path (/a/ as /a).
        #[arg(long, requires = "canonical_urls")]
        strip_trailing_slash: bool,
        /// Print counts, estimated false-positive rate, memory and rate on stderr.
        ///
        /// (A progress line is shown on stderr whenever stderr is a terminal. SIGINT
        /// (Ctrl-C), SIGTERM and SIGHUP stop reading; the lines printed so far are
        /// recorded in --state; the exit status is 128 + the signal's number.)
        #[arg(long)]
        stats: bool,
    },
    /// Size a filter: bits per key, hashes and memory, against a standard Bloom filter and a
    /// `HashSet<String>`.
    Calc {
        /// Number of distinct keys (accepts 1e8, 100M).
        #[arg(long, value_parser = parse_count, required_unless_present = "table")]
        capacity: Option<u64>,
        /// False-positive rate, in (0, 1).
        #[arg(long, default_value = "0.01", value_parser = parse_fpr)]
        fpr: f64,
        /// Bits per block: 512 (default), 256, 128 or 64.
        #[arg(long, default_value_t = 512, value_parser = parse_block_bits)]
        block_bits: u32,
        /// Mean key length in bytes, for the `HashSet<String>` estimate.
        #[arg(long, default_value_t = 70.0)]
        key_len: f64,
        /// Print the classic m/n–k table of the standard formula, and the bits per key of
        /// each block size for common rates, instead.
        #[arg(long)]
        table: bool,
        /// Also size an expiring filter (`dedup --expire-after`) of this window for
        /// --capacity keys per window: at a steady rate, and for the worst burst.
        #[arg(long, value_parser = filter::parse_duration, conflicts_with = "table")]
        expire_after: Option<std::time::Duration>,
    },
    /// Show a snapshot's or state's parameters, fill, estimated count and false-positive
    /// rate (for a growing state, its layer files; for an expiring one, its window and the
    /// age of its oldest generation).
    Stats {
        /// Snapshot or state file (a growing state's first file).
        file: PathBuf,
    },
    /// Union of snapshots or states made with one seed (`dedup --seed`) into OUT: OUT then
    /// answers "seen" for every line any input had seen.
    ///
    /// Fixed-size ones (same size and hashes) are written to OUT atomically (through a
    /// symlink, to its target). Growing states are merged layer by layer (different lengths
    /// included) into a new growing state OUT, or into OUT in place. An existing OUT is never
    /// replaced unless --force is given: it is merged in, as an input, when it holds a filter
    /// of the inputs' kind and parameters, and refused otherwise (another kind, other
    /// parameters, a file that is no filter).
    Merge {
        /// Output snapshot or state (may be one of the inputs).
        out: PathBuf,
        /// Input snapshots or states (a growing state by its first file).
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// Replace an existing OUT that is not a filter of the inputs' kind and parameters.
        #[arg(long)]
        force: bool,
    },
}

/// "1e8", "100M", "2G", "500k", "12345" -> count.
fn parse_count(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1e3),
        Some('M') => (&t[..t.len() - 1], 1e6),
        Some('G') => (&t[..t.len() - 1], 1e9),
        Some('T') => (&t[..t.len() - 1], 1e12),
        _ => (t, 1.0),
    };
    let v: f64 = num.parse().map_err(|_| format!("not a count: {s:?}"))?;
    let v = v * mult;
    if !(1.0..1.8e19).contains(&v) || v.fract() != 0.0 {
        return Err(format!("count must be a whole number >= 1, got {s:?}"));
    }
    Ok(v as u64)
}

/// A hashing key: a decimal number, or hexadecimal after `0x`.
fn parse_seed(s: &str) -> Result<u128, String> {
    let t = s.trim();
    match t.strip_prefix("0x") {
        Some(hex) => u128::from_str_radix(hex, 16),
        None => t.parse(),
    }
    .map_err(|_| format!("not a seed (a number below 2^128): {s:?}"))
}

fn parse_block_bits(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(b) if blockbloom::math::BLOCK_SIZES.contains(&b) => Ok(b),
        _ => Err(format!("must be 64, 128, 256 or 512, got {s:?}")),
    }
}

fn parse_fpr(s: &str) -> Result<f64, String> {
    let p: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("not a number: {s:?}"))?;
    if p > 0.0 && p < 1.0 {
        Ok(p)
    } else {
        Err(format!("must be strictly between 0 and 1, got {s}"))
    }
}

/// How a subcommand failed, and so the exit code.
pub(crate) enum Failure {
    Usage(String),
    Io(String),
    BrokenPipe,
    /// Stopped by this signal (exit status 128 + it).
    Signal(i32),
}

impl From<blockbloom::Error> for Failure {
    fn from(e: blockbloom::Error) -> Self {
        match e {
            blockbloom::Error::InvalidFpr(_)
            | blockbloom::Error::UnreachableFpr(_)
            | blockbloom::Error::ZeroCapacity
            | blockbloom::Error::InvalidWindow(_)
            | blockbloom::Error::InvalidBlockBits(_)
            | blockbloom::Error::TooLarge { .. } => Failure::Usage(e.to_string()),
            _ => Failure::Io(e.to_string()),
        }
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    ExitCode::SUCCESS
                }
                _ => ExitCode::from(1),
            };
        }
    };
    let result = match cli.cmd {
        Cmd::Dedup {
            files,
            capacity,
            fpr,
            block_bits,
            state,
            seed,
            expire_after,
            worst_burst,
            threads,
            canonical_urls,
            strip_tracking_params,
            strip_param,
            strip_default_port,
            strip_trailing_slash,
            keep_fragments,
            drop_blank_values,
            query_separator,
            w3lib,
            stats,
        } => {
            let canonical_urls = canonical_urls.then(|| {
                let mut pages = blockbloom::url::UrlCanonicalizer::new()
                    .query_separator(query_separator.as_deref().unwrap_or("&"))
                    .w3lib(w3lib.unwrap_or_default());
                if keep_fragments {
                    pages = pages.keep_fragments();
                }
                if drop_blank_values {
                    pages = pages.drop_blank_values();
                }
                if strip_tracking_params {
                    pages = pages.strip_tracking_params();
                }
                for name in &strip_param {
                    pages = pages.strip_param(name);
                }
                if strip_default_port {
                    pages = pages.strip_default_port();
                }
                if strip_trailing_slash {
                    pages = pages.strip_trailing_slash();
                }
                pages
            });
            dedup::run(dedup::Options {
                files,
                wanted: filter::Wanted {
                    capacity,
                    fpr,
                    block_bits,
                    seed,
                    expire_after,
                    worst_burst,
                    key_format: canonical_urls.as_ref().map_or(0, |c| c.key_format()),
                },
                state,
                threads: threads as usize,
                canonical_urls,
                stats,
            })
        }
        Cmd::Calc {
            capacity,
            fpr,
            block_bits,
            key_len,
            table,
            expire_after,
        } => calc::run(capacity, fpr, block_bits, key_len, table).and_then(|()| {
            match (capacity, expire_after) {
                (Some(n), Some(window)) => calc::expiring(n, fpr, window),
                _ => Ok(()),
            }
        }),
        Cmd::Stats { file } => stats::run(&file),
        Cmd::Merge { out, inputs, force } => merge::run(&out, &inputs, force),
    };
    match result {
        Ok(()) | Err(Failure::BrokenPipe) => ExitCode::SUCCESS,
        Err(Failure::Signal(sig)) => {
            eprintln!("blockbloom: stopped by signal {sig}");
            ExitCode::from(128 + sig as u8)
        }
        Err(Failure::Usage(m)) => {
            eprintln!("blockbloom: {m}");
            ExitCode::from(1)
        }
        Err(Failure::Io(m)) => {
            eprintln!("blockbloom: {m}");
            ExitCode::from(2)
        }
    }
}

/// A failed write to standard output: a closed pipe ends quietly.
pub(crate) fn write_err(e: io::Error) -> Failure {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Failure::BrokenPipe
    } else {
        Failure::Io(format!("writing output: {e}"))
    }
}

/// `b` bytes in KiB, MiB, … with one decimal.
pub(crate) fn human_bytes(b: f64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

/// An estimate from a filter's fill, `x` rounded; a full filter's (every bit set: the
/// library's `u64::MAX` or infinity) bounds nothing, and says so.
pub(crate) fn estimate(x: f64) -> String {
    if x.is_finite() && x < u64::MAX as f64 {
        format!("{x:.0}")
    } else {
        "unknown (the filter is full: every bit is set)".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_parse() {
        assert_eq!(parse_count("1e8"), Ok(100_000_000));
        assert_eq!(parse_count("100M"), Ok(100_000_000));
        assert_eq!(parse_count("2G"), Ok(2_000_000_000));
        assert_eq!(parse_count("500k"), Ok(500_000));
        assert_eq!(parse_count("1.5M"), Ok(1_500_000));
        assert_eq!(parse_count("12345"), Ok(12345));
        for bad in ["", "0", "-5", "abc", "1.5", "10X", "1e30"] {
            assert!(parse_count(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn fprs_parse() {
        assert_eq!(parse_fpr("0.01"), Ok(0.01));
        for bad in ["0", "1", "1.5", "-0.1", "nan", "x"] {
            assert!(parse_fpr(bad).is_err(), "{bad}");
        }
    }
}
