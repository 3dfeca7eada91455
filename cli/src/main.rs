//! `blockbloom`: deduplicate lines with a Bloom filter, size filters, inspect and merge
//! snapshots. Exit codes: 0 ok, 1 usage error, 2 I/O or snapshot error.

use std::hash::{Hash, Hasher};
use std::io::IsTerminal;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

use blockbloom::math::{blocked_fpr, optimal_params, standard_fpr};
use blockbloom::BloomFilter;
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
    /// about --fpr while fewer than --capacity distinct lines have been seen). Lines are
    /// compared as bytes (CR and invalid UTF-8 included); every output line ends with \n.
    Dedup {
        /// Input files, read in order (default: standard input; `-` is standard input).
        files: Vec<PathBuf>,
        /// Distinct lines to size the filter for (accepts 1e8, 100M, 2G, 500k).
        #[arg(long, default_value = "100M", value_parser = parse_count)]
        capacity: u64,
        /// False-positive rate at capacity, in (0, 1).
        #[arg(long, default_value = "0.01", value_parser = parse_fpr)]
        fpr: f64,
        /// Snapshot file: loaded if it exists (its size and rate win over --capacity/--fpr),
        /// saved atomically at the end, so repeated runs print only never-seen lines. Not
        /// updated when the output pipe closes early (better a repeat than a lost line).
        #[arg(long)]
        state: Option<PathBuf>,
        /// Threads that hash and check lines (default 1). Lines are routed to threads by a
        /// cheap hash of their bytes, so every copy of a line goes to the same thread, in
        /// input order: the first occurrence is still the one printed.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=64))]
        threads: u8,
        /// Print counts, estimated false-positive rate, memory and rate on stderr.
        ///
        /// (A progress line is shown on stderr whenever stderr is a terminal. Ctrl-C stops
        /// reading, flushes what was printed and, with --state, saves the state, then exits
        /// with status 130.)
        #[arg(long)]
        stats: bool,
    },
    /// Size a filter: bits per key, hashes and memory, against a standard Bloom filter and a
    /// HashSet<String>.
    Calc {
        /// Number of distinct keys (accepts 1e8, 100M).
        #[arg(long, value_parser = parse_count, required_unless_present = "table")]
        capacity: Option<u64>,
        /// False-positive rate, in (0, 1).
        #[arg(long, default_value = "0.01", value_parser = parse_fpr)]
        fpr: f64,
        /// Mean key length in bytes, for the HashSet<String> estimate.
        #[arg(long, default_value_t = 70.0)]
        key_len: f64,
        /// Print the classic m/n–k table of the standard formula instead.
        #[arg(long)]
        table: bool,
    },
    /// Show a snapshot's parameters, fill, estimated count and false-positive rate.
    Stats {
        /// Snapshot file.
        file: PathBuf,
    },
    /// Union of snapshots (same size, hashes and seed) into OUT.
    Merge {
        /// Output snapshot (written atomically; may be one of the inputs).
        out: PathBuf,
        /// Input snapshots.
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
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

/// A line as a key: hashed exactly like a `str` with the same bytes (bytes, then 0xff), so a
/// state file written here answers `filter.contains("line")` from Rust code.
struct Line<'a>(&'a [u8]);

impl Hash for Line<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write(self.0);
        state.write_u8(0xff);
    }
}

enum Failure {
    Usage(String),
    Io(String),
    BrokenPipe,
    Interrupted,
}

