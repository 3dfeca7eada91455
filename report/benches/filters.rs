//! Criterion benchmarks: blockbloom against `HashSet<String>`, `AHashSet<String>` (one
//! thread) and `Mutex<HashSet<String>>`, `DashSet<String>` (shared by threads), through the
//! report's [`Peer`] trait (the same wrappers as `blockbloom-bench`).
//!
//! ```sh
//! cargo bench -p blockbloom-bench --bench filters                                # 10^6 and 5·10^7 keys
//! BLOCKBLOOM_BENCH_SIZES=1000000 cargo bench -p blockbloom-bench --bench filters   # only 10^6
//! cargo bench -p blockbloom-bench --bench filters -- insert_if_absent             # one operation
//! ```
//!
//! Workload at size N: the structure holds N synthetic URLs (~70 bytes, from
//! `blockbloom-workload`), inserted before timing. The timed operations draw from `member`
//! keys (inserted) and `fresh` keys (never inserted):
//!
//! * `insert_if_absent` / `insert`: a stream alternating member and fresh keys (50%
//!   duplicates); once the fresh keys are used up, the structure is restored to its N
//!   members, untimed.
//! * `contains_member` / `contains_non_member`: lookups of members / fresh keys.
//!
//! One criterion iteration is one operation, so criterion's "time" is ns per operation.
//! Threaded runs split each batch of operations over the threads, which start together on a
//! barrier; only the concurrent section is timed.

use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use blockbloom_bench::measure::{on_threads, part};
use blockbloom_bench::peers::{Bloom, Dash, Locked, Op, Peer, Seq};
use blockbloom_workload::{url, SplitMix64};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

/// Keys for the timed operations at size `n`.
struct Workload {
    n: u64,
    members: Vec<String>,
    fresh: Vec<String>,
}

impl Workload {
    fn new(n: u64) -> Self {
        let m = n.min(1 << 20) as usize;
        let mut rng = SplitMix64::new(n);
        let members = (0..m).map(|_| url(rng.below(n))).collect();
        let fresh = (n..n + m as u64).map(url).collect();
        Workload { n, members, fresh }
    }

    fn keys(&self, op: Op) -> Vec<&str> {
        fn strs(v: &[String]) -> Vec<&str> {
            v.iter().map(String::as_str).collect()
        }
        match op {
            Op::Insert | Op::InsertIfAbsent => self
                .members
                .iter()
                .zip(&self.fresh)
                .flat_map(|(a, b)| [a.as_str(), b.as_str()])
                .collect(),
            Op::ContainsMember => strs(&self.members),
            Op::ContainsNonMember => strs(&self.fresh),
        }
    }
}

/// Fills a structure with the `n` members of size `n`.
fn filled<P: Peer>(p: P, n: u64) -> P {
    (0..n).for_each(|i| p.insert(&url(i)));
    p
}

/// Times `op` over `batch` on the calling thread.
fn on_this_thread<P: Peer>(p: &P, op: Op, batch: &[&str], _threads: usize) -> Duration {
    let t = Instant::now();
    std::hint::black_box(p.run(op, batch));
    t.elapsed()
}

/// Times `op` over `batch` split over `threads` threads started together.
fn on_threads_of<P: Peer + Sync>(p: &P, op: Op, batch: &[&str], threads: usize) -> Duration {
    on_threads(threads, |t| {
        std::hint::black_box(p.run(op, part(batch, t, threads)))
    })
    .0
}

/// Timing of one pass: [`on_this_thread`] or [`on_threads_of`].
type Timer<P> = fn(&P, Op, &[&str], usize) -> Duration;

/// Benchmarks every operation of `p` on `threads` threads through `time`.
fn bench<P: Peer>(c: &mut Criterion, w: &Workload, p: &mut P, threads: usize, time: Timer<P>) {
    let fresh: Vec<&str> = w.fresh.iter().map(String::as_str).collect();
    let name = p.name();
    for op in Op::ALL {
        let keys = w.keys(op);
        let label = op.name().replace(' ', "_").replace(['(', ')'], "");
        let mut g = c.benchmark_group(format!("{label}/{threads}-thread"));
        g.throughput(Throughput::Elements(1));
        let mut cursor = 0usize;
        g.bench_function(BenchmarkId::new(&name, w.n), |b| {
            b.iter_custom(|iters| {
                // `iters` operations from `cursor` on, in passes that end where the keys run
                // out; there a writing operation's structure is reset (untimed).
                let (mut total, mut left) = (Duration::ZERO, iters as usize);
                while left > 0 {
                    if cursor == keys.len() {
                        if op.writes() {
                            p.reset(&fresh);
                        }
                        cursor = 0;
                    }
                    let end = keys.len().min(cursor + left);
                    let batch = &keys[cursor..end];
                    total += time(p, op, batch, threads);
                    left -= end - cursor;
                    cursor = end;
                }
                total
            })
        });
        g.finish();
        if op.writes() {
            p.reset(&fresh);
        }
    }
}

fn sizes() -> Vec<u64> {
    std::env::var("BLOCKBLOOM_BENCH_SIZES")
        .ok()
        .map(|s| {
            s.split(',')
                .map(|x| x.trim().parse().expect("BLOCKBLOOM_BENCH_SIZES: numbers"))
                .collect()
        })
        .unwrap_or_else(|| vec![1_000_000, 50_000_000])
}

fn benches(c: &mut Criterion) {
    for n in sizes() {
        let w = Workload::new(n);
        let mut bloom = filled(Bloom::new(n, 0.01, false, false), n);
        bloom.snapshot_prototype();
        bench(c, &w, &mut bloom, 1, on_this_thread);
        bench(c, &w, &mut bloom, 2, on_threads_of);
        drop(bloom);
        let set = |cap| RefCell::new(HashSet::with_capacity(cap));
        let mut h = filled(Seq(set(n as usize), "HashSet<String>"), n);
        bench(c, &w, &mut h, 1, on_this_thread);
        drop(h);
        let ahash = RefCell::new(HashSet::with_capacity_and_hasher(
            n as usize,
            ahash::RandomState::new(),
        ));
        let mut a = filled(Seq(ahash, "AHashSet<String>"), n);
        bench(c, &w, &mut a, 1, on_this_thread);
        drop(a);
        let mut m = filled(Locked(Mutex::new(HashSet::with_capacity(n as usize))), n);
        bench(c, &w, &mut m, 2, on_threads_of);
        drop(m);
        let mut d = filled(Dash(dashmap::DashSet::with_capacity(n as usize)), n);
        bench(c, &w, &mut d, 2, on_threads_of);
    }
}

criterion_group! {
    name = filters;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = benches
}
criterion_main!(filters);
