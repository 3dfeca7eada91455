//! Thread scaling of `ExpiringBloomFilter` against the plain `BloomFilter`: T threads share
//! one filter for CAPACITY keys at 1% and each loops over its own part of the URL stream of
//! the benchmark report (2·CAPACITY URLs, 50% repeats) for SECS seconds, one
//! `insert_if_absent` at a time or in batches of 1,024 (`insert_if_absent_many`); printed:
//! millions of calls per second, all threads together, and the speedup over one thread.
//!
//! Three filters: the plain one, an expiring one with a 30-day window (no epoch changes
//! during the run: what every call pays for the clock line it reads), and one with a 1 s
//! window (an epoch every 250 ms, so every eighth epoch's sweep is claimed chunk by chunk by
//! the threads while they insert; the epochs the recorded sweep moved on during the run are
//! counted). After the stream's first loop the plain and 30-day filters see repeats only,
//! the 1 s filter sees new keys again as they expire.
//!
//! ```sh
//! cargo run --release -p blockbloom-bench --example expiring_threads [-- CAPACITY SECS T...]
//! ```

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use blockbloom::{BloomFilter, ExpiringBloomFilter, Filter};
use blockbloom_workload::{dup_stream, url};

/// Runs `op` on batches of `keys` from `threads` threads, each looping over its own part of
/// `keys`, for `secs` seconds: the keys processed per second, in millions.
fn throughput(keys: &[&str], threads: usize, secs: f64, op: &(dyn Fn(&[&str]) + Sync)) -> f64 {
    let stop = AtomicBool::new(false);
    let done = AtomicU64::new(0);
    let t = Instant::now();
    std::thread::scope(|s| {
        for i in 0..threads {
            let part = &keys[i * keys.len() / threads..(i + 1) * keys.len() / threads];
            let (stop, done) = (&stop, &done);
            s.spawn(move || {
                let mut n = 0u64;
                'run: loop {
                    for batch in part.chunks(1024) {
                        op(batch);
                        n += batch.len() as u64;
                        if stop.load(Relaxed) {
                            break 'run;
                        }
                    }
                }
                done.fetch_add(n, Relaxed);
            });
        }
        std::thread::sleep(Duration::from_secs_f64(secs));
        stop.store(true, Relaxed);
    });
    done.load(Relaxed) as f64 / t.elapsed().as_secs_f64() / 1e6
}

/// [`throughput`] of `insert_if_absent` on `f`, one call at a time or in batches.
fn call_rate<F>(keys: &[&str], threads: usize, secs: f64, f: &F, batched: bool) -> f64
where
    F: for<'k> Filter<&'k str> + Sync,
{
    if batched {
        throughput(keys, threads, secs, &|b| {
            let mut out = [false; 1024];
            f.insert_if_absent_many(b, &mut out[..b.len()]);
            black_box(out);
        })
    } else {
        throughput(keys, threads, secs, &|b| {
            b.iter().for_each(|k| _ = black_box(f.insert_if_absent(k)))
        })
    }
}

fn expiring(capacity: u64, window: Duration) -> ExpiringBloomFilter {
    ExpiringBloomFilter::builder()
        .expire_after(window)
        .capacity(capacity)
        .build()
        .expect("valid parameters")
}

fn main() {
    let mut args = std::env::args().skip(1);
    let capacity: u64 = args
        .next()
        .map_or(1_000_000, |a| a.parse().expect("CAPACITY"));
    let secs: f64 = args.next().map_or(1.0, |a| a.parse().expect("SECS"));
    let mut threads: Vec<usize> = args.map(|a| a.parse().expect("T")).collect();
    if threads.is_empty() {
        threads = vec![1, 2];
    }
    let (ids, _) = dup_stream(2 * capacity as usize, 0.5, 42);
    let links: Vec<String> = ids.iter().map(|&i| url(i)).collect();
    let keys: Vec<&str> = links.iter().map(String::as_str).collect();
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("M calls/s, all threads together (speedup over 1 thread); capacity {capacity}, {secs} s per cell, {cpus} CPUs\n");
    println!("| threads | plain, one at a time | expiring 30 d, one at a time | expiring 1 s, one at a time | plain, batches | expiring 30 d, batches | expiring 1 s, batches | 1 s: epochs the recorded sweep moved on during the cell (one at a time, batches) |");
    println!("|---|---|---|---|---|---|---|---|");
    let (day30, second) = (Duration::from_secs(30 * 86_400), Duration::from_secs(1));
    let mut base: Vec<f64> = vec![];
    for &t in &threads {
        let mut cells: Vec<f64> = vec![];
        let mut passes = vec![];
        for batched in [false, true] {
            let p = BloomFilter::with_capacity(capacity, 0.01).unwrap();
            cells.push(call_rate(&keys, t, secs, &p, batched));
            for window in [day30, second] {
                let e = expiring(capacity, window);
                e.insert("warm-up"); // the first epoch: recorded as swept, nothing to sweep
                let first = e.__last_sweep();
                cells.push(call_rate(&keys, t, secs, &e, batched));
                if window == second {
                    passes.push(e.__last_sweep().saturating_sub(first));
                }
            }
        }
        if base.is_empty() {
            base = cells.clone();
        }
        let cell = |i: usize| format!("{:.1} (×{:.1})", cells[i], cells[i] / base[i]);
        println!(
            "| {t} | {} | {} | {} | {} | {} | {} | {}, {} |",
            cell(0),
            cell(1),
            cell(2),
            cell(3),
            cell(4),
            cell(5),
            passes[0],
            passes[1]
        );
    }
}
