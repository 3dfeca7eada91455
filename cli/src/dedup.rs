//! `blockbloom dedup`: print each line the first time it is seen.
//!
//! Without `--state`, the filter lives in memory: a `BloomFilter` of `--capacity` lines, or,
//! without `--capacity`, a `GrowableBloomFilter` that grows with the input at the rate
//! `--fpr`. With `--state FILE`, the filter is the file, shared with any other process using
//! it: a file-backed `GrowableBloomFilter` (growing into `FILE.1`, `FILE.2`, …) unless the
//! state was made with `--capacity`, which makes it a file-backed `BloomFilter` of that
//! size.
//!
//! **One printer per line.** A line is printed only by the call of `insert_if_absent` that
//! won it, so of any number of runs sharing a state (and of the threads of one run) exactly
//! one prints it. Lines are claimed group by group ([`GROUP`] lines), each group just
//! before its lines are written; a growing state first makes room for the group
//! (`try_reserve`), and a file output first reserves the group's bytes on the disk, so that
//! neither a state that cannot grow nor a full disk records a line it did not print: the
//! run stops (exit 2) and the next run prints the rest. What can be recorded but never read
//! is bounded: a reader that goes away (`| head`) loses what was in the pipe and the group
//! being written; a `SIGKILL` the group being written. The run counts those lines and says
//! so.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::io::{self, IsTerminal};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::filter::{Claims, Filter, Line, Wanted};
use crate::output::Output;
use crate::reader::spawn_reader;
use crate::Failure;

/// Lines claimed at a time with a state: at most this many lines (plus a pipe's buffer) are
/// recorded but unread when the reader goes away.
const GROUP: usize = 8192;
/// How long to wait at the end for the reader of a pipe to take the last lines.
const SETTLE: Duration = Duration::from_secs(2);

/// What `dedup` was asked to do.
pub(crate) struct Options {
    pub(crate) files: Vec<PathBuf>,
    /// `--capacity`, `--fpr`, `--block-bits`, `--seed`.
    pub(crate) wanted: Wanted,
    pub(crate) state: Option<PathBuf>,
    pub(crate) threads: usize,
    /// `--canonical-urls` (and its `--strip-…` options): URL lines are keyed by their
    /// canonical form.
    pub(crate) canonical_urls: Option<blockbloom::url::UrlCanonicalizer>,
    pub(crate) stats: bool,
}

/// The filter, and with a state the output offsets where the printed lines not yet
/// delivered end (oldest first).
struct Seen {
    filter: Filter,
    state: Option<PathBuf>,
    in_flight: VecDeque<u64>,
}

impl Seen {
    fn open(o: &Options) -> Result<Seen, Failure> {
        if o.wanted.block_bits.is_some() && o.wanted.capacity.is_none() {
            return Err(Failure::Usage(
                "--block-bits needs --capacity (a growing filter has 512-bit blocks)".into(),
            ));
        }
        let filter = match &o.state {
            None => Filter::in_memory(&o.wanted)?,
            Some(path) => Filter::open_state(path, &o.wanted).map_err(|e| state_err(path, e))?,
        };
        Ok(Seen {
            filter,
            state: o.state.clone(),
            in_flight: VecDeque::new(),
        })
    }

    /// The name of the filter in messages.
    fn what(&self) -> String {
        match &self.state {
            Some(p) => format!("state {}", p.display()),
            None => "the filter".into(),
        }
    }
}

