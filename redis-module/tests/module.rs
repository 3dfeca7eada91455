//! The module against real redis-servers: the same answers as a local filter and as the
//! Functions, a client without it falling back, two processes racing (module against
//! module, module against Functions), wrong types and arguments, `maxmemory`, a lost
//! filter, the commands `redis-cli` uses.

mod support;

use blockbloom::{BloomFilter, StrBytes};
use blockbloom_redis::{Error, RedisBloomFilter};
use blockbloom_workload::{procs, url, urls};
use redis::Value;
use support::{available, with_module, Server};

fn local(capacity: u64, fpr: f64, seed: u128) -> BloomFilter {
    BloomFilter::builder()
        .capacity(capacity)
        .fpr(fpr)
        .seed(seed)
        .build()
        .unwrap()
}

#[test]
fn the_module_answers_as_a_local_filter_and_as_the_functions() {
    if !available() {
        return;
    }
    let s = with_module(&[]);
    let mut native = RedisBloomFilter::builder(&s.url(), "f")
        .capacity(50_000)
        .seed(5)
        .shard_bytes(8192) // several shards
        .create()
        .unwrap();
    assert!(native.uses_module());
    assert!(native.num_shards() > 3);
    let mut lua = RedisBloomFilter::builder(&s.url(), "f")
        .use_module(false)
        .open()
        .unwrap();
    assert!(!lua.uses_module());
    let mine = local(50_000, 0.01, 5);
    let (stream, _) = blockbloom_workload::dup_stream(40_000, 0.5, 9);
    let keys: Vec<String> = stream.iter().map(|&i| url(i)).collect();
    for (c, chunk) in keys.chunks(1000).enumerate() {
        // Batches alternate between the two paths: one filter, one set of answers.
        let f = if c % 2 == 0 { &mut native } else { &mut lua };
        let got = f.insert_if_absent_many(chunk).unwrap();
        let mut want = vec![false; chunk.len()];
        mine.insert_if_absent_many(chunk, &mut want);
        assert_eq!(got, want, "batch {c}");
    }
    // Byte for byte the local filter's bits.
    assert_eq!(native.to_local().unwrap().count_ones(), mine.count_ones());
    let probe = urls(1_000_000, 2000);
    let mut want = vec![false; probe.len()];
    mine.contains_many(&probe, &mut want);
    assert_eq!(native.contains_many(&probe).unwrap(), want);
    assert_eq!(lua.contains_many(&probe).unwrap(), want);
    assert_eq!(
        native.estimated_len().unwrap(),
        lua.estimated_len().unwrap()
    );
}

#[test]
fn a_server_without_the_module_is_served_by_the_functions() {
    if !available() {
        return;
    }
    let s = Server::start();
    let mut f = RedisBloomFilter::create(&s.url(), "f", 10_000, 0.01).unwrap();
    assert!(!f.uses_module());
    assert!(f.insert_if_absent("https://a.example/").unwrap());
    assert!(!f.insert_if_absent("https://a.example/").unwrap());
}

#[test]
fn the_commands_for_redis_cli_hash_keys_as_the_library_hashes_strings() {
    if !available() {
        return;
    }
    let s = with_module(&[]);
    let mut f = RedisBloomFilter::builder(&s.url(), "cli")
        .capacity(10_000)
        .seed(11)
        .shard_bytes(4096)
        .create()
        .unwrap();
    let mine = local(10_000, 0.01, 11);
    let mut c = s.conn();
    let keys = urls(0, 300);
    let got: Vec<i64> = redis::cmd("BB.INSERT_IF_ABSENT")
        .arg("cli")
        .arg(&keys[..200])
        .query(&mut c)
        .unwrap();
    for (k, g) in keys[..200].iter().zip(&got) {
        assert_eq!(*g == 1, mine.insert_if_absent(&StrBytes(k.as_bytes())));
    }
    // `str` and its bytes hash alike: the client sees the keys the server hashed.
    assert!(f.contains_many(&keys[..200]).unwrap().iter().all(|&b| b));
    let n: i64 = redis::cmd("BB.INSERT")
        .arg("cli")
        .arg(&keys[100..300])
        .query(&mut c)
        .unwrap();
    let fresh = keys[200..300]
        .iter()
        .filter(|k| mine.insert_if_absent(k.as_str()))
        .count();
    assert_eq!(n as usize, fresh);
    let present: Vec<i64> = redis::cmd("BB.CONTAINS")
        .arg("cli")
        .arg(&keys[250..])
        .arg("https://never.example/")
        .query(&mut c)
        .unwrap();
    assert_eq!(&present[..50], &[1; 50]);
    assert_eq!(
        present[50],
        i64::from(mine.contains("https://never.example/"))
    );
    // BB.INFO: the client's estimates, the same bits.
    let info: Vec<Value> = redis::cmd("BB.INFO").arg("cli").query(&mut c).unwrap();
    let field = |name: &str| {
        let i = info
            .iter()
            .position(|v| redis::from_redis_value_ref::<String>(v).ok().as_deref() == Some(name))
            .unwrap_or_else(|| panic!("no {name}"));
        info[i + 1].clone()
    };
    let ones: u64 = redis::from_redis_value_ref(&field("ones")).unwrap();
    assert_eq!(ones, mine.count_ones());
    let len: u64 = redis::from_redis_value_ref(&field("estimated_len")).unwrap();
    assert_eq!(len, f.estimated_len().unwrap());
    let fpr: f64 = redis::from_redis_value_ref(&field("estimated_fpr")).unwrap();
    assert!((fpr - f.estimated_fpr().unwrap()).abs() < 1e-12);
    let capacity: u64 = redis::from_redis_value_ref(&field("capacity")).unwrap();
    assert_eq!(capacity, 10_000);
    // A filter that is not there is an error naming it.
    let e = redis::cmd("BB.INFO")
        .arg("nothing")
        .query::<Value>(&mut c)
        .unwrap_err();
    assert!(e.to_string().contains("no filter 'nothing'"), "{e}");
}

