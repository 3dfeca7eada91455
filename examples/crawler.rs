//! A simulated crawler frontier: breadth-first over a synthetic web graph, with rayon.
//!
//! ```sh
//! cargo run --release --example crawler            # crawl up to 200,000 pages
//! cargo run --release --example crawler -- 1000000
//! ```
//!
//! Each "fetched" page yields ~40 links: site-wide navigation (the same 30 on every page),
//! a few neighbours, and links anywhere in a universe of 5 million URLs. At every level the
//! links discovered by all pages are checked in parallel with `par_insert_if_absent_many`, which
//! gives each rayon task a chunk of links through the batched, prefetching
//! `insert_if_absent_many`; only the `true`s enter the next frontier, so no page is ever
//! fetched twice (checked at the end).

use blockbloom::BloomFilter;
use blockbloom_workload::{url, SplitMix64};
use rayon::prelude::*;
use std::collections::HashSet;
use std::time::Instant;

const UNIVERSE: u64 = 5_000_000;

/// Out-links of page `id`, as page ids.
fn links_of(id: u64) -> Vec<u64> {
    let mut rng = SplitMix64::new(id.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut out: Vec<u64> = (0..30).collect(); // navigation bar
    out.extend((1..=4).map(|d| (id + d) % UNIVERSE)); // neighbours
    out.extend((0..6).map(|_| rng.below(UNIVERSE))); // elsewhere
    out
}

fn main() {
    let max_pages: u64 = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("max pages: a number"))
        .unwrap_or(200_000);
    let seen = BloomFilter::with_capacity(max_pages * 8, 0.001).expect("valid parameters");
    let start = Instant::now();

    let root = url(0);
    seen.insert(&root);
    let mut frontier: Vec<u64> = vec![0];
    let mut fetched: Vec<u64> = Vec::new();
    let (mut discovered, mut level) = (0u64, 0);
    while !frontier.is_empty() && (fetched.len() as u64) < max_pages {
        let room = (max_pages - fetched.len() as u64) as usize;
        frontier.truncate(room);
        fetched.extend_from_slice(&frontier);
        // Fetch every page of the frontier (here: compute its links) and keep the new links.
        let links: Vec<u64> = frontier
            .par_iter()
            .flat_map_iter(|&p| links_of(p))
            .collect();
        discovered += links.len() as u64;
        let link_urls: Vec<String> = links.par_iter().map(|&l| url(l)).collect();
        let mut fresh = vec![false; link_urls.len()];
        seen.par_insert_if_absent_many(&link_urls, &mut fresh);
        let next: Vec<u64> = links
            .iter()
            .zip(&fresh)
            .filter_map(|(&l, &new)| new.then_some(l))
            .collect();
        println!(
            "level {level}: fetched {:>8} pages, {:>9} links found, {:>8} new",
            frontier.len(),
            links.len(),
            next.len()
        );
        frontier = next;
        level += 1;
    }
    let elapsed = start.elapsed();

    let unique: HashSet<u64> = fetched.iter().copied().collect();
    assert_eq!(unique.len(), fetched.len(), "a page was fetched twice");
    println!(
        "crawled {} pages, checked {} links in {:.2?} ({:.0} ns/link on {} threads); no page fetched twice",
        fetched.len(),
        discovered,
        elapsed,
        elapsed.as_nanos() as f64 / discovered.max(1) as f64,
        rayon::current_num_threads()
    );
    println!(
        "filter: {:.2} MiB for {} keys, estimated {} distinct URLs seen, fpr now {:.4}%",
        seen.memory_bytes() as f64 / 1048576.0,
        seen.capacity(),
        seen.estimated_len(),
        100.0 * seen.estimated_fpr()
    );
}
