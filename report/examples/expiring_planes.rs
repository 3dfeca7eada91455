//! The planes layout (issue 53's prototype, `blockbloom::__planes::PlanesPrototype`) against
//! its goals, beside the plain filter and the APBF in the same run: bits per key of the
//! window, the rate at the worst moment of steady arrival (measured and estimated), and ns
//! per call on the report's stream (2·CAPACITY URLs, 50% repeats): `_at` one at a time,
//! with the clock read, and batches of 1,024; the APBF's insert.
//!
//! ```sh
//! cargo run --release -p blockbloom-bench --example expiring_planes [-- REPS CAPACITY...]
//! ```

use std::hint::black_box;
use std::time::{Duration, Instant, SystemTime};

use blockbloom::__planes::PlanesPrototype;
use blockbloom::{Arrival, BloomFilter};
use blockbloom_bench::apbf::Apbf;
use blockbloom_workload::{dup_stream, url};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

const MONTH: Duration = Duration::from_secs(30 * 86_400);

fn planes(capacity: u64) -> PlanesPrototype {
    PlanesPrototype::new(capacity, 0.01, Arrival::Steady, MONTH).expect("allocates")
}

/// The rate at the worst moment of steady arrival: five epochs of an epoch's share of
/// the keys each, then absent keys at the last epoch's end; measured, and estimated.
fn worst_moment(capacity: u64) -> (f64, f64) {
    let f = planes(capacity);
    let e = f.epoch_nanos();
    let t0 = 1_600_000_000_000_000_000 / e * e;
    let per_epoch = (capacity as u128 * e as u128 / MONTH.as_nanos()) as u64;
    let mut key = 0u64;
    for epoch in 0..5 {
        for _ in 0..per_epoch {
            f.insert_if_absent_at(&key, t0 + epoch * e + 1);
            key += 1;
        }
    }
    let end = t0 + 5 * e - 1;
    let probes = 1_000_000u64;
    let fp = (0..probes)
        .filter(|i| f.contains_at(&(u64::MAX - i), end))
        .count();
    (fp as f64 / probes as f64, f.estimated_fpr_at(end))
}

fn main() {
    let mut args = std::env::args().skip(1);
    let reps: usize = args.next().map_or(3, |a| a.parse().expect("REPS"));
    let mut capacities: Vec<u64> = args.map(|a| a.parse().expect("CAPACITY")).collect();
    if capacities.is_empty() {
        capacities = vec![100_000, 10_000_000];
    }
    println!(
        "planes prototype, 30-day window, 1%, steady arrival; ns per call, medians of {reps}\n"
    );
    println!("| capacity | bits/key planes | plain | APBF | rate at the worst moment (estimated) | `_at` planes | plain | ratio | with the clock | ratio | batched planes | plain | ratio | APBF insert_if_absent | APBF / planes `_at` |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for &capacity in &capacities {
        let (ids, _) = dup_stream(2 * capacity as usize, 0.5, 42);
        let links: Vec<String> = ids.iter().map(|&i| url(i)).collect();
        let strs: Vec<&str> = links.iter().map(String::as_str).collect();
        let n = links.len() as f64;
        let per_call = |f: &mut dyn FnMut()| {
            let t = Instant::now();
            f();
            t.elapsed().as_nanos() as f64 / n
        };
        let now = PlanesPrototype::nanos(SystemTime::now());
        let (mut pa, mut pc, mut pb, mut la, mut lb, mut aa) =
            (vec![], vec![], vec![], vec![], vec![], vec![]);
        for _ in 0..reps {
            let p = planes(capacity);
            pa.push(per_call(&mut || {
                black_box(
                    strs.iter()
                        .filter(|u| p.insert_if_absent_at(**u, now))
                        .count(),
                );
            }));
            let p = planes(capacity);
            pc.push(per_call(&mut || {
                black_box(strs.iter().filter(|u| p.insert_if_absent(**u)).count());
            }));
            let p = planes(capacity);
            let mut out = [false; 1024];
            pb.push(per_call(&mut || {
                for c in strs.chunks(1024) {
                    p.insert_if_absent_many_at(c, now, &mut out[..c.len()]);
                    black_box(&out);
                }
            }));
            let f = BloomFilter::with_capacity(capacity, 0.01).unwrap();
            la.push(per_call(&mut || {
                black_box(strs.iter().filter(|u| f.insert_if_absent(**u)).count());
            }));
            let f = BloomFilter::with_capacity(capacity, 0.01).unwrap();
            lb.push(per_call(&mut || {
                for c in strs.chunks(1024) {
                    f.insert_if_absent_many(c, &mut out[..c.len()]);
                    black_box(&out);
                }
            }));
            let a = Apbf::new(capacity, 0.01);
            aa.push(per_call(&mut || {
                black_box(strs.iter().filter(|u| a.insert_if_absent(u)).count());
            }));
        }
        let bits = |bytes: usize| bytes as f64 * 8.0 / capacity as f64;
        let (rate, est) = worst_moment(capacity);
        let (pa, pc, pb, la, lb, aa) = (
            median(pa),
            median(pc),
            median(pb),
            median(la),
            median(lb),
            median(aa),
        );
        println!(
            "| {capacity} | {:.1} | {:.1} | {:.1} | {:.3}% ({:.3}%) | {pa:.1} | {la:.1} | ×{:.2} | {pc:.1} | ×{:.2} | {pb:.1} | {lb:.1} | ×{:.2} | {aa:.1} | ×{:.1} |",
            bits(planes(capacity).memory_bytes()),
            bits(BloomFilter::with_capacity(capacity, 0.01).unwrap().memory_bytes()),
            bits(Apbf::new(capacity, 0.01).bytes()),
            100.0 * rate,
            100.0 * est,
            pa / la,
            pc / la,
            pb / lb,
            aa / pa,
        );
    }
}
