//! Each operation of the key path one call at a time, one thread, per block size: `insert`,
//! `contains` and `insert_if_absent` of new keys, and `probe` (hash, block, eight-word mask),
//! in a filter that fits in the caches and in one that does not. Made to compare two builds
//! (run each build's binary in turn, several times); the figures of the one-path-per-key
//! change in CHANGELOG came from it.
//!
//! ```sh
//! cargo run --release -p blockbloom-bench --example block_ops [-- REPS]
//! ```

use std::hint::black_box;
use std::time::Instant;

use blockbloom::BloomFilter;
use blockbloom_workload::url;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let reps: usize = std::env::args()
        .nth(1)
        .map_or(5, |a| a.parse().expect("REPS"));
    println!("| capacity | block bits | insert | contains | insert_if_absent | probe |");
    println!("|---:|---:|---:|---:|---:|---:|");
    for capacity in [100_000u64, 20_000_000] {
        let n = capacity as usize;
        let keys: Vec<String> = (0..n as u64).map(url).collect();
        for bits in [512, 256, 128, 64] {
            let mut t = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
            for _ in 0..reps {
                let f = BloomFilter::builder()
                    .capacity(capacity)
                    .block_bits(bits)
                    .build()
                    .expect("filter");
                let time = |op: &mut dyn FnMut()| {
                    let s = Instant::now();
                    op();
                    s.elapsed().as_nanos() as f64 / n as f64
                };
                let half = &keys[..n / 2];
                let other = &keys[n / 2..];
                t[0].push(time(&mut || half.iter().for_each(|k| f.insert(k.as_str()))));
                t[1].push(
                    time(&mut || {
                        black_box(keys.iter().filter(|k| f.contains(k.as_str())).count());
                    }) * 1.0,
                );
                t[2].push(time(&mut || {
                    black_box(
                        other
                            .iter()
                            .filter(|k| f.insert_if_absent(k.as_str()))
                            .count(),
                    );
                }));
                t[3].push(time(&mut || {
                    keys.iter().for_each(|k| {
                        black_box(f.probe(k.as_str()));
                    })
                }));
            }
            // insert and insert_if_absent ran over half the keys each
            let [i, c, a, p] = t.map(median);
            println!(
                "| {capacity} | {bits} | {:.1} | {c:.1} | {:.1} | {p:.1} |",
                2.0 * i,
                2.0 * a
            );
        }
    }
}
