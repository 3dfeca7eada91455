//! Batches of 1,024 `insert_if_absent` at a scale whose stream does not fit in memory:
//! `ExpiringBloomFilter` (30-day window, 1%) against the plain `BloomFilter` (1%), each
//! sized for CAPACITY keys, fed the same 2 · CAPACITY URLs of the workload's form, half of
//! them new (each odd call repeats an earlier key), made a batch at a time outside the
//! timing. Prints ns per call of each and the ratio; and, as the control of what the
//! expiring filter's footprint alone costs, the plain filter given as many bytes (sized for
//! proportionally more keys, fed the same stream).
//!
//! ```sh
//! cargo run --release -p blockbloom-bench --example expiring_scale [-- CAPACITY...]
//! ```

use std::time::{Duration, Instant};

use blockbloom::{BloomFilter, ExpiringBloomFilter, Filter};
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

fn main() {
    let mut capacities: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("CAPACITY: a number of keys"))
        .collect();
    if capacities.is_empty() {
        capacities = vec![1_000_000_000];
    }
    println!("batches of 1,024, ns per call; 1%, 30-day window; half the keys new\n");
    println!("| capacity | plain | plain, expiring's bytes | expiring | ratio | over the same bytes | MB plain | MB expiring |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for capacity in capacities {
        let plain = BloomFilter::with_capacity(capacity, 0.01).expect("allocates");
        let (p, _) = run(&plain, capacity);
        let mb_plain = plain.memory_bytes() as f64 / 1e6;
        drop(plain);
        let expiring = ExpiringBloomFilter::builder()
            .expire_after(Duration::from_secs(30 * 86_400))
            .capacity(capacity)
            .fpr(0.01)
            .build()
            .expect("allocates");
        let (e, _) = run(&expiring, capacity);
        let mb = expiring.memory_bytes() as f64 / 1e6;
        drop(expiring);
        let scaled = (capacity as f64 * mb / mb_plain) as u64;
        let same = BloomFilter::with_capacity(scaled, 0.01).expect("allocates");
        let (q, _) = run(&same, capacity);
        let mb_same = same.memory_bytes() as f64 / 1e6;
        drop(same);
        println!(
            "| {capacity} | {p:.1} | {q:.1} ({mb_same:.0} MB) | {e:.1} | ×{:.2} | ×{:.2} | {mb_plain:.0} | {mb:.0} |",
            e / p,
            e / q
        );
    }
}
