//! blockbloom-redis against a real redis-server (started by the tests on a free port).

mod common;

use blockbloom::BloomFilter;
use blockbloom_redis::{Error, RedisBloomFilter};
use blockbloom_workload::{url, SplitMix64};
use common::Server;
use std::time::Duration;

fn urls(n: u64) -> Vec<String> {
    (0..n).map(url).collect()
}

#[test]
fn create_open_conflicts_and_delete() {
    if !common::available() {
        return;
    }
    let s = Server::start();
    let u = s.url();
    assert!(matches!(
        RedisBloomFilter::open(&u, "f"),
        Err(Error::NotFound(_))
    ));
    let mut a = RedisBloomFilter::create(&u, "f", 10_000, 0.01).unwrap();
    assert!(a.uses_functions());
    assert!(a.insert_if_absent("https://a.example/").unwrap());
    assert!(!a.insert_if_absent("https://a.example/").unwrap());
    assert!(a.contains("https://a.example/").unwrap());
    assert!(!a.contains("https://b.example/").unwrap());

    // A second process-like handle sees the same filter and parameters.
    let mut b = RedisBloomFilter::open(&u, "f").unwrap();
    assert_eq!(
        (b.num_lines(), b.num_hashes()),
        (a.num_lines(), a.num_hashes())
    );
    assert!(b.contains("https://a.example/").unwrap());
    let mut c = RedisBloomFilter::open_or_create(&u, "f", 10_000, 0.01).unwrap();
    assert!(!c.insert_if_absent("https://a.example/").unwrap());

    // Conflicting parameters are refused, not used.
    match RedisBloomFilter::open_or_create(&u, "f", 20_000, 0.01) {
        Err(Error::Conflict { field, .. }) => assert_eq!(field, "capacity"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        RedisBloomFilter::open_or_create(&u, "f", 10_000, 0.001),
        Err(Error::Conflict { field: "fpr", .. })
    ));
    assert!(matches!(
        RedisBloomFilter::create(&u, "f", 10_000, 0.01),
        Err(Error::Conflict {
            field: "existence",
            ..
        })
    ));
    assert!(matches!(
        RedisBloomFilter::create(&u, "g", 0, 0.01),
        Err(Error::Filter(_))
    ));
    assert!(matches!(
        RedisBloomFilter::create(&u, "g", 10, 1.5),
        Err(Error::Filter(_))
    ));
    for bytes in [0, 63, (512 << 20) + 1, u64::MAX] {
        assert!(matches!(
            RedisBloomFilter::builder(&u, "g").capacity(10).shard_bytes(bytes).create(),
            Err(Error::InvalidShardSize(b)) if b == bytes
        ));
    }
    // A damaged parameter hash is an error, not a panic (here: an absurd shard size).
    let _: () = redis::cmd("HSET")
        .arg("{bad}.meta")
        .arg(&[
            ("format", "1"),
            ("hash_id", "1"),
            ("seed", "1"),
            ("blocks", "10"),
        ])
        .arg(&[("hashes", "6"), ("capacity", "10"), ("fpr", "0.01")])
        .arg(&[("shard_blocks", &u64::MAX.to_string()[..])])
        .query(&mut s.conn())
        .unwrap();
    assert!(matches!(
        RedisBloomFilter::open(&u, "bad"),
        Err(Error::BadMeta(_))
    ));

    assert!(RedisBloomFilter::delete(&u, "f").unwrap());
    assert!(!RedisBloomFilter::delete(&u, "f").unwrap());
    assert!(matches!(
        RedisBloomFilter::open(&u, "f"),
        Err(Error::NotFound(_))
    ));
}

