//! Criterion benchmarks: blockbloom against `HashSet<String>`, `AHashSet<String>` (one
//! thread) and `Mutex<HashSet<String>>`, `DashSet<String>` (shared by threads).
//!
//! ```sh
//! cargo bench --bench filters                               # 10^6 and 5·10^7 keys
//! BLOCKBLOOM_BENCH_SIZES=1000000 cargo bench --bench filters  # only 10^6
//! cargo bench --bench filters -- --quick                    # smoke run
//! ```
//!
//! Workload at size N: the structure holds N synthetic URLs (~70 bytes, from
//! `blockbloom-workload`), inserted before timing. The timed operations draw from
//! `member` keys (inserted) and `fresh` keys (never inserted):
//!
//! * `insert_if_absent` / `insert`: a stream alternating member and fresh keys (50% duplicates);
//!   once the fresh keys are used up, the structure is restored to its N members, untimed.
//! * `contains_member` / `contains_non_member`: lookups of members / fresh keys.
//!
//! One criterion iteration is one operation, so criterion's "time" is ns per operation.
//! Threaded runs split each batch of operations over the threads, which start together on a
//! barrier; only the concurrent section is timed.

use blockbloom::BloomFilter;
use blockbloom_workload::{url, write_url, SplitMix64};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use dashmap::DashSet;
use std::collections::HashSet;
use std::hash::BuildHasher;
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

/// What every structure under test offers, single-threaded.
trait SeqSet {
    fn insert(&mut self, k: &str);
    fn insert_if_absent(&mut self, k: &str) -> bool;
    fn contains(&self, k: &str) -> bool;
    /// Forget the fresh keys again (untimed).
    fn reset(&mut self, fresh: &[String]);
}

/// What every structure shared by threads offers.
trait SharedSet: Sync {
    fn insert(&self, k: &str);
    fn insert_if_absent(&self, k: &str) -> bool;
    fn contains(&self, k: &str) -> bool;
    fn reset(&mut self, fresh: &[String]);
}

/// The filter plus a copy of its state after setup, to restore it cheaply.
struct Bloom {
    f: BloomFilter,
    prototype: BloomFilter,
}

impl Bloom {
    fn new(n: u64) -> Self {
        let build = || {
            BloomFilter::builder()
                .capacity(n)
                .fpr(0.01)
                .seed(0xBE7C)
                .build()
                .unwrap()
        };
        let prototype = build();
        let mut buf = String::new();
        for i in 0..n {
            buf.clear();
            write_url(i, &mut buf);
            prototype.insert(buf.as_str());
        }
        let f = build();
        f.union(&prototype).unwrap();
        Bloom { f, prototype }
    }
}

impl SharedSet for Bloom {
    fn insert(&self, k: &str) {
        self.f.insert(k)
    }
    fn insert_if_absent(&self, k: &str) -> bool {
        self.f.insert_if_absent(k)
    }
    fn contains(&self, k: &str) -> bool {
        self.f.contains(k)
    }
    fn reset(&mut self, _: &[String]) {
        self.f.clear();
        self.f.union(&self.prototype).unwrap();
    }
}

impl SeqSet for Bloom {
    fn insert(&mut self, k: &str) {
        self.f.insert(k)
    }
    fn insert_if_absent(&mut self, k: &str) -> bool {
        self.f.insert_if_absent(k)
    }
    fn contains(&self, k: &str) -> bool {
        self.f.contains(k)
    }
    fn reset(&mut self, fresh: &[String]) {
        SharedSet::reset(self, fresh)
    }
}

impl<S: BuildHasher> SeqSet for HashSet<String, S> {
    fn insert(&mut self, k: &str) {
        SeqSet::insert_if_absent(self, k);
    }
    fn insert_if_absent(&mut self, k: &str) -> bool {
        // one lookup for the duplicate half, an allocation only for new keys
        !HashSet::contains(self, k) && HashSet::insert(self, k.to_owned())
    }
    fn contains(&self, k: &str) -> bool {
        HashSet::contains(self, k)
    }
    fn reset(&mut self, fresh: &[String]) {
        for k in fresh {
            self.remove(k.as_str());
        }
    }
}

/// `ahash::AHashSet<String>` is a newtype over this type; the alias lets one impl serve both.
type AHashSet<T> = ahash::HashSet<T>;

impl SharedSet for Mutex<HashSet<String>> {
    fn insert(&self, k: &str) {
        SharedSet::insert_if_absent(self, k);
    }
    fn insert_if_absent(&self, k: &str) -> bool {
        let mut s = self.lock().unwrap();
        !s.contains(k) && s.insert(k.to_owned())
    }
    fn contains(&self, k: &str) -> bool {
        self.lock().unwrap().contains(k)
    }
    fn reset(&mut self, fresh: &[String]) {
        SeqSet::reset(self.get_mut().unwrap(), fresh)
    }
}

impl SharedSet for DashSet<String> {
    fn insert(&self, k: &str) {
        SharedSet::insert_if_absent(self, k);
    }
    fn insert_if_absent(&self, k: &str) -> bool {
        !DashSet::contains(self, k) && DashSet::insert(self, k.to_owned())
    }
    fn contains(&self, k: &str) -> bool {
        DashSet::contains(self, k)
    }
    fn reset(&mut self, fresh: &[String]) {
        for k in fresh {
            self.remove(k.as_str());
        }
    }
}

fn hashset_of<S: Default + Extend<String>>(n: u64) -> S {
    let mut s = S::default();
    s.extend((0..n).map(url));
    s
}

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

    /// member, fresh, member, fresh, …
    fn mixed(&self) -> Vec<&str> {
        self.members
            .iter()
            .zip(&self.fresh)
            .flat_map(|(a, b)| [a.as_str(), b.as_str()])
            .collect()
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Insert,
    InsertIfAbsent,
    ContainsMember,
    ContainsNonMember,
}

