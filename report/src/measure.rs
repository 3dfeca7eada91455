//! Timing harnesses: one thread, several threads started together on a barrier, per-operation
//! latency histograms, and the physical-limit microbenchmark.

use crate::peers::{Op, Peer};
use hdrhistogram::Histogram;
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// ns per operation of one measured cell (the median over repetitions) and the number of
/// `true` answers of the last repetition.
#[derive(Clone, Copy, Debug)]
pub struct Cell {
    pub ns: f64,
    pub found: usize,
    pub ops: usize,
}

impl Cell {
    pub fn mops(&self) -> f64 {
        1e3 / self.ns
    }
}

/// Runs `f` on `threads` threads (`f(t)` on thread `t`), started together on a barrier, and
/// returns the time from the release of the barrier until the last one finished, and the sum
/// of their results.
pub fn on_threads<F: Fn(usize) -> usize + Sync>(threads: usize, f: F) -> (Duration, usize) {
    let barrier = Barrier::new(threads);
    let results: Vec<(Instant, Instant, usize)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (f, barrier) = (&f, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    let start = Instant::now();
                    let found = f(t);
                    (start, Instant::now(), found)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let start = results.iter().map(|r| r.0).min().unwrap();
    let end = results.iter().map(|r| r.1).max().unwrap();
    (end - start, results.iter().map(|r| r.2).sum())
}

/// Part `t` of `threads` contiguous parts of `keys`.
pub fn part<T>(keys: &[T], t: usize, threads: usize) -> &[T] {
    let per = keys.len().div_ceil(threads);
    &keys[(t * per).min(keys.len())..((t + 1) * per).min(keys.len())]
}

/// The keys of one cell: `keys` are offered to the structure; `added` are those of them that
/// a writing operation may add (the keys not inserted while filling), which
/// [`Peer::reset`] removes again between repetitions.
#[derive(Clone, Copy)]
pub struct Keys<'a> {
    pub keys: &'a [&'a str],
    pub added: &'a [&'a str],
}

/// Repeats a timed run `reps` times, resetting the structure between runs of a writing
/// operation (and after the last), and returns the median.
pub fn cell<P: Peer>(
    p: &mut P,
    op: Op,
    k: Keys<'_>,
    reps: usize,
    mut run: impl FnMut(&P) -> (Duration, usize),
) -> Cell {
    let keys = k.keys;
    let mut times = Vec::with_capacity(reps);
    let mut found = 0;
    for r in 0..reps {
        if r > 0 && op.writes() {
            p.reset(k.added);
        }
        let (d, f) = run(p);
        times.push(d.as_secs_f64() * 1e9 / keys.len() as f64);
        found = f;
    }
    if op.writes() {
        p.reset(k.added);
    }
    times.sort_by(f64::total_cmp);
    Cell {
        ns: times[times.len() / 2],
        found,
        ops: keys.len(),
    }
}

/// One thread: `op` over all keys.
pub fn seq<P: Peer>(p: &mut P, op: Op, k: Keys<'_>, reps: usize) -> Cell {
    let keys = k.keys;
    cell(p, op, k, reps, |p| {
        let t = Instant::now();
        let found = std::hint::black_box(p.run(op, keys));
        (t.elapsed(), found)
    })
}

/// `threads` threads, each `op` over its contiguous part of the keys.
pub fn par<P: Peer + Sync>(p: &mut P, op: Op, k: Keys<'_>, reps: usize, threads: usize) -> Cell {
    let keys = k.keys;
    cell(p, op, k, reps, |p| {
        on_threads(threads, |t| {
            std::hint::black_box(p.run(op, part(keys, t, threads)))
        })
    })
}

pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid bounds")
}

/// Times each call of `f` on its own (two clock reads around it), into a histogram of ns.
pub fn record(keys: &[&str], mut f: impl FnMut(&str) -> bool) -> Histogram<u64> {
    let mut h = histogram();
    let mut found = 0usize;
    for k in keys {
        let t = Instant::now();
        found += f(k) as usize;
        let ns = t.elapsed().as_nanos() as u64;
        h.saturating_record(ns.max(1));
    }
    std::hint::black_box(found);
    h
}

