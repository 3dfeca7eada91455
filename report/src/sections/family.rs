//! The "family" section: the counting, growable, expiring and bitset structures next to the
//! plain filter (ns/op, bytes/key, measured false-positive rate), one workload for all.

use blockbloom::{
    AtomicBitSet, BloomFilter, CountingBloomFilter, ExpiringBloomFilter, GrowableBloomFilter,
};
use blockbloom_bench::measure::{on_threads, part};
use std::fmt::Write as _;

use crate::report::{Report, FPR};

/// One structure, built fresh for each repetition.
struct Entry<'a> {
    name: String,
    /// Builds the structure and returns its operations: insert_if_absent, contains, and the
    /// memory in bytes (read after the inserts).
    build: Box<dyn Fn() -> Box<dyn Ops + 'a> + 'a>,
}

trait Ops: Sync {
    fn iaa(&self, i: usize) -> bool;
    fn contains(&self, i: usize) -> bool;
    fn memory(&self) -> usize;
}

struct Keyed<'a, T> {
    s: T,
    keys: &'a [&'a str],
    queries: &'a [&'a str],
}

macro_rules! keyed_ops {
    ($t:ty) => {
        impl Ops for Keyed<'_, $t> {
            fn iaa(&self, i: usize) -> bool {
                self.s.insert_if_absent(self.keys[i])
            }
            fn contains(&self, i: usize) -> bool {
                self.s.contains(self.queries[i])
            }
            fn memory(&self) -> usize {
                self.s.memory_bytes()
            }
        }
    };
}
keyed_ops!(BloomFilter);
keyed_ops!(CountingBloomFilter);
keyed_ops!(GrowableBloomFilter);
keyed_ops!(ExpiringBloomFilter);

/// Ids `0..n` inserted, ids `n..2n` queried (never inserted).
struct Ids(AtomicBitSet);
impl Ops for Ids {
    fn iaa(&self, i: usize) -> bool {
        self.0.insert_if_absent(i as u64)
    }
    fn contains(&self, i: usize) -> bool {
        self.0.contains((self.0.universe() / 2) + i as u64)
    }
    fn memory(&self) -> usize {
        self.0.memory_bytes()
    }
}

/// Median ns/op of `op` over `reps` fresh structures on `threads` threads, plus the last
/// structure's `true` count and memory.
fn time(
    e: &Entry<'_>,
    n: usize,
    threads: usize,
    reps: usize,
    contains: bool,
) -> (f64, usize, usize) {
    let idx: Vec<usize> = (0..n).collect();
    let mut ns = Vec::new();
    let (mut trues, mut mem) = (0, 0);
    for _ in 0..reps {
        let s = (e.build)();
        if contains {
            for i in 0..n {
                s.iaa(i);
            }
        }
        let (d, found) = on_threads(threads, |t| {
            let mine = part(&idx, t, threads);
            if contains {
                mine.iter().filter(|&&i| s.contains(i)).count()
            } else {
                mine.iter().filter(|&&i| s.iaa(i)).count()
            }
        });
        ns.push(d.as_nanos() as f64 / n as f64);
        trues = found;
        mem = s.memory();
    }
    ns.sort_by(|a, b| a.total_cmp(b));
    (ns[ns.len() / 2], trues, mem)
}

