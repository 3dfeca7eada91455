//! `blockbloom dedup`: print each line the first time it is seen.
//!
//! Without `--state`, the filter lives in memory: a `BloomFilter` of `--capacity` lines, or,
//! without `--capacity`, a `GrowableBloomFilter` that grows with the input at the rate
//! `--fpr`. With `--state FILE`, the filter is the file, shared with any other process using
//! it: a file-backed `GrowableBloomFilter` (growing into `FILE.1`, `FILE.2`, …) unless the
//! state was made with `--capacity`, which makes it a file-backed `BloomFilter` of that
//! size. A line is recorded there only once it has been
//! *delivered* (see `output.rs`): until then it waits in `pending`, so that a closed pipe
//! or a signal never records a line nobody read.

use std::collections::{HashSet, VecDeque};
use std::hash::{Hash, Hasher};
use std::io::{self, IsTerminal, Read};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use blockbloom::{BloomFilter, GrowableBloomFilter};

use crate::output::Output;
use crate::Failure;

/// A line as a key: hashed exactly like a `str` with the same bytes (bytes, then 0xff), so a
/// state file written here answers `filter.contains("line")` from Rust code.
struct Line<'a>(&'a [u8]);

impl Hash for Line<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write(self.0);
        state.write_u8(0xff);
    }
}

/// The first layer of a growing filter (in memory, or a new `--state` without `--capacity`)
/// holds this many lines; each further layer twice the last.
pub(crate) const INITIAL_CAPACITY: u64 = 100_000;
/// How long to wait at the end for the reader of a pipe to take the last lines (lines it
/// has not taken by then are not recorded: the next run prints them again).
const SETTLE: Duration = Duration::from_secs(2);

/// What `dedup` was asked to do.
pub(crate) struct Options {
    pub(crate) files: Vec<PathBuf>,
    pub(crate) capacity: Option<u64>,
    pub(crate) fpr: Option<f64>,
    /// Bits per block of a fixed filter (`--block-bits`, needs `--capacity`).
    pub(crate) block_bits: Option<u32>,
    pub(crate) state: Option<PathBuf>,
    pub(crate) threads: usize,
    pub(crate) stats: bool,
}

/// Where "seen" lives.
enum Seen {
    /// In memory, fixed size.
    Fixed(Box<BloomFilter>),
    /// In memory, growing with the input.
    Growing(Box<GrowableBloomFilter>),
    /// A state file, and the lines printed but not yet delivered.
    State(Box<State>),
}

/// A state file's filter: fixed-size if the state was made with `--capacity`, else growing.
#[allow(clippy::large_enum_variant)] // one per run, inside the boxed `State`
enum StateFilter {
    Fixed(BloomFilter),
    Growing(GrowableBloomFilter),
}

impl StateFilter {
    /// The state at `path`, checked against `--capacity`/`--fpr` where given, or a new one
    /// (growing unless `--capacity` is given).
    fn open(
        path: &std::path::Path,
        capacity: Option<u64>,
        fpr: Option<f64>,
        block_bits: Option<u32>,
    ) -> Result<Self, blockbloom::Error> {
        use blockbloom::Error;
        let existing = match GrowableBloomFilter::open_file_existing(path) {
            Ok(g) => Some(StateFilter::Growing(g)),
            Err(Error::Conflict { what: "kind", .. }) => {
                Some(StateFilter::Fixed(BloomFilter::open_file_existing(path)?))
            }
            Err(Error::Io {
                kind: io::ErrorKind::NotFound,
                ..
            }) => None,
            Err(e) => return Err(e),
        };
        let Some(state) = existing else {
            // New (or made by another process in the meantime: the library's open of the
            // same parameters takes that one, and refuses other parameters).
            let fpr = fpr.unwrap_or(0.01);
            return Ok(match capacity {
                Some(c) => StateFilter::Fixed(
                    BloomFilter::builder()
                        .capacity(c)
                        .fpr(fpr)
                        .block_bits(block_bits.unwrap_or(512))
                        .open_file(path)?,
                ),
                None => StateFilter::Growing(GrowableBloomFilter::open_file(
                    path,
                    INITIAL_CAPACITY,
                    fpr,
                )?),
            });
        };
        let conflict = |what, file: String, requested: String| Error::Conflict {
            what,
            file,
            requested,
        };
        match (&state, capacity) {
            (StateFilter::Growing(_), Some(c)) => {
                return Err(conflict(
                    "kind",
                    "a growing filter (made without --capacity)".into(),
                    format!("capacity {c}"),
                ));
            }
            (StateFilter::Fixed(f), Some(c)) if f.capacity() != c => {
                return Err(conflict(
                    "capacity",
                    f.capacity().to_string(),
                    c.to_string(),
                ));
            }
            (StateFilter::Fixed(f), _) if block_bits.is_some_and(|b| b != f.block_bits()) => {
                return Err(conflict(
                    "block size",
                    f.block_bits().to_string(),
                    block_bits.unwrap_or(512).to_string(),
                ));
            }
            _ => {}
        }
        match fpr {
            Some(p) if p != state.target_fpr() => Err(conflict(
                "target fpr",
                state.target_fpr().to_string(),
                p.to_string(),
            )),
            _ => Ok(state),
        }
    }