#[test]
fn wrong_types_and_arguments_are_errors_that_change_nothing() {
    if !available() {
        return;
    }
    let s = with_module(&[]);
    let mut f = RedisBloomFilter::builder(&s.url(), "w")
        .capacity(10_000)
        .shard_bytes(4096)
        .create()
        .unwrap();
    let mut c = s.conn();
    let inc = f.incarnation().to_be_bytes();
    let shard = "{w.0}.bits";
    let before: Vec<u8> = redis::cmd("GET").arg(shard).query(&mut c).unwrap();
    let err = |c: &mut redis::Connection, cmd: &mut redis::Cmd| -> String {
        cmd.query::<Value>(c).unwrap_err().to_string()
    };
    let mut cmd = redis::cmd("BB.SHARD.INSERT_IF_ABSENT");
    assert!(err(&mut c, cmd.arg(shard).arg(&inc[..])).contains("wrong number of arguments"));
    let mut cmd = redis::cmd("BB.SHARD.INSERT_IF_ABSENT");
    let e = err(&mut c, cmd.arg(shard).arg(&inc[..]).arg(&[1u8; 7][..]));
    assert!(e.contains("8 bytes each"), "{e}");
    let mut cmd = redis::cmd("BB.SHARD.INSERT_IF_ABSENT");
    let e = err(&mut c, cmd.arg("plain").arg(&inc[..]).arg(&[1u8; 8][..]));
    assert!(e.contains("not a filter's shard key"), "{e}");
    // A hash that belongs to another shard: refused before anything is set.
    let other: u64 = (0..u64::MAX)
        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .find(|&h| {
            let l = f.to_local().unwrap();
            let line = l
                .layout()
                .probe_hash(blockbloom::KeyHash::from_bits(h))
                .line() as u64;
            line >= 2 // shard 0 of 4096 bytes holds fewer lines
        })
        .unwrap();
    let mut packed = 0u64.to_le_bytes().to_vec();
    packed.extend(other.to_le_bytes());
    let mut cmd = redis::cmd("BB.SHARD.INSERT_IF_ABSENT");
    let e = err(&mut c, cmd.arg(shard).arg(&inc[..]).arg(&packed[..]));
    assert!(e.contains("sent to the shard of lines"), "{e}");
    let after: Vec<u8> = redis::cmd("GET").arg(shard).query(&mut c).unwrap();
    assert_eq!(before, after, "a refused call changed the shard");
    // A shard of another type: WRONGTYPE from the module, Error::WrongType from the client.
    let _: () = redis::cmd("DEL").arg(shard).query(&mut c).unwrap();
    let _: () = redis::cmd("RPUSH")
        .arg(shard)
        .arg("x")
        .query(&mut c)
        .unwrap();
    let mut cmd = redis::cmd("BB.SHARD.CONTAINS");
    let e = err(&mut c, cmd.arg(shard).arg(&inc[..]).arg(&packed[..8]));
    assert!(e.starts_with("WRONGTYPE") || e.contains("WRONGTYPE"), "{e}");
    let keys = urls(0, 200);
    match f.contains_many(&keys) {
        Err(Error::WrongType(k)) => assert_eq!(k, shard),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_lost_filter_is_state_lost_then_re_armed() {
    if !available() {
        return;
    }
    let s = with_module(&[]);
    let mut a = RedisBloomFilter::create(&s.url(), "l", 10_000, 0.01).unwrap();
    let mut b = RedisBloomFilter::open(&s.url(), "l").unwrap();
    assert!(a.uses_module() && b.uses_module());
    let keys = urls(0, 500);
    assert!(a.insert_if_absent_many(&keys).unwrap().iter().all(|&n| n));
    let _: () = redis::cmd("FLUSHALL").query(&mut s.conn()).unwrap();
    assert!(matches!(
        a.insert_if_absent_many(&keys),
        Err(Error::StateLost { .. })
    ));
    // Re-armed: b adopts the new incarnation (StateLost once), then both share it.
    assert!(matches!(
        b.contains_many(&keys),
        Err(Error::StateLost { .. })
    ));
    assert!(a.insert_if_absent_many(&keys).unwrap().iter().all(|&n| n));
    assert!(b.contains_many(&keys).unwrap().iter().all(|&p| p));
    assert_eq!(a.incarnation(), b.incarnation());
}

#[test]
fn at_maxmemory_an_insert_is_refused_whole_and_repeats_are_answered() {
    if !available() {
        return;
    }
    let s = with_module(&["--maxmemory", "16mb", "--maxmemory-policy", "noeviction"]);
    let mut f = RedisBloomFilter::create(&s.url(), "m", 100_000, 0.01).unwrap();
    assert!(f.uses_module());
    let first = urls(0, 1000);
    f.insert_if_absent_many(&first).unwrap();
    // The server is full: used memory above `maxmemory`.
    support::config_set(&s, "maxmemory", "1mb");
    let fresh = urls(10_000, 1000);
    let mut batch = first[..500].to_vec();
    batch.extend_from_slice(&fresh);
    let e = f.insert_if_absent_many(&batch).unwrap_err();
    assert!(e.to_string().contains("OOM"), "{e}");
    // Nothing of the refused batch was applied; repeats are still answered, and with
    // memory raised inserts go on.
    assert!(
        f.contains_many(&fresh)
            .unwrap()
            .iter()
            .filter(|&&p| p)
            .count()
            < 30
    );
    assert!(f.insert_if_absent_many(&first).unwrap().iter().all(|&n| !n));
    support::config_set(&s, "maxmemory", "0");
    let got = f.insert_if_absent_many(&fresh).unwrap();
    assert!(got.iter().filter(|&&n| n).count() > 970);
}

/// Helper run as a child process by the races below.
#[test]
fn child() {
    let Ok(role) = std::env::var("BB_CHILD") else {
        return;
    };
    let parts: Vec<&str> = role.split(' ').collect();
    let (url_, dir, me, module) = (parts[0], parts[1], parts[2], parts[3] == "module");
    let me: usize = me.parse().unwrap();
    let f = std::cell::RefCell::new(
        RedisBloomFilter::builder(url_, "race")
            .use_module(module)
            .open()
            .unwrap(),
    );
    assert_eq!(f.borrow().uses_module(), module);
    let claim = |u: &str, _: usize| f.borrow_mut().insert_if_absent(u).unwrap();
    procs::race(&claim, std::path::Path::new(dir), me, 2, RACE_IDS);
}

const RACE_IDS: u64 = 20_000;

/// Two OS processes offer the same URLs in the same order, meeting before every 500:
/// each URL is won by one of them at most — both on the module, and one on the module
/// against one on the Functions (one filter, whichever path).
#[test]
fn two_processes_race_module_against_module_and_against_the_functions() {
    if !available() {
        return;
    }
    for modes in [["module", "module"], ["module", "functions"]] {
        let s = with_module(&[]);
        RedisBloomFilter::create(&s.url(), "race", RACE_IDS, 0.001).unwrap();
        let dir = procs::temp_dir(&format!("module-race-{}", modes[1]));
        let children: Vec<_> = (0..2)
            .map(|me| {
                let role = format!("{} {} {me} {}", s.url(), dir.display(), modes[me]);
                procs::spawn_child(&role, std::process::Stdio::null())
            })
            .collect();
        for mut c in children {
            assert!(c.wait().unwrap().success());
        }
        let wins = procs::wins(&dir, 2, RACE_IDS);
        let twice = wins.iter().filter(|&&w| w > 1).count();
        let none = wins.iter().filter(|&&w| w == 0).count();
        eprintln!("{modes:?}: claimed twice {twice}, by nobody {none} (false positives)");
        assert_eq!(twice, 0, "{modes:?}: URLs claimed twice");
        assert!(none < 100, "{none}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
