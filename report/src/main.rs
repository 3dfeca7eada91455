//! `blockbloom-bench`: the benchmark report of blockbloom against `HashSet` and the peer
//! Bloom-filter crates, in one process and one run.
//!
//! ```sh
//! cargo run --release -p blockbloom-bench             # full report (~10 min on 2 cores)
//! cargo run --release -p blockbloom-bench -- --quick  # smoke run (< 2 min)
//! cargo run --release -p blockbloom-bench -- --urls links.txt   # adds your own URL list
//! ```
//!
//! Writes `target/report/REPORT.md` and SVG plots next to it (`--out DIR` to change).

mod family;
mod measure;
mod peers;
mod plot;
mod redis_section;

use blockbloom::{math, BloomFilter};
use blockbloom_workload::{write_url, CountingAlloc, SplitMix64};
use measure::Cell;
use peers::{Bloom, Classic, Dash, Fast, Locked, Op, Peer, Sbbf, Seq};
use plot::{Plot, Scale, Series};
use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

const FPR: f64 = 0.01;
const USAGE: &str =
    "usage: blockbloom-bench [--quick] [--urls FILE] [--out DIR] [--sizes N,N,...] \
     [--reps N] [--redis | --redis-only] [--redis-url URL] [--only SECTION,...]\n\
     sections: throughput latency memory accuracy physical contention family targets";

/// What one run measures.
struct Config {
    quick: bool,
    sizes: Vec<u64>,
    /// Timed operations per cell (at most; never more than the size).
    ops: usize,
    reps: usize,
    threads: Vec<usize>,
    memory_sizes: Vec<u64>,
    accuracy_capacity: u64,
    queries: usize,
    race_keys: usize,
    urls: Option<PathBuf>,
    out: PathBuf,
    /// Run the Redis section (0 = no, 1 = also, 2 = only it).
    redis: u8,
    redis_url: Option<String>,
    /// `--only`: the sections to run (all when empty).
    only: Vec<String>,
}

