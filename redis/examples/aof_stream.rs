//! AOF bytes per distinct line per pass of a link stream read from a file (one URL a line),
//! offered to a fresh filter in batches, three passes: what a crawler fleet re-reading its
//! frontier adds to the append-only file.
//!
//! ```text
//! redis-server --port 6391 --save "" --appendonly yes --appendfsync everysec &
//! cargo run --release -p blockbloom-redis --example aof_stream -- redis://127.0.0.1:6391/ links.txt [batch]
//! ```

use std::collections::HashSet;

use blockbloom_redis::RedisBloomFilter;

fn aof_size(c: &mut redis::Connection) -> u64 {
    let text: String = redis::cmd("INFO").arg("persistence").query(c).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("aof_current_size:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let server = args.next().expect("a redis:// URL");
    let path = args.next().expect("a file of lines");
    let batch: usize = args
        .next()
        .map_or(1000, |b| b.parse().expect("a batch size"));
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let distinct = lines.iter().collect::<HashSet<_>>().len();
    let mut c = redis::Client::open(server.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
    let mut f = RedisBloomFilter::create(&server, "aof-stream", distinct as u64, 0.01).unwrap();
    let _: () = redis::cmd("BGREWRITEAOF").query(&mut c).unwrap();
    std::thread::sleep(std::time::Duration::from_secs(2));
    println!(
        "{} lines, {distinct} distinct, batches of {batch}",
        lines.len()
    );
    for pass in 1..=3 {
        let before = aof_size(&mut c);
        let mut new = 0;
        for chunk in lines.chunks(batch) {
            new += f
                .insert_if_absent_many(chunk)
                .unwrap()
                .iter()
                .filter(|&&x| x)
                .count();
        }
        std::thread::sleep(std::time::Duration::from_millis(1500)); // everysec
        let bytes = aof_size(&mut c) - before;
        println!(
            "pass {pass}: {new} new, {bytes} AOF bytes, {:.1} per distinct line",
            bytes as f64 / distinct as f64
        );
    }
}
