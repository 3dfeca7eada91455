//! One call at a time, one thread: `insert_if_absent` against fastbloom's atomic filter, and
//! the keyed probe against a one-shot XXH3-64 of the same bytes — the per-call figures of
//! the hot path, on the URL stream of the benchmark report (2·10^6 URLs of ~60 bytes, 50%
//! repeats, in stream order) into a filter for 10^6 keys at 1%.
//!
//! ```sh
//! cargo run --release -p blockbloom-bench --example per_call [-- REPS [CAPACITY]]
//! ```
//!
//! Every measurement runs REPS times (default 7), round-robin, and the medians are printed.
//!
//! Then the same calls split by answer: a filter holding CAPACITY/2 keys gets CAPACITY/2
//! calls that are all repeats (keys drawn at random from those), or CAPACITY/2 calls that are
//! all new keys (filling it to capacity) — where the time of the mixed stream goes.

use std::hint::black_box;
use std::time::Instant;

use blockbloom::BloomFilter;
use blockbloom_workload::{dup_stream, url, SplitMix64};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// A filter for `capacity` keys at 1% with blocks of `bits` bits.
fn filter(capacity: u64, bits: u32) -> BloomFilter {
    BloomFilter::builder()
        .capacity(capacity)
        .fpr(0.01)
        .block_bits(bits)
        .build()
        .expect("valid parameters")
}

/// The loops apart from `main`, so that a profiler names them.
#[inline(never)]
fn ours_loop(f: &BloomFilter, links: &[String]) -> usize {
    links
        .iter()
        .filter(|u| f.insert_if_absent(u.as_str()))
        .count()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let reps: usize = args.next().map_or(7, |a| a.parse().expect("REPS"));
    let capacity: u64 = args
        .next()
        .map_or(1_000_000, |a| a.parse().expect("CAPACITY"));
    let (ids, distinct) = dup_stream(2 * capacity as usize, 0.5, 42);
    let links: Vec<String> = ids.iter().map(|&i| url(i)).collect();
    let n = links.len() as f64;
    let mean_len = links.iter().map(String::len).sum::<usize>() as f64 / n;
    println!(
        "{} URLs ({distinct} distinct, {mean_len:.0} bytes on average), filters for {capacity} keys at 1%, medians of {reps} round-robin runs\n",
        links.len()
    );
    let per_call = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        f();
        t.elapsed().as_nanos() as f64 / n
    };
    let mut ours = Vec::new();
    let mut smaller: Vec<Vec<f64>> = vec![Vec::new(); 3];
    let mut fast = Vec::new();
    let mut fast_oneshot = Vec::new();
    let mut probe = Vec::new();
    let mut plain = Vec::new();
    let mut keyed = Vec::new();
    let mut xxh = Vec::new();
    let (mut won_ours, mut won_fast) = (0, 0);
    for _ in 0..reps {
        let f = BloomFilter::with_capacity(capacity, 0.01).unwrap();
        ours.push(per_call(&mut || won_ours = ours_loop(&f, &links)));
        for (times, bits) in smaller.iter_mut().zip([64, 128, 256]) {
            let f = filter(capacity, bits);
            times.push(per_call(&mut || {
                black_box(ours_loop(&f, &links));
            }));
        }
        let g = fastbloom::AtomicBloomFilter::with_false_pos(0.01)
            .hasher(xxhash_rust::xxh3::Xxh3Builder::new())
            .expected_items(capacity as usize);
        fast.push(per_call(&mut || {
            won_fast = links.iter().filter(|u| !g.insert(u.as_str())).count();
        }));
        let g = fastbloom::AtomicBloomFilter::with_false_pos(0.01)
            .hasher(xxhash_rust::xxh3::Xxh3Builder::new())
            .expected_items(capacity as usize);
        fast_oneshot.push(per_call(&mut || {
            for u in &links {
                black_box(g.insert_hash(xxhash_rust::xxh3::xxh3_64(u.as_bytes())));
            }
        }));
        let f2 = BloomFilter::with_capacity(capacity, 0.01).unwrap();
        plain.push(per_call(&mut || {
            for u in &links {
                f2.insert(u.as_str());
            }
        }));
        probe.push(per_call(&mut || {
            for u in &links {
                black_box(f.probe(u.as_str()));
            }
        }));
        keyed.push(per_call(&mut || {
            for u in &links {
                black_box(f.key_hash(u.as_str()));
            }
        }));
        xxh.push(per_call(&mut || {
            for u in &links {
                black_box(xxhash_rust::xxh3::xxh3_64(u.as_bytes()));
            }
        }));
    }
    let (o, fb, p, x) = (median(ours), median(fast), median(probe), median(xxh));
    let fo = median(fast_oneshot);
    let kh = median(keyed);
    println!("| | ns per call |\n|---|---:|");
    println!("| blockbloom `insert_if_absent` (512-bit blocks, the default) | {o:.1} |");
    let small: Vec<f64> = smaller.into_iter().map(median).collect();
    for (t, bits) in small.iter().zip([64, 128, 256]) {
        println!("| blockbloom `insert_if_absent`, {bits}-bit blocks | {t:.1} |");
    }
    println!(
        "| blockbloom `insert` (512-bit blocks; sets the bits, no answer) | {:.1} |",
        median(plain)
    );
    println!("| fastbloom `AtomicBloomFilter::insert` (xxh3) | {fb:.1} |");
    println!("| fastbloom `insert_hash` of a one-shot `xxh3_64` | {fo:.1} |");
    println!("| blockbloom `probe` (hash, block, mask) | {p:.1} |");
    println!("| blockbloom `key_hash` (the keyed hash alone) | {kh:.1} |");
    println!("| one-shot `xxh3_64` of the same bytes | {x:.1} |");
    println!(
        "\ninsert_if_absent: fastbloom / blockbloom = x{:.2}, fastbloom fed a one-shot xxh3_64 / blockbloom = x{:.2} (goal >= 1.25)",
        fb / o,
        fo / o
    );
    println!("probe / xxh3_64 = x{:.2} (goal <= 1.5)", p / x);
    println!(
        "64-bit blocks: fastbloom / blockbloom = x{:.2}, fed a one-shot xxh3_64 x{:.2} (goal >= 2)",
        fb / small[0],
        fo / small[0]
    );
    println!("new keys seen: blockbloom {won_ours}, fastbloom {won_fast} (of {distinct} distinct)");
    split_by_answer(reps, capacity);
}