impl Config {
    fn from_args() -> Result<Config, String> {
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
struct Keys {
    text: String,
    ends: Vec<usize>,
}

impl Keys {
    fn from_ids(ids: impl IntoIterator<Item = u64>) -> Keys {
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
    fn strs(&self) -> Vec<&str> {
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
struct Workload {
    n: u64,
    members: Keys,
    fresh: Keys,
}

impl Workload {
    fn new(n: u64, ops: usize) -> Workload {
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
    fn keys(&self, op: Op) -> Vec<&str> {
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
}

/// Inserts the `n` members (untimed) and returns the heap bytes that took.
fn fill<P: Peer>(p: &P, n: u64) -> usize {
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
struct Row {
    peer: String,
    threads: usize,
    cells: Vec<(Op, Cell)>,
    bytes: usize,
}

impl Row {
    fn get(&self, op: Op) -> Option<&Cell> {
        self.cells.iter().find(|c| c.0 == op).map(|c| &c.1)
    }
}

struct Report {
    cfg: Config,
    md: String,
    started: Instant,
    rows: Vec<(u64, Row)>,
    /// (n, threads, huge pages, ns/op) of the physical-limit microbenchmark.
    limits: Vec<(u64, usize, bool, f64)>,
    /// (n, core-to-core round trip before and after that size's throughput cells, ns).
    round_trips: Vec<(u64, f64, f64)>,
}

fn progress(msg: &str) {
    eprintln!("[blockbloom-bench] {msg}");
}

impl Report {
    fn section(&mut self, title: &str) {
        progress(title);
        let _ = write!(self.md, "\n## {title}\n\n");
    }

    /// Throughput of a structure used from one thread only.
    fn seq<P: Peer>(&mut self, w: &Workload, p: &mut P, bytes: usize) {
        let mut cells = Vec::new();
        for op in Op::ALL {
            let keys = w.keys(op);
            cells.push((op, measure::seq(p, op, &keys, self.cfg.reps)));
        }
        self.push(w.n, p.name(), 1, cells, bytes);
    }

    /// Throughput of a shared structure: one thread, then each thread count.
    fn shared<P: Peer + Sync>(&mut self, w: &Workload, p: &mut P, bytes: usize) {
        self.seq(w, p, bytes);
        for &t in self.cfg.threads.clone().iter().filter(|&&t| t > 1) {
            let mut cells = Vec::new();
            for op in Op::ALL {
                let keys = w.keys(op);
                cells.push((op, measure::par(p, op, &keys, self.cfg.reps, t)));
            }
            self.push(w.n, p.name(), t, cells, bytes);
        }
    }

    fn push(&mut self, n: u64, peer: String, threads: usize, cells: Vec<(Op, Cell)>, bytes: usize) {
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

fn main() {
    let cfg = match Config::from_args() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = std::fs::create_dir_all(&cfg.out) {
        eprintln!("cannot create {}: {e}", cfg.out.display());
        std::process::exit(1);
    }
    let mut r = Report {
        md: String::new(),
        started: Instant::now(),
        rows: Vec::new(),
        limits: Vec::new(),
        round_trips: Vec::new(),
        cfg,
    };
    header(&mut r);
    type Section = (&'static str, fn(&mut Report));
    let sections: [Section; 8] = [
        ("throughput", throughput),
        ("latency", latency),
        ("memory", memory),
        ("accuracy", accuracy),
        ("physical", physical_limit),
        ("contention", contention),
        ("family", family),
        ("targets", targets),
    ];
    if let Some(bad) = r
        .cfg
        .only
        .iter()
        .find(|o| !sections.iter().any(|s| s.0 == o.as_str()))
    {
        eprintln!("--only: unknown section {bad}\n{USAGE}");
        std::process::exit(2);
    }
    if r.cfg.redis < 2 {
        for (name, run) in sections {
            if r.cfg.only.is_empty() || r.cfg.only.iter().any(|o| o == name) {
                run(&mut r);
            }
        }
    }
    if r.cfg.redis > 0 {
        r.section("Redis: one filter shared by many processes (blockbloom-redis)");
        let url = r.cfg.redis_url.clone();
        if let Err(e) = redis_section::section(&mut r.md, r.cfg.quick, url) {
            eprintln!("--redis: {e}");
            std::process::exit(1);
        }
    }
    if let Some(path) = r.cfg.urls.clone() {
        if let Err(e) = real_urls(&mut r, &path) {
            eprintln!("--urls {}: {e}", path.display());
            std::process::exit(1);
        }
    }
    let _ = writeln!(
        r.md,
        "\n---\nTotal run time: {:.0} s.",
        r.started.elapsed().as_secs_f64()
    );
    let path = r.cfg.out.join("REPORT.md");
    if let Err(e) = std::fs::write(&path, &r.md) {
        eprintln!("cannot write {}: {e}", path.display());
        std::process::exit(1);
    }
    progress(&format!(
        "wrote {} in {:.0} s",
        path.display(),
        r.started.elapsed().as_secs_f64()
    ));
}

fn read_or(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Versions of our dependencies, from the lock file the binary was built with.
fn crate_versions() -> String {
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

fn header(r: &mut Report) {
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

fn throughput(r: &mut Report) {
    r.section("Throughput");
    let sizes = r.cfg.sizes.clone();
    for &n in &sizes {
        let w = Workload::new(n, r.cfg.ops);
        progress(&format!("n = {n}"));
        let trip_before = measure::core_round_trip_ns();
        {
            let mut b = Bloom::new(n, FPR, false, false);
            let bytes = fill(&b, n);
            b.snapshot_prototype();
            r.shared(&w, &mut b, bytes);
            b.batched = true;
            r.shared(&w, &mut b, bytes);
        }
        if n as usize * 64 / 50 >= 2 << 20 {
            // huge pages only apply to filters of 2 MiB and more
            let mut b = Bloom::new(n, FPR, true, true);
            let bytes = fill(&b, n);
            b.snapshot_prototype();
            r.shared(&w, &mut b, bytes);
            b.batched = false;
            r.shared(&w, &mut b, bytes);
        }
        {
            let mut f = Fast::new(n, FPR);
            let bytes = fill(&f, n);
            f.snapshot_prototype();
            r.shared(&w, &mut f, bytes);
        }
        {
            let mut s = Sbbf::new(n);
            let bytes = fill(&s, n);
            s.snapshot_prototype();
            r.seq(&w, &mut s, bytes);
        }
        {
            let mut c = Classic::new(n, FPR);
            let bytes = fill(&c, n);
            c.snapshot_prototype();
            r.seq(&w, &mut c, bytes);
        }
        {
            let before = CountingAlloc::live_bytes();
            let mut h = Seq(
                RefCell::new(HashSet::with_capacity(n as usize)),
                "HashSet<String>",
            );
            fill(&h, n);
            let bytes = CountingAlloc::live_bytes() - before;
            r.seq(&w, &mut h, bytes);
        }
        {
            let before = CountingAlloc::live_bytes();
            let mut h = Seq(
                RefCell::new(HashSet::with_capacity_and_hasher(
                    n as usize,
                    ahash::RandomState::new(),
                )),
                "AHashSet<String>",
            );
            fill(&h, n);
            let bytes = CountingAlloc::live_bytes() - before;
            r.seq(&w, &mut h, bytes);
        }
        {
            let before = CountingAlloc::live_bytes();
            let mut m = Locked(Mutex::new(HashSet::with_capacity(n as usize)));
            fill(&m, n);
            let bytes = CountingAlloc::live_bytes() - before;
            r.shared(&w, &mut m, bytes);
        }
        {
            let before = CountingAlloc::live_bytes();
            let mut d = Dash(dashmap::DashSet::with_capacity(n as usize));
            fill(&d, n);
            let bytes = CountingAlloc::live_bytes() - before;
            r.shared(&w, &mut d, bytes);
        }
        r.round_trips
            .push((n, trip_before, measure::core_round_trip_ns()));
        throughput_tables(r, n);
    }
    throughput_plot(r);
}

fn fmt_n(n: u64) -> String {
    let exp = (n as f64).log10();
    if (exp - exp.round()).abs() < 1e-9 {
        format!("10^{}", exp.round())
    } else {
        let mant = n as f64 / 10f64.powi(exp.floor() as i32);
        format!("{mant}·10^{}", exp.floor())
    }
}

fn throughput_tables(r: &mut Report, n: u64) {
    let threads = r.cfg.threads.clone();
    for t in threads {
        let rows: Vec<&Row> = r
            .rows
            .iter()
            .filter(|(m, row)| *m == n && row.threads == t)
            .map(|(_, row)| row)
            .collect();
        let base = rows.iter().find(|row| row.peer == "blockbloom").copied();
        let mut md = format!(
            "### n = {}, {t} thread{}\n\n\
             | structure | insert ns | insert_if_absent ns | Mops/s | × blockbloom | contains member ns | contains non-member ns | fpr measured | bytes/key |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
            fmt_n(n),
            if t > 1 { "s" } else { "" }
        );
        for row in &rows {
            let ns = |op| row.get(op).map_or(f64::NAN, |c: &Cell| c.ns);
            let iaa = row.get(Op::InsertIfAbsent).unwrap();
            let ratio = base
                .and_then(|b| b.get(Op::InsertIfAbsent))
                .map_or(f64::NAN, |b| iaa.ns / b.ns);
            let non = row.get(Op::ContainsNonMember).unwrap();
            let _ = writeln!(
                md,
                "| {} | {:.1} | {:.1} | {:.1} | {:.2} | {:.1} | {:.1} | {:.3}% | {:.2} |",
                row.peer,
                ns(Op::Insert),
                iaa.ns,
                iaa.mops(),
                ratio,
                ns(Op::ContainsMember),
                ns(Op::ContainsNonMember),
                non.found as f64 * 100.0 / non.ops as f64,
                row.bytes as f64 / n as f64,
            );
        }
        md.push('\n');
        r.md.push_str(&md);
    }
    // scaling of the shared structures
    let mut md = String::from(
        "Scaling of insert_if_absent (throughput with T threads / with 1 thread):\n\n| structure |",
    );
    let ts: Vec<usize> = r.cfg.threads.iter().copied().filter(|&t| t > 1).collect();
    for t in &ts {
        let _ = write!(md, " {t} threads |");
    }
    md.push_str("\n|---|");
    md.push_str(&"---:|".repeat(ts.len()));
    md.push('\n');
    let names: Vec<String> = r
        .rows
        .iter()
        .filter(|(m, row)| *m == n && row.threads > 1)
        .map(|(_, row)| row.peer.clone())
        .fold(Vec::new(), |mut v, p| {
            if !v.contains(&p) {
                v.push(p);
            }
            v
        });
    for name in names {
        let ns = |t: usize| {
            r.rows
                .iter()
                .find(|(m, row)| *m == n && row.threads == t && row.peer == name)
                .and_then(|(_, row)| row.get(Op::InsertIfAbsent))
                .map_or(f64::NAN, |c| c.ns)
        };
        let _ = write!(md, "| {name} |");
        for &t in &ts {
            let _ = write!(md, " ×{:.2} |", ns(1) / ns(t));
        }
        md.push('\n');
    }
    md.push('\n');
    if let Some(&(_, before, after)) = r.round_trips.iter().find(|t| t.0 == n) {
        let _ = write!(
            md,
            "Core-to-core cache-line round trip (two threads passing a counter through one \
             atomic word), measured before and after this size's cells: {before:.0} ns / \
             {after:.0} ns. Every write to a line that the other core also caches pays for such \
             a transfer, so the scaling of inserts into a shared in-cache filter follows this \
             figure, which on a VM depends on where the hypervisor places the vCPUs (same core \
             complex: tens of ns; apart: hundreds).\n\n"
        );
    }
    r.md.push_str(&md);
}

fn throughput_plot(r: &mut Report) {
    let n = r.cfg.sizes[0];
    let mut series: Vec<Series> = Vec::new();
    for (m, row) in &r.rows {
        if *m != n {
            continue;
        }
        let x = row.threads as f64;
        let y = row.get(Op::InsertIfAbsent).unwrap().mops();
        match series.iter_mut().find(|s| s.name == row.peer) {
            Some(s) => s.points.push((x, y)),
            None => series.push(Series {
                name: row.peer.clone(),
                points: vec![(x, y)],
            }),
        }
    }
    let title = format!("insert_if_absent, n = {}, 50% duplicates", fmt_n(n));
    let plot = Plot {
        title: &title,
        x_label: "threads",
        y_label: "million operations / s (log)",
        x: Scale::Linear,
        y: Scale::Log,
    };
    emit_plot(r, "throughput.svg", &plot, &series);
}

fn emit_plot(r: &mut Report, file: &str, plot: &Plot, series: &[Series]) {
    match plot::lines(&r.cfg.out.join(file), plot, series) {
        Ok(()) => {
            let _ = writeln!(r.md, "![{}]({file})\n", plot.title);
        }
        Err(e) => {
            let _ = writeln!(r.md, "(plot {file} failed: {e})\n");
        }
    }
}

fn latency(r: &mut Report) {
    r.section("Latency of single operations");
    let n = r.cfg.sizes[0];
    let w = Workload::new(n, r.cfg.ops);
    let overhead = measure::timer_overhead_ns();
    let _ = write!(
        r.md,
        "n = {}; each operation timed on its own with two clock reads, which alone take {overhead} ns \
         (median, included in every figure below).\n\n\
         | structure | operation | threads | p50 ns | p90 ns | p99 ns | p99.9 ns | max ns |\n\
         |---|---|---:|---:|---:|---:|---:|---:|\n",
        fmt_n(n)
    );
    let max_t = *r.cfg.threads.last().unwrap();
    let mut lines = Vec::new();
    let mut line = |name: &str, op: Op, t: usize, h: hdrhistogram::Histogram<u64>| {
        let q = |x: f64| h.value_at_quantile(x);
        lines.push(format!(
            "| {name} | {} | {t} | {} | {} | {} | {} | {} |",
            op.name(),
            q(0.5),
            q(0.9),
            q(0.99),
            q(0.999),
            h.max()
        ));
    };
    let ops = [Op::InsertIfAbsent, Op::ContainsMember];
    {
        let mut b = Bloom::new(n, FPR, false, false);
        fill(&b, n);
        b.snapshot_prototype();
        for op in ops {
            let keys = w.keys(op);
            line("blockbloom", op, 1, measure::latency_seq(&mut b, op, &keys));
            line(
                "blockbloom",
                op,
                max_t,
                measure::latency_par(&mut b, op, &keys, max_t),
            );
        }
    }
    {
        let mut h = Seq(RefCell::new(HashSet::with_capacity(n as usize)), "");
        fill(&h, n);
        for op in ops {
            let keys = w.keys(op);
            line(
                "HashSet<String>",
                op,
                1,
                measure::latency_seq(&mut h, op, &keys),
            );
        }
    }
    {
        let mut h = Seq(
            RefCell::new(HashSet::with_capacity_and_hasher(
                n as usize,
                ahash::RandomState::new(),
            )),
            "",
        );
        fill(&h, n);
        for op in ops {
            let keys = w.keys(op);
            line(
                "AHashSet<String>",
                op,
                1,
                measure::latency_seq(&mut h, op, &keys),
            );
        }
    }
    {
        let mut m = Locked(Mutex::new(HashSet::with_capacity(n as usize)));
        fill(&m, n);
        for op in ops {
            let keys = w.keys(op);
            let h = measure::latency_par(&mut m, op, &keys, max_t);
            line("Mutex<HashSet<String>>", op, max_t, h);
        }
    }
    {
        let mut d = Dash(dashmap::DashSet::with_capacity(n as usize));
        fill(&d, n);
        for op in ops {
            let keys = w.keys(op);
            line(
                "DashSet<String>",
                op,
                max_t,
                measure::latency_par(&mut d, op, &keys, max_t),
            );
        }
    }
    r.md.push_str(&lines.join("\n"));
    r.md.push_str("\n\n");
}

fn memory(r: &mut Report) {
    r.section("Memory");
    let _ = write!(
        r.md,
        "Heap bytes measured with a counting global allocator while inserting n distinct URLs \
         (`HashSet::new()`, grown as it goes; the strings included); the Bloom filters' size is \
         their allocation, whatever they hold.\n\n\
         | n | HashSet<String> | AHashSet<String> | blockbloom 1% | blockbloom 0.1% | HashSet / blockbloom 1% |\n\
         |---:|---:|---:|---:|---:|---:|\n"
    );
    let mut series: Vec<Series> = [
        "HashSet<String>",
        "AHashSet<String>",
        "blockbloom 1%",
        "blockbloom 0.1%",
    ]
    .iter()
    .map(|s| Series {
        name: s.to_string(),
        points: Vec::new(),
    })
    .collect();
    for n in r.cfg.memory_sizes.clone() {
        progress(&format!("memory n = {n}"));
        let std_bytes = {
            let before = CountingAlloc::live_bytes();
            let h = Seq(RefCell::new(HashSet::new()), "");
            fill(&h, n);
            CountingAlloc::live_bytes() - before
        };
        let a_bytes = {
            let before = CountingAlloc::live_bytes();
            let h = Seq(
                RefCell::new(HashSet::with_hasher(ahash::RandomState::new())),
                "",
            );
            fill(&h, n);
            CountingAlloc::live_bytes() - before
        };
        let bloom = |fpr| {
            BloomFilter::with_capacity(n, fpr)
                .expect("filter")
                .memory_bytes()
        };
        let (b1, b01) = (bloom(0.01), bloom(0.001));
        let per = |b: usize| b as f64 / n as f64;
        let _ = writeln!(
            r.md,
            "| {} | {:.1} MiB ({:.1} B/key) | {:.1} MiB ({:.1} B/key) | {:.2} MiB ({:.2} B/key) | {:.2} MiB ({:.2} B/key) | ×{:.0} |",
            fmt_n(n),
            std_bytes as f64 / 1048576.0,
            per(std_bytes),
            a_bytes as f64 / 1048576.0,
            per(a_bytes),
            b1 as f64 / 1048576.0,
            per(b1),
            b01 as f64 / 1048576.0,
            per(b01),
            std_bytes as f64 / b1 as f64
        );
        for (s, b) in series.iter_mut().zip([std_bytes, a_bytes, b1, b01]) {
            s.points.push((n as f64, b as f64 / 1048576.0));
        }
    }
    r.md.push('\n');
    let plot = Plot {
        title: "memory for n distinct URLs",
        x_label: "n (log)",
        y_label: "MiB (log)",
        x: Scale::Log,
        y: Scale::Log,
    };
    emit_plot(r, "memory.svg", &plot, &series);
}

fn accuracy(r: &mut Report) {
    r.section("Accuracy");
    let c = r.cfg.accuracy_capacity;
    let q = r.cfg.queries;
    let queries = Keys::from_ids(1 << 40..(1 << 40) + q as u64);
    let queries = queries.strs();
    let members = Keys::from_ids(0..2 * c);
    let members = members.strs();
    let measured = |f: &BloomFilter| {
        let mut out = vec![false; q];
        f.contains_batch(&queries, &mut out);
        out.iter().filter(|&&b| b).count() as f64 / q as f64
    };
    let _ = write!(
        r.md,
        "Filled to capacity ({}) and asked {} never-inserted URLs. `blocked_fpr` is the \
         formula the filter is sized with, at the filter's actual bits per key.\n\n\
         | target | bits/key | k | measured | blocked_fpr (theory) | measured / target |\n\
         |---:|---:|---:|---:|---:|---:|\n",
        fmt_n(c),
        q
    );
    for fpr in [0.1, 0.01, 0.001] {
        let f = BloomFilter::builder()
            .capacity(c)
            .fpr(fpr)
            .seed(77)
            .build()
            .expect("filter");
        f.insert_batch(&members[..c as usize]);
        let m = measured(&f);
        let bpk = f.num_bits() as f64 / c as f64;
        let theory = math::blocked_fpr(bpk, f.num_hashes());
        let _ = writeln!(
            r.md,
            "| {}% | {bpk:.2} | {} | {:.4}% | {:.4}% | {:.3} |",
            fpr * 100.0,
            f.num_hashes(),
            m * 100.0,
            theory * 100.0,
            m / fpr
        );
    }
    // Fill curve: 1% filter filled to twice its capacity.
    let f = BloomFilter::builder()
        .capacity(c)
        .fpr(FPR)
        .seed(78)
        .build()
        .expect("filter");
    let steps = 20u64;
    let mut series = vec![
        Series {
            name: "measured".into(),
            points: Vec::new(),
        },
        Series {
            name: "estimated_fpr()".into(),
            points: Vec::new(),
        },
        Series {
            name: "blocked_fpr (theory)".into(),
            points: Vec::new(),
        },
    ];
    let mut done = 0usize;
    let mut table = String::from(
        "\nFill curve of a 1% filter filled to twice its capacity:\n\n\
         | fill | measured | estimated_fpr() | theory |\n|---:|---:|---:|---:|\n",
    );
    for s in 1..=steps {
        let upto = (2 * c * s / steps) as usize;
        f.insert_batch(&members[done..upto]);
        done = upto;
        let fill = upto as f64 / c as f64;
        let m = measured(&f);
        let e = f.estimated_fpr();
        let t = math::blocked_fpr(f.num_bits() as f64 / upto as f64, f.num_hashes());
        for (ser, v) in series.iter_mut().zip([m, e, t]) {
            ser.points.push((fill, v * 100.0));
        }
        if s % 5 == 0 {
            let _ = writeln!(
                table,
                "| {:.0}% | {:.3}% | {:.3}% | {:.3}% |",
                fill * 100.0,
                m * 100.0,
                e * 100.0,
                t * 100.0
            );
        }
    }
    r.md.push_str(&table);
    r.md.push('\n');
    let plot = Plot {
        title: "false-positive rate of a 1% filter as it fills",
        x_label: "keys inserted / capacity",
        y_label: "false positives % (log)",
        x: Scale::Linear,
        y: Scale::Log,
    };
    emit_plot(r, "fill.svg", &plot, &series);
}

impl Report {
    /// ns/op of `op` for `peer` at size `n` with `threads` threads, if measured.
    fn ns(&self, n: u64, peer: &str, threads: usize, op: Op) -> Option<f64> {
        self.rows
            .iter()
            .find(|(m, row)| *m == n && row.threads == threads && row.peer == peer)
            .and_then(|(_, row)| row.get(op))
            .map(|c| c.ns)
    }
}

/// The speed targets of the project (issue "Fastest concurrent filter, shown"), checked
/// against this run's figures.
fn targets(r: &mut Report) {
    r.section("Targets");
    let iaa = Op::InsertIfAbsent;
    let small = r.cfg.sizes[0];
    let large = *r.cfg.sizes.last().unwrap();
    let max_t = *r.cfg.threads.last().unwrap();
    let mut lines = vec![
        "| target | figures | ratio | met? |".to_string(),
        "|---|---|---:|---|".to_string(),
    ];
    let mut check = |what: String, a: Option<f64>, b: Option<f64>, figures: &str, want: f64| {
        let (Some(a), Some(b)) = (a, b) else {
            lines.push(format!("| {what} | not measured | | |"));
            return;
        };
        let ratio = a / b;
        lines.push(format!(
            "| {what} | {} | ×{ratio:.2} | {} |",
            figures
                .replace("{a}", &format!("{a:.1}"))
                .replace("{b}", &format!("{b:.1}")),
            if ratio >= want { "yes" } else { "**no**" }
        ));
    };
    let sn = fmt_n(small);
    let ln = fmt_n(large);
    check(
        format!("1 thread, n = {sn}: no slower than sbbf-rs-safe (≥ ×1.00)"),
        r.ns(small, "sbbf-rs-safe (not atomic)", 1, iaa),
        r.ns(small, "blockbloom", 1, iaa),
        "sbbf {a} ns / blockbloom {b} ns",
        1.0,
    );
    check(
        format!("1 thread, n = {sn}: ≥ ×1.5 faster than fastbloom atomic"),
        r.ns(small, "fastbloom atomic (xxh3)", 1, iaa),
        r.ns(small, "blockbloom", 1, iaa),
        "fastbloom {a} ns / blockbloom {b} ns",
        1.5,
    );
    for peer in ["blockbloom", "blockbloom batched"] {
        check(
            format!("{peer}, n = {sn}: {max_t} threads ≥ ×1.8 the 1-thread throughput"),
            r.ns(small, peer, 1, iaa),
            r.ns(small, peer, max_t, iaa),
            &format!("1 thread {{a}} ns / {max_t} threads {{b}} ns"),
            1.8,
        );
    }
    if large != small {
        check(
            format!("1 thread, n = {ln}: one at a time no slower than sbbf-rs-safe"),
            r.ns(large, "sbbf-rs-safe (not atomic)", 1, iaa),
            r.ns(large, "blockbloom", 1, iaa),
            "sbbf {a} ns / blockbloom {b} ns",
            1.0,
        );
        for peer in ["blockbloom batched", "blockbloom batched +huge pages"] {
            check(
                format!("1 thread, n = {ln}: {peer} ≥ ×10 faster than fastbloom atomic"),
                r.ns(large, "fastbloom atomic (xxh3)", 1, iaa),
                r.ns(large, peer, 1, iaa),
                "fastbloom {a} ns / ours {b} ns",
                10.0,
            );
        }
    }
    for (n, t, huge, limit) in r.limits.clone().into_iter().filter(|l| l.0 == large) {
        let peer = if huge {
            "blockbloom batched +huge pages"
        } else {
            "blockbloom batched"
        };
        check(
            format!(
                "n = {}, {t} thread(s): {peer} within ×3 of the physical limit",
                fmt_n(n)
            ),
            Some(3.0 * limit),
            r.ns(n, peer, t, iaa),
            "3 × limit {a} ns / ours {b} ns",
            1.0,
        );
    }
    r.md.push_str(&lines.join("\n"));
    r.md.push_str(
        "\n\nA ratio is the first figure over the second; \"met\" means it reaches the bound \
         named in the target. Where a target is missed, README's performance notes say why; \
         for the sbbf-rs-safe targets (a filter that is not atomic, usable from one thread \
         only), \"The price of atomicity\" above measures what the locked operations that a \
         shared filter needs cost on this machine.\n",
    );
}

fn physical_limit(r: &mut Report) {
    r.section("Physical limit");
    let _ = write!(
        r.md,
        "The cheapest possible operation on an array as large as the filter: a random 64-byte \
         line, prefetched {} operations ahead with write intent, one `fetch_or` into it; no key \
         hashing. Compared with blockbloom's batched insert_if_absent (which also hashes a \
         ~70-byte URL per operation) from the throughput section.\n\n\
         | n | filter bytes | threads | huge pages | limit ns/op | blockbloom batched ns/op | ratio |\n\
         |---:|---:|---:|---|---:|---:|---:|\n",
        blockbloom::PREFETCH_DISTANCE
    );
    for n in r.cfg.sizes.clone() {
        let lines = BloomFilter::builder()
            .capacity(n)
            .fpr(FPR)
            .build()
            .expect("filter")
            .num_blocks();
        for &t in &r.cfg.threads.clone() {
            for huge in [false, true] {
                if huge && lines * 64 < 2 << 20 {
                    continue;
                }
                let limit = measure::physical_limit(lines, r.cfg.ops * 4, t, huge);
                r.limits.push((n, t, huge, limit));
                let name = if huge {
                    "blockbloom batched +huge pages"
                } else {
                    "blockbloom batched"
                };
                let ours = r
                    .rows
                    .iter()
                    .find(|(m, row)| *m == n && row.threads == t && row.peer == name)
                    .and_then(|(_, row)| row.get(Op::InsertIfAbsent))
                    .map_or(f64::NAN, |c| c.ns);
                let _ = writeln!(
                    r.md,
                    "| {} | {:.1} MiB | {t} | {} | {limit:.1} | {ours:.1} | ×{:.2} |",
                    fmt_n(n),
                    (lines * 64) as f64 / 1048576.0,
                    if huge { "yes" } else { "no" },
                    ours / limit
                );
            }
        }
    }
    r.md.push('\n');
    price_of_atomicity(r);
}

/// Why a concurrent filter cannot match a non-atomic one key for key: the measured price of
/// the `lock` prefix, and how many locked read-modify-writes a new key needs.
fn price_of_atomicity(r: &mut Report) {
    let n = r.cfg.sizes[0];
    // The throughput section's blockbloom, filled the same way.
    let bloom = Bloom::new(n, FPR, false, false);
    fill(&bloom, n);
    let f = &bloom.f;
    // For never-inserted keys at the benchmark's fill: words holding a missing bit, i.e. the
    // locked operations insert_if_absent performs (one `lock or` per such word, one of them
    // a `lock bts`, plus a second op when the deciding word has other missing bits too).
    let (mut keys, mut new_keys, mut words, mut ops) = (0u64, 0u64, 0u64, 0u64);
    let mut buf = String::with_capacity(128);
    let mut block = Vec::with_capacity(64);
    for i in n..n + 100_000 {
        buf.clear();
        write_url(i, &mut buf);
        let p = f.probe(buf.as_str());
        block.clear();
        f.block_bytes(p.block(), 1, &mut block)
            .expect("block in range");
        let mask = p.mask();
        let missing: [u64; 8] = std::array::from_fn(|w| {
            let word = u64::from_le_bytes(block[w * 8..w * 8 + 8].try_into().expect("8 bytes"));
            mask[w] & !word
        });
        keys += 1;
        let nonzero = missing.iter().filter(|&&m| m != 0).count() as u64;
        if let Some(top) = missing.iter().rev().find(|&&m| m != 0) {
            new_keys += 1;
            words += nonzero;
            ops += nonzero + u64::from(top.count_ones() > 1);
        }
    }
    let lines = f.num_blocks();
    let ops_per = r.cfg.ops * 2;
    let plain = measure::eight_ors(lines, ops_per, false);
    let locked = measure::eight_ors(lines, ops_per, true);
    let per_lock = (locked - plain) / 8.0;
    let per_key = ops as f64 / new_keys.max(1) as f64;
    let _ = write!(
        r.md,
        "### The price of atomicity\n\n\
         On an array the size of the {} filter (in cache), one thread: OR one bit into each of \
         the 8 words of a random line with plain loads and stores (what a non-atomic filter \
         such as sbbf-rs-safe does) or with `fetch_or` (`lock or` on x86: what a filter shared \
         between threads must do, or it loses other threads' bits).\n\n\
         | 8 plain ORs ns/op | 8 `fetch_or` ns/op | one locked read-modify-write |\n\
         |---:|---:|---:|\n\
         | {plain:.1} | {locked:.1} | +{per_lock:.1} ns |\n\n\
         At the benchmark's fill (the filter holds its n keys), {:.1}% of never-inserted keys \
         have a missing bit, in {:.2} words on average; insert_if_absent spends {per_key:.2} \
         locked operations on such a key (one per word, a `lock bts` deciding, and a second \
         one on the deciding word when it has other missing bits): about {:.1} ns that a \
         non-atomic filter does not pay, {:.1} ns per operation of the 50%-duplicate stream. \
         A duplicate writes nothing and pays none.\n\n",
        fmt_n(n),
        100.0 * new_keys as f64 / keys as f64,
        words as f64 / new_keys.max(1) as f64,
        per_key * per_lock,
        per_key * per_lock * new_keys as f64 / keys as f64 / 2.0,
    );
}

/// Same-key race: every thread runs insert_if_absent over the same keys in the same order,
/// all threads meeting at a spin barrier before each key, so that they really do call it on
/// the same new key at the same moment; a key answered `true` more than once would be
/// crawled more than once.
fn family(r: &mut Report) {
    r.section("The rest of the family: counting, growable, bitset");
    let n = if r.cfg.quick { 100_000 } else { 1_000_000 };
    let (reps, threads) = (r.cfg.reps, r.cfg.threads.clone());
    family::section(&mut r.md, n, reps, &threads, FPR);
}

fn contention(r: &mut Report) {
    r.section("Contention: same-key race");
    let threads = *r.cfg.threads.last().unwrap();
    let n = r.cfg.race_keys;
    let keys = Keys::from_ids(0..n as u64);
    let keys = keys.strs();
    let _ = write!(
        r.md,
        "{threads} threads each call insert_if_absent on the same {n} new URLs in the same order, \
         meeting at a spin barrier before every key so that each key is raced; 3 rounds on fresh \
         filters. A key with more than one `true` would be fetched twice by a crawler.\n\n\
         | structure | keys claimed more than once | keys claimed by nobody (false positives) |\n\
         |---|---:|---:|\n"
    );
    let race = |iaa: &(dyn Fn(&str) -> bool + Sync)| -> (usize, usize) {
        let wins: Vec<AtomicU8> = (0..n).map(|_| AtomicU8::new(0)).collect();
        let arrived = AtomicUsize::new(0);
        measure::on_threads(threads, |_| {
            for (i, k) in keys.iter().enumerate() {
                arrived.fetch_add(1, Ordering::AcqRel);
                let mut spins = 0u32;
                while arrived.load(Ordering::Acquire) < threads * (i + 1) {
                    spins += 1;
                    if spins % 1024 == 0 {
                        std::thread::yield_now(); // more threads than cores
                    } else {
                        std::hint::spin_loop();
                    }
                }
                if iaa(k) {
                    wins[i].fetch_add(1, Ordering::Relaxed);
                }
            }
            0
        });
        let w: Vec<u8> = wins.iter().map(|w| w.load(Ordering::Relaxed)).collect();
        (
            w.iter().filter(|&&x| x > 1).count(),
            w.iter().filter(|&&x| x == 0).count(),
        )
    };
    let mut rows = Vec::new();
    let (mut twice, mut none) = (0, 0);
    for round in 0..3 {
        let f = BloomFilter::builder()
            .capacity(n as u64)
            .fpr(FPR)
            .seed(round)
            .build()
            .unwrap();
        let (a, b) = race(&|k| f.insert_if_absent(k));
        (twice, none) = (twice + a, none + b);
    }
    rows.push(("blockbloom", twice, none));
    let (mut twice, mut none) = (0, 0);
    for _ in 0..3 {
        let f = Fast::new(n as u64, FPR);
        let (a, b) = race(&|k| f.insert_if_absent(k));
        (twice, none) = (twice + a, none + b);
    }
    rows.push(("fastbloom atomic (xxh3)", twice, none));
    for (name, twice, none) in rows {
        let _ = writeln!(
            r.md,
            "| {name} | {twice} of {} ({:.2}%) | {none} |",
            3 * n,
            twice as f64 * 100.0 / (3 * n) as f64
        );
    }
    r.md.push('\n');
}

/// The dedup throughput on the user's own list of URLs (one per line), in file order.
fn real_urls(r: &mut Report, path: &Path) -> std::io::Result<()> {
    r.section("Your URLs");
    let bytes = std::fs::read(path)?;
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().map(|l| l.trim_end_matches('\r')).collect();
    let n = lines.len().max(1) as u64;
    let exact: HashSet<&str> = lines.iter().copied().collect();
    let _ = write!(
        r.md,
        "`{}`: {} lines, {} distinct. One insert_if_absent per line in file order, into a \
         structure sized for the line count; median of {} run(s).\n\n\
         | structure | threads | ns/line | Mops/s | lines kept | missed (false positives) | bytes |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
        path.display(),
        lines.len(),
        exact.len(),
        r.cfg.reps
    );
    let reps = r.cfg.reps;
    let mut out = Vec::new();
    let mut row = |name: String, t: usize, c: Cell, bytes: usize| {
        out.push(format!(
            "| {name} | {t} | {:.1} | {:.1} | {} | {} | {bytes} |",
            c.ns,
            c.mops(),
            c.found,
            exact.len().saturating_sub(c.found)
        ));
    };
    let max_t = *r.cfg.threads.last().unwrap();
    let fresh = |mk: &dyn Fn() -> Bloom| {
        let mut b = mk();
        b.snapshot_prototype(); // empty: reset clears it
        b
    };
    for batched in [false, true] {
        let mut b = fresh(&|| Bloom::new(n, FPR, batched, false));
        let bytes = b.f.memory_bytes();
        row(
            b.name(),
            1,
            measure::seq(&mut b, Op::InsertIfAbsent, &lines, reps),
            bytes,
        );
        let c = measure::par(&mut b, Op::InsertIfAbsent, &lines, reps, max_t);
        row(b.name(), max_t, c, bytes);
    }
    {
        let mut f = Fast::new(n, FPR);
        f.snapshot_prototype();
        let bytes = f.own_memory().unwrap_or(0);
        row(
            f.name(),
            1,
            measure::seq(&mut f, Op::InsertIfAbsent, &lines, reps),
            bytes,
        );
    }
    {
        let before = CountingAlloc::live_bytes();
        let mut h = Seq(RefCell::new(HashSet::new()), "HashSet<String>");
        let c = measure::seq(&mut h, Op::InsertIfAbsent, &lines, 1);
        let bytes = {
            // measure the full set once more, kept this time
            let keep = Seq(RefCell::new(HashSet::new()), "");
            lines.iter().for_each(|l| keep.insert(l));
            CountingAlloc::live_bytes() - before
        };
        row(h.name(), 1, c, bytes);
    }
    r.md.push_str(&out.join("\n"));
    r.md.push_str("\n\n");
    Ok(())
}
