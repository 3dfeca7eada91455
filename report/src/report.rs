//! What every section shares: the run's configuration, the workload of keys, the results
//! so far, and the Markdown being written.

// What the sections use, so that each of them imports `crate::report::*` and nothing else.
pub(crate) use std::cell::RefCell;
pub(crate) use std::collections::HashSet;
pub(crate) use std::fmt::Write as _;
pub(crate) use std::path::{Path, PathBuf};
pub(crate) use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
pub(crate) use std::sync::Mutex;
pub(crate) use std::time::Instant;

pub(crate) use crate::plot::{self, Plot, Scale, Series};
pub(crate) use blockbloom::{math, BloomFilter};
pub(crate) use blockbloom_bench::measure::{self, Cell};
pub(crate) use blockbloom_bench::peers::{Bloom, Classic, Dash, Fast, Locked, Op, Peer, Sbbf, Seq};
pub(crate) use blockbloom_workload::{write_url, CountingAlloc, SplitMix64};

pub(crate) const FPR: f64 = 0.01;
pub(crate) const USAGE: &str =
    "usage: blockbloom-bench [--quick] [--urls FILE] [--out DIR] [--sizes N,N,...] \
     [--reps N] [--redis | --redis-only] [--redis-url URL] [--only SECTION,...]\n\
     sections: throughput latency memory accuracy physical contention family blocks targets scale";

/// What one run measures.
pub(crate) struct Config {
    pub(crate) quick: bool,
    pub(crate) sizes: Vec<u64>,
    /// Timed operations per cell (at most; never more than the size).
    pub(crate) ops: usize,
    pub(crate) reps: usize,
    pub(crate) threads: Vec<usize>,
    pub(crate) memory_sizes: Vec<u64>,
    pub(crate) accuracy_capacity: u64,
    pub(crate) queries: usize,
    pub(crate) race_keys: usize,
    pub(crate) urls: Option<PathBuf>,
    pub(crate) out: PathBuf,
    /// Run the Redis section (0 = no, 1 = also, 2 = only it).
    pub(crate) redis: u8,
    pub(crate) redis_url: Option<String>,
    /// `--only`: the sections to run (all when empty).
    pub(crate) only: Vec<String>,
}

impl Config {
    pub(crate) fn from_args() -> Result<Config, String> {
        let mut quick = false;
        let mut urls = None;
        let mut out = PathBuf::from("target/report");
        let mut sizes = None;
        let mut reps = None;
        let mut redis = 0;
        let mut redis_url = None;
        let mut only = Vec::new();
        let mut args = std::env::args().skip(1);
        while let Some(a) = args.next() {
            match a.as_str() {
                "--quick" => quick = true,
                "--redis" => redis = redis.max(1),
                "--redis-only" => redis = 2,
                "--only" => {
                    let list = args.next().ok_or("--only needs SECTION,...")?;
                    only = list.split(',').map(|x| x.trim().to_string()).collect();
                }
                "--redis-url" => {
                    redis_url = Some(args.next().ok_or("--redis-url needs a URL")?);
                    redis = redis.max(1);
                }
                "--urls" => urls = Some(PathBuf::from(args.next().ok_or("--urls needs a FILE")?)),
                "--out" => out = PathBuf::from(args.next().ok_or("--out needs a DIR")?),
                "--sizes" => {
                    let list = args.next().ok_or("--sizes needs N,N,...")?;
                    let parsed: Result<Vec<u64>, _> =
                        list.split(',').map(|s| s.trim().parse::<u64>()).collect();
                    sizes = Some(parsed.map_err(|e| format!("--sizes {list}: {e}"))?);
                }
                "--reps" => {
                    let r = args.next().ok_or("--reps needs N")?;
                    reps = Some(r.parse::<usize>().map_err(|e| format!("--reps {r}: {e}"))?);
                    if reps == Some(0) {
                        return Err("--reps must be at least 1".into());
                    }
                }
                "-h" | "--help" => return Err(USAGE.into()),
                other => return Err(format!("unknown argument {other}\n{USAGE}")),
            }
        }
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let mut threads = vec![1];
        while threads.last().unwrap() * 2 <= cores.max(2) {
            threads.push(threads.last().unwrap() * 2);
        }
        if *threads.last().unwrap() != cores.max(2) {
            threads.push(cores.max(2));
        }
        Ok(Config {
            quick,
            sizes: sizes.unwrap_or(if quick {
                vec![100_000, 1_000_000]
            } else {
                vec![1_000_000, 50_000_000]
            }),
            ops: if quick { 1 << 16 } else { 1 << 20 },
            reps: reps.unwrap_or(if quick { 1 } else { 5 }),
            threads,
            memory_sizes: if quick {
                vec![100_000, 1_000_000]
            } else {
                vec![1_000_000, 10_000_000, 50_000_000]
            },
            accuracy_capacity: if quick { 100_000 } else { 1_000_000 },
            queries: if quick { 200_000 } else { 2_000_000 },
            race_keys: if quick { 100_000 } else { 1_000_000 },
            urls,
            out,
            redis,
            redis_url,
            only,
        })
    }
}