/// A state that cannot be opened, as the user should read it.
fn state_err(path: &std::path::Path, e: blockbloom::Error) -> Failure {
    match e {
        blockbloom::Error::Conflict {
            what: "keys",
            file,
            requested,
        } => Failure::Usage(format!(
            "state {} was made with keys from {file}, but this run makes them from {requested}: \
             its lines would all look new; run with the options the state was made with (or \
             use another state)",
            path.display()
        )),
        blockbloom::Error::Conflict {
            what: "kind",
            file,
            requested,
        } => Failure::Usage(format!(
            "state {} is {file}, but this run asks for {requested}: use another state for it",
            path.display()
        )),
        blockbloom::Error::Conflict {
            what,
            file,
            requested,
        } => {
            // The flag's own spelling, as the user typed it.
            let flag = match what {
                "capacity" => "--capacity",
                "target fpr" => "--fpr",
                "block size" => "--block-bits",
                "seed" => "--seed",
                "expire-after" | "expire_after" => "--expire-after",
                other => other,
            };
            Failure::Usage(format!(
                "state {} was made with {flag} {file}, but this run asks for {flag} {requested}; \
                 omit --capacity, --fpr, --block-bits, --seed and --expire-after to use the \
                 state's own",
                path.display()
            ))
        }
        // A state is never left empty by this program (it is written whole, then linked
        // into place): an empty file was made by hand (`touch`, `> FILE`).
        blockbloom::Error::Truncated
            if std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() == 0) =>
        {
            Failure::Io(format!(
                "state {}: the file is empty, not a blockbloom state (remove it to start one)",
                path.display()
            ))
        }
        // A new state the flags ask too much of: the flags are wrong, not a state.
        e @ (blockbloom::Error::TooLarge { .. }
        | blockbloom::Error::UnreachableFpr(_)
        | blockbloom::Error::InvalidWindow(_))
            if !path.exists() =>
        {
            Failure::Usage(format!("state {}: {e}", path.display()))
        }
        e => Failure::Io(format!("state {}: {e}", path.display())),
    }
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
    let group = if seen.state.is_some() {
        GROUP
    } else {
        usize::MAX
    };
    let (mut lines, mut printed) = (0u64, 0u64);
    let mut closed = false; // the output was closed by its reader
    let mut buf = Vec::with_capacity(1 << 20);
    let (mut bounds, mut keep) = (Vec::new(), Vec::new());
    let claims = seen.filter.claims();
    // The filter's rate (or fill) is read every `warning_interval` lines: one warning.
    let (mut next_check, mut warned) = (seen.filter.warning_interval(), false);
    let result = 'chunks: loop {
        let chunk = match rx.recv_timeout(Duration::from_millis(100)) {
            _ if signals.caught().is_some() => break Ok(()),
            Ok(Ok(c)) => c,
            Ok(Err(e)) => break Err(Failure::Io(e)),
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => break Ok(()),
        };
        let data = chunk.bytes();
        line_bounds(data, &mut bounds);
        for g in bounds.chunks(group.min(bounds.len().max(1))) {
            if signals.caught().is_some() {
                break 'chunks Ok(());
            }
            // Room first, then the claims: a run that cannot grow its filter or write its
            // output stops here, with none of the group's lines recorded.
            if let Err(e) = claims.reserve(g.len() as u64) {
                break 'chunks Err(Failure::Io(format!(
                    "{} cannot grow: {e}. The lines from here on were neither printed nor \
                     recorded: remove the cause and run again (they are printed then, none twice)",
                    seen.what()
                )));
            }
            if seen.state.is_some() {
                let bytes = g.iter().map(|&(a, b)| (b - a + 1) as u64).sum();
                if let Err(e) = out.reserve(bytes) {
                    break 'chunks Err(Failure::Io(format!("writing output: {e}")));
                }
            }
            let keys = line_keys(data, g, o.canonical_urls.as_ref());
            decide(&claims, &keys, o.threads, &mut keep);
            lines += g.len() as u64;
            if lines >= next_check && !warned {
                next_check = lines + seen.filter.warning_interval();
                if let Some(w) = seen.filter.warning(&seen.what()) {
                    eprintln!("blockbloom: warning: {w}");
                    warned = true;
                }
            }
            buf.clear();
            for (&(a, b), &k) in g.iter().zip(&keep) {
                if k {
                    buf.extend_from_slice(&data[a..=b]);
                    printed += 1;
                    if seen.state.is_some() {
                        seen.in_flight.push_back(out.accepted + buf.len() as u64);
                    }
                }
            }
            if let Err(e) = out.write_all(&buf) {
                if e.kind() == io::ErrorKind::BrokenPipe {
                    closed = true;
                    break 'chunks Ok(());
                }
                break 'chunks Err(Failure::Io(format!("writing output: {e}")));
            }
            let delivered = out.delivered();
            while seen.in_flight.front().is_some_and(|&end| end <= delivered) {
                seen.in_flight.pop_front();
            }
        }
        let _ = free.try_send(chunk.buf); // reused by the reader
        if let Some(p) = &progress {
            p.set_message(format!("{lines} lines read, {printed} printed"));
            p.tick();
        }
    };
    if let Some(p) = progress {
        p.finish_and_clear();
    }
    // Lines recorded but never read: those still unread once the reader is gone (a reader
    // still there after `SETTLE` takes them after we exit).
    let mut unread = 0;
    if seen.state.is_some() {
        let delivered = if closed || result.is_err() {
            out.delivered()
        } else {
            out.settle(SETTLE)
        };
        if closed || result.is_err() || out.reader_gone() {
            unread = seen
                .in_flight
                .iter()
                .filter(|&&end| end > delivered)
                .count();
        }
    }
    if o.stats {
        print_stats(&seen, lines, printed, unread, start.elapsed().as_secs_f64());
    }
    if let Some(w) = seen.filter.warning(&seen.what()).filter(|_| !warned) {
        eprintln!("blockbloom: warning: {w}");
    }
    if unread > 0 {
        eprintln!(
            "blockbloom: {unread} printed lines were recorded in the {} but not read by the \
             output's reader (it stopped early); later runs do not print them again",
            seen.what()
        );
    }
    let what = seen.what();
    seen.filter
        .close()
        .map_err(|e| Failure::Io(format!("closing {what}: {e}")))?;
    result?;
    if let Some(sig) = signals.caught() {
        return Err(Failure::Signal(sig));
    }
    Ok(())
}

