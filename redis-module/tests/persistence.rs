//! What operators meet with the module loaded: `DEBUG RELOAD` and a real restart from the
//! RDB, the AOF replayed after a SIGKILL (8 bytes per new key, nothing for repeats) and
//! rewritten, a replica answering as its primary, keyspace events, `COPY`, a cluster.

mod support;

use blockbloom::BloomFilter;
use blockbloom_redis::RedisBloomFilter;
use blockbloom_workload::{url, urls};
use support::{available, common, module_path, with_module};

/// Sum of the sizes of the files in the server's append-only directory.
fn aof_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir.join("appendonlydir"))
        .map(|d| d.map(|e| e.unwrap().metadata().unwrap().len()).sum())
        .unwrap_or(0)
}

#[test]
fn debug_reload_and_a_restart_from_the_rdb_keep_every_key() {
    if !available() {
        return;
    }
    let mut s = with_module(&["--enable-debug-command", "yes"]);
    let mut f = RedisBloomFilter::create(&s.url(), "r", 50_000, 0.01).unwrap();
    assert!(f.uses_module());
    let keys = urls(0, 20_000);
    f.insert_if_absent_many(&keys).unwrap();
    let mut c = s.conn();
    let digest = support::digest(&s);
    let _: () = redis::cmd("DEBUG").arg("RELOAD").query(&mut c).unwrap();
    let after = support::digest(&s);
    assert_eq!(digest, after, "DEBUG RELOAD changed the data");
    assert!(f.contains_many(&keys).unwrap().iter().all(|&p| p));
    let _: () = redis::cmd("SAVE").query(&mut c).unwrap();
    s.restart();
    let mut g = RedisBloomFilter::open(&s.url(), "r").unwrap();
    assert!(g.uses_module());
    assert!(g.contains_many(&keys).unwrap().iter().all(|&p| p));
    assert!(!g.insert_if_absent_many(&keys).unwrap().iter().any(|&n| n));
    let digest_now = support::digest(&s);
    assert_eq!(digest, digest_now, "the restart changed the data");
}

#[test]
fn the_aof_holds_8_bytes_per_new_key_and_replays_after_a_kill() {
    if !available() {
        return;
    }
    let aof = ["--appendonly", "yes", "--appendfsync", "always"];
    let mut s = with_module(&aof);
    let mut f = RedisBloomFilter::create(&s.url(), "a", 100_000, 0.01).unwrap();
    assert!(f.uses_module());
    let created = aof_bytes(&s.dir);
    let keys = urls(0, 50_000);
    let mut new = 0;
    for chunk in keys.chunks(1000) {
        new += f
            .insert_if_absent_many(chunk)
            .unwrap()
            .iter()
            .filter(|&&n| n)
            .count();
    }
    let grown = aof_bytes(&s.dir) - created;
    let per_key = grown as f64 / new as f64;
    eprintln!("AOF: {grown} bytes for {new} new keys: {per_key:.2} bytes per new key");
    assert!(per_key < 10.0, "{per_key} AOF bytes per new key");
    // Repeats write nothing.
    let before = aof_bytes(&s.dir);
    for chunk in keys.chunks(1000) {
        assert!(f.insert_if_absent_many(chunk).unwrap().iter().all(|&n| !n));
    }
    assert_eq!(aof_bytes(&s.dir), before, "repeats reached the AOF");
    // SIGKILL, then the AOF replayed: every acknowledged key is there.
    s.kill();
    s.restart();
    let mut g = RedisBloomFilter::open(&s.url(), "a").unwrap();
    assert!(g.contains_many(&keys).unwrap().iter().all(|&p| p));
    // Rewritten (the shards become plain strings in the base file) and replayed again.
    let _: () = redis::cmd("BGREWRITEAOF").query(&mut s.conn()).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let info: String = redis::cmd("INFO")
            .arg("persistence")
            .query(&mut s.conn())
            .unwrap();
        if info.contains("aof_rewrite_in_progress:0") && info.contains("aof_rewrite_scheduled:0") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "rewrite did not end");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let more = urls(100_000, 1000);
    g.insert_if_absent_many(&more).unwrap();
    s.kill();
    s.restart();
    let mut h = RedisBloomFilter::open(&s.url(), "a").unwrap();
    assert!(h.contains_many(&keys).unwrap().iter().all(|&p| p));
    assert!(h.contains_many(&more).unwrap().iter().all(|&p| p));
}

