//! The main job: deduplicate a crawl-order URL stream with rayon and compare with a HashSet.
//!
//! ```sh
//! cargo run --release --example dedup                      # 2 million generated links, 50% repeats
//! cargo run --release --example dedup -- --links 10000000 --fpr 0.001
//! cargo run --release --example dedup -- --urls links.txt  # one URL per line, your own crawl
//! ```
//!
//! Prints the number of distinct URLs (exact, from a `HashSet<String>`, and as the filter saw
//! them), how many new URLs the filter wrongly took for repeats (its false positives), its
//! own estimate of its false-positive rate, and the memory of both structures — the HashSet's
//! measured by a counting allocator, not estimated.

use blockbloom::BloomFilter;
use blockbloom_workload::{dup_stream, url, CountingAlloc};
use rayon::prelude::*;
use std::collections::HashSet;
use std::time::Instant;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

fn main() {
    let mut links_n: usize = 2_000_000;
    let mut dup = 0.5;
    let mut fpr = 0.01;
    let mut file: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || {
            args.next()
                .unwrap_or_else(|| usage(&format!("{a} needs a value")))
        };
        match a.as_str() {
            "--links" => links_n = val().parse().unwrap_or_else(|_| usage("bad --links")),
            "--dup" => dup = val().parse().unwrap_or_else(|_| usage("bad --dup")),
            "--fpr" => fpr = val().parse().unwrap_or_else(|_| usage("bad --fpr")),
            "--urls" => file = Some(val()),
            "-h" | "--help" => usage(""),
            other => usage(&format!("unknown argument {other}")),
        }
    }

    let t = Instant::now();
    let links: Vec<String> = match &file {
        Some(path) => std::fs::read_to_string(path)
            .unwrap_or_else(|e| {
                eprintln!("cannot read {path}: {e}");
                std::process::exit(2)
            })
            .lines()
            .map(str::to_owned)
            .collect(),
        None => dup_stream(links_n, dup, 42)
            .0
            .into_iter()
            .map(url)
            .collect(),
    };
    let mean_len = links.iter().map(String::len).sum::<usize>() as f64 / links.len().max(1) as f64;
    println!(
        "input: {} links (mean {:.1} bytes) {} in {:.2?}",
        links.len(),
        mean_len,
        if file.is_some() { "read" } else { "generated" },
        t.elapsed()
    );

    // Exact answer, and what it costs.
    let before = CountingAlloc::live_bytes();
    let t = Instant::now();
    let mut exact: HashSet<String> = HashSet::new();
    for l in &links {
        if !exact.contains(l.as_str()) {
            exact.insert(l.clone());
        }
    }
    let hs_time = t.elapsed();
    let hs_bytes = CountingAlloc::live_bytes() - before;
    let distinct = exact.len() as u64;

    // The filter, sized for the distinct count (a crawler sizes for what it expects).
    let filter = BloomFilter::with_capacity(distinct.max(1), fpr).expect("valid parameters");
    let t = Instant::now();
    let new = links
        .par_iter()
        .filter(|u| filter.insert_if_absent(u.as_str()))
        .count() as u64;
    let bf_time = t.elapsed();
    let missed = distinct - new;

    println!("threads: {}", rayon::current_num_threads());
    println!("distinct URLs (exact HashSet):      {distinct}");
    println!("new URLs according to the filter:   {new}");
    println!(
        "new URLs taken for repeats (false positives): {missed} = {:.4}% of distinct (target fpr {:.4}%; the rate grows with the fill, so the mean over the run is lower)",
        100.0 * missed as f64 / distinct.max(1) as f64,
        100.0 * fpr
    );
    println!(
        "filter's own estimates: {} distinct keys, fpr now {:.4}%",
        filter.estimated_len(),
        100.0 * filter.estimated_fpr()
    );
    println!(
        "memory: filter {:.1} MiB ({:.2} bytes/URL), HashSet<String> {:.1} MiB ({:.1} bytes/URL) -> {:.0}x smaller",
        filter.memory_bytes() as f64 / 1048576.0,
        filter.memory_bytes() as f64 / distinct.max(1) as f64,
        hs_bytes as f64 / 1048576.0,
        hs_bytes as f64 / distinct.max(1) as f64,
        hs_bytes as f64 / filter.memory_bytes() as f64
    );
    println!(
        "time: filter (rayon, insert_if_absent) {:.2?} = {:.1} ns/link; HashSet (1 thread) {:.2?} = {:.1} ns/link",
        bf_time,
        bf_time.as_nanos() as f64 / links.len().max(1) as f64,
        hs_time,
        hs_time.as_nanos() as f64 / links.len().max(1) as f64
    );
}

fn usage(msg: &str) -> ! {
    if !msg.is_empty() {
        eprintln!("error: {msg}");
    }
    eprintln!("usage: dedup [--links N] [--dup FRACTION] [--fpr P] [--urls FILE]");
    std::process::exit(if msg.is_empty() { 0 } else { 1 })
}
