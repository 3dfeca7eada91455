//! `blockbloom-bench`: the benchmark report of blockbloom against `HashSet` and the peer
//! Bloom-filter crates, in one process and one run.
//!
//! ```sh
//! cargo run --release -p blockbloom-bench             # full report (about 15 min on 2 vCPUs)
//! cargo run --release -p blockbloom-bench -- --quick  # smoke run (< 2 min)
//! cargo run --release -p blockbloom-bench -- --urls links.txt   # adds your own URL list
//! ```
//!
//! Writes `target/report/REPORT.md` and SVG plots next to it (`--out DIR` to change).

mod plot;
mod report;
mod sections;

use blockbloom_workload::CountingAlloc;
use report::{header, progress, Config, Report, USAGE};
use sections::*;
use std::fmt::Write as _;
use std::time::Instant;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

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
    let sections: [Section; 10] = [
        ("throughput", throughput::run),
        ("latency", latency::run),
        ("memory", memory::run),
        ("accuracy", accuracy::run),
        ("physical", physical::run),
        ("contention", contention::run),
        ("family", family::run),
        ("blocks", block_size::run),
        ("targets", targets::run),
        ("scale", scale::run),
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
        if let Err(e) = redis::section(&mut r.md, r.cfg.quick, url) {
            eprintln!("--redis: {e}");
            std::process::exit(1);
        }
        if let Err(e) = redis_servers::section(&mut r.md, r.cfg.quick) {
            eprintln!("--redis (server cost): {e}");
            std::process::exit(1);
        }
    }
    if let Some(path) = r.cfg.urls.clone() {
        if let Err(e) = real_urls::run(&mut r, &path) {
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
