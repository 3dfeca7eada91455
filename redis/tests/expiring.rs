//! `RedisExpiringBloomFilter` against real redis-servers: the answers of its rule
//! (`common/stamps.rs`) for the same keys and times, every one, false positives included, generations freed by the server, a race between two processes
//! across epoch changes with clocks apart, loss detection and refusals.
mod common;

use blockbloom::Arrival;
use blockbloom_redis::{Error, RedisBloomFilter, RedisExpiringBloomFilter};
use blockbloom_workload::{url, SplitMix64};
use common::stamps::StampModel;
use common::Server;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const DAY: Duration = Duration::from_secs(86_400);

#[test]
fn same_answers_as_its_rule_for_the_same_keys_and_times() {
    same_answers_as_the_rule(true);
}

#[test]
fn same_answers_with_the_function_alone() {
    same_answers_as_the_rule(false);
}

/// Sized for the worst burst (twice the keys live); opened for steady arrival, refused.
#[test]
fn arrival_sizes_it_for_the_keys_live_at_once() {
    if !common::available() {
        return;
    }
    let s = Server::start();
    let b = || {
        RedisExpiringBloomFilter::builder(&s.url(), "burst")
            .capacity(10_000)
            .expire_after(DAY)
    };
    let r = b().arrival(Arrival::WorstBurst).create_expiring().unwrap();
    let local = |a| StampModel::new(10_000, 0.01, 0, DAY, a);
    assert_eq!(r.num_lines(), local(Arrival::WorstBurst).num_lines());
    assert!(r.num_lines() > local(Arrival::Steady).num_lines());
    assert_eq!(r.arrival(), Arrival::WorstBurst);
    assert_eq!(b().open_expiring().unwrap().arrival(), Arrival::WorstBurst);
    let steady = b().open_or_create_expiring();
    assert!(
        matches!(&steady, Err(Error::Conflict { field: "arrival", stored, requested })
            if stored == "WorstBurst" && requested == "Steady"),
        "{steady:?}"
    );
    let steady = RedisExpiringBloomFilter::builder(&s.url(), "steady")
        .capacity(10_000)
        .expire_after(DAY)
        .create_expiring()
        .unwrap();
    assert_eq!(steady.arrival(), Arrival::Steady);
    assert_eq!(steady.num_lines(), local(Arrival::Steady).num_lines());
}

/// The calls of `FCALL` the server has run.
fn function_calls(s: &Server) -> u64 {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut s.conn())
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("cmdstat_fcall:calls="))
        .map_or(0, |v| v.split(',').next().unwrap().parse().unwrap())
}

