//! Batches of 1,024 `insert_if_absent` at a scale whose stream does not fit in memory:
//! `ExpiringBloomFilter` (30-day window, 1%) against the plain `BloomFilter` (1%), each
//! sized for CAPACITY keys, fed the same 2 · CAPACITY URLs of the workload's form, half of
//! them new (each odd call repeats an earlier key), made a batch at a time outside the
//! timing. The expiring filter twice: given the stream now (a whole window's keys at one
//! time, all in one plane of each line: three times a plane's steady load), and given it
//! at times spread evenly over the window that ends now (`_many_at`: its capacity at the
//! steady rate it is sized for, a third of the keys in each epoch's plane, each epoch's
//! sweep on the way). Beside them, fed the same batches: the plain filter given as many bytes as the
//! expiring filter (sized for proportionally more keys: what the footprint alone costs);
//! and the stream's physical limit in either filter's bytes (`bare`): the filters'
//! pipeline down to one bit per key, loaded and set with a `fetch_or` where it was clear —
//! no filter does less.
//!
//! Each structure's memory is committed before the stream (`populate`: the page faults of
//! a first touch, paid once per byte, are not a call's), the seconds that took for the
//! plain and the expiring filter printed apart.
//!
//! All six live at once and take the stream in turns of 1,024 batches each, so that a
//! shared machine's slow minutes fall on every one of them alike (run one after another,
//! the same filter's passes over one stream differed by half at 10^9 on this report's
//! machine; taking each batch in turn, every structure's lines evicted the others'
//! between two of its batches). Prints ns per call of each, the ratios, the share of
//! their bytes on huge pages at the end (`AnonHugePages`, Linux), and, after the stream,
//! the physical limit without one: a prefetched `fetch_or` into a random line, no
//! hashing, one loop over pages touched first (`blockbloom_bench::measure::physical_limit`).
//!
//! ```sh
//! cargo run --release -p blockbloom-bench --example expiring_scale [-- CAPACITY...]
//! ```

use std::time::{Duration, Instant, SystemTime};

use blockbloom::__bench::{pipeline, Lines};
use blockbloom::{BloomFilter, ExpiringBloomFilter};
use blockbloom_bench::measure::physical_limit;
use blockbloom_workload::{url, SplitMix64};

/// One batch's `insert_if_absent` into one structure, given the share of the stream
/// before the batch (0 to 1).
type Batch<'a> = Box<dyn FnMut(&[&str], f64, &mut [bool]) + 'a>;

/// Batches of a structure run back to back before the next structure's turn: a turn
/// (about 30–80 ms at 10^9) long against what one structure's random lines do to
/// another's translations and cache, short against a shared machine's slow minutes.
const TURN: usize = 1024;

/// The stream: `2 · capacity` URLs, half of them new (each odd call repeats an earlier
/// key), the same for every structure.
struct Stream {
    rng: SplitMix64,
    i: u64,
    calls: u64,
}

impl Stream {
    fn new(capacity: u64) -> Stream {
        Stream {
            rng: SplitMix64::new(42),
            i: 0,
            calls: 2 * capacity,
        }
    }

    /// The next batch's URLs in `urls`; false once the stream is done.
    fn next_batch(&mut self, urls: &mut Vec<String>) -> bool {
        urls.clear();
        while urls.len() < 1024 && self.i < self.calls {
            let i = self.i;
            let id = if i.is_multiple_of(2) {
                i / 2
            } else {
                self.rng.next_u64() % (i / 2 + 1)
            };
            urls.push(url(id));
            self.i += 1;
        }
        !urls.is_empty()
    }
}

/// Nanoseconds per call of each of `ops` over the stream, each op's batches made one at a
/// time outside the timing, in turns of [`TURN`] batches.
fn stream(capacity: u64, ops: &mut [Batch]) -> Vec<f64> {
    let mut streams: Vec<Stream> = ops.iter().map(|_| Stream::new(capacity)).collect();
    let (mut urls, mut out) = (Vec::with_capacity(1024), [false; 1024]);
    let mut spent = vec![Duration::ZERO; ops.len()];
    let mut going = true;
    while going {
        going = false;
        for (j, op) in ops.iter_mut().enumerate() {
            for _ in 0..TURN {
                let done = streams[j].i as f64 / streams[j].calls as f64;
                if !streams[j].next_batch(&mut urls) {
                    break;
                }
                going = true;
                let keys: Vec<&str> = urls.iter().map(String::as_str).collect();
                let start = Instant::now();
                op(&keys, done, &mut out[..keys.len()]);
                spent[j] += start.elapsed();
            }
        }
    }
    let calls = 2 * capacity;
    spent
        .iter()
        .map(|d| d.as_nanos() as f64 / calls as f64)
        .collect()
}