fn print_stats(seen: &Seen, lines: u64, printed: u64, unread: usize, secs: f64) {
    let what = match (&seen.filter, &seen.state) {
        (Filter::Fixed(_), None) => "filter",
        (Filter::Growing(_), None) => "growable filter",
        (Filter::Fixed(_), Some(_)) => "state file",
        (Filter::Growing(_), Some(_)) => "growing state",
        (Filter::Expiring(_), None) => "expiring filter",
        (Filter::Expiring(_), Some(_)) => "expiring state",
    };
    let (bits, bytes) = seen.filter.size();
    let recorded = match &seen.state {
        Some(_) => format!(", recorded in the state {printed} (unread {unread})"),
        None => String::new(),
    };
    let keys = seen.filter.keys();
    // The estimate covers what the filter holds: a state's earlier runs too, and for an
    // expiring filter the epochs still live.
    let over = match (&seen.filter, &seen.state) {
        (Filter::Expiring(_), _) => " in the live epochs",
        (_, Some(_)) => " since the state began",
        (_, None) => "",
    };
    eprintln!(
        "lines {lines}, printed {printed}{recorded}, repeats {}, {what} {bits} bits ({:.1} MiB), \
         estimated fpr now {:.4}%, estimated new lines taken for repeats (not printed){over} {}, \
         {secs:.2} s, {:.1} M lines/s",
        lines - printed,
        bytes as f64 / 1048576.0,
        100.0 * seen.filter.estimated_fpr(),
        crate::estimate(keys.estimated_false_positives()),
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

/// The key of each line of `bounds`: the line's bytes, or with `--canonical-urls` the
/// canonical form of a line that is a URL.
fn line_keys<'a>(
    chunk: &'a [u8],
    bounds: &[(usize, usize)],
    canonical: Option<&blockbloom::url::UrlCanonicalizer>,
) -> Vec<Cow<'a, [u8]>> {
    let key = |line: &'a [u8]| match canonical {
        Some(pages) if blockbloom::url::has_authority(line) => pages
            .canonicalize(line)
            .map_or(Cow::Borrowed(line), |url| Cow::Owned(url.into_bytes())),
        _ => Cow::Borrowed(line),
    };
    bounds.iter().map(|&(a, b)| key(&chunk[a..b])).collect()
}

/// Claims the lines' `keys` through `claims`; `keep[i]` says whether line `i` was won here (so
/// is printed). With several threads, each claims, as one batch in input order, the lines
/// routed to it: all copies of a key go to one thread, so the first copy wins.
fn decide(claims: &Claims<'_>, keys: &[Cow<'_, [u8]>], threads: usize, keep: &mut Vec<bool>) {
    keep.clear();
    keep.resize(keys.len(), false);
    if threads == 1 {
        let lines: Vec<Line<'_>> = keys.iter().map(|k| Line(k)).collect();
        claims.claim(&lines, keep);
        return;
    }
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    let (mut at, mut lines) = (Vec::new(), Vec::new());
                    for (i, key) in keys.iter().enumerate() {
                        let line: &[u8] = key;
                        if route(line, threads) == t {
                            at.push(i);
                            lines.push(Line(line));
                        }
                    }
                    let mut won = vec![false; lines.len()];
                    claims.claim(&lines, &mut won);
                    at.into_iter()
                        .zip(won)
                        .filter_map(|(i, w)| w.then_some(i))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for w in workers {
            for i in w.join().expect("worker panicked") {
                keep[i] = true;
            }
        }
    });
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
