//! `insert_if_absent_at` one call at a time, split by answer: in a filter (30-day window,
//! 1%) for CAPACITY keys holding half of them (inserted untimed at the same time), that
//! half again (*repeats*: every call `false`, leaving after the key's own plane) and the
//! other half (*new keys*: every call `true`). Beside it the plain filter's
//! `insert_if_absent` on the same calls, in its own bytes and in as many bytes as the
//! expiring filter (its footprint's cost out of cache). Medians of REPS round-robin runs,
//! ns per call, one thread. Keys are URLs of ~60 bytes, or with `--u64` 64-bit integers
//! (the hash a few instructions: what is left is the filters' own work).
//!
//! It shows which kind of call a one-at-a-time ratio comes from: out of the caches a call's
//! miss overlaps the next calls' only as far as the core can run ahead, so a path's work
//! costs more there than its instructions do in cache (docs/PERFORMANCE.md, "The expiring
//! filter against its goals").
//!
//! ```sh
//! cargo run --release -p blockbloom-bench --example expiring_split [-- [--u64] REPS CAPACITY...]
//! ```

use std::hash::Hash;
use std::hint::black_box;
use std::time::{Duration, Instant, SystemTime};

use blockbloom::{BloomFilter, ExpiringBloomFilter};
use blockbloom_workload::url;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[inline(never)]
fn plain_loop<K: Hash>(f: &BloomFilter, keys: &[K]) -> usize {
    keys.iter().filter(|k| f.insert_if_absent(*k)).count()
}

#[inline(never)]
fn at_loop<K: Hash>(f: &ExpiringBloomFilter, keys: &[K], t: SystemTime) -> usize {
    keys.iter().filter(|k| f.insert_if_absent_at(*k, t)).count()
}

fn main() {
    let u64_keys = std::env::args().any(|a| a == "--u64");
    let mut args = std::env::args().skip(1).filter(|a| a != "--u64");
    let reps: usize = args.next().map_or(5, |a| a.parse().expect("REPS"));
    let mut capacities: Vec<u64> = args.map(|a| a.parse().expect("CAPACITY")).collect();
    if capacities.is_empty() {
        capacities = vec![100_000, 10_000_000];
    }
    let keys = if u64_keys { "64-bit integers" } else { "URLs" };
    println!("ns per call, medians of {reps} round-robin runs; window 30 days, 1%; {keys}\n");
    println!("| capacity | expiring `_at`: repeats | new keys | plain: repeats | new keys | plain, expiring's bytes: repeats | new keys |");
    println!("|---|---|---|---|---|---|---|");
    for &capacity in &capacities {
        let half = capacity / 2;
        if u64_keys {
            let spread = |i: u64| i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let held: Vec<u64> = (0..half).map(spread).collect();
            let fresh: Vec<u64> = (half..2 * half).map(spread).collect();
            row(capacity, reps, &held, &fresh);
        } else {
            let held: Vec<String> = (0..half).map(url).collect();
            let fresh: Vec<String> = (half..2 * half).map(url).collect();
            row(capacity, reps, &held, &fresh);
        }
    }
}

/// One capacity's row: `held` inserted untimed, then timed again, then `fresh`.
fn row<K: Hash>(capacity: u64, reps: usize, held: &[K], fresh: &[K]) {
    let half = held.len();
    let time = |f: &mut dyn FnMut() -> usize| {
        let t = Instant::now();
        black_box(f());
        t.elapsed().as_nanos() as f64 / half as f64
    };
    let mut ns: [Vec<f64>; 6] = Default::default();
    for _ in 0..reps {
        let e = ExpiringBloomFilter::builder()
            .expire_after(Duration::from_secs(30 * 86_400))
            .capacity(capacity)
            .fpr(0.01)
            .build()
            .expect("valid parameters");
        let t = SystemTime::now();
        at_loop(&e, held, t);
        ns[0].push(time(&mut || at_loop(&e, held, t)));
        ns[1].push(time(&mut || at_loop(&e, fresh, t)));
        let plain = BloomFilter::with_capacity(capacity, 0.01).expect("valid parameters");
        let per_key = plain.memory_bytes() as f64 / capacity as f64;
        let in_bytes = (e.memory_bytes() as f64 / per_key) as u64;
        let wide = BloomFilter::with_capacity(in_bytes, 0.01).expect("valid parameters");
        for (i, g) in [(2, &plain), (4, &wide)] {
            plain_loop(g, held);
            ns[i].push(time(&mut || plain_loop(g, held)));
            ns[i + 1].push(time(&mut || plain_loop(g, fresh)));
        }
    }
    let [a, b, c, d, e, f] = ns.map(median);
    println!("| {capacity} | {a:.1} | {b:.1} | {c:.1} | {d:.1} | {e:.1} | {f:.1} |");
}
