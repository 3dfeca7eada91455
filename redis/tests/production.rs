//! blockbloom-redis where operators run it: a server killed and restarted empty, eviction
//! under `maxmemory`, the append-only file, a replica and a failover, tampered parameters —
//! each against real `redis-server` processes on loopback.

mod common;

use blockbloom_redis::{Error, RedisBloomFilter};
use blockbloom_workload::{crawl_stream, url};
use common::{offer, Server};
use std::time::Duration;

fn urls(ids: impl IntoIterator<Item = u64>) -> Vec<String> {
    ids.into_iter().map(url).collect()
}

/// The issue's split: A works; the server is killed and restarted empty; B opens the
/// filter by name (re-creating it). A's next call is `StateLost` (not a silent answer),
/// after which A and B share one identity: of 100,000 new URLs offered to both, none is
/// fetched by both, and the rate at capacity is the target's.
#[test]
fn a_restart_without_persistence_does_not_split_the_filter() {
    if !common::available() {
        return;
    }
    for direct in [false, true] {
        let mut s = Server::start();
        let u = s.url();
        let open = |u: &str| {
            RedisBloomFilter::builder(u, "crawl:seen")
                .capacity(200_000)
                .fpr(0.01)
                .direct_bitfield(direct)
                .open_or_create()
                .unwrap()
        };
        let mut a = open(&u);
        let before = urls(0..50_000);
        assert!(offer(&mut a, &before).0.iter().filter(|&&x| x).count() > 49_000);
        let seed_before = a.incarnation();
        s.restart(); // SIGKILL, then an empty server
        let mut b = open(&u);
        let keys = urls(1_000_000..1_100_000);
        let (fa, lost_a) = offer(&mut a, &keys);
        let (fb, lost_b) = offer(&mut b, &keys);
        assert_eq!(lost_a, 1, "A must be told once that the state was lost");
        assert_eq!(lost_b, 0);
        assert_ne!(a.incarnation(), seed_before);
        assert_eq!(a.incarnation(), b.incarnation());
        let both = fa.iter().zip(&fb).filter(|(x, y)| **x && **y).count();
        assert_eq!(both, 0, "{both} URLs fetched by both (direct: {direct})");
        // The URLs from before the restart are gone with it: new again (re-fetched), never
        // the reverse.
        let again = offer(&mut b, &before).0.iter().filter(|&&x| x).count();
        assert!(again > 49_000, "{again}");
        // Rate at capacity (150,000 keys in): within the target.
        let fp = offer(&mut a, &urls(5_000_000..5_050_000))
            .0
            .iter()
            .filter(|&&x| !x)
            .count();
        assert!(
            fp < 50_000 * 15 / 1000,
            "{fp} false positives of 50,000 at 1%"
        );
        drop(s);
    }
}

/// The reverse order: after the restart, A's call comes first and re-creates the filter
/// with A's own parameters and seed; B then opens that one.
#[test]
fn after_a_restart_the_first_client_recreates_its_own_filter() {
    if !common::available() {
        return;
    }
    let mut s = Server::start();
    let u = s.url();
    let mut a = RedisBloomFilter::open_or_create(&u, "f", 100_000, 0.01).unwrap();
    a.insert_if_absent_many(&urls(0..1000)).unwrap();
    s.restart();
    // The first call meets the connection the restart closed while its read step (no
    // effects) is in flight, reconnects, and finds the state lost.
    assert!(matches!(
        a.insert_if_absent_many(&urls(0..10)),
        Err(Error::StateLost { .. })
    ));
    let mut b = RedisBloomFilter::open_or_create(&u, "f", 100_000, 0.01).unwrap();
    assert_eq!(a.incarnation(), b.incarnation());
    let keys = urls(10_000..20_000);
    let fa = a.insert_if_absent_many(&keys).unwrap();
    let fb = b.insert_if_absent_many(&keys).unwrap();
    assert!(fa.iter().filter(|&&x| x).count() > 9_900);
    assert!(
        fb.iter().all(|&x| !x),
        "B must see A's inserts: one identity"
    );
}

