//! `--redis`: blockbloom-redis against the usual practice (a Redis set of SHA-1 fingerprints,
//! and a client-side check-then-set over a bitmap), on a redis-server on loopback.

use blockbloom_redis::RedisBloomFilter;
use blockbloom_workload::{dup_stream, url as make_url};
use std::fmt::Write as _;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A redis-server of our own (no persistence), killed on drop.
pub(super) struct OwnServer(Child, std::path::PathBuf);

impl Drop for OwnServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        let _ = std::fs::remove_dir_all(&self.1);
    }
}

fn start_server() -> Result<(OwnServer, String), String> {
    start_server_with(&[])
}

pub(super) fn start_server_with(extra: &[&str]) -> Result<(OwnServer, String), String> {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| e.to_string())?
        .port();
    let dir = std::env::temp_dir().join(format!("blockbloom-bench-redis-{port}"));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .args(["--dir", dir.to_str().unwrap_or(".")])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start redis-server ({e}); install it or pass --redis-url"))?;
    let server = OwnServer(child, dir);
    let url = format!("redis://127.0.0.1:{port}/");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let ok = redis::Client::open(url.as_str())
            .and_then(|c| c.get_connection_with_timeout(Duration::from_millis(200)))
            .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c))
            .is_ok();
        if ok {
            return Ok((server, url));
        }
        if Instant::now() > deadline {
            return Err("redis-server did not start".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(super) fn conn(url: &str) -> redis::Connection {
    redis::Client::open(url)
        .and_then(|c| c.get_connection())
        .expect("redis connection")
}

fn flush(url: &str) {
    let _: () = redis::cmd("FLUSHALL")
        .query(&mut conn(url))
        .expect("FLUSHALL");
}

fn info_version(url: &str) -> String {
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query(&mut conn(url))
        .unwrap_or_default();
    info.lines()
        .find_map(|l| l.strip_prefix("redis_version:"))
        .unwrap_or("?")
        .trim()
        .to_string()
}

/// A 3-node Redis Cluster on loopback; returns the servers and one node's URL.
fn start_cluster() -> Result<(Vec<OwnServer>, String), String> {
    let mut servers = Vec::new();
    let mut addrs = Vec::new();
    let mut first = None;
    for _ in 0..3 {
        let (s, u) =
            start_server_with(&["--cluster-enabled", "yes", "--cluster-node-timeout", "3000"])?;
        addrs.push(
            u.trim_start_matches("redis://")
                .trim_end_matches('/')
                .to_string(),
        );
        first.get_or_insert(u);
        servers.push(s);
    }
    let ok = Command::new("redis-cli")
        .args(["--cluster", "create"])
        .args(&addrs)
        .args(["--cluster-replicas", "0", "--cluster-yes"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("redis-cli: {e}"))?
        .success();
    if !ok {
        return Err("redis-cli --cluster create failed".into());
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    for a in &addrs {
        loop {
            let info: String = redis::cmd("CLUSTER")
                .arg("INFO")
                .query(&mut conn(&format!("redis://{a}/")))
                .unwrap_or_default();
            if info.contains("cluster_state:ok") {
                break;
            }
            if Instant::now() > deadline {
                return Err("cluster did not converge".into());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    Ok((servers, first.expect("three nodes")))
}

/// URLs/s against the cluster: the filter in `shards` shards spread over 3 nodes.
fn cluster_rate(url: &str, keys: &[String], distinct: u64, threads: usize) -> Result<f64, String> {
    let name = format!("bench{threads}");
    let f = RedisBloomFilter::builder(url, &name)
        .capacity(distinct)
        .fpr(0.01)
        .shard_bytes(4096)
        .cluster()
        .create()
        .map_err(|e| e.to_string())?;
    let per = keys.len().div_ceil(threads);
    let t = Instant::now();
    std::thread::scope(|s| {
        let hs: Vec<_> = keys
            .chunks(per)
            .map(|part| {
                let mut h = f.try_clone().expect("connection");
                s.spawn(move || {
                    for c in part.chunks(1000) {
                        h.insert_if_absent_many(c).expect("insert_if_absent_many");
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().expect("thread");
        }
    });
    Ok(keys.len() as f64 / t.elapsed().as_secs_f64())
}

/// URLs/s of blockbloom-redis on `threads` client threads, each with its own connection and
/// its share of the stream, in batches of `batch`.
fn bloom_rate(
    url: &str,
    keys: &[String],
    distinct: u64,
    batch: usize,
    threads: usize,
    direct: bool,
) -> (f64, usize) {
    flush(url);
    let f = RedisBloomFilter::builder(url, "bench")
        .capacity(distinct)
        .fpr(0.01)
        .direct_bitfield(direct)
        .create()
        .expect("create");
    let per = keys.len().div_ceil(threads);
    let t = Instant::now();
    let fresh: usize = std::thread::scope(|s| {
        let hs: Vec<_> = keys
            .chunks(per)
            .map(|part| {
                let mut h = f.try_clone().expect("connection");
                s.spawn(move || {
                    part.chunks(batch)
                        .map(|c| {
                            h.insert_if_absent_many(c)
                                .expect("insert_if_absent_many")
                                .into_iter()
                                .filter(|&x| x)
                                .count()
                        })
                        .sum::<usize>()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("thread")).sum()
    });
    (keys.len() as f64 / t.elapsed().as_secs_f64(), fresh)
}

/// URLs/s of `SADD fingerprints <sha1-hex>` pipelined `batch` deep (exact; 1 = one round trip
/// per URL), and the set's bytes per distinct URL.
fn sadd_rate(url: &str, keys: &[String], batch: usize) -> (f64, f64) {
    flush(url);
    let mut c = conn(url);
    let t = Instant::now();
    for chunk in keys.chunks(batch) {
        let mut p = redis::pipe();
        for k in chunk {
            p.cmd("SADD")
                .arg("fingerprints")
                .arg(sha1_smol::Sha1::from(k.as_bytes()).digest().to_string());
        }
        let _: Vec<i64> = p.query(&mut c).expect("SADD");
    }
    let rate = keys.len() as f64 / t.elapsed().as_secs_f64();
    let bytes: u64 = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg("fingerprints")
        .arg("SAMPLES")
        .arg(0)
        .query(&mut c)
        .unwrap_or(0);
    let n: u64 = redis::cmd("SCARD")
        .arg("fingerprints")
        .query(&mut c)
        .unwrap_or(1);
    (rate, bytes as f64 / n.max(1) as f64)
}

/// URLs/s of a client-side Bloom filter over a Redis bitmap: GETBIT ×k in one round trip,
/// then SETBIT ×k in another when a bit was 0 (not atomic: two processes can both see a URL
/// as new).
fn client_side_rate(url: &str, keys: &[String], distinct: u64) -> f64 {
    flush(url);
    let layout = naive_layout(distinct);
    let mut c = conn(url);
    let t = Instant::now();
    for k in keys {
        naive_claim(&mut c, &layout, k, "bitmap");
    }
    keys.len() as f64 / t.elapsed().as_secs_f64()
}

fn naive_layout(n: u64) -> blockbloom::Layout {
    blockbloom::BloomFilter::builder()
        .capacity(n)
        .fpr(0.01)
        .seed(1)
        .build()
        .expect("filter")
        .layout()
        .clone()
}

/// The client-side Bloom filter over a Redis bitmap: GETBIT of the key's bits in one round
/// trip, then, if one was 0, SETBIT of all of them in another. Not atomic.
fn naive_claim(
    c: &mut redis::Connection,
    layout: &blockbloom::Layout,
    key: &str,
    bitmap: &str,
) -> bool {
    let p = layout.probe(key);
    let mut offs = Vec::new();
    for (w, mut word) in p.mask().into_iter().enumerate() {
        while word != 0 {
            let i = word.trailing_zeros() as u64;
            word &= word - 1;
            offs.push(p.line() as u64 * 512 + 64 * w as u64 + i);
        }
    }
    let mut get = redis::pipe();
    for &o in &offs {
        get.cmd("GETBIT").arg(bitmap).arg(o);
    }
    let bits: Vec<u8> = get.query(c).expect("GETBIT");
    let new = bits.contains(&0);
    if new {
        let mut set = redis::pipe();
        for &o in &offs {
            set.cmd("SETBIT").arg(bitmap).arg(o).arg(1).ignore();
        }
        let _: () = set.query(c).expect("SETBIT");
    }
    new
}

/// Two clients (threads, each with its own connection) given the same new URLs in the same
/// order: how many URLs both were told are new (would be crawled twice), for the client-side
/// check-then-set and for blockbloom-redis (batches of 100).
fn double_claims(url: &str, keys: &[String]) -> (usize, usize) {
    let race = |claim: &(dyn Fn(usize, &[String]) -> Vec<bool> + Sync)| -> usize {
        let barrier = std::sync::Barrier::new(2);
        let wins: Vec<Vec<bool>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..2)
                .map(|t| {
                    let barrier = &barrier;
                    s.spawn(move || {
                        barrier.wait();
                        claim(t, keys)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().expect("thread")).collect()
        });
        wins[0]
            .iter()
            .zip(&wins[1])
            .filter(|(a, b)| **a && **b)
            .count()
    };
    flush(url);
    let layout = naive_layout(keys.len() as u64);
    let naive = race(&|_, keys| {
        let mut c = conn(url);
        keys.iter()
            .map(|k| naive_claim(&mut c, &layout, k, "race-bitmap"))
            .collect()
    });
    let f = RedisBloomFilter::create(url, "race", keys.len() as u64, 0.01).expect("create");
    let ours = race(&|_, keys| {
        let mut h = f.try_clone().expect("connection");
        keys.chunks(100)
            .flat_map(|c| h.insert_if_absent_many(c).expect("insert_if_absent_many"))
            .collect()
    });
    (naive, ours)
}

pub fn section(md: &mut String, quick: bool, url: Option<String>) -> Result<(), String> {
    let (_server, url) = match url {
        Some(u) => (None, u),
        None => {
            let (s, u) = start_server()?;
            (Some(s), u)
        }
    };
    let requests = if quick { 20_000 } else { 200_000 };
    let (stream, distinct) = dup_stream(requests, 0.5, 42);
    let keys: Vec<String> = stream.iter().map(|&i| make_url(i)).collect();
    let version = info_version(&url);
    let _ = write!(
        md,
        "Redis {version} on loopback (a server started by this run, no persistence). {requests} \
         requests, ~70-byte URLs, 50% duplicates ({distinct} distinct); filters sized for the \
         distinct count at 1%. One run each: rates on a shared 2-core machine (client and \
         server on the same cores) are noisy.\n\n\
         ### Throughput vs batch size (1 client thread)\n\n\
         | batch | blockbloom-redis URLs/s (Lua function) | (plain: GETRANGE of the blocks, then SET of the missing bits; the default) | SADD sha1 fingerprints URLs/s (pipelined) | function / SADD | plain / SADD |\n\
         |---:|---:|---:|---:|---:|---:|\n"
    );
    let batches: &[usize] = &[1, 100, 1000, 10_000];
    let mut best = 0.0f64;
    for &b in batches {
        let sub = if b == 1 {
            &keys[..keys.len().min(20_000)]
        } else {
            &keys[..]
        };
        crate::progress(&format!("redis: batch {b}"));
        let (rate, _) = bloom_rate(&url, sub, distinct, b, 1, false);
        let (drate, _) = bloom_rate(&url, sub, distinct, b, 1, true);
        let (srate, _) = sadd_rate(&url, sub, b);
        best = best.max(rate).max(drate);
        let _ = writeln!(
            md,
            "| {b} | {rate:.0} | {drate:.0} | {srate:.0} | ×{:.2} | ×{:.2} |",
            rate / srate,
            drate / srate
        );
    }
    let _ = write!(
        md,
        "\n### Throughput vs client threads (batches of 1000)\n\n\
         | threads | URLs/s (Lua function) | (plain, the default) | URLs claimed (new) |\n|---:|---:|---:|---:|\n"
    );
    for t in [1usize, 2, 4] {
        crate::progress(&format!("redis: {t} client threads"));
        let (rate, fresh) = bloom_rate(&url, &keys, distinct, 1000, t, false);
        let (drate, dfresh) = bloom_rate(&url, &keys, distinct, 1000, t, true);
        best = best.max(rate).max(drate);
        let _ = writeln!(md, "| {t} | {rate:.0} | {drate:.0} | {fresh} / {dfresh} |");
    }
    crate::progress("redis: 3-node cluster");
    let _ = write!(
        md,
        "\n### Several instances: a 3-node Redis Cluster on the same machine (batches of 1000)\n\n\
         The filter in 4 KiB shards spread over the nodes by their hash tags; the client sends one \
         pipeline per node. All three servers and the client share the same 2 cores.\n\n\
         | client threads | URLs/s |\n|---:|---:|\n"
    );
    match start_cluster() {
        Ok((_nodes, curl)) => {
            for t in [1usize, 2, 4] {
                let rate = cluster_rate(&curl, &keys, distinct, t)?;
                best = best.max(rate);
                let _ = writeln!(md, "| {t} | {rate:.0} |");
            }
        }
        Err(e) => {
            let _ = writeln!(md, "| (cluster not measured: {e}) | |");
        }
    }
    crate::progress("redis: two clients, same URLs, same order");
    let race_n = if quick { 2_000 } else { 20_000 };
    let race_keys: Vec<String> = (10_000_000..10_000_000 + race_n).map(make_url).collect();
    let (naive_twice, ours_twice) = double_claims(&url, &race_keys);
    crate::progress("redis: client-side check-then-set");
    let naive_keys = &keys[..keys.len().min(if quick { 2_000 } else { 10_000 })];
    let naive = client_side_rate(&url, naive_keys, distinct);
    // Memory: a filter filled to capacity vs the fingerprint set.
    crate::progress("redis: memory");
    let n = if quick { 100_000u64 } else { 10_000_000 };
    let all: Vec<String> = (0..n).map(make_url).collect();
    flush(&url);
    let mut f = RedisBloomFilter::create(&url, "mem", n, 0.01).map_err(|e| e.to_string())?;
    for c in all.chunks(10_000) {
        f.insert_if_absent_many(c).map_err(|e| e.to_string())?;
    }
    let strlen = f.memory_bytes().map_err(|e| e.to_string())?;
    // Every key of the filter: its parameter hash and each shard.
    let usage: u64 = std::iter::once("{mem}.meta".to_string())
        .chain((0..f.num_shards()).map(|i| format!("{{mem.{i}}}.bits")))
        .map(|key| {
            redis::cmd("MEMORY")
                .arg("USAGE")
                .arg(key)
                .query::<u64>(&mut conn(&url))
                .unwrap_or(0)
        })
        .sum();
    let (_, set_bytes) = sadd_rate(&url, &all, 10_000);
    let _ = write!(
        md,
        "\n### Against the usual practice\n\n\
         | approach | URLs/s | round trips per URL | two clients, same {race_n} new URLs, same order: claimed by both | bytes per URL in Redis |\n\
         |---|---:|---:|---:|---:|\n\
         | blockbloom-redis, best batch/threads above | {best:.0} | 2 per batch (1 with the function) | {ours_twice} | {:.3} (STRLEN), {:.3} (MEMORY USAGE) |\n\
         | client-side Bloom filter over a bitmap (GETBIT ×k, then SETBIT ×k), {} requests | {naive:.0} | 2 | {naive_twice} | ~same bitmap |\n\
         | SADD of SHA-1 hex fingerprints | see above | 1 (or 1 per pipeline) | 0 (exact) | {set_bytes:.1} |\n\n\
         blockbloom-redis / client-side check-then-set: ×{:.0}. Memory measured after \
         inserting {n} distinct URLs into a filter sized for {n} at 1%.\n",
        strlen as f64 / n as f64,
        usage as f64 / n as f64,
        naive_keys.len(),
        best / naive,
    );
    Ok(())
}
