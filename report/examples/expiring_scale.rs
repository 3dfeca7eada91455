//! Batches of 1,024 `insert_if_absent` at a scale whose stream does not fit in memory:
//! `ExpiringBloomFilter` (30-day window, 1%) against the plain `BloomFilter` (1%), each
//! sized for CAPACITY keys, fed the same 2 · CAPACITY URLs of the workload's form, half of
//! them new (each odd call repeats an earlier key), made a batch at a time outside the
//! timing. Prints ns per call of each and the ratio; and, as the control of what the
//! expiring filter's footprint alone costs, the plain filter given as many bytes (sized for
//! proportionally more keys, fed the same stream). Beside each, the MB of the process on
//! huge pages once its stream was done (`AnonHugePages`, Linux), and the physical limit in
//! the plain and the expiring filter's bytes: a prefetched `fetch_or` into a random line,
//! no hashing (`blockbloom_bench::measure::physical_limit`).
//!
//! ```sh
//! cargo run --release -p blockbloom-bench --example expiring_scale [-- CAPACITY...]
//! ```

use std::time::{Duration, Instant};

use blockbloom::{BloomFilter, ExpiringBloomFilter, Filter};
use blockbloom_bench::measure::physical_limit;
use blockbloom_workload::{url, SplitMix64};

/// Nanoseconds per call of `f`'s batched `insert_if_absent` over the stream, and the keys
/// it took as new.
fn run<F: for<'a> Filter<&'a str>>(f: &F, capacity: u64) -> (f64, u64) {
    let mut rng = SplitMix64::new(42);
    let (mut urls, mut out) = (Vec::with_capacity(1024), [false; 1024]);
    let (mut spent, mut new) = (Duration::ZERO, 0u64);
    let calls = 2 * capacity;
    let mut i = 0u64;
    while i < calls {
        urls.clear();
        while urls.len() < 1024 && i < calls {
            let id = if i.is_multiple_of(2) {
                i / 2
            } else {
                rng.next_u64() % (i / 2 + 1)
            };
            urls.push(url(id));
            i += 1;
        }
        let keys: Vec<&str> = urls.iter().map(String::as_str).collect();
        let start = Instant::now();
        f.insert_if_absent_many(&keys, &mut out[..keys.len()]);
        spent += start.elapsed();
        new += out[..keys.len()].iter().filter(|&&x| x).count() as u64;
    }
    (spent.as_nanos() as f64 / calls as f64, new)
}

/// MB of this process's memory on transparent huge pages (0 where the kernel does not say).
fn huge_mb() -> f64 {
    let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
    rollup
        .lines()
        .find_map(|l| l.strip_prefix("AnonHugePages:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1e3)
}

fn main() {
    let mut capacities: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("CAPACITY: a number of keys"))
        .collect();
    if capacities.is_empty() {
        capacities = vec![1_000_000_000];
    }
    println!("batches of 1,024, ns per call; 1%, 30-day window; half the keys new\n");
    println!("| capacity | plain | plain, expiring's bytes | expiring | ratio | over the same bytes | MB plain | MB expiring | MB on huge pages: plain, same bytes, expiring | physical limit, plain's bytes, expiring's |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---|---|");
    for capacity in capacities {
        let plain = BloomFilter::with_capacity(capacity, 0.01).expect("allocates");
        let (p, _) = run(&plain, capacity);
        let huge_plain = huge_mb();
        let mb_plain = plain.memory_bytes() as f64 / 1e6;
        drop(plain);
        let expiring = ExpiringBloomFilter::builder()
            .expire_after(Duration::from_secs(30 * 86_400))
            .capacity(capacity)
            .fpr(0.01)
            .build()
            .expect("allocates");
        let (e, _) = run(&expiring, capacity);
        let huge_expiring = huge_mb();
        let mb = expiring.memory_bytes() as f64 / 1e6;
        drop(expiring);
        let scaled = (capacity as f64 * mb / mb_plain) as u64;
        let same = BloomFilter::with_capacity(scaled, 0.01).expect("allocates");
        let (q, _) = run(&same, capacity);
        let huge_same = huge_mb();
        let mb_same = same.memory_bytes() as f64 / 1e6;
        drop(same);
        let limit = |mb: f64| physical_limit((mb * 1e6 / 64.0) as usize, 20_000_000, 1, true);
        let (lp, le) = (limit(mb_plain), limit(mb));
        println!(
            "| {capacity} | {p:.1} | {q:.1} ({mb_same:.0} MB) | {e:.1} | ×{:.2} | ×{:.2} | {mb_plain:.0} | {mb:.0} | {huge_plain:.0}, {huge_same:.0}, {huge_expiring:.0} | {lp:.1}, {le:.1} (×{:.2}) |",
            e / p,
            e / q,
            le / lp
        );
    }
}