/// A server restarted between two calls, with its state kept (the append-only file): the
/// next call is not an error. Its connection, closed by the restart, is met by a step that
/// changes nothing — the read of the default two-step insert, or any `contains` — which is
/// sent again on a new connection; the answers are those of a server that never went away.
#[test]
fn a_restart_between_calls_is_not_an_error() {
    if !common::available() {
        return;
    }
    let mut s = Server::persistent(&[]);
    let u = s.url();
    for direct in [true, false] {
        let name = format!("between{direct}");
        let mut f = RedisBloomFilter::builder(&u, &name)
            .capacity(100_000)
            .fpr(0.01)
            .direct_bitfield(direct)
            .open_or_create()
            .unwrap();
        let before = urls(0..1000);
        assert!(f.insert_if_absent_many(&before).unwrap().iter().all(|&x| x));
        s.restart();
        let present = f.contains_many(&before).expect("contains after a restart");
        assert!(
            present.iter().all(|&x| x),
            "a key inserted before the restart is gone"
        );
        if direct {
            // The default insert reads first: the restart is invisible to it too.
            s.restart();
            let again = f
                .insert_if_absent_many(&before)
                .expect("insert after a restart");
            assert!(
                again.iter().all(|&x| !x),
                "a key inserted before the restart is new"
            );
            assert!(f.insert_if_absent("new after the restarts").unwrap());
        }
    }
}

/// The server closes an idle client's connection (`CLIENT KILL`, as its `timeout` setting
/// does): the next call reopens it, whatever it is.
#[test]
fn a_connection_the_server_closed_is_reopened() {
    if !common::available() {
        return;
    }
    let s = Server::start();
    let mut f = RedisBloomFilter::open_or_create(&s.url(), "killed", 10_000, 0.01).unwrap();
    let kill = || {
        let n: u64 = redis::cmd("CLIENT")
            .arg("KILL")
            .arg("TYPE")
            .arg("normal")
            .query(&mut s.conn())
            .unwrap();
        assert_eq!(n, 1, "the filter's connection");
    };
    assert!(f.insert_if_absent("a").unwrap());
    kill();
    assert!(!f.insert_if_absent("a").unwrap());
    kill();
    assert!(f.contains("a").unwrap());
    kill();
    assert_eq!(f.insert_if_absent_many(&["b", "a"]).unwrap(), [true, false]);
}

/// The parameter hash alone vanishes (evicted, or deleted by hand) while the shards live:
/// a new client restores it from a shard's header — the same seed — instead of creating a
/// new filter.
#[test]
fn a_vanished_parameter_hash_is_restored_from_the_shards() {
    if !common::available() {
        return;
    }
    let s = Server::start();
    let u = s.url();
    let mut a = RedisBloomFilter::open_or_create(&u, "f", 100_000, 0.01).unwrap();
    let keys = urls(0..5_000);
    a.insert_if_absent_many(&keys).unwrap();
    let _: () = redis::cmd("DEL")
        .arg("{f}.meta")
        .query(&mut s.conn())
        .unwrap();
    let mut b = RedisBloomFilter::open_or_create(&u, "f", 100_000, 0.01).unwrap();
    assert!(b.contains_many(&keys).unwrap().iter().all(|&x| x));
    let _: () = redis::cmd("DEL")
        .arg("{f}.meta")
        .query(&mut s.conn())
        .unwrap();
    let mut c = RedisBloomFilter::open(&u, "f").unwrap();
    assert!(c.contains_many(&keys).unwrap().iter().all(|&x| x));
    assert!(a.insert_if_absent_many(&keys).unwrap().iter().all(|&x| !x));
}