pub fn section(md: &mut String, n: usize, reps: usize, threads: &[usize], fpr: f64) {
    let keys_store: Vec<String> = (0..2 * n as u64).map(blockbloom_workload::url).collect();
    let all: Vec<&str> = keys_store.iter().map(String::as_str).collect();
    let (keys, queries) = all.split_at(n);
    let cap = n as u64;
    let entries: Vec<Entry<'_>> = vec![
        Entry {
            name: "BloomFilter".into(),
            build: Box::new(move || {
                Box::new(Keyed {
                    s: BloomFilter::with_capacity(cap, fpr).unwrap(),
                    keys,
                    queries,
                })
            }),
        },
        Entry {
            name: "CountingBloomFilter".into(),
            build: Box::new(move || {
                Box::new(Keyed {
                    s: CountingBloomFilter::with_capacity(cap, fpr).unwrap(),
                    keys,
                    queries,
                })
            }),
        },
        Entry {
            name: "GrowableBloomFilter, 1 layer (initial capacity n)".into(),
            build: Box::new(move || {
                Box::new(Keyed {
                    s: GrowableBloomFilter::new(cap, fpr).unwrap(),
                    keys,
                    queries,
                })
            }),
        },
        Entry {
            name: "GrowableBloomFilter, grown from n/100 (7 layers)".into(),
            build: Box::new(move || {
                Box::new(Keyed {
                    s: GrowableBloomFilter::new((cap / 100).max(1), fpr).unwrap(),
                    keys,
                    queries,
                })
            }),
        },
        Entry {
            name: "ExpiringBloomFilter (30-day window, n keys per window; clock read per call)"
                .into(),
            build: Box::new(move || {
                Box::new(Keyed {
                    s: ExpiringBloomFilter::builder()
                        .expire_after(std::time::Duration::from_secs(30 * 86_400))
                        .capacity(cap)
                        .fpr(fpr)
                        .build()
                        .unwrap(),
                    keys,
                    queries,
                })
            }),
        },
        Entry {
            name: "AtomicBitSet (ids 0..n of universe 2n; exact)".into(),
            build: Box::new(move || Box::new(Ids(AtomicBitSet::new(2 * cap).unwrap()))),
        },
    ];
    let _ = write!(
        md,
        "n = {n} distinct keys (~70-byte URLs; the bitset gets the integers 0..n), target rate \
         {fpr}. insert_if_absent of n new keys into a fresh structure, then contains of n \
         members and of n never-inserted keys (the false-positive rate). Median of {reps} \
         run(s), ns per operation.\n\n\
         | structure | threads | insert_if_absent ns/op | contains (member) ns/op | bytes/key | measured fpr | ns/op vs BloomFilter |\n\
         |---|---:|---:|---:|---:|---:|---:|\n"
    );
    for &t in threads {
        let mut base = None;
        for e in &entries {
            crate::progress(&format!("family: {} on {t} thread(s)", e.name));
            let (iaa, _, mem) = time(e, n, t, reps, false);
            let (hit, _, _) = time(e, n, t, reps, true);
            // False positives: one sequential pass over the non-members on a filled structure.
            let s = (e.build)();
            for i in 0..n {
                s.iaa(i);
            }
            let fp = (0..n).filter(|&i| s.contains(i)).count();
            let base_ns = *base.get_or_insert(iaa);
            let _ = writeln!(
                md,
                "| {} | {t} | {iaa:.1} | {hit:.1} | {:.2} | {:.4}% | ×{:.2} |",
                e.name,
                mem as f64 / n as f64,
                fp as f64 * 100.0 / n as f64,
                iaa / base_ns,
            );
        }
    }
    md.push_str(
        "\nbytes/key is memory_bytes() / n after the inserts (for the grown filter: all of its \
         layers, the newest partly empty). The growable filter pays a SeqCst fence per new \
         key (and one per call once it has two layers or more) for its one-winner guarantee \
         across growth steps, and one lookup per older layer. The expiring filter keeps \
         four planes of bits in each line, one per epoch (a third of the window), sized for \
         n keys per window at a steady rate, and reads the clock per call \
         (`report/examples/expiring.rs` adds `_at`, batches and larger n).\n",
    );
}

pub(crate) fn run(r: &mut Report) {
    r.section("The rest of the family: counting, growable, expiring, bitset");
    let n = if r.cfg.quick { 100_000 } else { 1_000_000 };
    let (reps, threads) = (r.cfg.reps, r.cfg.threads.clone());
    section(&mut r.md, n, reps, &threads, FPR);
}