const OPS: [(Op, &str); 4] = [
    (Op::ContainsMember, "contains_member"),
    (Op::ContainsNonMember, "contains_non_member"),
    (Op::InsertIfAbsent, "insert_if_absent"),
    (Op::Insert, "insert"),
];

fn keys_for(w: &Workload, op: Op) -> Vec<&str> {
    match op {
        Op::Insert | Op::InsertIfAbsent => w.mixed(),
        Op::ContainsMember => w.members.iter().map(String::as_str).collect(),
        Op::ContainsNonMember => w.fresh.iter().map(String::as_str).collect(),
    }
}

/// Runs `iters` operations over `keys`, continuing from `*cursor`, in batches that end where
/// the keys run out; there the structure is reset (untimed) if the operation writes.
/// `run` performs and times one batch.
fn timed_passes<S>(
    set: &mut S,
    keys: &[&str],
    cursor: &mut usize,
    iters: u64,
    writes: bool,
    reset: impl Fn(&mut S),
    mut run: impl FnMut(&mut S, &[&str]) -> Duration,
) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters as usize;
    while left > 0 {
        if *cursor == keys.len() {
            if writes {
                reset(set);
            }
            *cursor = 0;
        }
        let end = keys.len().min(*cursor + left);
        total += run(set, &keys[*cursor..end]);
        left -= end - *cursor;
        *cursor = end;
    }
    total
}

fn apply_seq<S: SeqSet>(set: &mut S, op: Op, k: &str) -> usize {
    match op {
        Op::Insert => {
            set.insert(k);
            0
        }
        Op::InsertIfAbsent => set.insert_if_absent(k) as usize,
        _ => set.contains(k) as usize,
    }
}

fn apply_shared<S: SharedSet>(set: &S, op: Op, k: &str) -> usize {
    match op {
        Op::Insert => {
            set.insert(k);
            0
        }
        Op::InsertIfAbsent => set.insert_if_absent(k) as usize,
        _ => set.contains(k) as usize,
    }
}

fn bench_seq<S: SeqSet>(c: &mut Criterion, w: &Workload, name: &str, set: &mut S) {
    for (op, op_name) in OPS {
        let keys = keys_for(w, op);
        let writes = matches!(op, Op::Insert | Op::InsertIfAbsent);
        let mut g = c.benchmark_group(format!("{op_name}/1-thread"));
        g.throughput(Throughput::Elements(1));
        let mut cursor = 0usize;
        g.bench_function(BenchmarkId::new(name, w.n), |b| {
            b.iter_custom(|iters| {
                let reset = |s: &mut S| SeqSet::reset(s, &w.fresh);
                timed_passes(
                    set,
                    &keys,
                    &mut cursor,
                    iters,
                    writes,
                    reset,
                    |set, batch| {
                        let t = Instant::now();
                        let found: usize = batch.iter().map(|k| apply_seq(set, op, k)).sum();
                        let elapsed = t.elapsed();
                        std::hint::black_box(found);
                        elapsed
                    },
                )
            })
        });
        g.finish();
        if writes {
            set.reset(&w.fresh);
        }
    }
}

fn bench_shared<S: SharedSet>(
    c: &mut Criterion,
    w: &Workload,
    name: &str,
    set: &mut S,
    threads: usize,
) {
    for (op, op_name) in OPS {
        let keys = keys_for(w, op);
        let writes = matches!(op, Op::Insert | Op::InsertIfAbsent);
        let mut g = c.benchmark_group(format!("{op_name}/{threads}-threads"));
        g.throughput(Throughput::Elements(1));
        let mut cursor = 0usize;
        g.bench_function(BenchmarkId::new(name, w.n), |b| {
            b.iter_custom(|iters| {
                let reset = |s: &mut S| SharedSet::reset(s, &w.fresh);
                timed_passes(
                    set,
                    &keys,
                    &mut cursor,
                    iters,
                    writes,
                    reset,
                    |set, batch| {
                        let per = batch.len().div_ceil(threads).max(1);
                        let barrier = Barrier::new(threads + 1);
                        let shared: &S = set;
                        std::thread::scope(|s| {
                            for part in batch.chunks(per) {
                                let barrier = &barrier;
                                s.spawn(move || {
                                    barrier.wait();
                                    let found: usize =
                                        part.iter().map(|k| apply_shared(shared, op, k)).sum();
                                    std::hint::black_box(found);
                                });
                            }
                            for _ in batch.chunks(per).len()..threads {
                                s.spawn(|| barrier.wait());
                            }
                            barrier.wait();
                            Instant::now() // the scope joins all threads before returning
                        })
                        .elapsed()
                    },
                )
            })
        });
        g.finish();
        if writes {
            set.reset(&w.fresh);
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
        let mut bloom = Bloom::new(n);
        bench_seq(c, &w, "blockbloom", &mut bloom);
        bench_shared(c, &w, "blockbloom", &mut bloom, 2);
        drop(bloom);
        bench_seq(
            c,
            &w,
            "HashSet<String>",
            &mut hashset_of::<HashSet<String>>(n),
        );
        bench_seq(
            c,
            &w,
            "AHashSet<String>",
            &mut hashset_of::<AHashSet<String>>(n),
        );
        bench_shared(
            c,
            &w,
            "Mutex<HashSet<String>>",
            &mut Mutex::new(hashset_of(n)),
            2,
        );
        let dash: DashSet<String> = DashSet::new();
        (0..n).for_each(|i| {
            dash.insert(url(i));
        });
        bench_shared(c, &w, "DashSet<String>", &mut { dash }, 2);
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