/// A tampered parameter hash is `BadMeta` at open — an edited seed or shard size fails its
/// checksum, absurd sizes their bounds — and at once (no call sized by the damage).
#[test]
fn tampered_parameters_are_refused_at_open() {
    if !common::available() {
        return;
    }
    let s = Server::start();
    let u = s.url();
    RedisBloomFilter::create(&u, "t", 100_000, 0.01).unwrap();
    for (field, value) in [
        ("seed", "12345"),
        ("shard_blocks", "1"),
        ("blocks", "1000000000000"),
    ] {
        let saved: String = redis::cmd("HGET")
            .arg("{t}.meta")
            .arg(field)
            .query(&mut s.conn())
            .unwrap();
        let _: () = redis::cmd("HSET")
            .arg("{t}.meta")
            .arg(field)
            .arg(value)
            .query(&mut s.conn())
            .unwrap();
        let t = std::time::Instant::now();
        match RedisBloomFilter::open(&u, "t") {
            Err(Error::BadMeta(why)) => assert!(why.contains("checksum"), "{why}"),
            other => panic!("{field}: {other:?}"),
        }
        assert!(t.elapsed() < Duration::from_secs(2));
        let _: () = redis::cmd("HSET")
            .arg("{t}.meta")
            .arg(field)
            .arg(saved)
            .query(&mut s.conn())
            .unwrap();
    }
    assert!(RedisBloomFilter::open(&u, "t").is_ok());
    // A shard's header edited to another seed: the shards disagree with the hash.
    let _: () = redis::cmd("SETRANGE")
        .arg("{t.0}.bits")
        .arg(10)
        .arg("x")
        .query(&mut s.conn())
        .unwrap();
    assert!(matches!(
        RedisBloomFilter::open(&u, "t"),
        Err(Error::BadMeta(_))
    ));
}

