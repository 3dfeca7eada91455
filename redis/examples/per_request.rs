//! One key per call, as a Scrapy dupefilter asks: a crawl's request stream of 92,000
//! requests with 99.4% repeats (about 550 distinct URLs, like the 528-page crawl of
//! Python's docs), through `SADD` per request (Scrapy-Redis' dupefilter), the Redis filter
//! per request, and the Redis filter with an in-process front (`with_local_front`).
//!
//! ```text
//! redis-server --port 6391 --save "" &
//! cargo run --release -p blockbloom-redis --example per_request -- redis://127.0.0.1:6391/
//! ```

use blockbloom_redis::RedisBloomFilter;
use blockbloom_workload::{crawl_stream, url};
use std::time::Instant;

fn main() {
    let server = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "redis://127.0.0.1:6391/".into());
    let mut c = redis::Client::open(server.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let (stream, distinct) = crawl_stream(92_000, 0.006, 3);
    let keys: Vec<String> = stream.iter().map(|&i| url(i)).collect();
    println!(
        "{} requests, {distinct} distinct ({:.1}% repeats)\n",
        keys.len(),
        100.0 * (1.0 - distinct as f64 / keys.len() as f64)
    );
    println!("| per request | requests/s | round trips per request | new |");
    println!("|---|---:|---:|---:|");
    let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
    let t = Instant::now();
    let mut new = 0;
    for k in &keys {
        let added: i64 = redis::cmd("SADD").arg("seen").arg(k).query(&mut c).unwrap();
        new += added;
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "| SADD url | {:.0} | 1.00 | {new} |",
        keys.len() as f64 / secs
    );
    for front in [false, true] {
        let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
        let remote = RedisBloomFilter::create(&server, "seen", 1_000_000, 0.01).unwrap();
        let t = Instant::now();
        let (new, trips) = if front {
            let mut f = remote.with_local_front(100_000, 0.001).unwrap();
            let new = keys
                .iter()
                .filter(|k| f.insert_if_absent(k.as_str()).unwrap())
                .count();
            (new, f.round_trips() as f64)
        } else {
            let mut f = remote;
            let new = keys
                .iter()
                .filter(|k| f.insert_if_absent(k.as_str()).unwrap())
                .count();
            // A repeat is one read; a new key a read and a set.
            (new, (keys.len() + new) as f64)
        };
        let secs = t.elapsed().as_secs_f64();
        let label = if front {
            "RedisBloomFilter with a local front"
        } else {
            "RedisBloomFilter::insert_if_absent"
        };
        println!(
            "| {label} | {:.0} | {:.3} | {new} |",
            keys.len() as f64 / secs,
            trips / keys.len() as f64
        );
    }
}
