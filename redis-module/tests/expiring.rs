//! The module's expiring type: an expiring filter created where the module is loaded keeps
//! the local `ExpiringBloomFilter`'s planes in its shards. Against real servers: the local
//! filter's answers (false positives included) and estimates at the same times across
//! epoch changes, jumps and a clock stepping back; one winner between racing handles; the
//! AOF replayed after a SIGKILL and a replica holding the same bytes; a lost shard, a
//! module unloaded, and the Functions' generations where the module is not wanted.

mod support;

use std::time::{Duration, SystemTime};

use blockbloom::ExpiringBloomFilter;
use blockbloom_redis::{Error, RedisExpiringBloomFilter};
use blockbloom_workload::urls;
use support::{available, with_module};

const WINDOW: Duration = Duration::from_secs(3);
const SEED: u128 = 0x005e_ed0f_7e57;

fn local(capacity: u64) -> ExpiringBloomFilter {
    ExpiringBloomFilter::builder()
        .capacity(capacity)
        .fpr(0.01)
        .expire_after(WINDOW)
        .seed(SEED)
        .build()
        .unwrap()
}

fn shared(url: &str, name: &str, capacity: u64) -> RedisExpiringBloomFilter {
    RedisExpiringBloomFilter::builder(url, name)
        .capacity(capacity)
        .expire_after(WINDOW)
        .seed(SEED)
        .shard_bytes(4096) // several shards
        .create_expiring()
        .unwrap()
}

/// Times from 200 windows ago: half-epoch steps, a jump past the sweep margin, a clock
/// stepping back, steps again.
fn times() -> Vec<SystemTime> {
    let start = SystemTime::now() - 200 * WINDOW;
    let step = |i: u32| WINDOW / 6 * i;
    let mut t: Vec<SystemTime> = (0..30).map(|i| start + step(i)).collect();
    let jumped = start + 80 * WINDOW;
    t.extend((0..12).map(|i| jumped + step(i)));
    t.push(jumped); // back
    t.extend((0..6).map(|i| jumped + 3 * WINDOW + step(i)));
    t
}

#[test]
fn the_modules_expiring_type_answers_as_the_local_filter() {
    if !available() {
        return;
    }
    let s = with_module(&[]);
    let capacity = 3_000;
    let (mut f, l) = (shared(&s.url(), "x", capacity), local(capacity));
    assert!(f.uses_module());
    assert!(f.num_shards() > 1);
    assert_eq!(
        (f.num_lines(), f.num_hashes()),
        (l.num_lines(), l.num_hashes())
    );
    assert_eq!(f.window().epoch(), l.epoch());
    let keys = urls(0, 4_000);
    let mut new = 0;
    for (round, t) in times().into_iter().enumerate() {
        // A rolling third of the keys: repeats, returns after the window, and new ones.
        let batch = &keys[(round * 300) % 3_000..][..1_000];
        let want: Vec<bool> = batch.iter().map(|k| l.insert_if_absent_at(k, t)).collect();
        assert_eq!(
            f.insert_if_absent_many_at(batch, t).unwrap(),
            want,
            "round {round}"
        );
        new += want.iter().filter(|&&n| n).count();
        let probe = &keys[((round * 700) % 3_000)..][..1_000];
        let seen: Vec<bool> = probe.iter().map(|k| l.contains_at(k, t)).collect();
        assert_eq!(f.contains_many_at(probe, t).unwrap(), seen, "round {round}");
        if round % 10 == 0 {
            let (ours, theirs) = (f.estimated_fpr_at(t).unwrap(), l.estimated_fpr_at(t));
            assert!(
                (ours - theirs).abs() <= 1e-9 * theirs.max(1e-12),
                "{ours} {theirs}"
            );
        }
    }
    // Renewing: `insert` keeps a key through the next window.
    let t = *times().last().unwrap();
    f.insert_many_at(&keys[..10], t).unwrap();
    let later = t + WINDOW * 9 / 10;
    assert!(f
        .contains_many_at(&keys[..10], later)
        .unwrap()
        .iter()
        .all(|&p| p));
    assert!(new > 3_000, "{new} new answers");
}

/// After a pause of 56, 60 or 176 epochs the shards' unswept words in the caller's plane
/// carry the label of the epoch four after its own (label and plane come round every 60):
/// the first write must see the lines as the clock's move sweeps them, not refuse the
/// shard as damaged. Epochs a whole number apart, so the same on any date.
#[test]
fn a_write_after_a_long_pause_answers_and_is_not_taken_for_damage() {
    if !available() {
        return;
    }
    let s = with_module(&[]);
    let capacity = 3_000;
    let (mut f, l) = (shared(&s.url(), "pause", capacity), local(capacity));
    let epoch = l.epoch();
    let mut t = SystemTime::now() - 200 * WINDOW;
    let keys = urls(0, 12_000);
    for (round, pause) in [0u32, 56, 60, 176].into_iter().enumerate() {
        t += epoch * pause;
        let batch = &keys[round * 3_000..][..3_000];
        let want: Vec<bool> = batch.iter().map(|k| l.insert_if_absent_at(k, t)).collect();
        assert_eq!(
            f.insert_if_absent_many_at(batch, t).unwrap(),
            want,
            "after {pause} epochs"
        );
        let seen: Vec<bool> = keys.iter().map(|k| l.contains_at(k, t)).collect();
        assert_eq!(f.contains_many_at(&keys, t).unwrap(), seen, "after {pause}");
    }
}

