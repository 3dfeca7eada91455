//! The file-backed `ExpiringBloomFilter` between OS processes: two processes racing one file
//! through many epoch changes (and the sweeps they trigger) with clocks 0.7 s apart, and on
//! their real clocks across epoch changes, a
//! process whose clock is a year ahead, a writer killed with SIGKILL, a file reopened two
//! months after its last use, and the file reopened, sealed, refused by the other kinds'
//! readers, and damaged.
//!
//! The workers are this test binary itself, started again with `BB_CHILD` set.
#![cfg(unix)]

use blockbloom::{Arrival, BloomFilter, Error, ExpiringBloomFilter};
use blockbloom_workload::procs::{
    assert_none_lost, kill_after_returned, race, spawn_child, temp_dir, wins,
};
use blockbloom_workload::url;
use std::io::Write;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const HOUR: Duration = Duration::from_secs(3600);
/// The race's keys: 40 chunks of 500.
const IDS: u64 = 20_000;
/// The race's time moves on by this much per chunk: a third of an epoch (15 min of an hour
/// window), so the 40 chunks cross 13 epoch changes and as many sweeps.
const STEP: Duration = Duration::from_secs(300);

fn open(path: &Path) -> Result<ExpiringBloomFilter, Error> {
    open_with_window(path, HOUR)
}

fn open_with_window(path: &Path, window: Duration) -> Result<ExpiringBloomFilter, Error> {
    ExpiringBloomFilter::builder()
        .expire_after(window)
        .capacity(IDS)
        .fpr(0.01)
        .open_file(path)
}

/// The race's time for chunk `c` on worker `me`'s clock (0.7 s ahead per worker): every
/// third chunk straddles an epoch change, worker 0 at its end and worker 1 past it.
fn race_time(c: usize, me: usize) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_700_000_000) - Duration::from_millis(350)
        + STEP * c as u32
        + Duration::from_millis(700) * me as u32
}

/// The worker side. `race FILE DIR PROC PROCS`: `insert_if_absent_at` the race's chunks at
/// the race's times; `insert FILE`: insert URLs 0, 1, 2, … now and print `id N` after each
/// insert returned, until killed.
#[test]
fn child() {
    let Ok(role) = std::env::var("BB_CHILD") else {
        return; // a normal test run
    };
    let args: Vec<&str> = role.split(' ').collect();
    match args[0] {
        "race" => {
            let (file, dir) = (Path::new(args[1]), Path::new(args[2]));
            let (me, procs): (usize, usize) = (args[3].parse().unwrap(), args[4].parse().unwrap());
            let f = open(file).unwrap();
            race(
                &|u, c| f.insert_if_absent_at(u, race_time(c, me)),
                dir,
                me,
                procs,
                IDS,
            );
            f.close().unwrap();
        }
        "race-now" => {
            // The clock path (no `_at`): a 1 s window, 40 ms between chunks, so that the
            // race crosses real epoch changes (epochs of 667 ms).
            let (file, dir) = (Path::new(args[1]), Path::new(args[2]));
            let (me, procs): (usize, usize) = (args[3].parse().unwrap(), args[4].parse().unwrap());
            let f = open_with_window(file, Duration::from_secs(1)).unwrap();
            let (chunk, id) = (std::cell::Cell::new(usize::MAX), std::cell::Cell::new(0));
            let won_at = std::cell::RefCell::new(String::new());
            let claim = |u: &str, c: usize| {
                if chunk.replace(c) != c {
                    std::thread::sleep(Duration::from_millis(40));
                }
                let won = f.insert_if_absent(u);
                if won {
                    // `race` offers the ids in order: the win's id and when it returned.
                    let ns = SystemTime::now()
                        .duration_since(UNIX_EPOCH)
                        .unwrap()
                        .as_nanos();
                    won_at
                        .borrow_mut()
                        .push_str(&format!("{} {ns}\n", id.get()));
                }
                id.set(id.get() + 1);
                won
            };
            race(&claim, dir, me, procs, IDS);
            std::fs::write(dir.join(format!("won-at.{me}")), won_at.take()).unwrap();
            f.close().unwrap();
        }
        "ahead" => {
            // A host whose clock runs a year ahead.
            let f = ExpiringBloomFilter::open_file_existing(args[1]).unwrap();
            let year_ahead = SystemTime::now() + 365 * 24 * HOUR;
            assert!(f.insert_if_absent_at("from the host a year ahead", year_ahead));
            let mut found = [false; 1];
            f.insert_if_absent_many_at(&["ahead-many"], year_ahead, &mut found);
            f.close().unwrap();
        }
        "insert" => {
            let f = ExpiringBloomFilter::open_file_existing(args[1]).unwrap();
            let mut out = std::io::stdout().lock();
            for i in 0.. {
                f.insert(&url(i));
                writeln!(out, "id {i}").unwrap();
                out.flush().unwrap();
            }
        }
        other => panic!("unknown child role {other}"),
    }
}