/// Latency of single operations of `op`, on one thread.
pub fn latency_seq<P: Peer>(p: &mut P, op: Op, k: Keys<'_>) -> Histogram<u64> {
    let h = record(k.keys, |key| one(p, op, key));
    if op.writes() {
        p.reset(k.added);
    }
    h
}

/// Latency of single operations of `op`, on `threads` threads at once, merged.
pub fn latency_par<P: Peer + Sync>(
    p: &mut P,
    op: Op,
    k: Keys<'_>,
    threads: usize,
) -> Histogram<u64> {
    let keys = k.keys;
    let parts = std::sync::Mutex::new(Vec::new());
    {
        let shared: &P = p;
        on_threads(threads, |t| {
            let h = record(part(keys, t, threads), |k| one(shared, op, k));
            parts.lock().unwrap().push(h);
            0
        });
    }
    if op.writes() {
        p.reset(k.added);
    }
    let mut all = histogram();
    for h in parts.into_inner().unwrap() {
        all.add(h).expect("same bounds");
    }
    all
}

fn one<P: Peer + ?Sized>(p: &P, op: Op, k: &str) -> bool {
    match op {
        Op::Insert => {
            p.insert(k);
            false
        }
        Op::InsertIfAbsent => p.insert_if_absent(k),
        Op::ContainsMember | Op::ContainsNonMember => p.contains(k),
    }
}

/// What two clock reads cost: the floor under every latency figure.
pub fn timer_overhead_ns() -> u64 {
    let mut h = histogram();
    for _ in 0..100_000 {
        let t = Instant::now();
        h.saturating_record((t.elapsed().as_nanos() as u64).max(1));
    }
    h.value_at_quantile(0.5)
}

/// The physical limit of one filter operation: for each of `ops` operations, pick a random
/// 64-byte line of an array as large as the filter (allocated the same way), prefetch the
/// line `PREFETCH_DISTANCE` operations ahead with write intent, and `fetch_or` one bit into
/// one word of it. No hashing of keys: only the cheapest possible index mixing.
pub fn physical_limit(lines: usize, ops: usize, threads: usize, huge_pages: bool) -> f64 {
    use blockbloom::__bench::Lines;
    use blockbloom::PREFETCH_DISTANCE as D;
    let arr = Lines::new(lines, huge_pages).expect("allocation");
    let line = |i: u64| -> usize {
        let h = (i ^ 0x9E37_79B9_7F4A_7C15).wrapping_mul(0xD1B5_4A32_D192_ED03);
        ((h as u128 * arr.len() as u128) >> 64) as usize
    };
    // Touch every page first, as a filled filter would have.
    for i in (0..arr.len()).step_by(64) {
        arr.fetch_or(i, 0, 1);
    }
    let per = ops.div_ceil(threads) as u64;
    let run = || {
        on_threads(threads, |t| {
            let (from, to) = (t as u64 * per, (t as u64 + 1) * per);
            let mut acc = 0u64;
            for i in from..to {
                arr.prefetch(line(i + D as u64));
                acc ^= arr.fetch_or(line(i), (i & 7) as usize, 1 << ((i >> 3) & 63));
            }
            acc as usize
        })
    };
    run(); // warm-up
    let (d, _) = run();
    d.as_secs_f64() * 1e9 / (per * threads as u64) as f64
}

