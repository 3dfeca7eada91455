//! Redis memory of a filter against its bits, read with `MEMORY USAGE` from real servers:
//! shards are created at their full length in one allocation, sized to fill the
//! allocator's size classes, so a filter's keys take about its bits from the first insert
//! on, on a single server and on a cluster.

mod common;

use blockbloom_redis::RedisBloomFilter;
use blockbloom_workload::{crawl_stream, url, urls};
use common::Server;

/// `MEMORY USAGE` of the filter's keys (its parameter hash and every shard), each asked of
/// the node that holds it.
fn memory_usage(nodes: &[Server], f: &RedisBloomFilter) -> u64 {
    let name = f.name();
    let keys = std::iter::once(format!("{{{name}}}.meta"))
        .chain((0..f.num_shards()).map(|i| format!("{{{name}.{i}}}.bits")));
    keys.map(|key| {
        let found = nodes.iter().find_map(|s| {
            redis::cmd("MEMORY")
                .arg("USAGE")
                .arg(&key)
                .query::<Option<u64>>(&mut s.conn())
                .ok()
                .flatten()
        });
        found.unwrap_or_else(|| panic!("{key} is on no node"))
    })
    .sum()
}

/// The filter's bits, in bytes.
fn bit_bytes(f: &RedisBloomFilter) -> u64 {
    f.num_blocks() * 64
}

/// Fills `f` with `keys` in batches of 10,000 and checks the memory ratio before and after.
fn check(nodes: &[Server], mut f: RedisBloomFilter, keys: &[String], what: &str) {
    let bits = bit_bytes(&f);
    let before = memory_usage(nodes, &f);
    for chunk in keys.chunks(10_000) {
        f.insert_if_absent_many(chunk).unwrap();
    }
    let after = memory_usage(nodes, &f);
    eprintln!(
        "{what}: {bits} bytes of bits in {} shards; MEMORY USAGE {before} after create \
         ({:.3}x), {after} after {} keys ({:.3}x)",
        f.num_shards(),
        before as f64 / bits as f64,
        keys.len(),
        after as f64 / bits as f64
    );
    assert!(
        before as f64 <= 1.1 * bits as f64,
        "{what}: {before} for {bits}"
    );
    assert!(
        after as f64 <= 1.1 * bits as f64,
        "{what}: {after} for {bits}"
    );
    assert_eq!(before, after, "{what}: memory grew with the inserts");
}

/// One server: a crawl stream's filter (40,000 distinct URLs at 1%: 776 blocks, the size
/// measured at 2.3x before) and 10^6 distinct URLs at 1%.
#[test]
fn a_filter_takes_its_bits_in_redis_memory() {
    if !common::available() {
        return;
    }
    let s = Server::start();
    let u = s.url();
    let (stream, distinct) = crawl_stream(300_000, 0.03, 5);
    let crawl = RedisBloomFilter::create(&u, "crawl", 40_000, 0.01).unwrap();
    assert!(distinct < 40_000);
    check(
        std::slice::from_ref(&s),
        crawl,
        &stream.iter().map(|&i| url(i)).collect::<Vec<_>>(),
        "crawl stream",
    );
    let big = RedisBloomFilter::create(&u, "big", 1_000_000, 0.01).unwrap();
    check(
        std::slice::from_ref(&s),
        big,
        &urls(0, 1_000_000),
        "10^6 URLs",
    );
}

/// A 3-node cluster, the filter cut into shards of at most 64 KiB spread over the nodes.
#[test]
fn a_filter_on_a_cluster_takes_its_bits_in_redis_memory() {
    if !common::available() {
        return;
    }
    let nodes = common::cluster(None);
    let f = RedisBloomFilter::builder(&nodes[0].url(), "spread")
        .capacity(200_000)
        .fpr(0.01)
        .shard_bytes(64 << 10)
        .cluster()
        .create()
        .unwrap();
    assert!(f.num_shards() >= 4);
    check(&nodes, f, &urls(0, 200_000), "cluster, 64 KiB shards");
}
