//! `ExpiringBloomFilter` against the plain `BloomFilter`: `insert_if_absent` one call at a
//! time, one thread, on the URL stream of the benchmark report (2·CAPACITY URLs of ~60 bytes,
//! 50% repeats, in stream order), in filters for CAPACITY keys (per window) at 1%; its cost
//! with the clock read per call (`insert_if_absent`) and with a time given
//! (`insert_if_absent_at`), both filters' batches of 1,024 (`insert_if_absent_many`, one
//! clock read per batch), the clock alone, and bytes per key. With `--crawl`, the stream is
//! a crawl's link stream instead (`crawl_stream`: 3% new links, CAPACITY of them).
//!
//! Beside them: *plain + clock*, the plain filter's `insert_if_absent` with a
//! `SystemTime::now()` before each call, measured as such (over plain: out of cache more
//! than the sum, as the clock read waits for the loads before it); *2× plain* is the plain
//! filter sized for the `2 × capacity` keys that can be live at once (the old stamps' worst
//! burst), before any information about their ages: its batches' time and its bytes per
//! key of the window.
//! Beside `_at`, the plain filter one call at a time in as many bytes as the expiring
//! filter (its footprint's cost out of cache: `_at`'s floor), and the same with a
//! `SystemTime` turned into nanoseconds per call (what `_at` pays for a time outside the
//! newest epoch's remembered bounds); and the bare one-line access, one call's memory alone
//! (hash, then one word loaded or `fetch_or`ed) in either filter's bytes, free
//! to overlap the next call's miss (it knows its answer), chained (each call's line waits
//! for the word the call before read: one miss at a time), and deciding from its read (one
//! bit tested and set if clear: the least filter). Beside the batches, the plain filter's
//! batches in as many bytes as the expiring filter:
//! what the expiring filter's footprint alone costs; the plain filter's batches with
//! `huge_pages(true)`, the expiring filter's default (the ratio is the expiring filter's
//! batches over them); and the expiring filter's batches on 4 KiB pages
//! (`huge_pages(false)`). Then the coarse clock's lag, the least memory of a one-line
//! filter of quotiented fingerprints with generation tags, and the Age-Partitioned Bloom
//! Filter (its least memory at 1%) beside the expiring and the plain filter.
//!
//! ```sh
//! cargo run --release -p blockbloom-bench --example expiring [-- [--crawl] REPS CAPACITY...]
//! ```
//!
//! Every measurement runs REPS times (default 5), round-robin; medians are printed.

use std::hint::black_box;
use std::time::{Duration, Instant, SystemTime};

use blockbloom::__bench::{coarse_clock_nanos, coarse_clock_resolution, Lines};
use blockbloom::{BloomFilter, ExpiringBloomFilter, Filter};
use blockbloom_bench::apbf::Apbf;
use blockbloom_workload::{crawl_stream, dup_stream, url};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[inline(never)]
fn plain_loop(f: &BloomFilter, links: &[String]) -> usize {
    links
        .iter()
        .filter(|u| f.insert_if_absent(u.as_str()))
        .count()
}

/// The plain filter's work plus one read of `clock` per call: with `SystemTime::now`, what
/// `insert_if_absent` on an expiring filter costs at least (the floor); with the coarse
/// clock (`CLOCK_REALTIME_COARSE`), the floor the goal would have if the filter could use it.
#[inline(never)]
fn plain_clock_loop<T>(f: &BloomFilter, links: &[String], clock: impl Fn() -> T) -> usize {
    links
        .iter()
        .filter(|u| {
            black_box(clock());
            f.insert_if_absent(u.as_str())
        })
        .count()
}

#[inline(never)]
fn expiring_loop(f: &ExpiringBloomFilter, links: &[String]) -> usize {
    links
        .iter()
        .filter(|u| f.insert_if_absent(u.as_str()))
        .count()
}

