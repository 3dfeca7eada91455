//! The call that starts an epoch of an `ExpiringBloomFilter` sweeps it: it reads every word
//! and clears the stamps no caller can read as live any more. This times that call on filters
//! for CAPACITY keys (per window) at 1%, each filled with CAPACITY keys in one epoch, at the
//! next epoch (every stamp still live: read, none written), at the sixth (every stamp dead:
//! each nonzero word written), and once more after that (every word zero: the cost of reading
//! the filter's memory, the sweep's floor).
//!
//! ```sh
//! cargo run --release -p blockbloom-bench --example expiring_sweep [-- CAPACITY...]
//! ```

use std::time::{Duration, Instant, UNIX_EPOCH};

use blockbloom::ExpiringBloomFilter;

fn main() {
    let capacities: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("CAPACITY: a number of keys"))
        .collect();
    let capacities = if capacities.is_empty() {
        vec![1_000_000, 10_000_000]
    } else {
        capacities
    };
    let day = Duration::from_secs(86_400);
    println!("ms for the call that starts an epoch (4-day window: 1-day epochs)\n");
    println!("| capacity | MB | all live | all dead | all zero (floor) | GB/s, all live |");
    println!("|---|---:|---:|---:|---:|---:|");
    for capacity in capacities {
        let f = ExpiringBloomFilter::builder()
            .expire_after(4 * day)
            .capacity(capacity)
            .fpr(0.01)
            .build()
            .expect("a valid filter");
        let t = UNIX_EPOCH + 20_000 * day;
        let keys: Vec<u64> = (0..capacity).collect();
        for chunk in keys.chunks(1 << 16) {
            f.insert_many_at(chunk, t);
        }
        let call_at = |days: u32| {
            let start = Instant::now();
            std::hint::black_box(f.contains_at(&0u64, t + days * day));
            start.elapsed().as_secs_f64() * 1e3
        };
        let (live, dead, zero) = (call_at(1), call_at(6), call_at(7));
        let mb = f.memory_bytes() as f64 / 1e6;
        println!(
            "| {capacity} | {mb:.0} | {live:.1} | {dead:.1} | {zero:.1} | {:.1} |",
            mb / live
        );
    }
}
