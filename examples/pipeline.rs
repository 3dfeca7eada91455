//! Producer threads → crossbeam channel → worker threads sharing one filter.
//!
//! ```sh
//! cargo run --release --example pipeline
//! ```
//!
//! Two "parser" threads emit batches of discovered URLs (60% of them repeats, and the two
//! parsers overlap, as parsers of pages of one site do); four workers check each URL with
//! `insert_if_absent` and "fetch" the new ones. The filter is shared through an `Arc`; no
//! lock is taken anywhere. At the end the fetched URLs are checked against an exact set: none
//! twice, and the ones missing are the filter's false positives.

use blockbloom::BloomFilter;
use blockbloom_workload::{dup_stream, url};
use crossbeam_channel::bounded;
use std::collections::HashSet;
use std::sync::Arc;
use std::thread;
use std::time::Instant;

const PER_PRODUCER: usize = 500_000;
const BATCH: usize = 1024;

fn main() {
    let filter = Arc::new(BloomFilter::with_capacity(1_000_000, 0.01).expect("valid parameters"));
    let (tx, rx) = bounded::<Vec<String>>(64);
    let start = Instant::now();

    let producers: Vec<_> = (0..2u64)
        .map(|p| {
            let tx = tx.clone();
            thread::spawn(move || {
                // Both producers walk the same id space with different duplicate patterns.
                let (ids, _) = dup_stream(PER_PRODUCER, 0.6, 1000 + p);
                for chunk in ids.chunks(BATCH) {
                    tx.send(chunk.iter().map(|&i| url(i)).collect()).unwrap();
                }
            })
        })
        .collect();
    drop(tx);

    let workers: Vec<_> = (0..4)
        .map(|_| {
            let rx = rx.clone();
            let filter = Arc::clone(&filter);
            thread::spawn(move || {
                let mut fetched = Vec::new();
                let mut checked = 0usize;
                for batch in rx {
                    checked += batch.len();
                    fetched.extend(batch.into_iter().filter(|u| filter.insert_if_absent(u)));
                }
                (checked, fetched)
            })
        })
        .collect();

    for p in producers {
        p.join().unwrap();
    }
    let mut all_fetched = Vec::new();
    let mut checked = 0;
    for (i, w) in workers.into_iter().enumerate() {
        let (c, f) = w.join().unwrap();
        println!("worker {i}: checked {c} URLs, fetched {}", f.len());
        checked += c;
        all_fetched.extend(f);
    }
    let elapsed = start.elapsed();

    let exact: HashSet<String> = (0..2u64)
        .flat_map(|p| dup_stream(PER_PRODUCER, 0.6, 1000 + p).0)
        .map(url)
        .collect();
    let fetched_set: HashSet<&String> = all_fetched.iter().collect();
    assert_eq!(
        fetched_set.len(),
        all_fetched.len(),
        "a URL was fetched twice"
    );
    assert!(all_fetched.iter().all(|u| exact.contains(u)));
    println!(
        "{checked} URLs checked in {elapsed:.2?}; {} distinct, {} fetched, none twice; {} new URLs taken for repeats ({:.3}%, target 1%)",
        exact.len(),
        all_fetched.len(),
        exact.len() - all_fetched.len(),
        100.0 * (exact.len() - all_fetched.len()) as f64 / exact.len() as f64
    );
}