#[test]
fn racing_handles_have_one_winner_per_new_key() {
    if !available() {
        return;
    }
    let s = with_module(&[]);
    let f = shared(&s.url(), "race", 40_000);
    let keys = urls(0, 20_000);
    let t0 = SystemTime::now() - 10 * WINDOW;
    let won: Vec<usize> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..3)
            .map(|i| {
                let mut g = f.try_clone().unwrap();
                let keys = &keys;
                sc.spawn(move || {
                    let mut won = vec![0usize; keys.len()];
                    // Each thread's clock a third of a second apart, across epoch changes.
                    for (c, chunk) in keys.chunks(500).enumerate() {
                        let t = t0 + Duration::from_millis(100 * c as u64 + 333 * i);
                        for (j, n) in g
                            .insert_if_absent_many_at(chunk, t)
                            .unwrap()
                            .iter()
                            .enumerate()
                        {
                            won[c * 500 + j] += usize::from(*n);
                        }
                    }
                    won
                })
            })
            .collect();
        let all: Vec<Vec<usize>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        (0..keys.len())
            .map(|k| all.iter().map(|w| w[k]).sum())
            .collect()
    });
    assert!(won.iter().all(|&w| w <= 1), "a key won twice");
    assert!(won.iter().filter(|&&w| w == 1).count() > 19_000);
}

#[test]
fn the_aof_after_a_kill_and_a_replica_hold_the_same_filter() {
    if !available() {
        return;
    }
    let aof = ["--appendonly", "yes", "--appendfsync", "always"];
    let mut s = with_module(&aof);
    let mut f = shared(&s.url(), "aof", 5_000);
    let keys = urls(0, 5_000);
    for (i, t) in times().into_iter().enumerate() {
        f.insert_if_absent_many_at(&keys[(i * 100) % 4_000..][..1_000], t)
            .unwrap();
    }
    let t = *times().last().unwrap();
    let before = f.contains_many_at(&keys, t).unwrap();
    let bytes = |s: &support::Server| -> Vec<Vec<u8>> {
        (0..f.num_shards())
            .map(|i| {
                redis::cmd("GET")
                    .arg(format!("{{aof.{i}}}.bits"))
                    .query(&mut s.conn())
                    .unwrap()
            })
            .collect()
    };
    let shards = bytes(&s);
    s.kill();
    s.restart();
    assert_eq!(bytes(&s), shards, "the AOF replayed other bytes");
    let mut g = RedisExpiringBloomFilter::open(&s.url(), "aof").unwrap();
    assert!(g.uses_module());
    assert_eq!(g.contains_many_at(&keys, t).unwrap(), before);

    let (primary, replica) = support::primary_and_replica();
    let mut p = shared(&primary.url(), "rep", 5_000);
    for (i, t) in times().into_iter().enumerate() {
        p.insert_if_absent_many_at(&keys[(i * 100) % 4_000..][..1_000], t)
            .unwrap();
    }
    assert_eq!(p.wait_for_replicas(1, Duration::from_secs(10)).unwrap(), 1);
    assert_eq!(support::digest(&primary), support::digest(&replica));
}

