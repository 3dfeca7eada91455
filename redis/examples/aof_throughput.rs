//! URLs/s and append-only-file bytes of `insert_if_absent_many`, on a 50%-repeat stream and
//! a crawl's link stream (97% repeats), with the default two steps (read the keys' bits,
//! then set only the missing ones) and with the Lua function (`direct_bitfield(false)`),
//! for the plain filter and for the expiring one (`RedisExpiringBloomFilter`, a 30-day
//! window). Builds of blockbloom-redis before the shard headers ran the same source with
//! one `BITFIELD` setting every bit of every key as their default.
//!
//! ```text
//! redis-server --port 6391 --save "" --appendonly yes --appendfsync everysec &
//! cargo run --release -p blockbloom-redis --example aof_throughput -- redis://127.0.0.1:6391/
//! ```
//!
//! One client thread, batches of 1,000, 300,000 URLs per stream, filters sized for the
//! stream's distinct count at 1%; the database is flushed before each run and the AOF
//! rewritten, so each AOF figure is that run's growth (`aof_current_size`).

use blockbloom_redis::{RedisBloomFilter, RedisExpiringBloomFilter};
use blockbloom_workload::{crawl_stream, dup_stream, url};
use std::time::{Duration, Instant};

fn info(c: &mut redis::Connection, field: &str) -> u64 {
    let text: String = redis::cmd("INFO").arg("persistence").query(c).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// Rewrites the AOF, runs `insert` over `keys` in batches of 1,000, and prints the row.
fn measure(
    c: &mut redis::Connection,
    row: (&str, &str),
    keys: &[String],
    distinct: u64,
    mut insert: impl FnMut(&[String]),
) {
    let _: () = redis::cmd("BGREWRITEAOF").query(c).unwrap();
    while info(c, "aof_rewrite_in_progress") == 1 {
        std::thread::sleep(Duration::from_millis(50));
    }
    let before = info(c, "aof_current_size");
    let t = Instant::now();
    for chunk in keys.chunks(1000) {
        insert(chunk);
    }
    let rate = keys.len() as f64 / t.elapsed().as_secs_f64();
    let grown = info(c, "aof_current_size") - before;
    println!(
        "| {} | {} | {rate:.0} | {:.1} |",
        row.0,
        row.1,
        grown as f64 / distinct as f64
    );
}

fn main() {
    let server = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "redis://127.0.0.1:6391/".into());
    let mut c = redis::Client::open(server.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    println!("| stream | call | URLs/s | AOF bytes per distinct URL |");
    println!("|---|---|---:|---:|");
    for (label, (stream, distinct)) in [
        ("50% repeats", dup_stream(300_000, 0.5, 42)),
        ("crawl, 97% repeats", crawl_stream(300_000, 0.03, 5)),
    ] {
        let keys: Vec<String> = stream.iter().map(|&i| url(i)).collect();
        for direct in [false, true] {
            let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
            let mut f = RedisBloomFilter::builder(&server, "bench")
                .capacity(distinct)
                .fpr(0.01)
                .direct_bitfield(direct)
                .create()
                .unwrap();
            let call = if direct {
                "two steps: read, then bb_or (default)"
            } else {
                "Lua function"
            };
            measure(&mut c, (label, call), &keys, distinct, |chunk| {
                f.insert_if_absent_many(chunk).unwrap();
            });
        }
        // The expiring filter (a 30-day window: every key inside it) on the same stream.
        for direct in [false, true] {
            let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
            let mut f = RedisExpiringBloomFilter::builder(&server, "bench")
                .capacity(distinct)
                .fpr(0.01)
                .expire_after(Duration::from_secs(30 * 86_400))
                .direct_bitfield(direct)
                .create_expiring()
                .unwrap();
            let call = if direct {
                "expiring, two steps: read, then bb_xset (default)"
            } else {
                "expiring, Lua function"
            };
            measure(&mut c, (label, call), &keys, distinct, |chunk| {
                f.insert_if_absent_many(chunk).unwrap();
            });
        }
    }
}
