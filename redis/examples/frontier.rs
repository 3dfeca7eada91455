//! A multi-process crawler frontier: several OS processes share one "seen" filter in Redis and
//! crawl a synthetic link graph; each URL is crawled by at most one process.
//!
//! ```text
//! redis-server --port 6390 --save "" &
//! cargo run --release -p blockbloom-redis --example frontier -- redis://127.0.0.1:6390/ 4
//! ```
//!
//! The parent process creates the filter, starts N worker processes (this same binary with
//! `--worker`), and checks their output: no URL crawled twice, and every URL reachable from
//! the seeds crawled once (except the ~0.1% the filter mistakes for seen).

use blockbloom_redis::RedisBloomFilter;
use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

const PAGES: u64 = 200_000;
const LINKS_PER_PAGE: u64 = 8;

/// The synthetic web: page `p` links to 8 pages derived from `p` (SplitMix-style).
fn links(p: u64) -> impl Iterator<Item = u64> {
    (0..LINKS_PER_PAGE).map(move |i| {
        let mut z = p
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .wrapping_add(i.wrapping_mul(0xBF58_476D_1CE4_E5B9));
        z ^= z >> 31;
        z = z.wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 29)) % PAGES
    })
}

fn page_url(p: u64) -> String {
    format!("https://site{}.example/page/{p}", p % 97)
}

/// Worker: take pages from a local queue (seeded with pages ≡ id mod N), "crawl" them, and
/// keep the discovered links that the shared filter says are new; print crawled pages.
fn worker(url: &str, id: u64, n: u64) -> Result<(), blockbloom_redis::Error> {
    let mut seen = RedisBloomFilter::open(url, "frontier:seen")?;
    let mut queue: Vec<u64> = (0..16).map(|s| s * n + id).filter(|&p| p < PAGES).collect();
    let seeds: Vec<String> = queue.iter().map(|&p| page_url(p)).collect();
    let fresh = seen.insert_if_absent_many(&seeds)?;
    queue = queue
        .into_iter()
        .zip(fresh)
        .filter(|x| x.1)
        .map(|x| x.0)
        .collect();
    let mut out = String::new();
    while !queue.is_empty() {
        // Crawl a batch of pages, then check all of their links in one round trip.
        let batch: Vec<u64> = queue.drain(..queue.len().min(256)).collect();
        let found: Vec<u64> = batch.iter().flat_map(|&p| links(p)).collect();
        for p in &batch {
            out.push_str(&p.to_string());
            out.push('\n');
        }
        let urls: Vec<String> = found.iter().map(|&p| page_url(p)).collect();
        let fresh = seen.insert_if_absent_many(&urls)?;
        queue.extend(found.into_iter().zip(fresh).filter(|x| x.1).map(|x| x.0));
    }
    print!("{out}");
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let url = args
        .get(1)
        .cloned()
        .unwrap_or_else(|| "redis://127.0.0.1:6379/".into());
    let n: u64 = args.get(2).map(|a| a.parse()).transpose()?.unwrap_or(4);
    if let Some(id) = args.iter().position(|a| a == "--worker") {
        let id: u64 = args[id + 1].parse()?;
        return Ok(worker(&url, id, n)?);
    }
    RedisBloomFilter::delete(&url, "frontier:seen")?;
    RedisBloomFilter::create(&url, "frontier:seen", PAGES, 0.001)?;
    let t = std::time::Instant::now();
    let exe = std::env::current_exe()?;
    let children: Vec<_> = (0..n)
        .map(|id| {
            Command::new(&exe)
                .args([&url, &n.to_string(), "--worker", &id.to_string()])
                .stdout(Stdio::piped())
                .spawn()
        })
        .collect::<Result<_, _>>()?;
    let mut crawled = HashSet::new();
    let mut twice = 0;
    let mut per_process = Vec::new();
    for c in children {
        let out = c.wait_with_output()?;
        if !out.status.success() {
            return Err("a worker failed".into());
        }
        let mut count = 0;
        for line in BufReader::new(&out.stdout[..]).lines() {
            count += 1;
            if !crawled.insert(line?.parse::<u64>()?) {
                twice += 1;
            }
        }
        per_process.push(count);
    }
    // What a single process with an exact set would have crawled.
    let mut reach = HashSet::new();
    let mut stack: Vec<u64> = (0..n)
        .flat_map(|id| (0..16).map(move |s| s * n + id))
        .filter(|&p| p < PAGES)
        .collect();
    while let Some(p) = stack.pop() {
        if reach.insert(p) {
            stack.extend(links(p));
        }
    }
    println!(
        "{n} processes crawled {:?} pages ({} in all) in {:.2?}; crawled twice: {twice}; \
         reachable: {}; missed (false positives): {}",
        per_process,
        crawled.len(),
        t.elapsed(),
        reach.len(),
        reach.len() - crawled.len()
    );
    RedisBloomFilter::delete(&url, "frontier:seen")?;
    if twice > 0 {
        return Err("a page was crawled twice".into());
    }
    Ok(())
}