/// `two_steps`: with the default two steps (`direct`), else every call a function call.
fn same_answers_as_the_rule(two_steps: bool) {
    if !common::available() {
        return;
    }
    let s = Server::start();
    // Small, so that it fills up: false positives must agree too (they do only if every
    // key's slots are the same). Small shards: keys spread over several.
    let (cap, fpr, seed) = (3_000, 0.01, 0x5eed);
    let mut r = RedisExpiringBloomFilter::builder(&s.url(), "x")
        .capacity(cap)
        .fpr(fpr)
        .seed(seed)
        .expire_after(DAY)
        .shard_bytes(4096)
        .direct_bitfield(two_steps)
        .create_expiring()
        .unwrap();
    let mut local = StampModel::new(cap, fpr, seed, DAY, Arrival::Steady);
    assert!(r.num_shards() > 1 && r.num_lines() == local.num_lines());
    let t0 = UNIX_EPOCH + Duration::from_secs(1_600_000_000);
    let mut rng = SplitMix64::new(7);
    let (mut ops, mut positives_of_strangers, mut strangers) = (0, 0, 0);
    // 16 steps of an eighth of a day: past two windows, 8 epoch changes.
    for step in 0..16u32 {
        let t = t0 + DAY / 8 * step;
        for _ in 0..8 {
            let keys: Vec<String> = (0..200).map(|_| url(rng.next_u64() % 12_000)).collect();
            match rng.next_u64() % 3 {
                0 => {
                    let got = r.insert_if_absent_many_at(&keys, t).unwrap();
                    let want: Vec<bool> = keys
                        .iter()
                        .map(|k| local.insert_if_absent(k.as_str(), t))
                        .collect();
                    assert!(got == want, "insert_if_absent at step {step} differs");
                }
                1 => {
                    r.insert_many_at(&keys, t).unwrap();
                    keys.iter().for_each(|k| local.insert(k.as_str(), t));
                }
                _ => {
                    let got = r.contains_many_at(&keys, t).unwrap();
                    let want: Vec<bool> =
                        keys.iter().map(|k| local.contains(k.as_str(), t)).collect();
                    assert!(got == want, "contains at step {step} differs");
                }
            }
            ops += keys.len();
        }
        // Keys never inserted: their answers are false positives, and must agree.
        let others: Vec<String> = (0..500).map(|i| format!("never:{step}:{i}")).collect();
        let got = r.contains_many_at(&others, t).unwrap();
        let want: Vec<bool> = others
            .iter()
            .map(|k| local.contains(k.as_str(), t))
            .collect();
        assert!(got == want, "false positives at step {step} differ");
        positives_of_strangers += got.iter().filter(|&&x| x).count();
        strangers += others.len();
    }
    eprintln!(
        "two steps {two_steps}: {ops} operations over 2 windows: every answer as the rule's \
         ({positives_of_strangers}/{strangers} false positives, the same ones)"
    );
    // Keys present answer from the read alone: no function call, nothing written (once a
    // read has seen the generation the inserts created).
    let t = t0 + DAY * 2;
    let keys: Vec<String> = (0..300).map(|i| format!("again:{i}")).collect();
    r.insert_many_at(&keys, t).unwrap();
    assert!(r.contains_many_at(&keys, t).unwrap().iter().all(|&x| x));
    let calls = function_calls(&s);
    assert!(r
        .insert_if_absent_many_at(&keys, t)
        .unwrap()
        .iter()
        .all(|&x| !x));
    assert!(r.contains_many_at(&keys, t).unwrap().iter().all(|&x| x));
    let used = function_calls(&s) - calls;
    eprintln!("two steps {two_steps}: {used} function calls for 600 answers of present keys");
    assert_eq!(used == 0, two_steps, "{used} function calls");
    assert!(
        positives_of_strangers > 0,
        "the filter never filled up: a weak test"
    );
}

#[test]
fn generations_are_freed_by_the_server_when_the_window_has_passed() {
    if !common::available() {
        return;
    }
    let s = Server::start();
    let w = Duration::from_secs(2);
    let mut f =
        RedisExpiringBloomFilter::open_or_create(&s.url(), "short", 10_000, 0.01, w).unwrap();
    let keys: Vec<String> = (0..2_000).map(url).collect();
    let start = Instant::now();
    assert!(f.insert_if_absent_many(&keys).unwrap().iter().all(|&x| x));
    assert!(
        f.insert_if_absent_many(&keys).unwrap().iter().all(|&x| !x),
        "within the window"
    );
    let gens = f.generation_keys().unwrap();
    assert!(!gens.is_empty());
    let mut c = s.conn();
    for g in &gens {
        let ttl: i64 = redis::cmd("PTTL").arg(g).query(&mut c).unwrap();
        // 4 epochs + the lag (2 epochs of 0.5 s) + 1 s, from its epoch's start.
        assert!(ttl > 0 && ttl <= 4_500, "{g}: PTTL {ttl}");
    }
    let used: i64 = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg(&gens[0])
        .query(&mut c)
        .unwrap();
    // No call after this: only the server can free the generations.
    std::thread::sleep(Duration::from_millis(5_000));
    let left: i64 = redis::cmd("EXISTS").arg(&gens).query(&mut c).unwrap();
    let keys_left: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut c).unwrap();
    eprintln!(
        "{} generation(s) of {used} bytes each after the inserts; {left} left {:?} later; keys: {keys_left:?}",
        gens.len(),
        start.elapsed()
    );
    assert_eq!(left, 0, "the server kept a generation");
    assert!(keys_left.iter().all(|k| !k.contains(".g.")));
    assert!(
        f.contains_many(&keys).unwrap().iter().all(|&x| !x),
        "forgotten"
    );
    assert!(
        f.insert_if_absent_many(&keys).unwrap().iter().all(|&x| x),
        "new again"
    );
}