#[test]
fn a_lost_shard_a_module_unloaded_and_a_filter_without_the_module() {
    if !available() {
        return;
    }
    let s = with_module(&["--enable-module-command", "yes"]);
    let mut f = shared(&s.url(), "lost", 5_000);
    let keys = urls(0, 2_000);
    f.insert_if_absent_many(&keys).unwrap();
    let _: i64 = redis::cmd("DEL")
        .arg("{lost.0}.bits")
        .query(&mut s.conn())
        .unwrap();
    assert!(matches!(
        f.insert_if_absent_many(&keys),
        Err(Error::StateLost { .. })
    ));
    // Re-armed: the keys of the lost shard are new again, the others still seen.
    let again = f.insert_if_absent_many(&keys).unwrap();
    assert!(again.iter().any(|&n| n) && again.iter().any(|&n| !n));

    // Where the module is not wanted, an expiring filter keeps generations (the Functions).
    let mut g = RedisExpiringBloomFilter::builder(&s.url(), "gens")
        .capacity(1_000)
        .expire_after(WINDOW)
        .use_module(false)
        .create_expiring()
        .unwrap();
    assert!(!g.uses_module());
    assert_eq!(g.insert_if_absent_many(&keys[..10]).unwrap(), [true; 10]);
    // The module's commands refuse the generations' shard, and the plain commands ours.
    let refused: redis::RedisResult<Vec<u8>> = redis::cmd("BB.SHARD.XCONTAINS")
        .arg("{gens.0}.bits")
        .arg(&g.incarnation().to_be_bytes()[..])
        .arg("0")
        .arg(vec![0u8; 8])
        .query(&mut s.conn());
    assert!(refused.unwrap_err().to_string().contains("generations"));

    let mut plain =
        blockbloom_redis::RedisBloomFilter::create(&s.url(), "plain", 1_000, 0.01).unwrap();
    assert!(plain.uses_module());
    let _: () = redis::cmd("MODULE")
        .arg("UNLOAD")
        .arg("blockbloom")
        .query(&mut s.conn())
        .unwrap();
    let e = f.insert_if_absent_many(&keys).unwrap_err();
    assert!(matches!(e, Error::ModuleMissing(_)), "{e}");
    assert!(e.to_string().contains("--loadmodule"), "{e}");
    // A plain filter goes on through the Functions (the module's error did not parse: the
    // connection it came on is not reused).
    assert_eq!(plain.insert_if_absent_many(&keys[..3]).unwrap(), [true; 3]);
    assert!(!plain.uses_module());
}

#[test]
fn a_damaged_clock_line_or_an_absurd_epoch_is_refused_and_nothing_written() {
    if !available() {
        return;
    }
    let s = with_module(&[]);
    let mut f = shared(&s.url(), "dmg", 2_000);
    let keys = urls(0, 500);
    f.insert_if_absent_many(&keys).unwrap();
    let shard = "{dmg.0}.bits";
    let mut c = s.conn();
    let get =
        |c: &mut redis::Connection| -> Vec<u8> { redis::cmd("GET").arg(shard).query(c).unwrap() };
    // An epoch no time has, as a replicated write would carry it.
    let mut head = f.incarnation().to_be_bytes().to_vec();
    head.extend(u64::MAX.to_le_bytes());
    let before = get(&mut c);
    let e = redis::cmd("BB.SHARD.XAPPLY")
        .arg(shard)
        .arg(head)
        .arg(vec![1u8; 8])
        .query::<redis::Value>(&mut c)
        .unwrap_err();
    assert!(e.to_string().contains("epoch"), "{e}");
    assert_eq!(get(&mut c), before);
    // One byte of the newest epoch flipped: every call refused with the reason, no write.
    let mut flipped = before.clone();
    flipped[72] ^= 0x10;
    let _: () = redis::cmd("SETRANGE")
        .arg(shard)
        .arg(72)
        .arg(&flipped[72..73])
        .query(&mut c)
        .unwrap();
    for r in [
        f.insert_if_absent_many(&keys).map(drop),
        f.contains_many(&keys).map(drop),
        f.estimated_fpr().map(drop),
    ] {
        let e = r.unwrap_err().to_string();
        assert!(e.contains("damaged"), "{e}");
    }
    assert_eq!(get(&mut c), flipped);
}

#[test]
fn a_cluster_with_the_module_holds_the_expiring_type_across_its_nodes() {
    if !available() {
        return;
    }
    let so = support::module_path();
    let nodes = support::common::cluster_with(None, &["--loadmodule", &so]);
    let capacity = 20_000;
    let mut f = RedisExpiringBloomFilter::builder(&nodes[0].url(), "xc")
        .capacity(capacity)
        .expire_after(WINDOW)
        .seed(SEED)
        .shard_bytes(4096)
        .cluster()
        .create_expiring()
        .unwrap();
    assert!(f.uses_module() && f.num_shards() > 10);
    let l = local(capacity);
    let keys = urls(0, 30_000);
    for (round, t) in times().into_iter().enumerate().step_by(4) {
        let batch = &keys[(round * 1_000) % 20_000..][..10_000];
        let want: Vec<bool> = batch.iter().map(|k| l.insert_if_absent_at(k, t)).collect();
        assert_eq!(
            f.insert_if_absent_many_at(batch, t).unwrap(),
            want,
            "round {round}"
        );
    }
    // The shards are spread: each node holds some, and together every one.
    let per_node: Vec<usize> = nodes
        .iter()
        .map(|s| {
            let k: Vec<String> = redis::cmd("KEYS")
                .arg("{xc.*")
                .query(&mut s.conn())
                .unwrap();
            k.len()
        })
        .collect();
    assert!(per_node.iter().all(|&n| n > 0), "{per_node:?}");
    assert_eq!(per_node.iter().sum::<usize>() as u64, f.num_shards());
}
