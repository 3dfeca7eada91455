//! The expiring filter's queries by where the answer lies: `contains_at` one call at a time
//! (its planes tested newest first, leaving at the first that holds the key) and
//! `contains_many_at` in batches of 1,024 (every plane, without a branch), on 10^6 queries
//! of three kinds, in a filter (30-day window, 1%) holding CAPACITY keys:
//!
//! * *newest*: members all inserted in the querying epoch (as the report's APBF section
//!   queries them: the last links of a stream taken at one time);
//! * *spread*: members inserted a quarter each in the four epochs a query reads (a key's
//!   bits stay in the plane of its first sighting, so in a crawl running for months its
//!   repeats lie in any of the four planes);
//! * *new*: keys never inserted.
//!
//! Beside them, the plain filter's `contains` and `contains_many` on the same members in a
//! filter holding the same keys. Every figure is the median of REPS round-robin runs, in ns
//! per query, one thread.
//!
//! ```sh
//! cargo run --release -p blockbloom-bench --example expiring_queries [-- REPS CAPACITY...]
//! ```

use std::hint::black_box;
use std::time::{Duration, Instant, SystemTime};

use blockbloom::{BloomFilter, ExpiringBloomFilter};
use blockbloom_workload::url;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// ns per query of `f` over `n` queries.
fn per_query(n: usize, f: impl FnOnce() -> usize) -> f64 {
    let t = Instant::now();
    black_box(f());
    t.elapsed().as_nanos() as f64 / n as f64
}

#[inline(never)]
fn one_at_a_time(f: &ExpiringBloomFilter, keys: &[String], t: SystemTime) -> usize {
    keys.iter().filter(|k| f.contains_at(k.as_str(), t)).count()
}

#[inline(never)]
fn batched(f: &ExpiringBloomFilter, keys: &[&str], t: SystemTime) -> usize {
    let mut out = [false; 1024];
    keys.chunks(1024)
        .map(|c| {
            f.contains_many_at(c, t, &mut out[..c.len()]);
            out[..c.len()].iter().filter(|&&x| x).count()
        })
        .sum()
}

#[inline(never)]
fn plain_one_at_a_time(f: &BloomFilter, keys: &[String]) -> usize {
    keys.iter().filter(|k| f.contains(k.as_str())).count()
}

#[inline(never)]
fn plain_batched(f: &BloomFilter, keys: &[&str]) -> usize {
    let mut out = [false; 1024];
    keys.chunks(1024)
        .map(|c| {
            f.contains_many(c, &mut out[..c.len()]);
            out[..c.len()].iter().filter(|&&x| x).count()
        })
        .sum()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let reps: usize = args.next().map_or(5, |a| a.parse().expect("REPS"));
    let mut capacities: Vec<u64> = args.map(|a| a.parse().expect("CAPACITY")).collect();
    if capacities.is_empty() {
        capacities = vec![100_000, 10_000_000];
    }
    println!("| capacity | one at a time: newest | spread | new | plain, member | batches: newest | spread | new | plain, member |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for capacity in capacities {
        let build = || {
            ExpiringBloomFilter::builder()
                .expire_after(Duration::from_secs(30 * 86_400))
                .capacity(capacity)
                .fpr(0.01)
                .build()
                .expect("valid parameters")
        };
        let keys: Vec<String> = (0..capacity).map(url).collect();
        let now = SystemTime::now();
        let (newest, spread) = (build(), build());
        let epoch = spread.epoch();
        let quarter = (capacity as usize).div_ceil(4);
        for (j, part) in keys.chunks(quarter).enumerate() {
            // Times up to this machine's clock, the oldest three epochs back.
            let t = now - epoch * (3 - j as u32);
            part.iter().for_each(|k| spread.insert_at(k.as_str(), t));
        }
        keys.iter().for_each(|k| newest.insert_at(k.as_str(), now));
        let plain = BloomFilter::with_capacity(capacity, 0.01).unwrap();
        keys.iter().for_each(|k| plain.insert(k.as_str()));
        let n = 1_000_000u64;
        let members: Vec<String> = (0..n)
            .map(|i| keys[(i.wrapping_mul(2_654_435_761) % capacity) as usize].clone())
            .collect();
        let absent: Vec<String> = (0..n).map(|i| url(u64::MAX / 2 + i)).collect();
        let (m, a): (Vec<&str>, Vec<&str>) = (
            members.iter().map(String::as_str).collect(),
            absent.iter().map(String::as_str).collect(),
        );
        let mut runs = vec![vec![]; 8];
        let len = members.len();
        for _ in 0..reps {
            runs[0].push(per_query(len, || one_at_a_time(&newest, &members, now)));
            runs[1].push(per_query(len, || one_at_a_time(&spread, &members, now)));
            runs[2].push(per_query(len, || one_at_a_time(&spread, &absent, now)));
            runs[3].push(per_query(len, || plain_one_at_a_time(&plain, &members)));
            runs[4].push(per_query(len, || batched(&newest, &m, now)));
            runs[5].push(per_query(len, || batched(&spread, &m, now)));
            runs[6].push(per_query(len, || batched(&spread, &a, now)));
            runs[7].push(per_query(len, || plain_batched(&plain, &m)));
        }
        let cells: Vec<String> = runs
            .into_iter()
            .map(|r| format!("{:.1}", median(r)))
            .collect();
        println!("| {capacity} | {} |", cells.join(" | "));
    }
}