/// Helper run as a child process by `two_processes_race_across_epoch_changes`.
#[test]
#[ignore = "helper: runs only as a child of two_processes_race_across_epoch_changes"]
fn expiring_race_child() {
    let Ok(url_) = std::env::var("BB_REDIS_URL") else {
        return;
    };
    let out = std::env::var("BB_OUT").unwrap();
    let n: u64 = std::env::var("BB_N").unwrap().parse().unwrap();
    let ahead = Duration::from_millis(std::env::var("BB_AHEAD_MS").unwrap().parse().unwrap());
    let two_steps = std::env::var("BB_TWO_STEPS").unwrap() == "1";
    let mut f = RedisExpiringBloomFilter::builder(&url_, "race")
        .direct_bitfield(two_steps)
        .open_expiring()
        .unwrap();
    let mut order: Vec<u64> = (0..n).collect();
    SplitMix64::new(99).shuffle(&mut order);
    let keys: Vec<String> = order.iter().map(|&i| url(i)).collect();
    let mut c = redis::Client::open(url_.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let mut won = String::new();
    for (round, chunk) in keys.chunks(50).enumerate() {
        let key = format!("race:round:{round}");
        let _: i64 = redis::cmd("INCR").arg(&key).query(&mut c).unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while redis::cmd("GET").arg(&key).query::<i64>(&mut c).unwrap() < 2 {
            assert!(Instant::now() < deadline, "the other process never came");
        }
        // This process's clock is `ahead` of the other's.
        let fresh = f
            .insert_if_absent_many_at(chunk, SystemTime::now() + ahead)
            .unwrap();
        for (j, new) in fresh.into_iter().enumerate() {
            if new {
                won.push_str(&format!("{}\n", order[round * 50 + j]));
            }
        }
    }
    std::fs::write(out, won).unwrap();
}

#[test]
fn two_processes_race_across_epoch_changes_with_clocks_apart() {
    race_across_epoch_changes(true);
}

#[test]
fn two_processes_race_with_the_function_alone() {
    race_across_epoch_changes(false);
}

/// `two_steps`: the processes use the default two steps, else the function alone.
fn race_across_epoch_changes(two_steps: bool) {
    if !common::available() {
        return;
    }
    let s = Server::start();
    let n = 20_000u64;
    let w = Duration::from_secs(1);
    RedisExpiringBloomFilter::builder(&s.url(), "race")
        .capacity(n)
        .fpr(0.001)
        .expire_after(w)
        .create_expiring()
        .unwrap();
    let exe = std::env::current_exe().unwrap();
    let outs: Vec<_> = (0..2).map(|i| s.dir.join(format!("won-{i}"))).collect();
    let start = Instant::now();
    let children: Vec<_> = outs
        .iter()
        .enumerate()
        .map(|(i, o)| {
            std::process::Command::new(&exe)
                .args(["--ignored", "--exact", "expiring_race_child", "--nocapture"])
                .env("BB_REDIS_URL", s.url())
                .env("BB_OUT", o)
                .env("BB_N", n.to_string())
                .env("BB_AHEAD_MS", if i == 0 { "0" } else { "700" })
                .env("BB_TWO_STEPS", if two_steps { "1" } else { "0" })
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let took = start.elapsed();
    let mut claimed = vec![0u8; n as usize];
    let mut per = Vec::new();
    for o in &outs {
        let text = std::fs::read_to_string(o).unwrap();
        per.push(text.lines().count());
        for l in text.lines() {
            claimed[l.parse::<usize>().unwrap()] += 1;
        }
    }
    let twice = claimed.iter().filter(|&&c| c > 1).count();
    let none = claimed.iter().filter(|&&c| c == 0).count();
    eprintln!(
        "two steps {two_steps}: {n} URLs raced in {took:?} (window 1 s, epochs of 250 ms, \
         clocks 0.7 s apart): won {per:?}, twice {twice}, by nobody {none}"
    );
    assert_eq!(twice, 0, "URLs fetched by two processes");
    assert!(none < 100, "{none} URLs won by nobody");
    assert!(per[0] > 0 && per[1] > 0, "both raced");
    // Two epochs long: at least one epoch change happened during it.
    assert!(
        took > w / 2,
        "the race did not cross an epoch change: a weak test"
    );
}

#[test]
fn a_lost_generation_is_detected_and_the_filter_re_armed() {
    if !common::available() {
        return;
    }
    let s = Server::start();
    let mut f =
        RedisExpiringBloomFilter::open_or_create(&s.url(), "lost", 1_000, 0.01, DAY).unwrap();
    let keys: Vec<String> = (0..100).map(url).collect();
    f.insert_many(&keys).unwrap();
    let before = f.incarnation();
    let gens = f.generation_keys().unwrap();
    let _: i64 = redis::cmd("DEL").arg(&gens).query(&mut s.conn()).unwrap();
    match f.contains_many(&keys) {
        Err(Error::StateLost { .. }) => {}
        other => panic!("expected StateLost, got {other:?}"),
    }
    assert_ne!(f.incarnation(), before);
    // Re-armed: the keys are new again (they were lost), and the filter works.
    assert!(f.insert_if_absent_many(&keys).unwrap().iter().all(|&x| x));
    assert!(f.contains_many(&keys).unwrap().iter().all(|&x| x));
}

#[test]
fn kinds_and_windows_are_checked_when_opening() {
    if !common::available() {
        return;
    }
    let s = Server::start();
    let u = s.url();
    RedisExpiringBloomFilter::open_or_create(&u, "e", 1_000, 0.01, DAY).unwrap();
    RedisBloomFilter::create(&u, "p", 1_000, 0.01).unwrap();
    let conflict = |r: Result<(), Error>| {
        matches!(
            r,
            Err(Error::Conflict {
                field: "expire_after",
                ..
            })
        )
    };
    assert!(conflict(RedisBloomFilter::open(&u, "e").map(drop)));
    assert!(conflict(
        RedisBloomFilter::open_or_create(&u, "e", 1_000, 0.01).map(drop)
    ));
    assert!(conflict(RedisExpiringBloomFilter::open(&u, "p").map(drop)));
    assert!(conflict(
        RedisExpiringBloomFilter::open_or_create(&u, "e", 1_000, 0.01, 2 * DAY).map(drop)
    ));
    assert!(conflict(
        RedisExpiringBloomFilter::builder(&u, "e")
            .expire_after(2 * DAY)
            .open_expiring()
            .map(drop)
    ));
    let f = RedisExpiringBloomFilter::open(&u, "e").unwrap();
    assert_eq!(f.expire_after(), DAY);
    assert!(matches!(
        RedisExpiringBloomFilter::builder(&u, "n")
            .capacity(10)
            .create_expiring(),
        Err(Error::Filter(blockbloom::Error::MissingWindow))
    ));
    assert!(RedisExpiringBloomFilter::delete(&u, "e").unwrap());
    assert!(matches!(
        RedisExpiringBloomFilter::open(&u, "e"),
        Err(Error::NotFound(_))
    ));
    // Generations have a TTL: a volatile-* policy would evict them.
    let v = Server::with_maxmemory("100mb", "volatile-lru");
    assert!(matches!(
        RedisExpiringBloomFilter::open_or_create(&v.url(), "e", 1_000, 0.01, DAY),
        Err(Error::EvictionPolicy(_))
    ));
    RedisBloomFilter::create(&v.url(), "plain", 1_000, 0.01).unwrap();
}

/// Two clients whose clocks differ by a year share a filter: the one ahead works at the
/// server's clock (plus the one second tolerated), so the keys the other inserted a moment
/// ago stay seen, in both modes; its own keys are seen from now on.
#[test]
fn a_client_a_year_ahead_forgets_nothing_for_the_others() {
    if !common::available() {
        return;
    }
    let s = Server::start();
    for two_steps in [true, false] {
        let name = format!("ahead-{two_steps}");
        let open = || {
            RedisExpiringBloomFilter::builder(&s.url(), &name)
                .capacity(10_000)
                .expire_after(DAY)
                .direct_bitfield(two_steps)
                .open_or_create_expiring()
                .unwrap()
        };
        let (mut right, mut ahead) = (open(), open());
        let keys: Vec<String> = (0..500).map(url).collect();
        let now = SystemTime::now();
        assert!(right
            .insert_if_absent_many_at(&keys, now)
            .unwrap()
            .iter()
            .all(|&x| x));
        let year = SystemTime::now() + 365 * DAY;
        let theirs: Vec<String> = (1_000..1_100).map(url).collect();
        let fresh = ahead.insert_if_absent_many_at(&theirs, year).unwrap();
        assert!(fresh.iter().all(|&x| x));
        // The keys inside their window are seen by the one ahead and by the one right.
        assert!(ahead
            .contains_many_at(&keys, year)
            .unwrap()
            .iter()
            .all(|&x| x));
        let seen = right.contains_many(&keys).unwrap();
        assert_eq!(
            seen.iter().filter(|&&x| x).count(),
            keys.len(),
            "two steps {two_steps}"
        );
        assert!(right.contains_many(&theirs).unwrap().iter().all(|&x| x));
        assert!(!right.insert_if_absent(&keys[7]).unwrap());
    }
}
