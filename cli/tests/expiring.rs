//! `dedup --expire-after`: lines forgotten after the window, across runs of one state; the
//! state records its window and refuses another; `stats` shows the window and the oldest
//! generation; `merge` refuses expiring states. (Runs at once on an expiring state:
//! `state.rs`.)

mod common;
use common::*;

/// Runs `args` on `input` with the CLI's test clock at `secs` seconds since 1970.
fn run_at(secs: f64, args: &[&str], input: &[u8]) -> std::process::Output {
    let mut cmd = bin();
    cmd.args(args)
        .env("BLOCKBLOOM_TEST_CLOCK", secs.to_string());
    run_command(cmd, input)
}

/// With a window of 2 s (epochs of (2 s + 1 s) / 3 = 1 s): runs within it print nothing, a
/// run 4 s after the first (four epochs) prints every line again. The runs' time is the test clock's, so
/// the test does not depend on how fast they finish (a loaded machine once took 2.7 s for
/// three runs).
#[test]
fn a_line_is_new_again_after_the_window_and_not_within_it() {
    let dir = temp_dir("expire");
    let state = dir.join("s.bloom");
    let state = state.to_str().unwrap();
    let input = lines_of(0..2000);
    let args = state_args(state, &["--expire-after", "2s"]);
    let t0 = 1_700_000_000.0; // at the start of an epoch; in the past, as test times must be
    let first = run_at(t0, &args, input.as_bytes());
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert_eq!(
        first.stdout,
        input.as_bytes(),
        "the first run prints every line"
    );
    let second = run_at(t0 + 1.9, &args, input.as_bytes());
    // The state's own window without --expire-after, still within it.
    let own = run_at(t0 + 1.99, &state_args(state, &[]), input.as_bytes());
    assert!(second.status.success() && own.status.success());
    assert_eq!(
        count_lines(&second.stdout),
        0,
        "a second run within 2 s prints nothing"
    );
    assert_eq!(count_lines(&own.stdout), 0);
    // Four epochs after the first run's: forgotten.
    let third = run_at(t0 + 4.0, &args, input.as_bytes());
    assert!(third.status.success());
    assert_eq!(
        third.stdout,
        input.as_bytes(),
        "4 s later every line is printed again"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn stats_show_the_window_and_the_oldest_generation() {
    let dir = temp_dir("expire-stats");
    let state = dir.join("s.bloom");
    let state = state.to_str().unwrap();
    run(
        &state_args(state, &["--expire-after", "30d", "--capacity", "10k"]),
        lines_of(0..100).as_bytes(),
    );
    let out = run(&["stats", state], b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("(expiring)"), "{text}");
    assert!(
        text.contains("window 30d (epochs of 10d 0.334s; forgotten after 40d 1.334s at most)"),
        "{text}"
    );
    // The state was made a moment ago: its oldest generation began then, not at the start
    // of its 10-day epoch (which said "started 1d 11h 28m 39s ago").
    let age = text
        .lines()
        .find_map(|l| l.strip_prefix("oldest generation started "))
        .expect("the oldest generation's age");
    assert!(
        age.ends_with("s ago") && !age.contains('m') && !age.contains('h') && !age.contains('d'),
        "{text}"
    );
    assert!(text.contains("capacity 10000 per window"), "{text}");
    // The lines as the planes layout has them (not the 4-bit stamps of format version 3).
    assert!(
        text.contains(" of 4 planes (a generation each), hashes 7,"),
        "{text}"
    );
    // An estimate from the live bits: 100 lines, give or take.
    let live: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("estimated distinct keys live "))
        .and_then(|n| n.parse().ok())
        .expect("the live estimate");
    assert!((95..=105).contains(&live), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_state_refuses_another_window_and_kind() {
    let dir = temp_dir("expire-refuse");
    let exp = dir.join("e.bloom");
    let exp = exp.to_str().unwrap();
    let plain = dir.join("p.bloom");
    let plain = plain.to_str().unwrap();
    let input = lines_of(0..10);
    assert!(run(
        &state_args(exp, &["--expire-after", "1h"]),
        input.as_bytes()
    )
    .status
    .success());
    assert!(run(&state_args(plain, &[]), input.as_bytes())
        .status
        .success());

    let other = run(
        &state_args(exp, &["--expire-after", "2h"]),
        input.as_bytes(),
    );
    assert_eq!(other.status.code(), Some(1));
    let err = String::from_utf8_lossy(&other.stderr);
    assert!(
        err.contains("made with --expire-after 1h, but this run asks for --expire-after 2h"),
        "{err}"
    );
    assert!(other.stdout.is_empty());
    // Made for a steady rate: --worst-burst is refused; without --expire-after, an error.
    let burst = run(
        &state_args(exp, &["--expire-after", "1h", "--worst-burst"]),
        input.as_bytes(),
    );
    assert_eq!(burst.status.code(), Some(1));
    let err = String::from_utf8_lossy(&burst.stderr);
    assert!(
        err.contains("a steady rate") && err.contains("--worst-burst"),
        "{err}"
    );
    assert!(burst.stdout.is_empty());
    let lone = run(&state_args(exp, &["--worst-burst"]), input.as_bytes());
    assert_eq!(lone.status.code(), Some(1));
    // A state made for bursts: larger, said by `stats`, and taken with or without the flag.
    let b = dir.join("b.bloom");
    let b = b.to_str().unwrap();
    let made = run(
        &state_args(b, &["--expire-after", "1h", "--worst-burst"]),
        input.as_bytes(),
    );
    assert!(made.status.success());
    assert!(run(&state_args(b, &["--expire-after", "1h"]), b"")
        .status
        .success());
    let stats = String::from_utf8_lossy(&run(&["stats", b], b"").stdout).into_owned();
    assert!(stats.contains("sized for the worst burst"), "{stats}");
    let steady = String::from_utf8_lossy(&run(&["stats", exp], b"").stdout).into_owned();
    assert!(steady.contains("at a steady rate"), "{steady}");
    assert!(std::fs::metadata(b).unwrap().len() > std::fs::metadata(exp).unwrap().len() * 3 / 2);
    let kind = run(
        &state_args(plain, &["--expire-after", "1h"]),
        input.as_bytes(),
    );
    assert_eq!(kind.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&kind.stderr).contains("never forgets"));
    for bad in [
        &["--expire-after", "0.5s"][..],
        &["--expire-after", "3x"],
        &["--expire-after", "1h", "--block-bits", "64"],
    ] {
        let out = run(&[&["dedup"][..], bad].concat(), input.as_bytes());
        assert_eq!(out.status.code(), Some(1), "{bad:?}");
        assert!(out.stdout.is_empty());
    }
    let merged = dir.join("m.bloom");
    let merge = run(&["merge", merged.to_str().unwrap(), exp, plain], b"");
    assert_eq!(merge.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&merge.stderr).contains("is an expiring state"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An expiring filter fed more distinct lines per window than its capacity warns once its
/// rate passes twice the target: during the run (read every 2^20 lines at this size), not
/// again at the end; within its capacity, not at all: an epoch's share of it at once (a
/// third, for a steady rate), or all of it at once in a state sized for the worst burst.
/// `--stats` shows the rate.
#[test]
fn a_rate_past_twice_the_target_is_warned_of_once() {
    let warnings = |out: &std::process::Output| {
        String::from_utf8_lossy(&out.stderr)
            .matches("more than twice its target")
            .count()
    };
    let args = [
        "dedup",
        "--expire-after",
        "1h",
        "--capacity",
        "20000",
        "--stats",
    ];
    let t0 = 1_700_000_000.0;
    let burst = [&args[..], &["--worst-burst"]].concat();
    for (args, lines) in [(&args[..], 6_600), (&burst[..], 20_000)] {
        let within = run_at(t0, args, lines_of(0..lines).as_bytes());
        assert!(within.status.success());
        assert_eq!(
            warnings(&within),
            0,
            "{}",
            String::from_utf8_lossy(&within.stderr)
        );
    }
    // 2^20 + 2^16 distinct lines: one reading mid-run, one at the end.
    let flood = run_at(t0, &args, lines_of(0..(1 << 20) + (1 << 16)).as_bytes());
    let err = String::from_utf8_lossy(&flood.stderr);
    assert!(flood.status.success(), "{err}");
    assert_eq!(warnings(&flood), 1, "{err}");
    // Mid-run: before the statistics printed at the end.
    assert!(
        err.find("more than twice") < err.find("lines 1114112, printed"),
        "{err}"
    );
    let rate: f64 = err
        .split("estimated fpr now ")
        .nth(1)
        .and_then(|s| s.split('%').next())
        .and_then(|s| s.parse().ok())
        .expect("--stats shows the rate");
    assert!(rate > 2.0, "{err}");
}