/// The shard size is the creator's choice: a process that opens the filter without naming
/// one (a Scrapy dupefilter, a worker) uses the stored one; one that names another is
/// refused. (Exporting a backup into the filter is such an open.)
#[test]
fn a_shard_size_not_asked_for_is_the_stored_one() {
    if !common::available() {
        return;
    }
    let s = Server::start();
    let u = s.url();
    let sized = |bytes| {
        RedisBloomFilter::builder(&u, "sharded")
            .capacity(50_000)
            .fpr(0.01)
            .shard_bytes(bytes)
    };
    let mut a = sized(4096).open_or_create().unwrap();
    assert!(a.num_shards() > 4);
    let keys = urls(5_000);
    a.insert_if_absent_many(&keys).unwrap();
    let mut b = RedisBloomFilter::open_or_create(&u, "sharded", 50_000, 0.01).unwrap();
    assert_eq!(b.num_shards(), a.num_shards());
    assert!(b.contains_many(&keys).unwrap().iter().all(|&x| x));
    let backup = a.to_local().unwrap();
    let mut c = RedisBloomFilter::export(&u, "sharded", &backup).unwrap();
    assert_eq!(c.num_shards(), a.num_shards());
    assert!(c.contains_many(&keys).unwrap().iter().all(|&x| x));
    assert!(matches!(
        sized(8192).open_or_create(),
        Err(Error::Conflict {
            field: "shard_blocks",
            ..
        })
    ));
    assert_eq!(
        sized(4096).open_or_create().unwrap().num_shards(),
        a.num_shards()
    );
}

/// Same seed, same parameters: the Redis filter answers exactly as a local filter, key for
/// key, and its bits are the local filter's bits (so export/import/union are plain copies
/// and ORs). With tiny shards, so that batches cross many shards.
#[test]
fn same_answers_and_same_bits_as_a_local_filter() {
    if !common::available() {
        return;
    }
    let s = Server::start();
    for (shard_bytes, direct) in [
        (64u64 << 20, true),
        (1024, true),
        (64 << 20, false),
        (1024, false),
    ] {
        let name = format!("same-{shard_bytes}-{direct}");
        let mut r = RedisBloomFilter::builder(&s.url(), &name)
            .capacity(50_000)
            .fpr(0.01)
            .seed(0xABCD)
            .shard_bytes(shard_bytes)
            .direct_bitfield(direct)
            .create()
            .unwrap();
        let local = BloomFilter::builder()
            .capacity(50_000)
            .fpr(0.01)
            .seed(0xABCD)
            .build()
            .unwrap();
        assert_eq!(r.num_lines(), local.num_lines() as u64);
        if shard_bytes == 1024 {
            assert!(r.num_shards() > 50, "{}", r.num_shards());
        }
        // A stream with repeats, in batches of 1000 (repeats inside batches too).
        let (stream, _) = blockbloom_workload::dup_stream(60_000, 0.5, 7);
        let keys: Vec<String> = stream.iter().map(|&i| url(i)).collect();
        for chunk in keys.chunks(1000) {
            let remote = r.insert_if_absent_many(chunk).unwrap();
            let mut mine = vec![false; chunk.len()];
            local.insert_if_absent_many(chunk, &mut mine);
            assert_eq!(remote, mine);
        }
        let copy = r.to_local().unwrap();
        let (mut x, mut y) = (Vec::new(), Vec::new());
        copy.line_bytes(0, copy.num_lines(), &mut x).unwrap();
        local.line_bytes(0, local.num_lines(), &mut y).unwrap();
        assert!(x == y, "Redis bits differ from the local filter's");
        let q: Vec<String> = (1_000_000..1_010_000).map(url).collect();
        let remote = r.contains_many(&q).unwrap();
        let mut mine = vec![false; q.len()];
        local.contains_many(&q, &mut mine);
        assert_eq!(remote, mine);
        // Bytes in Redis per key at capacity: the local filter's 1.24 at 1%, plus each
        // shard's 64-byte header.
        let headers = 64.0 * r.num_shards() as f64;
        let per_key = (r.memory_bytes().unwrap() as f64 - headers) / 30_000.0;
        assert!(per_key <= 1.3 * 50_000.0 / 30_000.0 + 0.01, "{per_key}");
    }
}