    /// `contains` for every line, answers in `out` (the filter's batched call: blocks
    /// prefetched ahead, so the cache misses of a large state overlap).
    fn contains_batch(&self, lines: &[Line<'_>], out: &mut [bool]) {
        match self {
            StateFilter::Fixed(f) => f.contains_batch(lines, out),
            StateFilter::Growing(g) => g.contains_hashes(&growable_hashes(g, lines), out),
        }
    }

    fn insert(&self, line: &[u8]) {
        match self {
            StateFilter::Fixed(f) => f.insert(&Line(line)),
            StateFilter::Growing(g) => g.insert(&Line(line)),
        }
    }

    fn target_fpr(&self) -> f64 {
        match self {
            StateFilter::Fixed(f) => f.target_fpr(),
            StateFilter::Growing(g) => g.target_fpr(),
        }
    }

    fn estimated_fpr(&self) -> f64 {
        match self {
            StateFilter::Fixed(f) => f.estimated_fpr(),
            StateFilter::Growing(g) => g.estimated_fpr(),
        }
    }

    /// Flushes and (if last) seals the state's files.
    fn close(self) -> Result<(), blockbloom::Error> {
        match self {
            StateFilter::Fixed(f) => f.close(),
            StateFilter::Growing(g) => g.close(),
        }
    }

    /// What to warn about at the end: a fixed state past its capacity, a growing one that
    /// could not grow.
    fn warning(&self, path: &std::path::Path) -> Option<String> {
        match self {
            StateFilter::Fixed(f) if f.estimated_len() > f.capacity() => Some(format!(
                "state {} holds more lines than its capacity ({}): its false-positive rate is now \
                 {:.4}% (target {}%); start a new state with a larger --capacity, or without \
                 --capacity for one that grows",
                path.display(),
                f.capacity(),
                100.0 * f.estimated_fpr(),
                100.0 * f.target_fpr()
            )),
            StateFilter::Growing(g) if g.growth_failed() => Some(format!(
                "state {} could not add a layer (no space or memory?): its false-positive rate \
                 is now {:.4}% (target {}%)",
                path.display(),
                100.0 * g.estimated_fpr(),
                100.0 * g.target_fpr()
            )),
            _ => None,
        }
    }
}

struct State {
    filter: StateFilter,
    path: PathBuf,
    /// Lines printed by this run, not yet delivered (so not yet in the file).
    pending: HashSet<Vec<u8>>,
    /// Lines written but not yet delivered, with the output offset where each ends.
    queue: VecDeque<(u64, Vec<u8>)>,
    recorded: u64,
}

impl State {
    /// Records every line the reader has taken completely.
    fn record_delivered(&mut self, delivered: u64) {
        while self.queue.front().is_some_and(|c| c.0 <= delivered) {
            let (_, line) = self.queue.pop_front().expect("checked");
            self.filter.insert(&line);
            self.pending.remove(&line);
            self.recorded += 1;
        }
    }
}

impl Seen {
    fn open(o: &Options) -> Result<Seen, Failure> {
        if o.block_bits.is_some() && o.capacity.is_none() {
            return Err(Failure::Usage(
                "--block-bits needs --capacity (a growing filter has 512-bit blocks)".into(),
            ));
        }
        let Some(path) = &o.state else {
            let fpr = o.fpr.unwrap_or(0.01);
            return Ok(match o.capacity {
                Some(c) => Seen::Fixed(Box::new(
                    BloomFilter::builder()
                        .capacity(c)
                        .fpr(fpr)
                        .block_bits(o.block_bits.unwrap_or(512))
                        .build()?,
                )),
                None => Seen::Growing(Box::new(GrowableBloomFilter::new(INITIAL_CAPACITY, fpr)?)),
            });
        };
        let state_err = |e: blockbloom::Error| match e {
            blockbloom::Error::Conflict { .. } => Failure::Usage(format!(
                "state {}: {e}; omit --capacity and --fpr to use the state's own",
                path.display()
            )),
            // A state is never left empty by this program (it is written whole, then renamed
            // into place): an empty file was made by hand (`touch`, `> FILE`).
            blockbloom::Error::Truncated
                if std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() == 0) =>
            {
                Failure::Io(format!(
                    "state {}: the file is empty, not a blockbloom state (remove it to start one)",
                    path.display()
                ))
            }
            e => Failure::Io(format!("state {}: {e}", path.display())),
        };
        let filter = StateFilter::open(path, o.capacity, o.fpr, o.block_bits).map_err(state_err)?;
        Ok(Seen::State(Box::new(State {
            filter,
            path: path.clone(),
            pending: HashSet::new(),
            queue: VecDeque::new(),
            recorded: 0,
        })))
    }

