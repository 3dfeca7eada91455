//! A target for instruction-level profiles of the hot path: 10^6 `insert_if_absent` calls
//! (50% duplicates, ~70-byte URLs) on a filter sized for the stream, one at a time or through
//! the batch API; `none` only builds the keys, as the baseline to subtract. `expiring`,
//! `expiring_at` and `expiring_batch` run `insert_if_absent`, `insert_if_absent_at` and
//! `insert_if_absent_many` on an [`ExpiringBloomFilter`] of a 30-day window sized for the
//! stream; `contains` and `expiring_contains` query the stream.
//!
//! ```sh
//! cargo build --release --example hot_path
//! for m in none single batch; do
//!   valgrind --tool=callgrind --branch-sim=yes --callgrind-out-file=cg.$m \
//!     target/release/examples/hot_path $m
//! done
//! callgrind_annotate cg.single | grep -E 'TOTALS|malloc'   # minus cg.none's, per 10^6 calls
//! ```

use std::time::{Duration, SystemTime};

use blockbloom::{BloomFilter, ExpiringBloomFilter};
use blockbloom_workload::{dup_stream, url};

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "single".into());
    let (ids, distinct) = dup_stream(1_000_000, 0.5, 1);
    let keys: Vec<String> = ids.iter().map(|&i| url(i)).collect();
    let f = BloomFilter::builder()
        .capacity(distinct)
        .fpr(0.01)
        .seed(1)
        .build()
        .expect("a small filter");
    let e = ExpiringBloomFilter::builder()
        .expire_after(Duration::from_secs(30 * 86_400))
        .capacity(distinct)
        .fpr(0.01)
        .seed(1)
        .build()
        .expect("a small filter");
    let mut out = vec![false; 1024];
    let won: usize = match mode.as_str() {
        "none" => 0,
        "single" => keys
            .iter()
            .filter(|k| f.insert_if_absent(k.as_str()))
            .count(),
        // contains on the same stream (on the empty filter; contains is branch-free, so
        // the instruction count does not depend on the answer).
        "contains" => keys.iter().filter(|k| f.contains(k.as_str())).count(),
        "batch" => batched(&keys, &mut out, |c, o| f.insert_if_absent_many(c, o)),
        "expiring" => keys
            .iter()
            .filter(|k| e.insert_if_absent(k.as_str()))
            .count(),
        "expiring_at" => {
            let t = SystemTime::now();
            keys.iter()
                .filter(|k| e.insert_if_absent_at(k.as_str(), t))
                .count()
        }
        "expiring_batch" => batched(&keys, &mut out, |c, o| e.insert_if_absent_many(c, o)),
        // contains_at on the same stream, after one insert (to start the newest epoch;
        // branch-free as contains).
        "expiring_contains" => {
            let t = SystemTime::now();
            e.insert_at("https://example.com/", t);
            keys.iter().filter(|k| e.contains_at(k.as_str(), t)).count()
        }
        other => {
            eprintln!(
                "usage: hot_path [none|single|batch|contains|expiring|expiring_at|expiring_batch|expiring_contains] (got {other})"
            );
            std::process::exit(2);
        }
    };
    println!(
        "{mode}: {} keys, {won} new of {distinct} distinct",
        keys.len()
    );
}

/// The keys through `many`, a batch of `out.len()` at a time; how many were new.
fn batched(
    keys: &[String],
    out: &mut [bool],
    mut many: impl FnMut(&[String], &mut [bool]),
) -> usize {
    keys.chunks(out.len())
        .map(|chunk| {
            let out = &mut out[..chunk.len()];
            many(chunk, out);
            out.iter().filter(|&&b| b).count()
        })
        .sum()
}