/// Runs `procs` worker processes of `role` on `file` (their win records in `dir`) at once,
/// and waits for them all to succeed.
fn race_workers(role: &str, file: &Path, dir: &Path, procs: usize) {
    let children: Vec<_> = (0..procs)
        .map(|p| {
            let role = format!("{role} {} {} {p} {procs}", file.display(), dir.display());
            spawn_child(&role, Stdio::null())
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success(), "a worker failed");
    }
}

/// Two processes offer the same new URLs in the same order, meeting before every 500,
/// while their time crosses 13 epoch changes: no URL is won twice, and afterwards the URLs
/// of the last window are all seen and those older than 1.25 windows forgotten.
#[test]
fn two_processes_race_one_expiring_file_across_epoch_changes() {
    const PROCS: usize = 2;
    let dir = temp_dir("exp-race");
    let file = dir.join("seen.bloom");
    race_workers("race", &file, &dir, PROCS);
    let wins = wins(&dir, PROCS, IDS);
    let twice = wins.iter().filter(|&&w| w > 1).count();
    let once = wins.iter().filter(|&&w| w == 1).count();
    assert_eq!(twice, 0, "{twice} URLs were fetched by two processes");
    assert!(once as f64 >= IDS as f64 * 0.985, "only {once} URLs won");

    // Sealed by the last worker: a snapshot of an expiring filter, refused by the others.
    let f = ExpiringBloomFilter::load(&file).unwrap();
    assert!(matches!(
        BloomFilter::load(&file),
        Err(Error::InvalidSnapshot(_))
    ));
    let last = 39;
    let now = race_time(last, 0);
    let chunk_of = |i: u64| i as usize / 500;
    // Inserted (won) within the window before `now` (12 chunks = 1 h): all seen. A URL
    // that nobody won was never inserted (a false positive when offered, at most 1.5%
    // above): the stamps that covered it belong to older keys and may be dead by `now`.
    let recent: Vec<u64> = (0..IDS)
        .filter(|&i| chunk_of(i) + 12 > last && wins[i as usize] == 1)
        .collect();
    let never_won = (0..IDS)
        .filter(|&i| chunk_of(i) + 12 > last && wins[i as usize] == 0)
        .count();
    let missing = recent
        .iter()
        .filter(|&&i| !f.contains_at(&url(i), now))
        .count();
    assert_eq!(missing, 0, "false negatives inside the window");
    // Inserted more than 1.25 windows (15 chunks) before `now`: forgotten.
    let old: Vec<u64> = (0..IDS).filter(|&i| chunk_of(i) + 15 < last).collect();
    let kept = old.iter().filter(|&&i| f.contains_at(&url(i), now)).count();
    assert!(
        kept < old.len() / 50,
        "{kept} of {} old URLs still seen",
        old.len()
    );
    println!("2 processes, 13 epoch changes: {once} URLs won once, 0 twice, 0 missing of {} won in the window ({never_won} there won by nobody), {kept}/{} old kept", recent.len(), old.len());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The same race on the clock path (`insert_if_absent`, each process reading its wall
/// clock through its counter) in real time across at least two epoch changes: no URL is
/// won twice within its window (a worker stalled past the 1 s window by a loaded machine
/// may win a URL again, later than the window).
#[test]
fn two_processes_race_one_expiring_file_on_the_clock_across_epoch_changes() {
    const PROCS: usize = 2;
    let dir = temp_dir("exp-race-now");
    let file = dir.join("seen.bloom");
    let window = blockbloom::ExpiryWindow::new(Duration::from_secs(1)).unwrap();
    let first = window.epoch_of(SystemTime::now());
    race_workers("race-now", &file, &dir, PROCS);
    let changes = window.epoch_of(SystemTime::now()) - first;
    assert!(changes >= 2, "the race crossed {changes} epoch changes");
    let mut won_at: Vec<Vec<u128>> = vec![Vec::new(); IDS as usize];
    for p in 0..PROCS {
        let text = std::fs::read_to_string(dir.join(format!("won-at.{p}"))).unwrap();
        for line in text.lines() {
            let (id, ns) = line.split_once(' ').unwrap();
            won_at[id.parse::<usize>().unwrap()].push(ns.parse().unwrap());
        }
    }
    let second = |t: &Vec<u128>| (t.len() > 1).then(|| t[0].abs_diff(t[1]));
    let within = won_at
        .iter()
        .filter_map(second)
        .filter(|&d| d < 1_000_000_000)
        .count();
    let twice = won_at.iter().filter(|t| t.len() > 1).count();
    let won = won_at.iter().filter(|t| !t.is_empty()).count();
    assert_eq!(
        within, 0,
        "{within} URLs were won by both processes within the window"
    );
    assert!(won as f64 >= IDS as f64 * 0.985, "only {won} URLs won");
    println!("2 processes on the clock, {changes} epoch changes: {won} URLs won, {twice} of them twice (later than the window)");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A writer killed with SIGKILL mid-stream: every insert it reported is in the file.
#[test]
fn sigkill_loses_nothing_that_returned() {
    let dir = temp_dir("exp-kill");
    let file = dir.join("seen.bloom");
    open(&file).unwrap().close().unwrap();
    let returned = kill_after_returned(&format!("insert {}", file.display()), 10_000);
    assert_eq!(ExpiringBloomFilter::load(&file).unwrap_err(), Error::InUse);
    let f = ExpiringBloomFilter::open_file_existing(&file).unwrap();
    assert_none_lost(&returned, |u| f.contains(u));
    f.close().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Reopened, the stamps and the clock are the file's; another window, capacity or kind is
/// refused; a damaged window is an error, not a filter.
#[test]
fn reopening_keeps_stamps_and_refuses_what_it_is_not() {
    let dir = temp_dir("exp-reopen");
    let file = dir.join("seen.bloom");
    let t = SystemTime::now() - 3 * HOUR; // a replay: at most the machine's clock
    let f = open(&file).unwrap();
    assert!(f.insert_if_absent_at("a", t));
    // A second handle (as another process would) sees the insert and the clock.
    let g = open(&file).unwrap();
    assert!(!g.insert_if_absent_at("a", t + HOUR / 2));
    assert!(g.insert_if_absent_at("a", t + g.forgotten_after()));
    drop((f, g));

    let other_window = ExpiringBloomFilter::builder()
        .expire_after(2 * HOUR)
        .capacity(IDS)
        .open_file(&file);
    assert!(
        matches!(
            other_window,
            Err(Error::Conflict {
                what: "expire_after",
                ..
            })
        ),
        "{other_window:?}"
    );
    let other_capacity = ExpiringBloomFilter::builder()
        .expire_after(HOUR)
        .capacity(IDS + 1)
        .open_file(&file);
    assert!(matches!(
        other_capacity,
        Err(Error::Conflict {
            what: "capacity",
            ..
        })
    ));
    // Sized for the worst burst, not for the steady arrival it was made for: named as such,
    // and the file's own parameters say which it is.
    let other_arrival = ExpiringBloomFilter::builder()
        .expire_after(HOUR)
        .capacity(IDS)
        .arrival(Arrival::WorstBurst)
        .open_file(&file);
    assert!(
        matches!(&other_arrival, Err(Error::Conflict { what: "arrival", file, requested })
            if file == "Steady" && requested == "WorstBurst"),
        "{other_arrival:?}"
    );
    assert_eq!(
        ExpiringBloomFilter::open_file_existing(&file)
            .unwrap()
            .arrival(),
        Arrival::Steady
    );
    assert!(matches!(
        BloomFilter::open_file_existing(&file),
        Err(Error::Conflict { what: "kind", .. })
    ));
    let plain = dir.join("plain.bloom");
    BloomFilter::open_file(&plain, 1000, 0.01)
        .unwrap()
        .close()
        .unwrap();
    assert!(matches!(
        ExpiringBloomFilter::open_file_existing(&plain),
        Err(Error::Conflict { what: "kind", .. })
    ));

    // The window word (line 0, word 2) zeroed: refused on open and on load.
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[128 + 16..128 + 24].fill(0);
    std::fs::write(&file, &bytes).unwrap();
    assert!(matches!(
        ExpiringBloomFilter::open_file_existing(&file),
        Err(Error::InvalidSnapshot(_))
    ));
    assert!(ExpiringBloomFilter::load(&file).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A process whose clock runs a year ahead (guarantee 6) shares the file with one whose
/// clock is right: the keys the first inserted a moment ago stay seen, and the other's
/// inserts are seen now too. Without the guarantee every key would be forgotten.
#[test]
fn a_process_a_year_ahead_forgets_nothing_for_the_others() {
    let dir = temp_dir("exp-ahead");
    let file = dir.join("seen.bloom");
    let f = open(&file).unwrap();
    let mine: Vec<String> = (0..1_000).map(url).collect();
    assert!(mine.iter().all(|u| f.insert_if_absent(u)));
    let ahead = spawn_child(&format!("ahead {}", file.display()), Stdio::null())
        .wait()
        .unwrap();
    assert!(ahead.success(), "the worker a year ahead failed");
    let kept = mine.iter().filter(|u| f.contains(u.as_str())).count();
    assert_eq!(
        kept,
        mine.len(),
        "keys inserted a moment ago were forgotten"
    );
    assert!(f.contains("from the host a year ahead") && f.contains("ahead-many"));
    // Its keys are seen a whole window from now, then forgotten on time.
    let later = SystemTime::now();
    assert!(!f.insert_if_absent_at("from the host a year ahead", later));
    drop(f);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A machine that really was off for two months reopens its state: what is older than the
/// window is forgotten at once, what is inside it kept.
#[test]
fn a_state_reopened_two_months_later_forgets_what_is_older_than_the_window() {
    let dir = temp_dir("exp-two-months");
    let file = dir.join("seen.bloom");
    let day = 24 * HOUR;
    let month = ExpiringBloomFilter::builder()
        .expire_after(30 * day)
        .capacity(IDS)
        .open_file(&file)
        .unwrap();
    let before = SystemTime::now() - 61 * day;
    assert!(month.insert_if_absent_at("two months ago", before));
    assert!(month.insert_if_absent_at("last week", SystemTime::now() - 7 * day));
    month.close().unwrap();
    let again = ExpiringBloomFilter::open_file_existing(&file).unwrap();
    assert!(!again.contains("two months ago"));
    assert!(again.contains("last week"));
    assert!(again.insert_if_absent("two months ago"));
    drop(again);
    std::fs::remove_dir_all(&dir).unwrap();
}