    /// Whether each of `lines` is new, in order, deciding it as seen from now on (one
    /// thread): the answers of one call per line, through the filter's batched calls, which
    /// prefetch the blocks of the lines ahead so that a large filter's cache misses overlap.
    fn first_times(&mut self, lines: &[Line<'_>], keep: &mut [bool]) {
        self.check_parallel(lines, keep);
        for (k, line) in keep.iter_mut().zip(lines) {
            *k = self.first_time_after(line.0, *k);
        }
    }

    /// The check that threads may run in parallel on the lines routed to them, as batches
    /// (see [`first_times`](Self::first_times)): the whole decision in memory; for a state
    /// file, only whether the file has the line (the pending lines are checked afterwards,
    /// in input order, by [`first_time_after`](Self::first_time_after)).
    fn check_parallel(&self, lines: &[Line<'_>], out: &mut [bool]) {
        match self {
            Seen::Fixed(f) => f.insert_if_absent_batch(lines, out),
            Seen::Growing(g) => g.insert_if_absent_hashes(&growable_hashes(g, lines), out),
            Seen::State(s) => {
                s.filter.contains_batch(lines, out);
                for o in out.iter_mut() {
                    *o = !*o;
                }
            }
        }
    }

    /// The sequential part after [`check_parallel`](Self::check_parallel) said `passed`.
    fn first_time_after(&mut self, line: &[u8], passed: bool) -> bool {
        match self {
            Seen::State(s) => passed && s.pending.insert(line.to_vec()),
            _ => passed,
        }
    }
}

const CHUNK: usize = 1 << 20;

/// A chunk of input: `buf[..len]` is whole lines, each ending with `\n`.
struct Chunk {
    buf: Vec<u8>,
    len: usize,
}

impl Chunk {
    fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// Reads `files` (or stdin) on a separate thread and hands over chunks that end on a line
/// boundary; a last line without newline gets one. Reading and hashing thus overlap. The
/// main thread hands used buffers back through `free`, so that steady state allocates and
/// zeroes nothing (a fresh megabyte per chunk cost page faults and clearing).
fn spawn_reader(
    files: Vec<PathBuf>,
) -> (
    std::sync::mpsc::Receiver<Result<Chunk, String>>,
    std::sync::mpsc::SyncSender<Vec<u8>>,
) {
    let (tx, rx) = sync_channel::<Result<Chunk, String>>(4);
    let (free_tx, free_rx) = sync_channel::<Vec<u8>>(8);
    std::thread::spawn(move || {
        let inputs: Vec<Option<PathBuf>> = if files.is_empty() {
            vec![None]
        } else {
            files
                .into_iter()
                .map(|f| (f.as_os_str() != "-").then_some(f))
                .collect()
        };
        let fresh = || free_rx.try_recv().unwrap_or_else(|_| vec![0u8; CHUNK]);
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
            // `buf[..filled]` holds input not handed over yet (the start of a line at most).
            let (mut buf, mut filled) = (fresh(), 0usize);
            loop {
                if filled == buf.len() {
                    buf.resize(buf.len() * 2, 0); // a line longer than the buffer
                }
                let n = match reader.read(&mut buf[filled..]) {
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        let _ = tx.send(Err(format!("{name}: {e}")));
                        return;
                    }
                };
                if n == 0 {
                    if filled > 0 {
                        if filled == buf.len() {
                            buf.push(0);
                        }
                        buf[filled] = b'\n';
                        let chunk = Chunk {
                            buf,
                            len: filled + 1,
                        };
                        if tx.send(Ok(chunk)).is_err() {
                            return;
                        }
                    }
                    break;
                }
                let start = filled;
                filled += n;
                if let Some(last_nl) = memchr::memrchr(b'\n', &buf[start..filled]) {
                    let end = start + last_nl + 1;
                    let mut next = fresh();
                    let rest = filled - end;
                    if next.len() < rest.max(CHUNK) {
                        next.resize(rest.max(CHUNK), 0);
                    }
                    next[..rest].copy_from_slice(&buf[end..filled]);
                    let chunk = Chunk { buf, len: end };
                    if tx.send(Ok(chunk)).is_err() {
                        return;
                    }
                    (buf, filled) = (next, rest);
                }
            }
        }
    });
    (rx, free_tx)
}

/// Which signal stopped the run, if any (SIGINT, SIGTERM, SIGHUP).
struct Signals(Vec<(i32, Arc<AtomicBool>)>);

impl Signals {
    fn install() -> Signals {
        let mut v = Vec::new();
        for sig in [
            signal_hook::consts::SIGINT,
            signal_hook::consts::SIGTERM,
            signal_hook::consts::SIGHUP,
        ] {
            let flag = Arc::new(AtomicBool::new(false));
            // If it cannot be installed, the signal keeps its default effect.
            if signal_hook::flag::register(sig, Arc::clone(&flag)).is_ok() {
                v.push((sig, flag));
            }
        }
        Signals(v)
    }

