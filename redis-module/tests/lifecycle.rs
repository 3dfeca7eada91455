//! The whole-filter commands: `BB.CREATE` (as a client creates), `BB.UNION`, the
//! migration pair `BB.DUMP` / `BB.LOAD`, and their replication (a replica ends with the
//! primary's `DEBUG DIGEST`).

mod support;

use blockbloom::BloomFilter;
use blockbloom_redis::RedisBloomFilter;
use blockbloom_workload::urls;
use redis::Value;
use support::{available, with_module};

fn cmd_err(c: &mut redis::Connection, cmd: &mut redis::Cmd) -> String {
    cmd.query::<Value>(c).unwrap_err().to_string()
}

#[test]
fn bb_create_makes_the_filter_a_client_makes() {
    if !available() {
        return;
    }
    let s = with_module(&[]);
    let mut c = s.conn();
    let _: () = redis::cmd("BB.CREATE")
        .arg("made")
        .arg(50_000)
        .arg(0.01)
        .arg("SEED")
        .arg(77)
        .arg("SHARDBYTES")
        .arg(8192)
        .query(&mut c)
        .unwrap();
    let mut f = RedisBloomFilter::open(&s.url(), "made").unwrap();
    let twin = RedisBloomFilter::builder(&s.url(), "twin")
        .capacity(50_000)
        .seed(77)
        .shard_bytes(8192)
        .create()
        .unwrap();
    assert_eq!(
        (f.num_lines(), f.num_hashes(), f.num_shards(), f.capacity()),
        (
            twin.num_lines(),
            twin.num_hashes(),
            twin.num_shards(),
            50_000
        )
    );
    let local = BloomFilter::builder()
        .capacity(50_000)
        .seed(77)
        .build()
        .unwrap();
    let keys = urls(0, 5000);
    let mut want = vec![false; keys.len()];
    local.insert_if_absent_many(&keys, &mut want);
    assert_eq!(f.insert_if_absent_many(&keys).unwrap(), want);
    // MEMORY USAGE: the shards were made whole, as a client makes them.
    let shard_len: u64 = redis::cmd("STRLEN")
        .arg("{made.0}.bits")
        .query(&mut c)
        .unwrap();
    let twin_len: u64 = redis::cmd("STRLEN")
        .arg("{twin.0}.bits")
        .query(&mut c)
        .unwrap();
    assert_eq!(shard_len, twin_len);
    // Once only; bad arguments are errors that create nothing.
    let mut again = redis::cmd("BB.CREATE");
    let e = cmd_err(&mut c, again.arg("made").arg(10).arg(0.01));
    assert!(e.contains("exists"), "{e}");
    for (cap, rate, opt) in [
        ("x", "0.01", ""),
        ("10", "1.5", ""),
        ("0", "0.01", ""),
        ("10", "0.01", "COLOUR"),
    ] {
        let mut cmd = redis::cmd("BB.CREATE");
        cmd.arg("bad").arg(cap).arg(rate);
        if !opt.is_empty() {
            cmd.arg(opt).arg(1);
        }
        assert!(cmd.query::<Value>(&mut c).is_err(), "{cap} {rate} {opt}");
    }
    let n: i64 = redis::cmd("EXISTS")
        .arg("{bad}.meta")
        .arg("{bad.0}.bits")
        .query(&mut c)
        .unwrap();
    assert_eq!(n, 0);
}

#[test]
fn union_dump_and_load_and_their_replication() {
    if !available() {
        return;
    }
    let (primary, replica) = support::primary_and_replica();
    let other = with_module(&[]);
    let make = |name: &str, seed: u128| {
        RedisBloomFilter::builder(&primary.url(), name)
            .capacity(100_000)
            .seed(seed)
            .shard_bytes(1 << 16) // several shards, and dump pieces that end at them
            .create()
            .unwrap()
    };
    let (mut a, mut b, _) = (make("a", 5), make("b", 5), make("c", 6));
    let (ka, kb) = (urls(0, 20_000), urls(50_000, 20_000));
    a.insert_if_absent_many(&ka).unwrap();
    b.insert_if_absent_many(&kb).unwrap();
    let mut c = primary.conn();
    let set: i64 = redis::cmd("BB.UNION")
        .arg("a")
        .arg("b")
        .query(&mut c)
        .unwrap();
    assert!(set > 0);
    assert!(a.contains_many(&kb).unwrap().iter().all(|&p| p));
    let again: i64 = redis::cmd("BB.UNION")
        .arg("a")
        .arg("b")
        .query(&mut c)
        .unwrap();
    assert_eq!(again, 0);
    let e = cmd_err(&mut c, redis::cmd("BB.UNION").arg("a").arg("c"));
    assert!(e.contains("differ"), "{e}");

    // Dumped piece by piece, loaded on another server under another name: the same bits.
    let mut o = other.conn();
    let mut cursor = 0i64;
    let mut pieces = 0;
    loop {
        let (next, data): (i64, Vec<u8>) = redis::cmd("BB.DUMP")
            .arg("a")
            .arg(cursor)
            .query(&mut c)
            .unwrap();
        if next == 0 {
            break;
        }
        let _: () = redis::cmd("BB.LOAD")
            .arg("moved")
            .arg(next)
            .arg(data)
            .query(&mut o)
            .unwrap();
        cursor = next;
        pieces += 1;
    }
    assert!(pieces > 3, "{pieces} pieces");
    let mut moved = RedisBloomFilter::open(&other.url(), "moved").unwrap();
    assert!(moved.uses_module());
    let (la, lm) = (a.to_local().unwrap(), moved.to_local().unwrap());
    assert_eq!((la.count_ones(), la.seed()), (lm.count_ones(), lm.seed()));
    assert!(lm.union(&la).is_ok() && lm.count_ones() == la.count_ones());
    // Loading over an existing filter, or a piece that does not fit, is refused.
    let (_, head): (i64, Vec<u8>) = redis::cmd("BB.DUMP").arg("a").arg(0).query(&mut c).unwrap();
    let e = cmd_err(
        &mut o,
        redis::cmd("BB.LOAD").arg("moved").arg(1).arg(&head[..]),
    );
    assert!(e.contains("exists"), "{e}");
    let e = cmd_err(
        &mut o,
        redis::cmd("BB.LOAD")
            .arg("moved")
            .arg(2)
            .arg(&[0u8; 100][..]),
    );
    assert!(e.contains("does not fit"), "{e}");
    let e = cmd_err(
        &mut o,
        redis::cmd("BB.LOAD")
            .arg("new")
            .arg(1)
            .arg(&b"not a header"[..]),
    );
    assert!(e.contains("not a dump's first piece"), "{e}");

    // BB.CREATE, the union and a load on the primary reached the replica exactly.
    let _: () = redis::cmd("BB.CREATE")
        .arg("d")
        .arg(1000)
        .arg(0.01)
        .query(&mut c)
        .unwrap();
    let _: () = redis::cmd("BB.LOAD")
        .arg("e")
        .arg(1)
        .arg(&head[..])
        .query(&mut c)
        .unwrap();
    let n: i64 = redis::cmd("WAIT").arg(1).arg(5000).query(&mut c).unwrap();
    assert_eq!(n, 1);
    assert_eq!(support::digest(&primary), support::digest(&replica));
}