#[inline(never)]
fn expiring_at_loop(f: &ExpiringBloomFilter, links: &[String], t: SystemTime) -> usize {
    links
        .iter()
        .filter(|u| f.insert_if_absent_at(u.as_str(), t))
        .count()
}

/// Batches of 1,024 through `insert_if_absent_many` (the prefetch pipeline), for either.
#[inline(never)]
fn batch_loop<'a>(f: &dyn Filter<&'a str>, links: &[&'a str]) -> usize {
    let mut out = [false; 1024];
    links
        .chunks(1024)
        .map(|c| {
            f.insert_if_absent_many(c, &mut out[..c.len()]);
            out[..c.len()].iter().filter(|&&x| x).count()
        })
        .sum()
}

fn expiring(capacity: u64) -> ExpiringBloomFilter {
    expiring_pages(capacity, true)
}

/// With huge pages from the start (the default) or 4 KiB pages.
fn expiring_pages(capacity: u64, huge_pages: bool) -> ExpiringBloomFilter {
    ExpiringBloomFilter::builder()
        .expire_after(Duration::from_secs(30 * 86_400))
        .capacity(capacity)
        .fpr(0.01)
        .huge_pages(huge_pages)
        .build()
        .expect("valid parameters")
}

fn main() {
    let crawl = std::env::args().any(|a| a == "--crawl");
    let mut args = std::env::args().skip(1).filter(|a| a != "--crawl");
    let reps: usize = args.next().map_or(5, |a| a.parse().expect("REPS"));
    let mut capacities: Vec<u64> = args.map(|a| a.parse().expect("CAPACITY")).collect();
    if capacities.is_empty() {
        capacities = vec![100_000, 10_000_000];
    }
    let stream = if crawl {
        "a crawl's links, 3% new"
    } else {
        "50% repeats"
    };
    println!("ns per call, medians of {reps} round-robin runs; window 30 days, 1%; {stream}\n");
    println!("| capacity | plain | expiring | expiring `_at` | ratio | ratio `_at` | plain, expiring's bytes (`_at`'s floor); with a time's conversion per call | bare one-line access, plain's bytes, expiring's bytes; chained; deciding from its read | batched plain | batched expiring | ratio batched | batched 2× plain | batched plain, expiring's bytes | batched plain, huge pages | batched expiring, 4 KiB pages | `SystemTime::now()` | plain + clock | plain + coarse clock | bytes/key plain | bytes/key 2× plain | bytes/key expiring |");
    println!(
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for &capacity in &capacities {
        let links = links_of(capacity, crawl);
        let n = links.len() as f64;
        let per_call = |f: &mut dyn FnMut()| {
            let t = Instant::now();
            f();
            t.elapsed().as_nanos() as f64 / n
        };
        let strs: Vec<&str> = links.iter().map(String::as_str).collect();
        let (mut plain, mut exp, mut exp_at, mut clock) = (vec![], vec![], vec![], vec![]);
        let (mut plain_as_exp, mut at_floor) = (vec![], vec![]);
        let (mut floor, mut coarse) = (vec![], vec![]);
        let (mut plain_batch, mut exp_batch) = (vec![], vec![]);
        let (mut plain2_batch, mut plain_as_exp_batch) = (vec![], vec![]);
        let (mut plain_huge_batch, mut exp_small_batch) = (vec![], vec![]);
        let (mut bp, mut be) = (0.0, 0.0);
        let mut bare = vec![];
        let new = first_sightings(&links);
        for _ in 0..reps {
            let f = BloomFilter::with_capacity(capacity, 0.01).unwrap();
            black_box(plain_loop(&f, &links));
            let g = BloomFilter::with_capacity(capacity, 0.01).unwrap();
            plain.push(per_call(&mut || {
                black_box(plain_loop(&g, &links));
            }));
            bp = f.memory_bytes() as f64 / capacity as f64;
            let g = BloomFilter::with_capacity(capacity, 0.01).unwrap();
            floor.push(per_call(&mut || {
                black_box(plain_clock_loop(&g, &links, SystemTime::now));
            }));
            let g = BloomFilter::with_capacity(capacity, 0.01).unwrap();
            coarse.push(per_call(&mut || {
                black_box(plain_clock_loop(&g, &links, coarse_clock_nanos));
            }));
            let e = expiring(capacity);
            exp.push(per_call(&mut || {
                black_box(expiring_loop(&e, &links));
            }));
            be = e.memory_bytes() as f64 / capacity as f64;
            let e = expiring(capacity);
            let t = SystemTime::now();
            exp_at.push(per_call(&mut || {
                black_box(expiring_at_loop(&e, &links, t));
            }));
            // One call at a time in as many bytes as the expiring filter: its footprint's
            // cost out of cache, `_at`'s floor there.
            let g = plain_in_bytes(capacity, e.memory_bytes());
            plain_as_exp.push(per_call(&mut || {
                black_box(plain_loop(&g, &links));
            }));
            // One call's memory alone, one call at a time (hash the key, then one line's
            // load or `fetch_or`), and the least filter, in each size.
            let c = capacity as f64;
            bare.push([
                bare_access::<FREE>(&links, &new, bp * c),
                bare_access::<FREE>(&links, &new, be * c),
                bare_access::<CHAINED>(&links, &new, bp * c),
                bare_access::<CHAINED>(&links, &new, be * c),
                bare_access::<DECIDING>(&links, &new, bp * c),
                bare_access::<DECIDING>(&links, &new, be * c),
            ]);
            // And with a `SystemTime` turned into nanoseconds per call (what `_at` pays for
            // a time outside the newest epoch's remembered bounds).
            let g = plain_in_bytes(capacity, e.memory_bytes());
            at_floor.push(per_call(&mut || {
                black_box(plain_clock_loop(&g, &links, || {
                    black_box(t).duration_since(std::time::UNIX_EPOCH)
                }));
            }));
            // The plain filter's batches in a filter sized for `keys`, with huge pages by
            // default (once dense) or from the start.
            let plain_batches = |keys: u64, huge: Option<bool>| {
                let mut b = BloomFilter::builder().capacity(keys).fpr(0.01);
                if let Some(on) = huge {
                    b = b.huge_pages(on);
                }
                let g = b.build().unwrap();
                per_call(&mut || {
                    black_box(batch_loop(&g, &strs));
                })
            };
            plain_batch.push(plain_batches(capacity, None));
            plain2_batch.push(plain_batches(2 * capacity, None));
            // As many bytes as the expiring filter: what its footprint alone costs.
            plain_as_exp_batch.push(plain_batches((be / bp * capacity as f64) as u64, None));
            plain_huge_batch.push(plain_batches(capacity, Some(true)));
            let expiring_batches = |huge: bool| {
                let e = expiring_pages(capacity, huge);
                per_call(&mut || {
                    black_box(batch_loop(&e, &strs));
                })
            };
            exp_batch.push(expiring_batches(true));
            exp_small_batch.push(expiring_batches(false));
            clock.push(per_call(&mut || {
                for _ in 0..links.len() {
                    black_box(SystemTime::now());
                }
            }));
        }
        let (p, e, a) = (median(plain), median(exp), median(exp_at));
        let (pb, eb, c) = (median(plain_batch), median(exp_batch), median(clock));
        let (fl, fc, pb2) = (median(floor), median(coarse), median(plain2_batch));
        let (pbe, pe, paf) = (
            median(plain_as_exp_batch),
            median(plain_as_exp),
            median(at_floor),
        );
        let (pbh, ebs) = (median(plain_huge_batch), median(exp_small_batch));
        let [bare_plain, bare_exp, chain_plain, chain_exp, decide_plain, decide_exp] =
            std::array::from_fn(|i| median(bare.iter().map(|b| b[i]).collect()));
        let b2 = BloomFilter::with_capacity(2 * capacity, 0.01)
            .unwrap()
            .memory_bytes() as f64
            / capacity as f64;
        println!(
            "| {capacity} | {p:.1} | {e:.1} | {a:.1} | {:.2} | {:.2} | {pe:.1} (`_at` ×{:.2}); {paf:.1} (`_at` ×{:.2}) | {bare_plain:.1}, {bare_exp:.1} (×{:.2} of plain); chained {chain_plain:.1}, {chain_exp:.1} (×{:.2}); deciding {decide_plain:.1}, {decide_exp:.1} (×{:.2}) | {pb:.1} | {eb:.1} | {:.2} | {pb2:.1} (×{:.2}) | {pbe:.1} (×{:.2}) | {pbh:.1} (expiring ×{:.2}) | {ebs:.1} (×{:.2}) | {c:.1} | {fl:.1} (×{:.2}) | {fc:.1} (×{:.2}) | {bp:.2} | {b2:.2} | {be:.2} |",
            e / p,
            a / p,
            a / pe,
            a / paf,
            bare_exp / p,
            chain_exp / p,
            decide_exp / p,
            eb / pb,
            pb2 / pb,
            pbe / pb,
            eb / pbh,
            ebs / pb,
            fl / p,
            fc / p,
        );
    }
    coarse_clock_lag();
    one_line_fingerprint_bound();
    apbf_rows(&capacities, reps, crawl);
}

/// Whether each URL of `links` is its first sighting (a new key).
fn first_sightings(links: &[String]) -> Vec<bool> {
    let mut seen = std::collections::HashSet::new();
    links.iter().map(|u| seen.insert(u.as_str())).collect()
}

/// [`bare_access`]: each call free to overlap the next (it knows its answer: no branch on
/// what it reads).
const FREE: u8 = 0;
/// [`bare_access`]: each call's line also depends on the word the call before read, so that
/// no call's miss overlaps another's (one miss at a time).
const CHAINED: u8 = 1;
/// [`bare_access`]: the least filter, deciding from its read: one bit loaded, set with
/// `fetch_or` if it was clear, the answer whether it was (a branch on the word, as a
/// filter's); free to overlap the next call.
const DECIDING: u8 = 2;

/// ns per URL of one call's memory alone, one call at a time, in `bytes` allocated
/// as a filter's: the key hashed as the filters hash it, then one word of its line, loaded
/// for a repeat and `fetch_or`ed for a new key (no mask; `MODE` [`FREE`], [`CHAINED`]), or
/// one bit of it tested and set if clear ([`DECIDING`]).
fn bare_access<const MODE: u8>(links: &[String], new: &[bool], bytes: f64) -> f64 {
    let lines = (bytes / 64.0) as usize;
    let arr = Lines::new(lines, true).expect("allocation");
    for i in (0..lines).step_by(64) {
        arr.fetch_or(i, 0, 1); // every page touched, as in a filled filter
    }
    let hasher = BloomFilter::with_capacity(1000, 0.01).unwrap();
    let t = Instant::now();
    let mut acc = 0u64;
    for (u, &is_new) in links.iter().zip(new) {
        let mut h = hasher.key_hash(u.as_str()).to_bits();
        if MODE == CHAINED {
            h ^= acc & 1; // the previous call's word, before this call's line is known
        }
        let (i, w, bit) = (
            ((h as u128 * lines as u128) >> 64) as usize,
            (h & 7) as usize,
            1 << ((h >> 32) & 63), // not the line's bits: a filter's bit of any key
        );
        acc ^= if MODE == DECIDING {
            u64::from(arr.load(i, w) & bit == 0 && arr.fetch_or(i, w, bit) & bit == 0)
        } else if is_new {
            arr.fetch_or(i, w, bit)
        } else {
            arr.load(i, w)
        };
    }
    black_box(acc);
    t.elapsed().as_nanos() as f64 / links.len() as f64
}

/// The stream of a run: `2 · capacity` URLs with 50% repeats, or a crawl's links.
fn links_of(capacity: u64, crawl: bool) -> Vec<String> {
    let (ids, _) = if crawl {
        crawl_stream((capacity as f64 / 0.03) as usize, 0.03, 42)
    } else {
        dup_stream(2 * capacity as usize, 0.5, 42)
    };
    ids.iter().map(|&i| url(i)).collect()
}

/// The plain filter at 1% in about `bytes` (sized for proportionally more keys than
/// `capacity`, the plain filter's bytes per key being the same at every size).
fn plain_in_bytes(capacity: u64, bytes: usize) -> BloomFilter {
    let one = BloomFilter::with_capacity(capacity, 0.01).unwrap();
    let per_key = one.memory_bytes() as f64 / capacity as f64;
    BloomFilter::with_capacity((bytes as f64 / per_key) as u64, 0.01).unwrap()
}

/// The Age-Partitioned Bloom Filter (`blockbloom_bench::apbf`, its least memory at 1%)
/// beside the expiring and the plain filter: bits per key of the window, its rate measured
/// at its worst moment (steady arrival, the ring about to turn), and ns per call on the
/// stream (`insert_if_absent`; the expiring filter's `_at`, no clock) and per query of
/// 10^6 members and non-members, one thread, medians of `reps`.
fn apbf_rows(capacities: &[u64], reps: usize, crawl: bool) {
    println!("\nthe Age-Partitioned Bloom Filter (APBF), 1%, one thread, ns per call:\n");
    println!("| capacity | APBF k, l | bits/key APBF | expiring | plain | APBF rate at its worst moment | expiring rate at its worst moment (estimated) | `insert_if_absent` APBF | expiring `_at` | plain | APBF / expiring | `contains` member APBF | expiring | non-member APBF | expiring | APBF / expiring (members, non-members) |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut equal_memory = Vec::new();
    for &capacity in capacities {
        let links = links_of(capacity, crawl);
        let probes: Vec<String> = (0..1_000_000)
            .map(|i| format!("https://absent.example/{i}"))
            .collect();
        let members: Vec<&String> = links.iter().rev().take(1_000_000).collect();
        let per_call = |n: usize, f: &mut dyn FnMut()| {
            let t = Instant::now();
            f();
            t.elapsed().as_nanos() as f64 / n as f64
        };
        let t = SystemTime::now();
        let (mut ai, mut ei, mut pi) = (vec![], vec![], vec![]);
        let (mut am, mut em, mut an, mut en) = (vec![], vec![], vec![], vec![]);
        // The APBF given the expiring filter's bytes, and the plain filter's member query
        // in those bytes (one line's cache miss: the floor of a one-line query).
        let (mut qi, mut qm, mut qn, mut pm) = (vec![], vec![], vec![], vec![]);
        let ours_bytes = expiring(capacity).memory_bytes();
        for _ in 0..reps {
            let a = Apbf::new(capacity, 0.01);
            ai.push(per_call(links.len(), &mut || {
                black_box(links.iter().filter(|u| a.insert_if_absent(u)).count());
            }));
            am.push(per_call(members.len(), &mut || {
                black_box(members.iter().filter(|u| a.contains(u)).count());
            }));
            an.push(per_call(probes.len(), &mut || {
                black_box(probes.iter().filter(|u| a.contains(u)).count());
            }));
            let e = expiring(capacity);
            ei.push(per_call(links.len(), &mut || {
                black_box(expiring_at_loop(&e, &links, t));
            }));
            em.push(per_call(members.len(), &mut || {
                black_box(
                    members
                        .iter()
                        .filter(|u| e.contains_at(u.as_str(), t))
                        .count(),
                );
            }));
            en.push(per_call(probes.len(), &mut || {
                black_box(
                    probes
                        .iter()
                        .filter(|u| e.contains_at(u.as_str(), t))
                        .count(),
                );
            }));
            let p = BloomFilter::with_capacity(capacity, 0.01).unwrap();
            pi.push(per_call(links.len(), &mut || {
                black_box(plain_loop(&p, &links));
            }));
            let q = Apbf::with_bytes(capacity, 0.01, ours_bytes);
            qi.push(per_call(links.len(), &mut || {
                black_box(links.iter().filter(|u| q.insert_if_absent(u)).count());
            }));
            qm.push(per_call(members.len(), &mut || {
                black_box(members.iter().filter(|u| q.contains(u)).count());
            }));
            qn.push(per_call(probes.len(), &mut || {
                black_box(probes.iter().filter(|u| q.contains(u)).count());
            }));
            let same = plain_in_bytes(capacity, ours_bytes);
            plain_loop(&same, &links);
            pm.push(per_call(members.len(), &mut || {
                black_box(members.iter().filter(|u| same.contains(u.as_str())).count());
            }));
        }
        // The worst moment: four windows of steady arrival, then the generation's last key.
        let a = Apbf::new(capacity, 0.01);
        let (k, l) = a.params();
        let g = a.window() / l;
        (0..4 * a.window() + g - 1).for_each(|i| a.insert(&format!("https://in.example/{i}")));
        let rate = probes.iter().filter(|u| a.contains(u)).count() as f64 / probes.len() as f64;
        let (ours, ours_estimated) = worst_moment_rate(capacity, &probes);
        let bits = |bytes: usize| bytes as f64 * 8.0 / capacity as f64;
        let (ai, ei, pi) = (median(ai), median(ei), median(pi));
        let (am, em, an, en) = (median(am), median(em), median(an), median(en));
        println!(
            "| {capacity} | {k}, {l} | {:.1} | {:.1} | {:.1} | {:.3}% | {:.3}% ({:.3}%) | {ai:.1} | {ei:.1} | {pi:.1} | ×{:.2} | {am:.1} | {em:.1} | {an:.1} | {en:.1} | ×{:.2}, ×{:.2} |",
            bits(a.bytes()),
            bits(expiring(capacity).memory_bytes()),
            bits(BloomFilter::with_capacity(capacity, 0.01).unwrap().memory_bytes()),
            100.0 * rate,
            100.0 * ours,
            100.0 * ours_estimated,
            ai / ei,
            am / em,
            an / en,
        );
        let q = Apbf::with_bytes(capacity, 0.01, ours_bytes);
        (0..4 * q.window() + g - 1).for_each(|i| q.insert(&format!("https://in.example/{i}")));
        let q_rate = probes.iter().filter(|u| q.contains(u)).count() as f64 / probes.len() as f64;
        let (qi, qm, qn, pm) = (median(qi), median(qm), median(qn), median(pm));
        equal_memory.push(format!(
            "| {capacity} | {:.1} | {:.3}% | {qi:.1} ×{:.2} | {qm:.1} ×{:.2} | {qn:.1} ×{:.2} | {pm:.1} (expiring ×{:.2}) |",
            bits(q.bytes()),
            100.0 * q_rate,
            qi / ei,
            qm / em,
            qn / en,
            em / pm,
        ));
    }
    println!("\nthe APBF given the expiring filter's bytes (its rate lower than 1%), ns per call and APBF / expiring; and the plain filter's member `contains` in those bytes, the floor of a one-line query:\n");
    println!("| capacity | bits/key APBF | its rate at its worst moment | `insert_if_absent` | `contains` member | non-member | plain `contains` member, expiring's bytes |");
    println!("|---|---|---|---|---|---|---|");
    for row in equal_memory {
        println!("{row}");
    }
}

/// The expiring filter's rate at its worst moment for a steady arrival, measured with
/// `probes` and estimated: `capacity` keys per window, evenly spaced, for four epochs (one
/// for each plane), probed at the last nanosecond of the fourth.
fn worst_moment_rate(capacity: u64, probes: &[String]) -> (f64, f64) {
    let e = expiring(capacity);
    let (w, epoch) = (e.window(), e.epoch());
    let past = SystemTime::now() - 3 * e.expire_after();
    let start = std::time::UNIX_EPOCH + w.start_of(w.epoch_of(past));
    let end = start + 4 * epoch;
    let step = e.expire_after().as_nanos() as f64 / capacity as f64;
    let mut i = 0u64;
    loop {
        let at = start + Duration::from_nanos((i as f64 * step) as u64);
        if at >= end {
            break;
        }
        e.insert_at(&format!("https://in.example/{i}"), at);
        i += 1;
    }
    let last = end - Duration::from_nanos(1);
    let fp = probes
        .iter()
        .filter(|u| e.contains_at(u.as_str(), last))
        .count();
    (fp as f64 / probes.len() as f64, e.estimated_fpr_at(last))
}

/// The coarse clock's resolution and how far it lags the wall clock, over 10^6 paired reads.
fn coarse_clock_lag() {
    let Some(res) = coarse_clock_resolution() else {
        return;
    };
    let (mut max, mut sum, n) = (0u64, 0u64, 1_000_000u64);
    for _ in 0..n {
        let c = coarse_clock_nanos().expect("there a moment ago");
        let wall = SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_nanos() as u64;
        let lag = wall.saturating_sub(c);
        max = max.max(lag);
        sum += lag;
    }
    println!(
        "\ncoarse clock: resolution {:.1} ms; behind the wall clock by {:.2} ms on average, {:.2} ms at most, over {n} paired reads",
        res as f64 / 1e6,
        sum as f64 / n as f64 / 1e6,
        max as f64 / 1e6
    );
}

/// The least memory of a one-line filter that stores a fingerprint and a generation tag
/// per key (the family that spends the fewest bits on ages), its fingerprints quotiented as
/// in a pocket dictionary: a line is `Q` buckets, a header of `Q + c` bits (each bucket's
/// count in unary) and `c` entries of a remainder (`r` bits) and a tag. With `λ` keys per
/// line on average, a query compares `λ / Q` remainders (the rate `λ / Q · 2^-r ≤ 1%`), and
/// the lines drawing more than `c` keys (Poisson) need a second line. Printed: the least
/// bits per key of the window over `Q` and `r`, for tags of 3 bits (time-ended
/// generations: the live ones and those ahead fit in 8 values) and 4 (generations also
/// ended by count, up to twice as many live), at the steady rate's `1.25 × capacity` live
/// keys and at guarantee 3's `2 × capacity`.
fn one_line_fingerprint_bound() {
    let tail = |lam: f64, n: u32| -> f64 {
        // P(Poisson(lam) > n)
        let (mut cdf, mut term) = (0.0, (-lam).exp());
        for i in 0..=n {
            cdf += term;
            term *= lam / f64::from(i + 1);
        }
        1.0 - cdf
    };
    println!("\none line of quotiented fingerprints with generation tags, 1%:\n");
    println!("| tag bits | lines overflowing | buckets `Q` | remainder bits | entries per line | keys per line | bits per key of the window, 1.25 × capacity live | 2 × capacity live |");
    println!("|---|---|---|---|---|---|---|---|");
    for tag in [3u32, 4] {
        for overflow in [1e-2, 1e-3] {
            // The densest line (most keys per line) over every Q and r.
            let mut best: Option<(f64, u32, u32, u32)> = None;
            for q in (8..=128).step_by(4) {
                for r in 3..16 {
                    let entries = (512 - q) / (1 + r + tag);
                    let lam = (10..=1000).rev().map(|l| f64::from(l) / 10.0).find(|&lam| {
                        lam / f64::from(q) * 0.5f64.powi(r as i32) <= 0.01
                            && tail(lam, entries) <= overflow
                    });
                    if let Some(lam) = lam {
                        if best.is_none_or(|b| lam > b.0) {
                            best = Some((lam, q, r, entries));
                        }
                    }
                }
            }
            if let Some((lam, q, r, entries)) = best {
                println!(
                    "| {tag} | {overflow} | {q} | {r} | {entries} | {lam:.1} | {:.1} | {:.1} |",
                    1.25 * 512.0 / lam,
                    2.0 * 512.0 / lam
                );
            }
        }
    }
}
