//! Harness for tests that run several OS processes: a fresh temporary directory, the test
//! binary started again as a worker, a barrier through files, and the chunked race that
//! every file-backed filter's multi-process test runs.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::url;

/// An empty directory `blockbloom-NAME-PID` under the system's temporary directory (an
/// earlier one of that name is removed).
pub fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("blockbloom-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Starts this test binary again as a worker: it runs only the test named `child`, with
/// `role` (the worker's job and its arguments) in the environment variable `BB_CHILD`.
pub fn spawn_child(role: &str, stdout: Stdio) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env("BB_CHILD", role)
        .stdout(stdout)
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// A barrier between processes: each writes its marker for round `round` in `dir`, then
/// waits (two minutes at most) for everyone's.
pub fn barrier(dir: &Path, round: usize, me: usize, procs: usize) {
    std::fs::write(dir.join(format!("bar.{round}.{me}")), b"").unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !(0..procs).all(|p| dir.join(format!("bar.{round}.{p}")).exists()) {
        assert!(Instant::now() < deadline, "barrier {round} timed out");
        std::thread::yield_now();
    }
}

/// A worker's race: for each chunk of 500 of the ids `0..ids`, meet the others, then offer
/// the chunk's URLs to `claim(url, chunk number)` in the same order as everyone; write the
/// ids won to `dir/won.ME`.
pub fn race(claim: &dyn Fn(&str, usize) -> bool, dir: &Path, me: usize, procs: usize, ids: u64) {
    let mut won = String::new();
    for (c, chunk) in (0..ids).collect::<Vec<_>>().chunks(500).enumerate() {
        barrier(dir, c, me, procs);
        for &i in chunk {
            if claim(&url(i), c) {
                won.push_str(&format!("{i}\n"));
            }
        }
    }
    std::fs::write(dir.join(format!("won.{me}")), won).unwrap();
}

/// How many of `procs` workers won each of the ids `0..ids` (their `won.P` files in `dir`).
pub fn wins(dir: &Path, procs: usize, ids: u64) -> Vec<u8> {
    let mut wins = vec![0u8; ids as usize];
    for p in 0..procs {
        let text = std::fs::read_to_string(dir.join(format!("won.{p}"))).unwrap();
        for line in text.lines() {
            wins[line.parse::<usize>().unwrap()] += 1;
        }
    }
    wins
}

/// Starts the worker `role` (which prints `id N` after each insert of URL `N` returned),
/// reads its output until `n` inserts returned, kills it with SIGKILL and returns their ids.
pub fn kill_after_returned(role: &str, n: usize) -> Vec<u64> {
    use std::io::{BufRead, BufReader};
    let mut child = spawn_child(role, Stdio::piped());
    let mut returned = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        if let Some(id) = line.unwrap().strip_prefix("id ") {
            returned.push(id.parse::<u64>().unwrap());
            if returned.len() == n {
                child.kill().unwrap(); // SIGKILL
                break;
            }
        }
    }
    child.wait().unwrap();
    returned
}

/// Asserts that `contains` finds every URL of `returned` (inserts that returned before a
/// SIGKILL).
pub fn assert_none_lost(returned: &[u64], contains: impl Fn(&str) -> bool) {
    let lost = returned.iter().filter(|&&i| !contains(&url(i))).count();
    assert_eq!(
        lost,
        0,
        "{lost} of {} returned inserts lost",
        returned.len()
    );
}