#[test]
fn export_union_and_import() {
    if !common::available() {
        return;
    }
    let s = Server::start();
    let node = |seed| {
        BloomFilter::builder()
            .capacity(20_000)
            .fpr(0.001)
            .seed(seed)
            .build()
            .unwrap()
    };
    let (a, b) = (node(5), node(5));
    let ka = urls(5_000);
    let kb: Vec<String> = (5_000..10_000).map(url).collect();
    a.insert_many(&ka);
    b.insert_many(&kb);
    let mut r = RedisBloomFilter::export(&s.url(), "merged", &a).unwrap();
    r.union_from(&b).unwrap();
    assert!(r.contains_many(&ka).unwrap().iter().all(|&x| x));
    assert!(r.contains_many(&kb).unwrap().iter().all(|&x| x));
    // Import: the union, bit for bit.
    a.union(&b).unwrap();
    let back = r.to_local().unwrap();
    let (mut x, mut y) = (Vec::new(), Vec::new());
    back.line_bytes(0, back.num_lines(), &mut x).unwrap();
    a.line_bytes(0, a.num_lines(), &mut y).unwrap();
    assert!(x == y);
    // A filter with another seed cannot be merged.
    assert!(matches!(
        r.union_from(&node(6)),
        Err(Error::Conflict { field: "seed", .. })
    ));
    // Nor one of smaller blocks (its bits lie elsewhere in a line), and exporting one
    // creates nothing.
    let small = BloomFilter::builder()
        .capacity(20_000)
        .fpr(0.001)
        .seed(5)
        .block_bits(64)
        .build()
        .unwrap();
    assert!(matches!(
        r.union_from(&small),
        Err(Error::Conflict {
            field: "block_bits",
            ..
        })
    ));
    assert!(matches!(
        RedisBloomFilter::export(&s.url(), "small", &small),
        Err(Error::Conflict {
            field: "block_bits",
            ..
        })
    ));
    assert!(matches!(
        RedisBloomFilter::open(&s.url(), "small"),
        Err(Error::NotFound(_))
    ));
}