impl From<blockbloom::Error> for Failure {
    fn from(e: blockbloom::Error) -> Self {
        match e {
            blockbloom::Error::InvalidFpr(_)
            | blockbloom::Error::UnreachableFpr(_)
            | blockbloom::Error::ZeroCapacity => Failure::Usage(e.to_string()),
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
            state,
            threads,
            stats,
        } => dedup(
            &files,
            capacity,
            fpr,
            state.as_deref(),
            threads as usize,
            stats,
        ),
        Cmd::Calc {
            capacity,
            fpr,
            key_len,
            table,
        } => calc(capacity, fpr, key_len, table),
        Cmd::Stats { file } => stats(&file),
        Cmd::Merge { out, inputs } => merge(&out, &inputs),
    };
    match result {
        Ok(()) | Err(Failure::BrokenPipe) => ExitCode::SUCCESS,
        Err(Failure::Interrupted) => {
            eprintln!("blockbloom: interrupted");
            ExitCode::from(130)
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

fn write_err(e: io::Error) -> Failure {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Failure::BrokenPipe
    } else {
        Failure::Io(format!("writing output: {e}"))
    }
}

const CHUNK: usize = 1 << 20;

/// Reads `files` (or stdin) on a separate thread and hands over chunks that end on a line
/// boundary; a last line without newline gets one. Reading and hashing thus overlap.
fn spawn_reader(files: Vec<PathBuf>) -> std::sync::mpsc::Receiver<Result<Vec<u8>, String>> {
    let (tx, rx) = sync_channel::<Result<Vec<u8>, String>>(4);
    std::thread::spawn(move || {
        let inputs: Vec<Option<PathBuf>> = if files.is_empty() {
            vec![None]
        } else {
            files
                .into_iter()
                .map(|f| (f.as_os_str() != "-").then_some(f))
                .collect()
        };
        for input in inputs {
            let name = input
                .as_ref()
                .map_or("standard input".to_string(), |p| p.display().to_string());
            let mut reader: Box<dyn Read> = match &input {
                None => Box::new(io::stdin().lock()),
                Some(p) => match std::fs::File::open(p) {
                    Ok(f) => Box::new(f),
                    Err(e) => {
                        let _ = tx.send(Err(format!("{name}: {e}")));
                        return;
                    }
                },
            };
            let mut pending: Vec<u8> = Vec::with_capacity(CHUNK);
            loop {
                let start = pending.len();
                pending.resize(start + CHUNK, 0);
                let n = match reader.read(&mut pending[start..]) {
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                        pending.truncate(start);
                        continue;
                    }
                    Err(e) => {
                        let _ = tx.send(Err(format!("{name}: {e}")));
                        return;
                    }
                };
                pending.truncate(start + n);
                if n == 0 {
                    if !pending.is_empty() {
                        pending.push(b'\n');
                        if tx.send(Ok(std::mem::take(&mut pending))).is_err() {
                            return;
                        }
                    }
                    break;
                }
                if let Some(last_nl) = pending[start..].iter().rposition(|&b| b == b'\n') {
                    let rest = pending.split_off(start + last_nl + 1);
                    if tx.send(Ok(std::mem::replace(&mut pending, rest))).is_err() {
                        return;
                    }
                }
            }
        }
    });
    rx
}

fn dedup(
    files: &[PathBuf],
    capacity: u64,
    fpr: f64,
    state: Option<&Path>,
    threads: usize,
    show_stats: bool,
) -> Result<(), Failure> {
    let start = Instant::now();
    let filter = match state {
        Some(p) if p.exists() => BloomFilter::load(p)
            .map_err(|e| Failure::Io(format!("loading state {}: {e}", p.display())))?,
        _ => BloomFilter::with_capacity(capacity, fpr)?,
    };
    let rx = spawn_reader(files.to_vec());
    let interrupted = Arc::new(AtomicBool::new(false));
    {
        let flag = Arc::clone(&interrupted);
        // If a handler cannot be installed (one already is), Ctrl-C keeps its default effect.
        let _ = ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst));
    }
    let progress = io::stderr().is_terminal().then(|| {
        let p = indicatif::ProgressBar::new_spinner();
        p.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {elapsed} {msg}")
                .expect("valid template"),
        );
        p
    });
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 20, stdout.lock());
    let (mut lines, mut printed) = (0u64, 0u64);
    loop {
        if interrupted.load(Ordering::SeqCst) {
            break;
        }
        let chunk = match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(c) => c.map_err(Failure::Io)?,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        if threads == 1 {
            let mut rest = &chunk[..];
            while let Some(nl) = rest.iter().position(|&b| b == b'\n') {
                let line = &rest[..=nl];
                rest = &rest[nl + 1..];
                lines += 1;
                if filter.insert_if_absent(&Line(&line[..nl])) {
                    printed += 1;
                    out.write_all(line).map_err(write_err)?;
                }
            }
        } else {
            let (n, p) = dedup_chunk_parallel(&filter, &chunk, threads, &mut out)?;
            lines += n;
            printed += p;
        }
        if let Some(p) = &progress {
            p.set_message(format!("{lines} lines read, {printed} printed"));
            p.tick();
        }
    }
    if let Some(p) = progress {
        p.finish_and_clear();
    }
    out.flush().map_err(write_err)?;
    drop(out);
    if let Some(p) = state {
        filter
            .save(p)
            .map_err(|e| Failure::Io(format!("saving state {}: {e}", p.display())))?;
    }
    if show_stats {
        let secs = start.elapsed().as_secs_f64();
        eprintln!(
            "lines {lines}, printed {printed}, repeats {}, filter {} bits ({:.1} MiB), k {}, capacity {}, \
             estimated distinct {}, estimated fpr now {:.4}%, {:.2} s, {:.1} M lines/s",
            lines - printed,
            filter.num_bits(),
            filter.memory_bytes() as f64 / 1048576.0,
            filter.num_hashes(),
            filter.capacity(),
            filter.estimated_len(),
            100.0 * filter.estimated_fpr(),
            secs,
            lines as f64 / secs.max(1e-9) / 1e6
        );
    }
    if interrupted.load(Ordering::SeqCst) {
        return Err(Failure::Interrupted);
    }
    Ok(())
}

