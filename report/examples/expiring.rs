//! `ExpiringBloomFilter` against the plain `BloomFilter`: `insert_if_absent` one call at a
//! time, one thread, on the URL stream of the benchmark report (2·CAPACITY URLs of ~60 bytes,
//! 50% repeats, in stream order), in filters for CAPACITY keys (per window) at 1%; its cost
//! with the clock read per call (`insert_if_absent`) and with a time given
//! (`insert_if_absent_at`), both filters' batches of 1,024 (`insert_if_absent_many`, one
//! clock read per batch), the clock alone, and bytes per key.
//!
//! Two floors beside them: *floor* is what `insert_if_absent` would cost if the expiring
//! filter did the plain filter's work plus one clock read (`plain + SystemTime::now()`, over
//! plain); *2× plain* is the plain filter's bytes per key of the window when it is sized
//! for the `2 × capacity` keys that can be live at once (guarantee 3: keys bunched at the
//! two ends of a window), before any information about their ages.
//!
//! ```sh
//! cargo run --release -p blockbloom-bench --example expiring [-- REPS CAPACITY...]
//! ```
//!
//! Every measurement runs REPS times (default 5), round-robin; medians are printed.

use std::hint::black_box;
use std::time::{Duration, Instant, SystemTime};

use blockbloom::{BloomFilter, ExpiringBloomFilter, Filter};
use blockbloom_workload::{dup_stream, url};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[inline(never)]
fn plain_loop(f: &BloomFilter, links: &[String]) -> usize {
    links
        .iter()
        .filter(|u| f.insert_if_absent(u.as_str()))
        .count()
}

#[inline(never)]
fn expiring_loop(f: &ExpiringBloomFilter, links: &[String]) -> usize {
    links
        .iter()
        .filter(|u| f.insert_if_absent(u.as_str()))
        .count()
}

#[inline(never)]
fn expiring_at_loop(f: &ExpiringBloomFilter, links: &[String], t: SystemTime) -> usize {
    links
        .iter()
        .filter(|u| f.insert_if_absent_at(u.as_str(), t))
        .count()
}

/// Batches of 1,024 through `insert_if_absent_many` (the prefetch pipeline), for either.
#[inline(never)]
fn batch_loop<'a>(f: &dyn Filter<&'a str>, links: &[&'a str]) -> usize {
    let mut out = [false; 1024];
    links
        .chunks(1024)
        .map(|c| {
            f.insert_if_absent_many(c, &mut out[..c.len()]);
            out[..c.len()].iter().filter(|&&x| x).count()
        })
        .sum()
}

fn expiring(capacity: u64) -> ExpiringBloomFilter {
    ExpiringBloomFilter::builder()
        .expire_after(Duration::from_secs(30 * 86_400))
        .capacity(capacity)
        .fpr(0.01)
        .build()
        .expect("valid parameters")
}

fn main() {
    let mut args = std::env::args().skip(1);
    let reps: usize = args.next().map_or(5, |a| a.parse().expect("REPS"));
    let mut capacities: Vec<u64> = args.map(|a| a.parse().expect("CAPACITY")).collect();
    if capacities.is_empty() {
        capacities = vec![100_000, 10_000_000];
    }
    println!("ns per call, medians of {reps} round-robin runs; window 30 days, 1%\n");
    println!("| capacity | plain | expiring | expiring `_at` | ratio | ratio `_at` | batched plain | batched expiring | ratio batched | `SystemTime::now()` | floor | bytes/key plain | bytes/key 2× plain | bytes/key expiring |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for capacity in capacities {
        let (ids, _) = dup_stream(2 * capacity as usize, 0.5, 42);
        let links: Vec<String> = ids.iter().map(|&i| url(i)).collect();
        let n = links.len() as f64;
        let per_call = |f: &mut dyn FnMut()| {
            let t = Instant::now();
            f();
            t.elapsed().as_nanos() as f64 / n
        };
        let strs: Vec<&str> = links.iter().map(String::as_str).collect();
        let (mut plain, mut exp, mut exp_at, mut clock) = (vec![], vec![], vec![], vec![]);
        let (mut plain_batch, mut exp_batch) = (vec![], vec![]);
        let (mut bp, mut be) = (0.0, 0.0);
        for _ in 0..reps {
            let f = BloomFilter::with_capacity(capacity, 0.01).unwrap();
            black_box(plain_loop(&f, &links));
            let g = BloomFilter::with_capacity(capacity, 0.01).unwrap();
            plain.push(per_call(&mut || {
                black_box(plain_loop(&g, &links));
            }));
            bp = f.memory_bytes() as f64 / capacity as f64;
            let e = expiring(capacity);
            exp.push(per_call(&mut || {
                black_box(expiring_loop(&e, &links));
            }));
            be = e.memory_bytes() as f64 / capacity as f64;
            let e = expiring(capacity);
            let t = SystemTime::now();
            exp_at.push(per_call(&mut || {
                black_box(expiring_at_loop(&e, &links, t));
            }));
            let g = BloomFilter::with_capacity(capacity, 0.01).unwrap();
            plain_batch.push(per_call(&mut || {
                black_box(batch_loop(&g, &strs));
            }));
            let e = expiring(capacity);
            exp_batch.push(per_call(&mut || {
                black_box(batch_loop(&e, &strs));
            }));
            clock.push(per_call(&mut || {
                for _ in 0..links.len() {
                    black_box(SystemTime::now());
                }
            }));
        }
        let (p, e, a) = (median(plain), median(exp), median(exp_at));
        let (pb, eb, c) = (median(plain_batch), median(exp_batch), median(clock));
        let b2 = BloomFilter::with_capacity(2 * capacity, 0.01)
            .unwrap()
            .memory_bytes() as f64
            / capacity as f64;
        println!(
            "| {capacity} | {p:.1} | {e:.1} | {a:.1} | {:.2} | {:.2} | {pb:.1} | {eb:.1} | {:.2} | {c:.1} | {:.2} | {bp:.2} | {b2:.2} | {be:.2} |",
            e / p,
            a / p,
            eb / pb,
            (p + c) / p,
        );
    }
}