#[test]
fn a_replica_answers_as_its_primary() {
    if !available() {
        return;
    }
    let (primary, replica) = support::primary_and_replica();
    let mut f = RedisBloomFilter::create(&primary.url(), "rep", 50_000, 0.01).unwrap();
    assert!(f.uses_module());
    let keys = urls(0, 20_000);
    f.insert_if_absent_many(&keys).unwrap();
    // Repeats replicate nothing; WAIT acknowledges every write so far.
    f.insert_if_absent_many(&keys[..5000]).unwrap();
    assert_eq!(
        f.wait_for_replicas(1, std::time::Duration::from_secs(10))
            .unwrap(),
        1
    );
    assert_eq!(support::digest(&primary), support::digest(&replica));
    let mut r = RedisBloomFilter::open(&replica.url(), "rep").unwrap();
    assert!(r.uses_module());
    assert!(r.contains_many(&keys).unwrap().iter().all(|&p| p));
    let absent = urls(1_000_000, 2000);
    assert_eq!(
        r.contains_many(&absent).unwrap(),
        f.contains_many(&absent).unwrap()
    );
}

#[test]
fn an_insert_fires_a_keyspace_event_and_copy_makes_a_second_filter() {
    if !available() {
        return;
    }
    let s = with_module(&["--notify-keyspace-events", "K$"]);
    let mut f = RedisBloomFilter::create(&s.url(), "ev", 10_000, 0.01).unwrap();
    assert!(f.uses_module());
    let mut sub = s.conn();
    sub.set_read_timeout(Some(std::time::Duration::from_millis(500)))
        .unwrap();
    let mut ps = sub.as_pubsub();
    ps.psubscribe("__keyspace@0__:{ev.*").unwrap();
    f.insert_if_absent("https://a.example/").unwrap();
    let msg = ps.get_message().unwrap();
    // The event names the shard the key fell in: any of the filter's (a small filter
    // often has two, fitted to the allocator, and the seed is random).
    let shards: Vec<String> = (0..f.num_shards())
        .map(|i| format!("__keyspace@0__:{{ev.{i}}}.bits"))
        .collect();
    let channel = msg.get_channel_name().to_string();
    assert!(shards.contains(&channel), "{channel} is none of {shards:?}");
    assert_eq!(msg.get_payload::<String>().unwrap(), "bb.insert");
    // A repeat changes nothing and fires nothing.
    f.insert_if_absent("https://a.example/").unwrap();
    assert!(ps.get_message().is_err(), "a repeat fired an event");
    drop(ps);
    // COPY of the parameter hash and the shards is a second filter with the same keys.
    let mut c = s.conn();
    let shards =
        (0..f.num_shards()).map(|i| (format!("{{ev.{i}}}.bits"), format!("{{cp.{i}}}.bits")));
    let meta = ("{ev}.meta".to_string(), "{cp}.meta".to_string());
    for (from, to) in std::iter::once(meta).chain(shards) {
        let copied: i64 = redis::cmd("COPY")
            .arg(&from)
            .arg(&to)
            .query(&mut c)
            .unwrap();
        assert_eq!(copied, 1);
    }
    let mut g = RedisBloomFilter::open(&s.url(), "cp").unwrap();
    assert!(g.uses_module());
    assert!(g.contains("https://a.example/").unwrap());
    assert!(g.insert_if_absent("https://b.example/").unwrap());
    assert!(!f.contains("https://b.example/").unwrap());
}

#[test]
fn a_cluster_with_the_module_answers_as_a_local_filter() {
    if !available() {
        return;
    }
    let so = module_path();
    let nodes = common::cluster_with(None, &["--loadmodule", &so]);
    let mut f = RedisBloomFilter::builder(&nodes[0].url(), "cl")
        .capacity(50_000)
        .seed(77)
        .shard_bytes(1024)
        .cluster()
        .create()
        .unwrap();
    assert!(f.uses_module());
    assert!(f.num_shards() > 50);
    let local = BloomFilter::builder()
        .capacity(50_000)
        .seed(77)
        .build()
        .unwrap();
    let (stream, _) = blockbloom_workload::dup_stream(40_000, 0.5, 3);
    let keys: Vec<String> = stream.iter().map(|&i| url(i)).collect();
    for chunk in keys.chunks(1000) {
        let mut want = vec![false; chunk.len()];
        local.insert_if_absent_many(chunk, &mut want);
        assert_eq!(f.insert_if_absent_many(chunk).unwrap(), want);
    }
    for s in &nodes {
        let n: i64 = redis::cmd("DBSIZE").query(&mut s.conn()).unwrap();
        assert!(n > 5, "node {} holds {n} keys", s.port);
    }
    // The commands that find shards by name refuse a cluster, with the reason.
    let e = redis::cmd("BB.CONTAINS")
        .arg("cl")
        .arg("x")
        .query::<redis::Value>(&mut nodes[0].conn())
        .unwrap_err();
    assert!(e.to_string().contains("several nodes"), "{e}");
}