/// A real replica: after inserts and `WAIT`, the replica answers `contains` for every key;
/// then the replica is promoted (failover) and the crawl goes on there with 0 false
/// negatives for the acknowledged keys.
/// With no replica to acknowledge, `wait_for_replicas` answers 0 after its timeout: one
/// longer than the connection's read timeout is not an error, and a zero timeout is not
/// Redis' `WAIT … 0` (for ever).
#[test]
fn waiting_for_missing_replicas_answers_zero() {
    if !common::available() {
        return;
    }
    let s = Server::start();
    let mut f = RedisBloomFilter::builder(&s.url(), "w")
        .capacity(10_000)
        .timeout(Duration::from_millis(300))
        .open_or_create()
        .unwrap();
    f.insert_if_absent("k").unwrap();
    let t = std::time::Instant::now();
    assert_eq!(f.wait_for_replicas(1, Duration::from_secs(1)).unwrap(), 0);
    assert!(
        t.elapsed() >= Duration::from_millis(900),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(f.wait_for_replicas(1, Duration::ZERO).unwrap(), 0);
    // The connection is still usable, with its own read timeout.
    assert!(f.contains("k").unwrap());
}

#[test]
fn a_replica_has_every_acknowledged_key_and_takes_over() {
    if !common::available() {
        return;
    }
    let primary = Server::start();
    let port = primary.port.to_string();
    let replica = Server::with_args(&[
        "--save",
        "",
        "--appendonly",
        "no",
        "--replicaof",
        "127.0.0.1",
        &port,
    ]);
    let mut f = RedisBloomFilter::open_or_create(&primary.url(), "r", 200_000, 0.01).unwrap();
    let keys = urls(0..100_000);
    for chunk in keys.chunks(2000) {
        f.insert_if_absent_many(chunk).unwrap();
    }
    assert_eq!(f.wait_for_replicas(1, Duration::from_secs(10)).unwrap(), 1);
    // The replica, read through the library (a read-only open and lookups).
    let mut r = RedisBloomFilter::open(&replica.url(), "r").unwrap();
    let present = r.contains_many(&keys).unwrap();
    assert_eq!(
        present.iter().filter(|&&x| !x).count(),
        0,
        "keys missing on the replica"
    );
    // Failover: promote the replica, keep going there.
    let _: () = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query(&mut replica.conn())
        .unwrap();
    drop(primary);
    let mut g = RedisBloomFilter::open_or_create(&replica.url(), "r", 200_000, 0.01).unwrap();
    let more = urls(100_000..150_000);
    let fresh = g.insert_if_absent_many(&more).unwrap();
    assert!(fresh.iter().filter(|&&x| x).count() > 49_000);
    let again = g.insert_if_absent_many(&keys).unwrap();
    assert_eq!(
        again.iter().filter(|&&x| x).count(),
        0,
        "acknowledged keys lost in the failover"
    );
}

/// Per-request callers with an in-process front: repeats are answered without a round
/// trip, and two processes' fronts (two handles here, each with its own local filter) still
/// never both win a key.
#[test]
fn a_local_front_answers_repeats_in_process_and_keeps_one_winner() {
    if !common::available() {
        return;
    }
    let s = Server::start();
    let u = s.url();
    let open = || {
        RedisBloomFilter::open_or_create(&u, "front", 100_000, 0.01)
            .unwrap()
            .with_local_front(10_000, 0.001)
            .unwrap()
    };
    let (mut a, mut b) = (open(), open());
    let (stream, distinct) = crawl_stream(20_000, 0.05, 9);
    let keys = urls(stream.iter().copied());
    let mut wins = std::collections::HashMap::new();
    for k in &keys {
        // The same stream through both, interleaved request by request.
        for f in [&mut a, &mut b] {
            if f.insert_if_absent(k.as_str()).unwrap() {
                *wins.entry(k.clone()).or_insert(0) += 1;
            }
        }
    }
    assert!(wins.values().all(|&w| w == 1), "a key won twice");
    assert!(
        wins.len() as u64 >= distinct * 98 / 100,
        "{} of {distinct}",
        wins.len()
    );
    // One round trip per distinct key and process (plus local false positives' absence).
    for f in [&a, &b] {
        assert!(
            f.round_trips() <= distinct,
            "{} round trips",
            f.round_trips()
        );
    }
    // Every key is in Redis itself.
    let present = a.remote().contains_many(&keys).unwrap();
    assert!(present.iter().all(|&x| x));
    // Batches too: only keys new to the process go out, in one call.
    let before = a.round_trips();
    let more = urls(1_000_000..1_001_000);
    let fresh = a.insert_if_absent_many(&more).unwrap();
    assert!(fresh.iter().filter(|&&x| x).count() > 980);
    assert_eq!(a.round_trips(), before + 1);
    assert!(a.insert_if_absent_many(&more).unwrap().iter().all(|&x| !x));
    assert_eq!(a.round_trips(), before + 1, "repeats went to Redis");
}

/// A user whose ACL allows the filter's keys and the read and write commands but not the
/// server's administration (`-@dangerous`: no `CONFIG`), as on managed services and in
/// shared deployments. The key pattern is the filter's hash-tagged names (`{name…`).
#[test]
fn an_acl_user_without_admin_commands_uses_the_filter() {
    if !common::available() {
        return;
    }
    let server = Server::with_args(&[
        "--save",
        "",
        "--appendonly",
        "no",
        "--user",
        "crawler",
        "on",
        ">pw",
        "resetkeys",
        "~{crawl*",
        "+@all",
        "-@dangerous",
    ]);
    let url = format!("redis://crawler:pw@127.0.0.1:{}/", server.port);
    let keys = urls(0..3000);
    for direct in [true, false] {
        let name = if direct { "crawl:a" } else { "crawl:b" };
        let mut f = RedisBloomFilter::builder(&url, name)
            .capacity(100_000)
            .fpr(0.01)
            .direct_bitfield(direct)
            .open_or_create()
            .unwrap_or_else(|e| panic!("direct {direct}: {e}"));
        let (won, _) = offer(&mut f, &keys);
        assert!(won.iter().filter(|&&w| w).count() > 2990);
        let mut again = RedisBloomFilter::builder(&url, name)
            .direct_bitfield(direct)
            .open()
            .unwrap();
        assert!(again.contains_many(&keys).unwrap().iter().all(|&x| x));
    }
    // Keys outside its pattern are refused by the server, as an error.
    assert!(RedisBloomFilter::open_or_create(&url, "other", 1000, 0.01).is_err());
}

/// A server reached through its Unix socket (`redis+unix://`, as on a crawler machine
/// that runs its own Redis), with a password and a database in the URL.
#[test]
fn a_unix_socket_url_reaches_the_same_filter() {
    if !common::available() {
        return;
    }
    let port = common::free_port();
    let socket =
        std::env::temp_dir().join(format!("blockbloom-{}-{port}.sock", std::process::id()));
    let socket_arg = socket.to_str().unwrap().to_string();
    let server = Server::with_args(&[
        "--save",
        "",
        "--appendonly",
        "no",
        "--requirepass",
        "pw",
        "--unixsocket",
        &socket_arg,
        "--unixsocketperm",
        "700",
    ]);
    let unix = format!("redis+unix://{socket_arg}?db=2&pass=pw");
    let mut f = RedisBloomFilter::open_or_create(&unix, "crawl:unix", 10_000, 0.01).unwrap();
    let keys = urls(0..500);
    assert!(
        f.insert_if_absent_many(&keys)
            .unwrap()
            .iter()
            .filter(|&&w| w)
            .count()
            > 495
    );
    // The same filter over TCP, in database 2.
    let tcp = format!("redis://:pw@127.0.0.1:{}/2", server.port);
    let mut g = RedisBloomFilter::open(&tcp, "crawl:unix").unwrap();
    assert!(g.contains_many(&keys).unwrap().iter().all(|&x| x));
    assert!(
        RedisBloomFilter::open(&server.url(), "crawl:unix").is_err(),
        "not in database 0"
    );
    drop(server);
    let _ = std::fs::remove_file(&socket);
}

/// A copy taken for a backup (`to_local`) of a filter that lost a shard (evicted, deleted,
/// a restart without persistence) is `StateLost`, not a copy with a silent gap where the
/// shard's keys were; after it, as after any `StateLost`, the filter works again.
#[test]
fn a_copy_of_a_filter_that_lost_a_shard_is_state_lost() {
    if !common::available() {
        return;
    }
    let s = Server::start();
    let mut f = RedisBloomFilter::builder(&s.url(), "backup")
        .capacity(50_000)
        .fpr(0.01)
        .shard_bytes(4096)
        .open_or_create()
        .unwrap();
    assert!(f.num_shards() > 4);
    let keys = urls(0..20_000);
    f.insert_if_absent_many(&keys).unwrap();
    let copy = f.to_local().unwrap();
    assert!(keys.iter().all(|k| copy.contains(k)));
    for lost in ["{backup.0}.bits", "{backup.3}.bits"] {
        let _: () = redis::cmd("DEL").arg(lost).query(&mut s.conn()).unwrap();
        match f.to_local() {
            Err(Error::StateLost { shard, .. }) => assert_eq!(shard, lost),
            Ok(c) => panic!(
                "a copy without {lost}: {} of {} keys missing",
                keys.iter().filter(|k| !c.contains(*k)).count(),
                keys.len()
            ),
            Err(e) => panic!("{e}"),
        }
        let again = f.to_local().unwrap();
        assert!(keys.iter().filter(|k| again.contains(*k)).count() < keys.len());
        assert!(f.insert_if_absent("a new key").is_ok());
    }
}

/// A server that refuses the connection is named in the error: the address, not only
/// "Connection refused".
#[test]
fn a_refused_connection_names_the_address() {
    let port = common::free_port();
    let url = format!("redis://127.0.0.1:{port}/");
    let e = blockbloom_redis::RedisBloomFilter::open(&url, "x").unwrap_err();
    let text = e.to_string();
    assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
    assert!(
        matches!(e, blockbloom_redis::Error::Redis(ref r) if r.is_connection_refusal()),
        "{e:?}"
    );
}

/// Processes that create one filter at the same moment (two Scrapy-Redis crawls started
/// together) all get it: a creator whose parameter hash lost re-arms its shards to the
/// winner's identity, and the winner does not take a slower loser's header for another
/// filter's keys (it once failed with "a shard's header disagrees with the parameter hash").
#[test]
fn creators_racing_for_one_name_all_get_the_filter() {
    if !common::available() {
        return;
    }
    let s = common::Server::start();
    let url = s.url();
    for round in 0..20 {
        let name = format!("race-create-{round}");
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(4));
        let seeds: Vec<u64> = (0..4)
            .map(|_| {
                let (url, name, barrier) = (url.clone(), name.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    let f = blockbloom_redis::RedisBloomFilter::builder(&url, &name)
                        .capacity(200_000)
                        .fpr(1e-5)
                        .shard_bytes(64 * 1024)
                        .open_or_create()
                        .unwrap_or_else(|e| panic!("round {round}: {e}"));
                    f.incarnation()
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().unwrap())
            .collect();
        assert!(
            seeds.iter().all(|&x| x == seeds[0]),
            "round {round}: {seeds:?}"
        );
    }
}