/// Routes a line to a thread: a cheap function of its length and last 16 bytes (where URLs
/// differ), identical for identical lines.
fn route(line: &[u8], threads: usize) -> usize {
    let tail = &line[line.len().saturating_sub(16)..];
    let mut h = line.len() as u64 ^ 0x9E37_79B9_7F4A_7C15;
    for c in tail.chunks(8) {
        let mut w = [0u8; 8];
        w[..c.len()].copy_from_slice(c);
        h = (h ^ u64::from_le_bytes(w)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    }
    (((h >> 32) * threads as u64) >> 32) as usize
}

/// One chunk (whole lines) with `threads` threads: thread `t` checks, in input order, the
/// lines routed to it, so all copies of a line are checked by one thread and the first
/// one wins; then the kept lines are written in input order.
fn dedup_chunk_parallel(
    filter: &BloomFilter,
    chunk: &[u8],
    threads: usize,
    out: &mut impl Write,
) -> Result<(u64, u64), Failure> {
    let mut bounds = Vec::new(); // (start, end) of each line, newline excluded
    let mut start = 0;
    for (i, &b) in chunk.iter().enumerate() {
        if b == b'\n' {
            bounds.push((start, i));
            start = i + 1;
        }
    }
    let mut keep = vec![false; bounds.len()];
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let bounds = &bounds;
                s.spawn(move || {
                    let mut kept = Vec::new();
                    for (i, &(a, b)) in bounds.iter().enumerate() {
                        let line = &chunk[a..b];
                        if route(line, threads) == t && filter.insert_if_absent(&Line(line)) {
                            kept.push(i);
                        }
                    }
                    kept
                })
            })
            .collect();
        for w in workers {
            for i in w.join().expect("worker panicked") {
                keep[i] = true;
            }
        }
    });
    let mut printed = 0;
    for (&(a, b), k) in bounds.iter().zip(keep) {
        if k {
            printed += 1;
            out.write_all(&chunk[a..=b]).map_err(write_err)?;
        }
    }
    Ok((bounds.len() as u64, printed))
}

fn human_bytes(b: f64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

fn calc(capacity: Option<u64>, fpr: f64, key_len: f64, table: bool) -> Result<(), Failure> {
    let mut out = io::stdout().lock();
    if table {
        let ks = 1..=8u32;
        let mut s = String::from("m/n   ");
        for k in ks.clone() {
            s += &format!("  k={k:<9}");
        }
        s += "\n";
        for c in [
            2u32, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 18, 20, 24, 28, 32,
        ] {
            s += &format!("{c:<6}");
            for k in ks.clone() {
                s += &format!("  {:<11.3e}", standard_fpr(c as f64, k));
            }
            s += "\n";
        }
        s += "(standard Bloom filter formula (1 - e^(-k·n/m))^k; a 512-bit blocked filter has a higher rate)\n";
        return out.write_all(s.as_bytes()).map_err(write_err);
    }
    let n = capacity.expect("clap requires --capacity without --table");
    let (c, k) = optimal_params(fpr)?;
    let blocks = (c * n as f64 / 512.0).ceil().max(1.0);
    let bloom_bytes = blocks * 64.0;
    let c_std = -fpr.ln() / (2f64.ln() * 2f64.ln());
    let k_std = (c_std * 2f64.ln()).round().max(1.0) as u32;
    let std_bytes = c_std * n as f64 / 8.0;
    // hashbrown: a power-of-two number of buckets at most 7/8 full, each a 24-byte String
    // plus a control byte; plus the strings' own bytes (allocator overhead not counted).
    let buckets = (n as f64 * 8.0 / 7.0).log2().ceil().exp2();
    let set_bytes = buckets * 25.0 + n as f64 * key_len;
    let bits_per_key = blocks * 512.0 / n as f64;
    let s = format!(
        "keys {n}, target false-positive rate {fpr}\n\
         blocked Bloom filter (blockbloom): {bits_per_key:.2} bits/key ({:.3} bytes), k = {k}, {} ({})\n\
         standard Bloom filter:             {c_std:.2} bits/key ({:.3} bytes), k = {k_std}, {}\n\
         HashSet<String> ({key_len}-byte keys):   {:.1} bytes/key, {} (requested bytes, before allocator overhead)\n\
         false-positive rate at 2x the keys: {:.4}% (blocked), {:.4}% (standard)\n",
        bits_per_key / 8.0,
        human_bytes(bloom_bytes),
        format_args!("{} bytes", bloom_bytes as u64),
        c_std / 8.0,
        human_bytes(std_bytes),
        set_bytes / n as f64,
        human_bytes(set_bytes),
        100.0 * blocked_fpr(bits_per_key / 2.0, k),
        100.0 * standard_fpr(c_std / 2.0, k_std),
    );
    out.write_all(s.as_bytes()).map_err(write_err)
}

fn stats(file: &Path) -> Result<(), Failure> {
    let f = BloomFilter::load(file).map_err(|e| Failure::Io(format!("{}: {e}", file.display())))?;
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

fn merge(out: &Path, inputs: &[PathBuf]) -> Result<(), Failure> {
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