    fn caught(&self) -> Option<i32> {
        self.0
            .iter()
            .find(|(_, f)| f.load(Ordering::SeqCst))
            .map(|(s, _)| *s)
    }
}

pub(crate) fn run(o: Options) -> Result<(), Failure> {
    let start = Instant::now();
    // The state is opened (or created) before any input is read: a bad path fails at once.
    let mut seen = Seen::open(&o)?;
    let signals = Signals::install();
    let (rx, free) = spawn_reader(o.files.clone());
    let progress = io::stderr().is_terminal().then(|| {
        let p = indicatif::ProgressBar::new_spinner();
        p.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {elapsed} {msg}")
                .expect("valid template"),
        );
        p
    });
    let mut out = Output::new().map_err(|e| Failure::Io(format!("standard output: {e}")))?;
    let (mut lines, mut printed) = (0u64, 0u64);
    let mut closed = false; // the output was closed by its reader
    let mut buf = Vec::with_capacity(CHUNK + (CHUNK >> 2));
    let (mut bounds, mut keep) = (Vec::new(), Vec::new());
    let result = loop {
        if signals.caught().is_some() {
            break Ok(());
        }
        let chunk = match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => break Err(Failure::Io(e)),
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => break Ok(()),
        };
        let data = chunk.bytes();
        line_bounds(data, &mut bounds);
        lines += bounds.len() as u64;
        decide(&mut seen, data, &bounds, o.threads, &mut keep);
        buf.clear();
        for (&(a, b), &k) in bounds.iter().zip(&keep) {
            if k {
                buf.extend_from_slice(&data[a..=b]);
                printed += 1;
                if let Seen::State(s) = &mut seen {
                    let end = out.accepted + buf.len() as u64;
                    s.queue.push_back((end, data[a..b].to_vec()));
                }
            }
        }
        if let Err(e) = out.write_all(&buf) {
            if e.kind() == io::ErrorKind::BrokenPipe {
                closed = true;
                break Ok(());
            }
            break Err(Failure::Io(format!("writing output: {e}")));
        }
        let _ = free.try_send(chunk.buf); // reused by the reader
        if let Seen::State(s) = &mut seen {
            s.record_delivered(out.delivered());
        }
        if let Some(p) = &progress {
            p.set_message(format!("{lines} lines read, {printed} printed"));
            p.tick();
        }
    };
    if let Some(p) = progress {
        p.finish_and_clear();
    }
    let mut warning = None;
    if let Seen::State(s) = &mut seen {
        let delivered = if closed || result.is_err() {
            out.delivered()
        } else {
            out.settle(SETTLE)
        };
        s.record_delivered(delivered);
        warning = s.filter.warning(&s.path);
    }
    if o.stats {
        print_stats(&seen, lines, printed, start.elapsed().as_secs_f64());
    }
    if let Some(w) = warning {
        eprintln!("blockbloom: warning: {w}");
    }
    if let Seen::State(s) = seen {
        let path = s.path.clone();
        s.filter
            .close()
            .map_err(|e| Failure::Io(format!("closing state {}: {e}", path.display())))?;
    }
    result?;
    if let Some(sig) = signals.caught() {
        return Err(Failure::Signal(sig));
    }
    Ok(())
}

