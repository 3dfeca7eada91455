//! What an expiring filter costs a Redis server with the module loaded: the module's
//! expiring type (the local filter's planes, `BB.SHARD.X*`) against the Functions'
//! generations (`use_module(false)`, two steps) and the plain filter through the module.
//! One client thread, batches of 1,000 URLs, a 30-day window, 1%: the server's CPU per URL
//! (`used_cpu_sys + used_cpu_user` from `INFO cpu`), URLs/s, and the filter's memory
//! (`MEMORY USAGE` of every key it made) per key of capacity, on a stream with 50% repeats
//! and on a crawl's links (97% repeats). The batches' times are spread over the last window
//! (`insert_if_absent_many_at`), so that the expiring filters change epochs as in a
//! window's use and the generations live at the end are a steady window's. Where the server
//! also has RedisBloom loaded, its `BF.MADD` (a filter that never forgets) is measured
//! beside them.
//!
//! ```text
//! redis-server --port 6392 --save "" --appendonly no \
//!     --loadmodule target/release/libblockbloom_redis_module.so [--loadmodule …/redisbloom.so] &
//! cargo run --release -p blockbloom-redis --example expiring_cost -- redis://127.0.0.1:6392/ [CAPACITY]
//! ```

use std::time::{Duration, Instant, SystemTime};

use blockbloom_redis::{RedisBloomFilter, RedisExpiringBloomFilter};
use blockbloom_workload::{crawl_stream, dup_stream, url};

/// The server's CPU seconds so far.
fn server_cpu(c: &mut redis::Connection) -> f64 {
    let info: String = redis::cmd("INFO").arg("cpu").query(c).unwrap();
    let field = |name: &str| -> f64 {
        info.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0.0)
    };
    field("used_cpu_sys:") + field("used_cpu_user:")
}

/// Bytes of every key in the database (`MEMORY USAGE … SAMPLES 0`).
fn memory(c: &mut redis::Connection) -> u64 {
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(c).unwrap();
    keys.iter()
        .map(|k| {
            redis::cmd("MEMORY")
                .arg("USAGE")
                .arg(k)
                .arg("SAMPLES")
                .arg(0)
                .query::<Option<u64>>(c)
                .unwrap()
                .unwrap_or(0)
        })
        .sum()
}

/// A filter's batch insert at a time.
type Insert = dyn FnMut(&[String], SystemTime);

/// The filters compared.
#[derive(Clone, Copy, PartialEq)]
enum Way {
    RedisBloom,
    Plain,
    Planes,
    Generations,
}

fn main() {
    let mut args = std::env::args().skip(1);
    let url_arg = args
        .next()
        .unwrap_or_else(|| "redis://127.0.0.1:6392/".into());
    let capacity: u64 = args
        .next()
        .map_or(1_000_000, |a| a.parse().expect("CAPACITY"));
    let only = args.next(); // one filter alone (to profile the server)
    let mut c = redis::Client::open(url_arg.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let day = Duration::from_secs(86_400);
    let streams = [
        ("50% repeats", dup_stream(2 * capacity as usize, 0.5, 7).0),
        (
            "crawl, 97% repeats",
            crawl_stream(2 * capacity as usize, 0.03, 7).0,
        ),
    ];
    println!("capacity {capacity} per 30-day window, 1%, batches of 1,000, one client\n");
    println!("| stream | filter | server CPU per URL | URLs/s | memory per key of capacity |");
    println!("|---|---|---:|---:|---:|");
    for (name, ids) in &streams {
        let keys: Vec<String> = ids.iter().map(|&i| url(i)).collect();
        for (way, label) in [
            (Way::RedisBloom, "RedisBloom `BF.MADD` (never forgets)"),
            (Way::Plain, "plain, module"),
            (Way::Planes, "expiring, module (planes)"),
            (Way::Generations, "expiring, Functions (generations)"),
        ] {
            if only.as_ref().is_some_and(|o| !label.contains(o.as_str())) {
                continue;
            }
            let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
            let b = RedisBloomFilter::builder(&url_arg, "cost")
                .capacity(capacity)
                .fpr(0.01)
                .use_module(way != Way::Generations);
            let mut insert: Box<Insert> = match way {
                Way::RedisBloom => {
                    let reserved: redis::RedisResult<()> = redis::cmd("BF.RESERVE")
                        .arg("cost")
                        .arg(0.01)
                        .arg(capacity)
                        .query(&mut c);
                    if reserved.is_err() {
                        continue; // no RedisBloom here
                    }
                    let mut bf = redis::Client::open(url_arg.as_str())
                        .unwrap()
                        .get_connection()
                        .unwrap();
                    Box::new(move |k, _| {
                        let _: Vec<i64> = redis::cmd("BF.MADD")
                            .arg("cost")
                            .arg(k)
                            .query(&mut bf)
                            .unwrap();
                    })
                }
                Way::Plain => {
                    let mut f = b.create().unwrap();
                    assert!(f.uses_module(), "load the module into the server");
                    Box::new(move |k, _| drop(f.insert_if_absent_many(k).unwrap()))
                }
                _ => {
                    let mut f = b.expire_after(30 * day).create_expiring().unwrap();
                    assert_eq!(f.uses_module(), way == Way::Planes);
                    Box::new(move |k, t| drop(f.insert_if_absent_many_at(k, t).unwrap()))
                }
            };
            let batches = keys.len().div_ceil(1000) as u32;
            let start = SystemTime::now() - 30 * day;
            let cpu = server_cpu(&mut c);
            let t = Instant::now();
            for (i, chunk) in keys.chunks(1000).enumerate() {
                insert(chunk, start + 30 * day / batches * i as u32);
            }
            let secs = t.elapsed().as_secs_f64();
            let cpu = server_cpu(&mut c) - cpu;
            let bytes = memory(&mut c);
            println!(
                "| {name} | {label} | {:.3} µs | {:.0} | {:.2} bytes ({:.1} bits) |",
                cpu * 1e6 / keys.len() as f64,
                keys.len() as f64 / secs,
                bytes as f64 / capacity as f64,
                bytes as f64 * 8.0 / capacity as f64
            );
        }
    }
    let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
    let _ = RedisExpiringBloomFilter::delete(&url_arg, "cost");
}