/// The calls of a filter half full, split by answer: only repeats, or only new keys.
fn split_by_answer(reps: usize, capacity: u64) {
    let half = capacity / 2;
    let held: Vec<String> = (0..half).map(url).collect();
    let mut rng = SplitMix64::new(7);
    let repeats: Vec<String> = (0..half)
        .map(|_| held[rng.below(half) as usize].clone())
        .collect();
    let fresh: Vec<String> = (half..capacity).map(url).collect();
    let n = half as f64;
    let xxh = |u: &String| xxhash_rust::xxh3::xxh3_64(u.as_bytes());
    // [stream][filter]: filters 512-bit blocks, 64-bit blocks, fastbloom fed a one-shot hash.
    let mut times: [[Vec<f64>; 3]; 2] = Default::default();
    let mut answers = [[0usize; 3]; 2];
    for _ in 0..reps {
        for (s, stream) in [&repeats, &fresh].into_iter().enumerate() {
            for (j, bits) in [512, 64].into_iter().enumerate() {
                let f = filter(capacity, bits);
                for u in &held {
                    f.insert(u.as_str());
                }
                let t = Instant::now();
                answers[s][j] = ours_loop(&f, stream);
                times[s][j].push(t.elapsed().as_nanos() as f64 / n);
            }
            let g = fastbloom::AtomicBloomFilter::with_false_pos(0.01)
                .hasher(xxhash_rust::xxh3::Xxh3Builder::new())
                .expected_items(capacity as usize);
            for u in &held {
                g.insert_hash(xxh(u));
            }
            let t = Instant::now();
            answers[s][2] = stream.iter().filter(|u| !g.insert_hash(xxh(u))).count();
            times[s][2].push(t.elapsed().as_nanos() as f64 / n);
        }
    }
    let [rep, new] = times.map(|row| row.map(median));
    println!(
        "\nThe same calls split by answer: a filter holding {half} keys, {half} calls of each kind\n"
    );
    println!("| | only repeats | only new keys |\n|---|---:|---:|");
    for (j, name) in [
        "blockbloom, 512-bit blocks",
        "blockbloom, 64-bit blocks",
        "fastbloom fed a one-shot `xxh3_64`",
    ]
    .into_iter()
    .enumerate()
    {
        println!("| {name} | {:.1} | {:.1} |", rep[j], new[j]);
    }
    println!(
        "\nfastbloom one-shot / blockbloom 512: repeats x{:.2}, new keys x{:.2}; 64-bit: x{:.2}, x{:.2}",
        rep[2] / rep[0],
        new[2] / new[0],
        rep[2] / rep[1],
        new[2] / new[1]
    );
    println!(
        "new keys seen: 512-bit {} and 64-bit {} of {half} repeats, {} and {} of {half} new keys",
        answers[0][0], answers[0][1], answers[1][0], answers[1][1]
    );
}