/// The stream's physical limit in `lines` lines (on huge pages at once, as the expiring
/// filter's): the filters' pipeline (`__bench::pipeline`: each key hashed as they hash it,
/// its line prefetched ahead with write intent) down to one bit per key, loaded, and set
/// with a `fetch_or` where it was clear.
fn bare(lines: usize) -> Batch<'static> {
    let arr = Lines::new(lines, true).expect("allocates");
    arr.populate();
    let hasher = BloomFilter::with_capacity(1000, 0.01).expect("allocates");
    Box::new(move |keys, _, out| {
        let lines = arr.len() as u128;
        let hash = |k: &str| hasher.key_hash(k).to_bits();
        let place = |h: u64| {
            let line = ((h as u128 * lines) >> 64) as usize;
            (line, (h & 7) as usize, 1u64 << (h >> 58))
        };
        pipeline(
            keys,
            lines as usize * 64,
            |k: &&str| hash(k),
            |h| arr.prefetch(place(h).0),
            |i, h| {
                let (l, w, bit) = place(h);
                out[i] = arr.load(l, w) & bit == 0 && arr.fetch_or(l, w, bit) & bit == 0;
            },
        );
    })
}

/// MB of this process's memory on transparent huge pages (0 where the kernel does not say).
fn huge_mb() -> f64 {
    let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
    rollup
        .lines()
        .find_map(|l| l.strip_prefix("AnonHugePages:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1e3)
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
    println!("| capacity | plain | plain, expiring's bytes | expiring, at one time | ratio | over the same bytes | expiring, over the window | ratio | over the same bytes | MB plain | MB expiring | MB on huge pages, of all six | the stream's limit, plain's bytes → expiring's (expiring's over the plain filter) | physical limit without the stream, plain's bytes → expiring's | s to commit, plain → expiring |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|---|");
    for capacity in capacities {
        // Every structure's memory committed before the stream (`populate`), the time that
        // takes apart: a first touch's page faults are paid once per byte, not per call.
        let committing = Instant::now();
        let plain_filter = |capacity| {
            BloomFilter::builder()
                .capacity(capacity)
                .fpr(0.01)
                .populate(true)
                .build()
                .expect("allocates")
        };
        let plain = plain_filter(capacity);
        let plain_s = committing.elapsed().as_secs_f64();
        let window = Duration::from_secs(30 * 86_400);
        let expiring_filter = || {
            ExpiringBloomFilter::builder()
                .expire_after(window)
                .capacity(capacity)
                .fpr(0.01)
                .populate(true)
                .build()
                .expect("allocates")
        };
        let committing = Instant::now();
        let expiring = expiring_filter();
        let expiring_s = committing.elapsed().as_secs_f64();
        let steady = expiring_filter();
        // The window ending now: every time given is at most this machine's clock.
        let start = SystemTime::now() - window;
        let (mb_plain, mb) = (
            plain.memory_bytes() as f64 / 1e6,
            expiring.memory_bytes() as f64 / 1e6,
        );
        let scaled = (capacity as f64 * mb / mb_plain) as u64;
        let same = plain_filter(scaled);
        let mb_same = same.memory_bytes() as f64 / 1e6;
        let lines = |mb: f64| (mb * 1e6 / 64.0) as usize;
        let mut ops: Vec<Batch> = vec![
            Box::new(|k, _, o| plain.insert_if_absent_many(k, o)),
            Box::new(|k, _, o| same.insert_if_absent_many(k, o)),
            Box::new(|k, _, o| expiring.insert_if_absent_many(k, o)),
            Box::new(|k, done, o| {
                steady.insert_if_absent_many_at(k, start + window.mul_f64(done), o)
            }),
            bare(lines(mb_plain)),
            bare(lines(mb)),
        ];
        let ns = stream(capacity, &mut ops);
        let huge = huge_mb();
        drop(ops);
        let all = 2.0 * mb_plain + 3.0 * mb + mb_same;
        let [p, q, e, s, sp, se] = ns[..] else {
            unreachable!("six structures")
        };
        let limit = |mb: f64| physical_limit(lines(mb), 20_000_000, 1, true);
        let (lp, le) = (limit(mb_plain), limit(mb));
        println!(
            "| {capacity} | {p:.1} | {q:.1} ({mb_same:.0} MB) | {e:.1} | ×{:.2} | ×{:.2} | {s:.1} | ×{:.2} | ×{:.2} | {mb_plain:.0} | {mb:.0} | {huge:.0} of {all:.0} | {sp:.1} → {se:.1} (×{:.2}; ×{:.2}) | {lp:.1} → {le:.1} (×{:.2}) | {plain_s:.2} → {expiring_s:.2} |",
            e / p,
            e / q,
            s / p,
            s / q,
            se / sp,
            se / p,
            le / lp
        );
    }
}