/// The price of atomicity: ns per operation that ORs one bit into each of the 8 words of a
/// random line of an array of `lines` lines (the filter's size), with plain loads and stores
/// (`atomic == false`, what a non-atomic filter does) or with `fetch_or` (`lock or` on x86,
/// what every insert of a concurrent filter must do). Lines prefetched as in
/// [`physical_limit`]; one thread.
pub fn eight_ors(lines: usize, ops: usize, atomic: bool) -> f64 {
    use blockbloom::__bench::Lines;
    use blockbloom::PREFETCH_DISTANCE as D;
    let arr = Lines::new(lines, false).expect("allocation");
    let line = |i: u64| -> usize {
        let h = (i ^ 0x9E37_79B9_7F4A_7C15).wrapping_mul(0xD1B5_4A32_D192_ED03);
        ((h as u128 * arr.len() as u128) >> 64) as usize
    };
    for i in (0..arr.len()).step_by(64) {
        arr.fetch_or(i, 0, 1);
    }
    let run = || {
        let t = Instant::now();
        let mut acc = 0u64;
        for i in 0..ops as u64 {
            arr.prefetch(line(i + D as u64));
            let l = line(i);
            let bit = 1 << ((i >> 3) & 63);
            for w in 0..8 {
                acc ^= if atomic {
                    arr.fetch_or(l, w, bit)
                } else {
                    arr.or_plain(l, w, bit)
                };
            }
        }
        std::hint::black_box(acc);
        t.elapsed()
    };
    run(); // warm-up
    run().as_secs_f64() * 1e9 / ops as f64
}

/// One word of a random line per call, no prefetch, in an array of `lines` lines (allocated
/// as a filter's, every page touched): loaded, or `fetch_or`ed (`LOCKED`: `lock or` on x86);
/// each call's line free of the calls before, or `CHAINED` to the word the call before read
/// (one miss at a time). ns per call: free against chained says how many calls' misses
/// overlap, and so whether a locked operation keeps the next call's miss from starting.
/// (Both choices are constants: as run-time flags, LLVM made `h ^= acc & chained`
/// branch-free, so that every call waited for the word the call before read, chained or
/// not.)
pub fn one_word_per_call<const LOCKED: bool, const CHAINED: bool>(lines: usize, ops: usize) -> f64 {
    use blockbloom::__bench::Lines;
    let arr = Lines::new(lines, true).expect("allocation");
    for i in (0..arr.len()).step_by(64) {
        arr.fetch_or(i, 0, 1);
    }
    let t = Instant::now();
    let mut acc = 0u64;
    for i in 0..ops as u64 {
        let mut h = (i ^ 0x9E37_79B9_7F4A_7C15).wrapping_mul(0xD1B5_4A32_D192_ED03);
        if CHAINED {
            h ^= acc & 1; // the word the call before read, before this call's line is known
        }
        h = (h ^ (h >> 33)).wrapping_mul(0xFF51_AFD7_ED55_8CCD);
        h ^= h >> 33;
        let l = ((h as u128 * arr.len() as u128) >> 64) as usize;
        let (w, bit) = ((h & 7) as usize, 1 << ((h >> 3) & 63));
        acc ^= if LOCKED {
            arr.fetch_or(l, w, bit)
        } else {
            arr.load(l, w)
        };
    }
    std::hint::black_box(acc);
    t.elapsed().as_secs_f64() * 1e9 / ops as f64
}

/// Core-to-core cache-line round trip: two threads pass a counter back and forth through one
/// atomic word, each waiting (spinning) for the other's write; ns per round trip, the median
/// of 5 runs of 20,000. What a write to a line the other core holds costs, twice: the figure
/// that decides how well writes to a shared in-cache structure scale. On a VM it changes with
/// where the hypervisor places the vCPUs; with fewer than 2 cores it is NaN.
pub fn core_round_trip_ns() -> f64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return f64::NAN;
    }
    const N: u64 = 20_000;
    let mut runs: Vec<f64> = (0..5)
        .map(|_| {
            let a = AtomicU64::new(0);
            let pass = |parity: u64| {
                for i in 0..N {
                    while a.load(Ordering::Acquire) != 2 * i + parity {
                        std::hint::spin_loop();
                    }
                    a.store(2 * i + parity + 1, Ordering::Release);
                }
            };
            let t = Instant::now();
            std::thread::scope(|s| {
                s.spawn(|| pass(1));
                pass(0);
            });
            t.elapsed().as_secs_f64() * 1e9 / N as f64
        })
        .collect();
    runs.sort_by(f64::total_cmp);
    runs[2]
}