/// Helper run as a child process by `two_processes_race_over_the_same_urls`.
#[test]
#[ignore = "helper: runs only as a child of two_processes_race_over_the_same_urls"]
fn race_child() {
    let Ok(url_) = std::env::var("BB_REDIS_URL") else {
        return;
    };
    let out = std::env::var("BB_OUT").unwrap();
    let n: u64 = std::env::var("BB_N").unwrap().parse().unwrap();
    let direct = std::env::var("BB_DIRECT").unwrap() == "1";
    let mut f = RedisBloomFilter::builder(&url_, "race")
        .capacity(n)
        .fpr(0.001)
        .direct_bitfield(direct)
        .open_or_create()
        .unwrap();
    let mut order: Vec<u64> = (0..n).collect();
    SplitMix64::new(99).shuffle(&mut order); // the same shuffled order in both processes
    let keys: Vec<String> = order.iter().map(|&i| url(i)).collect();
    // Both processes meet before every batch (a counter per round in Redis), so every batch
    // is really raced: both send the same keys at the same moment, and whichever command
    // Redis runs first must take all of them.
    let mut c = redis::Client::open(url_.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let mut meet = |round: usize| {
        let key = format!("race:round:{round}");
        let _: i64 = redis::cmd("INCR").arg(&key).query(&mut c).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while redis::cmd("GET").arg(&key).query::<i64>(&mut c).unwrap() < 2 {
            assert!(
                std::time::Instant::now() < deadline,
                "the other process never came"
            );
            std::hint::spin_loop();
        }
    };
    let mut won = String::new();
    for (c, chunk) in keys.chunks(50).enumerate() {
        meet(c);
        let fresh = f.insert_if_absent_many(chunk).unwrap();
        for (j, new) in fresh.into_iter().enumerate() {
            if new {
                won.push_str(&order[c * 50 + j].to_string());
                won.push('\n');
            }
        }
    }
    std::fs::write(out, won).unwrap();
}

#[test]
fn two_processes_race_over_the_same_urls() {
    if !common::available() {
        return;
    }
    race(true, false);
    race(false, false);
    // With an append-only file the two-step insert sets bits through `bb_or` instead of a
    // plain BITFIELD: raced the same way.
    race(true, true);
}

fn race(direct: bool, aof: bool) {
    let s = if aof {
        Server::with_args(&["--save", "", "--appendonly", "yes", "--appendfsync", "no"])
    } else {
        Server::start()
    };
    let n = 40_000u64;
    // Create first so that both children agree on the parameters.
    RedisBloomFilter::create(&s.url(), "race", n, 0.001).unwrap();
    let exe = std::env::current_exe().unwrap();
    let outs: Vec<_> = (0..2).map(|i| s.dir.join(format!("won-{i}"))).collect();
    let children: Vec<_> = outs
        .iter()
        .map(|o| {
            std::process::Command::new(&exe)
                .args(["--ignored", "--exact", "race_child", "--nocapture"])
                .env("BB_REDIS_URL", s.url())
                .env("BB_OUT", o)
                .env("BB_N", n.to_string())
                .env("BB_DIRECT", if direct { "1" } else { "0" })
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let won: Vec<Vec<u64>> = outs
        .iter()
        .map(|o| {
            std::fs::read_to_string(o)
                .unwrap()
                .lines()
                .map(|l| l.parse().unwrap())
                .collect()
        })
        .collect();
    let mut claimed = vec![0u8; n as usize];
    for w in &won {
        for &i in w {
            claimed[i as usize] += 1;
        }
    }
    let twice = claimed.iter().filter(|&&c| c > 1).count();
    let none = claimed.iter().filter(|&&c| c == 0).count();
    eprintln!(
        "two steps {direct}, AOF {aof}: process A won {}, process B {}, claimed twice {twice}, by nobody {none} (false positives)",
        won[0].len(),
        won[1].len()
    );
    assert_eq!(twice, 0, "URLs crawled twice");
    assert!(none < 200, "{none}");
    // Each of the 800 raced batches went (almost) wholly to one process: both won some.
    assert!(!won[0].is_empty() && !won[1].is_empty(), "both raced");
    let mut f = RedisBloomFilter::open(&s.url(), "race").unwrap();
    let all = urls(n);
    assert!(
        f.contains_many(&all).unwrap().iter().all(|&x| x),
        "false negative"
    );
}

#[test]
fn connection_refused_is_an_error() {
    let port = common::free_port();
    let url = format!("redis://127.0.0.1:{port}/");
    match RedisBloomFilter::open_or_create(&url, "f", 100, 0.01) {
        Err(Error::Redis(e)) => assert!(e.is_connection_refusal() || e.is_io_error(), "{e}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn wrong_type_shard_is_an_error() {
    if !common::available() {
        return;
    }
    let s = Server::start();
    let mut f = RedisBloomFilter::create(&s.url(), "wt", 1000, 0.01).unwrap();
    let _: () = redis::pipe()
        .cmd("DEL")
        .arg("{wt.0}.bits")
        .ignore()
        .cmd("LPUSH")
        .arg("{wt.0}.bits")
        .arg("x")
        .ignore()
        .query(&mut s.conn())
        .unwrap();
    for r in [f.insert_if_absent("a"), f.contains("a")] {
        match r {
            Err(e @ Error::WrongType(_)) => {
                // The message names the key (not Redis' error text).
                assert!(e.to_string().contains("\"{wt.0}.bits\""), "{e}");
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn lost_server_code_is_reloaded_and_the_call_retried_once() {
    if !common::available() {
        return;
    }
    let s = Server::start();
    let mut f = RedisBloomFilter::builder(&s.url(), "fl")
        .capacity(1000)
        .direct_bitfield(false)
        .create()
        .unwrap();
    assert!(f.insert_if_absent("a").unwrap());
    let _: String = redis::cmd("FUNCTION")
        .arg("FLUSH")
        .query(&mut s.conn())
        .unwrap();
    assert!(
        !f.insert_if_absent("a").unwrap(),
        "state kept, function reloaded"
    );
    assert!(f.insert_if_absent("b").unwrap());
    // The EVALSHA path.
    let mut g = RedisBloomFilter::builder(&s.url(), "fl")
        .use_scripts()
        .open()
        .unwrap();
    assert!(!g.uses_functions());
    assert!(!g.insert_if_absent("b").unwrap());
    let _: String = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query(&mut s.conn())
        .unwrap();
    assert!(g.insert_if_absent("c").unwrap());
    assert!(
        !f.insert_if_absent("c").unwrap(),
        "both paths share the bits"
    );
}

#[test]
fn timeouts_are_errors_and_the_next_call_reconnects() {
    if !common::available() {
        return;
    }
    let s = Server::with_args(&["--save", "", "--enable-debug-command", "yes"]);
    let mut f = RedisBloomFilter::builder(&s.url(), "to")
        .capacity(1000)
        .timeout(Duration::from_millis(300))
        .create()
        .unwrap();
    let url = s.url();
    let sleeper = std::thread::spawn(move || {
        let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
        let _: () = redis::cmd("DEBUG")
            .arg("SLEEP")
            .arg(1.5)
            .query(&mut c)
            .unwrap();
    });
    std::thread::sleep(Duration::from_millis(100));
    match f.insert_if_absent("k") {
        Err(Error::Redis(e)) => assert!(e.is_timeout() || e.is_io_error(), "{e}"),
        other => panic!("expected a timeout, got {other:?}"),
    }
    sleeper.join().unwrap();
    // The key's state is unknown after the timeout (with the default two-step set, the
    // read timed out and the set was never sent; a one-step call would have run after the
    // sleep); the filter is usable again, and consistent with itself.
    let present = f.contains("k").unwrap();
    assert_eq!(f.insert_if_absent("k").unwrap(), !present);
    assert!(f.contains("k").unwrap());
}

/// Kills the server (SIGKILL) while a client streams batches: the in-flight call fails with
/// an error (never a silent answer); after a restart with the append-only file, every key
/// that was acknowledged as inserted is still there.
#[test]
fn server_restart_mid_batch() {
    if !common::available() {
        return;
    }
    let mut s = Server::persistent(&[]);
    let url = s.url();
    RedisBloomFilter::create(&url, "rs", 200_000, 0.01).unwrap();
    let keys = urls(200_000);
    let (tx, rx) = std::sync::mpsc::channel();
    let worker = {
        let keys = keys.clone();
        let url = url.clone();
        std::thread::spawn(move || {
            let mut f = RedisBloomFilter::builder(&url, "rs")
                .timeout(Duration::from_secs(2))
                .open()
                .unwrap();
            let mut acked = 0usize;
            for (i, chunk) in keys.chunks(2000).enumerate() {
                if i == 3 {
                    tx.send(()).unwrap();
                }
                match f.insert_if_absent_many(chunk) {
                    Ok(_) => acked = (i + 1) * 2000,
                    Err(e) => return (acked, Some(e.to_string())),
                }
            }
            (acked, None)
        })
    };
    rx.recv().unwrap();
    s.kill();
    let (acked, err) = worker.join().unwrap();
    let err = err.expect("the call in flight when the server died must fail");
    eprintln!("acknowledged {acked} keys before the kill; in-flight call: {err}");
    assert!(acked >= 6000 && acked < keys.len());
    s.restart();
    let mut f = RedisBloomFilter::open(&url, "rs").unwrap();
    let present = f.contains_many(&keys[..acked]).unwrap();
    assert!(
        present.iter().all(|&x| x),
        "an acknowledged insert was lost"
    );
    // And the handle that lived through the restart works again.
    assert!(f.insert_if_absent("after").unwrap());
}