/// Strings stored end to end in one buffer (a `Vec<String>` of 10^7 URLs would cost more in
/// allocator overhead than the text itself).
pub(crate) struct Keys {
    pub(crate) text: String,
    pub(crate) ends: Vec<usize>,
}

impl Keys {
    pub(crate) fn from_ids(ids: impl IntoIterator<Item = u64>) -> Keys {
        let mut k = Keys {
            text: String::new(),
            ends: Vec::new(),
        };
        for i in ids {
            write_url(i, &mut k.text);
            k.ends.push(k.text.len());
        }
        k
    }
    pub(crate) fn strs(&self) -> Vec<&str> {
        let mut start = 0;
        self.ends
            .iter()
            .map(|&e| {
                let s = &self.text[start..e];
                start = e;
                s
            })
            .collect()
    }
}

/// The keys of the timed operations at size `n`: `members` (inserted while filling) drawn at
/// random, and `fresh` keys never inserted.
pub(crate) struct Workload {
    pub(crate) n: u64,
    pub(crate) members: Keys,
    pub(crate) fresh: Keys,
}

impl Workload {
    pub(crate) fn new(n: u64, ops: usize) -> Workload {
        let m = (n as usize).min(ops) as u64;
        let mut rng = SplitMix64::new(n);
        Workload {
            n,
            members: Keys::from_ids((0..m).map(|_| rng.below(n))),
            fresh: Keys::from_ids(n..n + m),
        }
    }
    /// The keys of `op`: insert and insert_if_absent alternate a member and a fresh key (50%
    /// duplicates); contains asks members or fresh keys.
    pub(crate) fn keys(&self, op: Op) -> Vec<&str> {
        match op {
            Op::Insert | Op::InsertIfAbsent => self
                .members
                .strs()
                .into_iter()
                .zip(self.fresh.strs())
                .flat_map(|(a, b)| [a, b])
                .collect(),
            Op::ContainsMember => self.members.strs(),
            Op::ContainsNonMember => self.fresh.strs(),
        }
    }

    /// The keys of one cell of `op`: offered [`keys`](Self::keys), of which the fresh ones
    /// may be added (and are removed again between repetitions).
    pub(crate) fn cell(&self, op: Op) -> CellKeys<'_> {
        CellKeys {
            keys: self.keys(op),
            added: self.fresh.strs(),
        }
    }
}

/// Owned key lists of one cell; [`keys`](Self::keys) lends them to `measure`.
pub(crate) struct CellKeys<'a> {
    keys: Vec<&'a str>,
    added: Vec<&'a str>,
}

impl CellKeys<'_> {
    pub(crate) fn keys(&self) -> measure::Keys<'_> {
        measure::Keys {
            keys: &self.keys,
            added: &self.added,
        }
    }
}

/// Inserts the `n` members (untimed) and returns the heap bytes that took.
pub(crate) fn fill<P: Peer>(p: &P, n: u64) -> usize {
    let before = CountingAlloc::live_bytes();
    let mut buf = String::with_capacity(128);
    for i in 0..n {
        buf.clear();
        write_url(i, &mut buf);
        p.insert(&buf);
    }
    p.own_memory()
        .unwrap_or_else(|| CountingAlloc::live_bytes().saturating_sub(before))
}

/// One structure's results at one size.
pub(crate) struct Row {
    pub(crate) peer: String,
    pub(crate) threads: usize,
    pub(crate) cells: Vec<(Op, Cell)>,
    pub(crate) bytes: usize,
}

impl Row {
    pub(crate) fn get(&self, op: Op) -> Option<&Cell> {
        self.cells.iter().find(|c| c.0 == op).map(|c| &c.1)
    }
}

pub(crate) struct Report {
    pub(crate) cfg: Config,
    pub(crate) md: String,
    pub(crate) started: Instant,
    pub(crate) rows: Vec<(u64, Row)>,
    /// (n, threads, huge pages, ns/op) of the physical-limit microbenchmark.
    pub(crate) limits: Vec<(u64, usize, bool, f64)>,
    /// (n, core-to-core round trip before and after that size's throughput cells, ns).
    pub(crate) round_trips: Vec<(u64, f64, f64)>,
}

pub(crate) fn progress(msg: &str) {
    eprintln!("[blockbloom-bench] {msg}");
}

impl Report {
    pub(crate) fn section(&mut self, title: &str) {
        progress(title);
        let _ = write!(self.md, "\n## {title}\n\n");
    }

