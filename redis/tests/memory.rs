//! What a filter costs a Redis server, against real servers: memory (`MEMORY USAGE` of its
//! keys against its bits — shards are created whole, sized to the allocator's size classes
//! — on a server and a cluster), `maxmemory` (eviction refused or reported, a full server),
//! and the append-only file (bytes per distinct URL).

mod common;

use blockbloom_redis::{Error, RedisBloomFilter};
use blockbloom_workload::{crawl_stream, url};
use common::Server;
use std::time::Duration;

fn urls(ids: impl IntoIterator<Item = u64>) -> Vec<String> {
    ids.into_iter().map(url).collect()
}

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
    f.num_lines() * 64
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
        &urls(0..1_000_000),
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
    check(&nodes, f, &urls(0..200_000), "cluster, 64 KiB shards");
}

/// `allkeys-*` eviction is refused unless asked for; with it, evicted shards are reported
/// (`StateLost`), never answered as "new" in silence.
#[test]
fn eviction_is_refused_or_reported() {
    if !common::available() {
        return;
    }
    let s = Server::with_maxmemory("16mb", "allkeys-lru");
    let u = s.url();
    let b = || {
        RedisBloomFilter::builder(&u, "big")
            .capacity(20_000_000)
            .fpr(0.01)
            .shard_bytes(1 << 20)
    };
    assert!(matches!(
        b().open_or_create(),
        Err(Error::EvictionPolicy(p)) if p == "allkeys-lru"
    ));
    let mut f = b().allow_eviction(true).open_or_create().unwrap();
    // 24 MiB of shards on a 16 MiB server: filling them evicts some.
    let keys = urls(0..600_000);
    let (mut lost, mut silently_new) = (0, 0);
    for chunk in keys.chunks(10_000) {
        match f.insert_if_absent_many(chunk) {
            Ok(_) | Err(Error::StateLost { .. }) => {}
            Err(e) => panic!("{e}"),
        }
    }
    for chunk in keys.chunks(10_000) {
        match f.insert_if_absent_many(chunk) {
            Ok(v) => silently_new += v.iter().filter(|&&x| x).count(),
            Err(Error::StateLost { .. }) => lost += 1,
            Err(e) => panic!("{e}"),
        }
    }
    let evicted: u64 = redis::cmd("INFO")
        .arg("stats")
        .query::<String>(&mut s.conn())
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("evicted_keys:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    eprintln!("evicted keys {evicted}; StateLost batches {lost}; new on re-offer {silently_new}");
    assert!(evicted > 0, "the test did not make the server evict");
    assert!(lost > 0, "evictions went unreported");
    // Batches that answered: a re-offered key is new only as a false positive… or because
    // its shard was evicted and re-armed within this pass (then the pass saw StateLost).
    assert!(silently_new < keys.len() / 2);
}

/// `noeviction` at `maxmemory`. A filter's shards are allocated whole when it is created, so
/// one that does not fit is refused at create (`OOM`), leaving nothing behind. One that
/// fits keeps working once the server is full: an insert of a new key is then an
/// error (`OOM`: Redis refuses writes past `maxmemory`), never a wrong answer; every key
/// acknowledged before stays, repeats keep being answered (they write nothing), and inserts
/// work again once memory is raised.
#[test]
fn a_full_server_refuses_inserts_and_keeps_answering_repeats() {
    if !common::available() {
        return;
    }
    let s = Server::with_maxmemory("16mb", "noeviction");
    let is_oom = |e: &Error| matches!(e, Error::Redis(r) if r.code() == Some("OOM"));
    // 19 MB of bits in 64 KiB shards: does not fit.
    let big = RedisBloomFilter::builder(&s.url(), "big")
        .capacity(16_000_000)
        .fpr(0.01)
        .shard_bytes(1 << 16)
        .create();
    let e = big.expect_err("a 19 MB filter created under a 16 MB maxmemory");
    assert!(is_oom(&e), "{e}");
    let left: i64 = redis::cmd("DBSIZE").query(&mut s.conn()).unwrap();
    assert_eq!(left, 0, "a refused create left keys behind");

    let mut f = RedisBloomFilter::builder(&s.url(), "full")
        .capacity(1_000_000)
        .fpr(0.01)
        .create()
        .unwrap();
    let keys = urls(0..100_000);
    let acked = 50_000;
    let mut fresh = 0;
    for chunk in keys[..acked].chunks(5_000) {
        fresh += f
            .insert_if_absent_many(chunk)
            .unwrap()
            .iter()
            .filter(|&&x| x)
            .count();
    }
    assert!(fresh > acked * 98 / 100);
    // The server is full (other data, or a lower limit): used memory above `maxmemory`.
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg("1mb")
        .query(&mut s.conn())
        .unwrap();
    let oom = f
        .insert_if_absent_many(&keys[acked..acked + 100])
        .unwrap_err();
    assert!(is_oom(&oom), "{oom}");
    // Repeats: answered, not new, no memory needed.
    for chunk in keys[..acked].chunks(10_000) {
        let again = f
            .insert_if_absent_many(chunk)
            .expect("repeats on a full server");
        assert!(
            again.iter().all(|&x| !x),
            "an acknowledged key answered new"
        );
    }
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg("0")
        .query(&mut s.conn())
        .unwrap();
    let more = f.insert_if_absent_many(&keys[acked..]).unwrap();
    assert!(more.iter().filter(|&&x| x).count() > (keys.len() - acked) * 98 / 100);
}

/// AOF bytes on a crawl's link stream (97% repeats), three times through: both ways of
/// inserting (the two-step read then set, the one-step function) write only the bytes that
/// change, so the AOF grows with the distinct links, not with the links offered.
#[test]
fn duplicates_write_nothing_to_the_aof() {
    if !common::available() {
        return;
    }
    let s = Server::with_args(&["--save", "", "--appendonly", "yes", "--appendfsync", "no"]);
    let u = s.url();
    let (stream, distinct) = crawl_stream(300_000, 0.03, 5);
    let keys = urls(stream.iter().copied());
    let aof = |s: &Server| -> u64 {
        let dir = s.dir.join("appendonlydir");
        let files = std::fs::read_dir(&dir).map(|d| d.flatten().collect::<Vec<_>>());
        files
            .unwrap_or_default()
            .iter()
            .filter(|e| e.file_name().to_string_lossy().contains(".incr."))
            .map(|e| e.metadata().unwrap().len())
            .sum()
    };
    let mut sizes = Vec::new();
    for direct in [false, true] {
        let name = format!("aof-{direct}");
        let mut f = RedisBloomFilter::builder(&u, &name)
            .capacity(40_000)
            .fpr(0.01)
            .direct_bitfield(direct)
            .create()
            .unwrap();
        let _: () = redis::cmd("BGREWRITEAOF").query(&mut s.conn()).unwrap();
        std::thread::sleep(Duration::from_millis(1500)); // the rewrite starts a new file
        let start = aof(&s);
        for _ in 0..3 {
            for chunk in keys.chunks(1000) {
                f.insert_if_absent_many(chunk).unwrap();
            }
        }
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("appendfsync")
            .arg("always")
            .query(&mut s.conn())
            .unwrap();
        f.insert_if_absent("flush").unwrap();
        let bytes = aof(&s) - start;
        // Bits set: every 1 after the shards' 64-byte headers.
        let mut bits = 0u64;
        for i in 0..f.num_shards() {
            let n: u64 = redis::cmd("BITCOUNT")
                .arg(format!("{{{name}.{i}}}.bits"))
                .arg(64)
                .arg(-1)
                .query(&mut s.conn())
                .unwrap();
            bits += n;
        }
        eprintln!(
            "direct {direct}: {bytes} AOF bytes for {} links ({distinct} distinct, {bits} bits \
             set): {:.1} per distinct, {:.1} per bit set",
            keys.len() * 3,
            bytes as f64 / distinct as f64,
            bytes as f64 / bits as f64
        );
        sizes.push((bytes, bits));
    }
    // Only bytes that change are written — one SETRANGE of a block's changed span per new
    // key — so the AOF grows by at most 200 bytes per distinct URL over the three passes
    // (the plain BITFIELD SET of each missing bit took 275 here; writing every bit of every
    // link, 7,074).
    for (bytes, _) in sizes {
        assert!(
            bytes as f64 <= 200.0 * distinct as f64,
            "{bytes} AOF bytes for {distinct} distinct links"
        );
    }
}
