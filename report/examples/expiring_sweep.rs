//! Every eighth epoch of an `ExpiringBloomFilter` owes a sweep of the whole filter, which
//! clears the words no caller can read as live any more; the calls of the epoch do it a
//! chunk each (1,024 lines, 64 KiB). This times those calls on filters for CAPACITY keys
//! (per window) at 1%, each filled with CAPACITY keys in the epoch before a pass is owed:
//! the epoch's first call, its slowest, and all the calls that sweep, at the next epoch
//! (every word still live: read, none written), at the next pass (every word dead: each
//! nonzero word written), and at the one after (every word zero: the cost of reading the
//! filter's memory, the sweep's floor).
//!
//! ```sh
//! cargo run --release -p blockbloom-bench --example expiring_sweep [-- CAPACITY...]
//! ```

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use blockbloom::ExpiringBloomFilter;

/// The epoch's calls until its sweep is recorded, one thread: (first call, slowest call,
/// all of them) in ms, and how many calls there were.
fn time_pass(f: &ExpiringBloomFilter, t: SystemTime) -> (f64, f64, f64, u64) {
    let done = f.window().epoch_of(t) + 1; // the sweep of `t`'s epoch, recorded
    let (mut first, mut slowest, mut total, mut calls) = (0.0, 0.0f64, 0.0, 0);
    while calls == 0 || f.__last_sweep() < done {
        let start = Instant::now();
        std::hint::black_box(f.contains_at(&calls, t));
        let ms = start.elapsed().as_secs_f64() * 1e3;
        if calls == 0 {
            first = ms;
        }
        slowest = slowest.max(ms);
        total += ms;
        calls += 1;
    }
    (first, slowest, total, calls)
}

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
    println!("ms for the calls that sweep an epoch (4-day window: epochs of 1⅓ days), one thread:");
    println!("the first call / the slowest / all of them\n");
    println!("| capacity | MB | calls | all live | all dead | all zero (floor) | GB/s, all live |");
    println!("|---|---:|---:|---|---|---|---:|");
    for capacity in capacities {
        let f = ExpiringBloomFilter::builder()
            .expire_after(4 * day)
            .capacity(capacity)
            .fpr(0.01)
            .build()
            .expect("a valid filter");
        let w = f.window();
        let t = UNIX_EPOCH + w.start_of(w.epoch_of(UNIX_EPOCH + 20_000 * day));
        let epoch = f.epoch();
        f.insert_at(&u64::MAX, t); // the filter's first epoch: its passes are owed from 8 on
        let keys: Vec<u64> = (0..capacity).collect();
        for chunk in keys.chunks(1 << 16) {
            f.insert_many_at(chunk, t + 7 * epoch);
        }
        let cell = |(first, slowest, total, _): (f64, f64, f64, u64)| {
            format!("{first:.3} / {slowest:.3} / {total:.1}")
        };
        let (live, dead, zero) = (
            time_pass(&f, t + 8 * epoch),
            time_pass(&f, t + 16 * epoch),
            time_pass(&f, t + 24 * epoch),
        );
        let mb = f.memory_bytes() as f64 / 1e6;
        println!(
            "| {capacity} | {mb:.0} | {} | {} | {} | {} | {:.1} |",
            live.3,
            cell(live),
            cell(dead),
            cell(zero),
            mb / live.2
        );
    }
}
