//! `blockbloom dedup`: print each line the first time it is seen.

use std::hash::{Hash, Hasher};
use std::io::IsTerminal;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

use blockbloom::BloomFilter;

use crate::{write_err, Failure};

/// A line as a key: hashed exactly like a `str` with the same bytes (bytes, then 0xff), so a
/// state file written here answers `filter.contains("line")` from Rust code.
struct Line<'a>(&'a [u8]);

impl Hash for Line<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write(self.0);
        state.write_u8(0xff);
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

pub(crate) fn run(
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