    /// Throughput of a structure used from one thread only.
    pub(crate) fn seq<P: Peer>(&mut self, w: &Workload, p: &mut P, bytes: usize) {
        let mut cells = Vec::new();
        for op in Op::ALL {
            let c = w.cell(op);
            cells.push((op, measure::seq(p, op, c.keys(), self.cfg.reps)));
        }
        self.push(w.n, p.name(), 1, cells, bytes);
    }

    /// Throughput of a shared structure: one thread, then each thread count.
    pub(crate) fn shared<P: Peer + Sync>(&mut self, w: &Workload, p: &mut P, bytes: usize) {
        self.seq(w, p, bytes);
        for &t in self.cfg.threads.clone().iter().filter(|&&t| t > 1) {
            let mut cells = Vec::new();
            for op in Op::ALL {
                let c = w.cell(op);
                cells.push((op, measure::par(p, op, c.keys(), self.cfg.reps, t)));
            }
            self.push(w.n, p.name(), t, cells, bytes);
        }
    }

    pub(crate) fn push(
        &mut self,
        n: u64,
        peer: String,
        threads: usize,
        cells: Vec<(Op, Cell)>,
        bytes: usize,
    ) {
        let iaa = cells.iter().find(|c| c.0 == Op::InsertIfAbsent).unwrap().1;
        progress(&format!(
            "  n={n} {peer} {threads}t: insert_if_absent {:.1} ns/op ({:.0}s so far)",
            iaa.ns,
            self.started.elapsed().as_secs_f64()
        ));
        self.rows.push((
            n,
            Row {
                peer,
                threads,
                cells,
                bytes,
            },
        ));
    }
}

pub(crate) fn read_or(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Versions of our dependencies, from the lock file the binary was built with.
pub(crate) fn crate_versions() -> String {
    let lock = include_str!("../../Cargo.lock");
    let wanted = [
        "blockbloom",
        "fastbloom",
        "sbbf-rs-safe",
        "bloomfilter",
        "dashmap",
        "ahash",
        "hashbrown",
        "xxhash-rust",
    ];
    let mut found = Vec::new();
    let mut name = "";
    for line in lock.lines() {
        if let Some(n) = line.strip_prefix("name = \"") {
            name = n.trim_end_matches('"');
        } else if let Some(v) = line.strip_prefix("version = \"") {
            if wanted.contains(&name) {
                found.push(format!("{name} {}", v.trim_end_matches('"')));
            }
        }
    }
    found.join(", ")
}

pub(crate) fn header(r: &mut Report) {
    let cpu = read_or("/proc/cpuinfo")
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .map(|m| m.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let mem_gib = read_or("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").parse::<f64>().ok())
        .map_or("?".into(), |kb| format!("{:.1}", kb / 1048576.0));
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let thp = read_or("/sys/kernel/mm/transparent_hugepage/enabled");
    let cmd: Vec<String> = std::env::args().collect();
    let c = &r.cfg;
    let _ = write!(
        r.md,
        "# blockbloom benchmark report\n\n\
         - Command: `{}`{}\n\
         - Machine: {cpu}, {cores} cores available, {mem_gib} GiB memory, kernel {}, transparent huge pages `{}`\n\
         - Crates: {}\n\
         - Keys: synthetic URLs of ~70 bytes (`blockbloom-workload`), the same for every structure. \
         Structures are sized for n keys and filled with them (untimed); the timed operations are \
         {} per cell: insert and insert_if_absent alternate a member and a fresh key (50% duplicates), \
         contains asks members or never-inserted keys. Median of {} repetition(s); threads start on \
         a barrier and split the keys. Bloom filters at {}% false positives.\n\
         - Ratios are against `blockbloom` (one call per key) in the same run: > 1 means slower than blockbloom.\n",
        cmd.join(" "),
        if c.quick { " (quick mode: smaller sizes, one repetition)" } else { "" },
        read_or("/proc/sys/kernel/osrelease").trim(),
        thp.trim(),
        crate_versions(),
        c.ops,
        c.reps,
        FPR * 100.0,
    );
}

pub(crate) fn fmt_n(n: u64) -> String {
    let exp = (n as f64).log10();
    if (exp - exp.round()).abs() < 1e-9 {
        format!("10^{}", exp.round())
    } else {
        let mant = n as f64 / 10f64.powi(exp.floor() as i32);
        format!("{mant}·10^{}", exp.floor())
    }
}

pub(crate) fn emit_plot(r: &mut Report, file: &str, plot: &Plot, series: &[Series]) {
    match plot::lines(&r.cfg.out.join(file), plot, series) {
        Ok(()) => {
            let _ = writeln!(r.md, "![{}]({file})\n", plot.title);
        }
        Err(e) => {
            let _ = writeln!(r.md, "(plot {file} failed: {e})\n");
        }
    }
}