fn print_stats(seen: &Seen, lines: u64, printed: u64, secs: f64) {
    let (what, bits, bytes, fpr) = match seen {
        Seen::Fixed(f) => ("filter", f.num_bits(), f.memory_bytes(), f.estimated_fpr()),
        Seen::State(s) => match &s.filter {
            StateFilter::Fixed(f) => (
                "state file",
                f.num_bits(),
                f.memory_bytes(),
                s.filter.estimated_fpr(),
            ),
            StateFilter::Growing(g) => (
                "growing state",
                8 * g.memory_bytes() as u64,
                g.memory_bytes(),
                s.filter.estimated_fpr(),
            ),
        },
        Seen::Growing(g) => (
            "growable filter",
            8 * g.memory_bytes() as u64,
            g.memory_bytes(),
            g.estimated_fpr(),
        ),
    };
    let recorded = match seen {
        Seen::State(s) => format!(", recorded in the state {}", s.recorded),
        _ => String::new(),
    };
    eprintln!(
        "lines {lines}, printed {printed}{recorded}, repeats {}, {what} {bits} bits ({:.1} MiB), \
         estimated fpr now {:.4}%, {secs:.2} s, {:.1} M lines/s",
        lines - printed,
        bytes as f64 / 1048576.0,
        100.0 * fpr,
        lines as f64 / secs.max(1e-9) / 1e6
    );
}

/// (start, end) of each line of `chunk`, the newline excluded, into `bounds`.
fn line_bounds(chunk: &[u8], bounds: &mut Vec<(usize, usize)>) {
    bounds.clear();
    let mut start = 0;
    for nl in memchr::memchr_iter(b'\n', chunk) {
        bounds.push((start, nl));
        start = nl + 1;
    }
}

/// Which lines of the chunk are printed: with one thread in input order; with several,
/// each thread checks, in input order, the lines routed to it (so all copies of a line are
/// checked by one thread and the first one wins), then the rest of the decision runs in
/// input order.
fn decide(
    seen: &mut Seen,
    chunk: &[u8],
    bounds: &[(usize, usize)],
    threads: usize,
    keep: &mut Vec<bool>,
) {
    keep.clear();
    if threads == 1 {
        keep.resize(bounds.len(), false);
        let lines: Vec<Line<'_>> = bounds.iter().map(|&(a, b)| Line(&chunk[a..b])).collect();
        seen.first_times(&lines, keep);
        return;
    }
    let mut passed = vec![false; bounds.len()];
    {
        let shared: &Seen = seen;
        std::thread::scope(|s| {
            let workers: Vec<_> = (0..threads)
                .map(|t| {
                    s.spawn(move || {
                        // This thread's lines, in input order, decided as one batch.
                        let (mut at, mut lines) = (Vec::new(), Vec::new());
                        for (i, &(a, b)) in bounds.iter().enumerate() {
                            let line = &chunk[a..b];
                            if route(line, threads) == t {
                                at.push(i);
                                lines.push(Line(line));
                            }
                        }
                        let mut yes = vec![false; lines.len()];
                        shared.check_parallel(&lines, &mut yes);
                        at.into_iter()
                            .zip(yes)
                            .filter(|&(_, y)| y)
                            .map(|(i, _)| i)
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            for w in workers {
                for i in w.join().expect("worker panicked") {
                    passed[i] = true;
                }
            }
        });
    }
    keep.extend(
        bounds
            .iter()
            .zip(passed)
            .map(|(&(a, b), p)| seen.first_time_after(&chunk[a..b], p)),
    );
}

/// The keyed hashes of `lines` in the growable filter `g`, for its batched calls.
fn growable_hashes(g: &GrowableBloomFilter, lines: &[Line<'_>]) -> Vec<blockbloom::KeyHash> {
    lines.iter().map(|l| g.key_hash(l)).collect()
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
