//! Runs the real `blockbloom` binary: dedup against awk, exit codes, calc, block sizes.
//! (`state.rs`: everything about `--state`.)

mod common;
use common::*;

use std::collections::HashSet;
use std::io::{Read, Write};
use std::process::{Command, Stdio};

use blockbloom_workload::{dup_stream, url, SplitMix64};

/// A nasty input: URLs with repeats, CRLF lines, empty lines, invalid UTF-8, a 2 MiB line,
/// and no newline at the end.
fn nasty_input() -> Vec<u8> {
    let (ids, _) = dup_stream(60_000, 0.5, 5);
    let mut rng = SplitMix64::new(9);
    let big = "x".repeat(2 << 20);
    let mut v = Vec::new();
    for id in ids {
        match rng.below(50) {
            0 => v.extend_from_slice(b"\r\n"),
            1 => v.push(b'\n'),
            2 => v.extend_from_slice(&[0xff, 0xfe, b'a', (id % 7) as u8, b'\n']),
            3 => {
                v.extend_from_slice(url(id).as_bytes());
                v.extend_from_slice(b"\r\n");
            }
            4 if id % 100 == 0 => {
                v.extend_from_slice(big.as_bytes());
                v.push(b'\n');
            }
            _ => {
                v.extend_from_slice(url(id).as_bytes());
                v.push(b'\n');
            }
        }
    }
    v.extend_from_slice(b"no newline at the end");
    v
}

/// What `awk '!seen[$0]++'` prints, computed exactly (lines without their newline).
fn reference(input: &[u8]) -> Vec<Vec<u8>> {
    let body = input.strip_suffix(b"\n").unwrap_or(input);
    let mut seen = HashSet::new();
    body.split(|&b| b == b'\n')
        .filter(|l| seen.insert(l.to_vec()))
        .map(<[u8]>::to_vec)
        .collect()
}

#[test]
fn dedup_matches_awk_up_to_false_positives() {
    for threads in ["1", "3"] {
        check_against_awk(threads);
    }
}

fn check_against_awk(threads: &str) {
    let input = nasty_input();
    let out = run(
        &[
            "dedup",
            "--capacity",
            "100k",
            "--fpr",
            "0.001",
            "--threads",
            threads,
        ],
        &input,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Vec<&[u8]> = out.stdout.split(|&b| b == b'\n').collect();
    assert_eq!(
        got.last(),
        Some(&&b""[..]),
        "every output line ends with a newline"
    );
    let got = &got[..got.len() - 1];
    let want = reference(&input);
    // Never a duplicate; order kept: `got` is a subsequence of `want`.
    let distinct: HashSet<&[u8]> = got.iter().copied().collect();
    assert_eq!(distinct.len(), got.len(), "a line was printed twice");
    let mut it = want.iter();
    for line in got {
        assert!(
            it.any(|w| w == line),
            "line out of order or not in the awk output"
        );
    }
    let missing = want.len() - got.len();
    // At most the promised false positives: 0.1% of ~30k distinct lines, with a wide margin.
    assert!(missing <= 20, "{missing} of {} lines missing", want.len());
    // Cross-check with the real awk where it exists.
    if let Ok(awk) = Command::new("awk")
        .arg("!seen[$0]++")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
    {
        let mut awk = awk;
        let mut stdin = awk.stdin.take().unwrap();
        let data = input.clone();
        let w = std::thread::spawn(move || stdin.write_all(&data));
        let mut awk_out = Vec::new();
        awk.stdout
            .take()
            .unwrap()
            .read_to_end(&mut awk_out)
            .unwrap();
        awk.wait().unwrap();
        let _ = w.join();
        let awk_lines = awk_out.split(|&b| b == b'\n').count() - 1;
        assert_eq!(awk_lines, want.len(), "reference disagrees with awk");
    }
}

#[test]
fn exit_codes() {
    // usage errors: 1
    for args in [
        vec!["dedup", "--fpr", "2"],
        vec!["dedup", "--capacity", "0"],
        vec!["dedup", "--threads", "0"],
        vec!["dedup", "--no-such-flag"],
        vec!["nonsense"],
        vec!["calc"],
        vec!["merge", "out.bloom"],
    ] {
        let out = run(&args, b"");
        assert_eq!(
            out.status.code(),
            Some(1),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.stderr.is_empty());
    }
    // I/O and snapshot errors: 2, with a message naming the file
    let dir = temp_dir("codes");
    let corrupt = dir.join("corrupt.bloom");
    std::fs::write(&corrupt, b"BLKBLOOM but not really a snapshot at all").unwrap();
    let missing = dir.join("missing.txt");
    for args in [
        vec!["dedup".to_string(), missing.display().to_string()],
        vec![
            "dedup".into(),
            "--state".into(),
            corrupt.display().to_string(),
        ],
        vec!["stats".into(), corrupt.display().to_string()],
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(&args, b"x\n");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("missing.txt") || err.contains("corrupt.bloom"),
            "{err}"
        );
    }
    // the corrupt state file was not overwritten
    assert!(std::fs::read(&corrupt)
        .unwrap()
        .starts_with(b"BLKBLOOM but"));
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(run(&["--help"], b"").status.code(), Some(0));
}

#[test]
fn closed_pipe_ends_quietly() {
    let mut child = bin()
        .args(["dedup"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        for i in 0..2_000_000u64 {
            if stdin.write_all(format!("{i}\n").as_bytes()).is_err() {
                break;
            }
        }
    });
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 16];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout); // like `| head`
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn calc_prints_the_right_sizes() {
    let out = bin()
        .args(["calc", "--capacity", "1e8", "--fpr", "0.01"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let t = String::from_utf8(out.stdout).unwrap();
    // The design card: 118 MiB blocked, 114 MiB standard for 10^8 keys at 1% (not 958 MB); 118.2
    // rather than 118.0 without the variance-corrected formula (ARCHITECTURE.md, decision 5).
    assert!(t.contains("118.2 MiB"), "{t}");
    assert!(t.contains("114.3 MiB"), "{t}");
    assert!(t.contains("k = 6"), "{t}");
    let table = bin().args(["calc", "--table"]).output().unwrap();
    let t = String::from_utf8(table.stdout).unwrap();
    assert!(t.contains("8.194e-3"), "{t}"); // m/n = 10, k = 7
}

/// Without --capacity the filter grows with the input and keeps the rate.
#[test]
fn without_capacity_the_filter_grows() {
    let input = lines_of(0..300_000);
    let out = run(&["dedup", "--fpr", "0.001", "--stats"], input.as_bytes());
    assert!(out.status.success());
    let n = out
        .stdout
        .split(|&c| c == b'\n')
        .filter(|l| !l.is_empty())
        .count();
    assert!(
        n >= 299_400,
        "{n} of 300,000 distinct lines printed at 0.1%"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("growable"), "{err}");
}

/// Lines longer than the reader's buffer, and a last line without a newline.
#[test]
fn long_lines_and_a_missing_last_newline() {
    let long = "x".repeat(3 << 20);
    let input = format!("{long}\na\n{long}\nb\n{long}");
    let out = run(&["dedup"], input.as_bytes());
    assert!(out.status.success());
    assert_eq!(out.stdout, format!("{long}\na\nb\n").as_bytes());
}

/// `--block-bits`: the same output as the default block size (barring false positives, none
/// at this size), recorded in a state, a usage error without `--capacity` or against a
/// state of another size; `calc` sizes with it and `calc --table` shows every size.
#[test]
fn block_bits_are_taken_recorded_and_checked() {
    let mut input = lines_of(0..3_000);
    input += &lines_of(1_000..2_000);
    let want = run(
        &["dedup", "--capacity", "100k", "--fpr", "1e-6"],
        input.as_bytes(),
    );
    assert!(want.status.success());
    for bits in ["64", "128", "256", "512"] {
        let got = run(
            &[
                "dedup",
                "--capacity",
                "100k",
                "--fpr",
                "1e-6",
                "--block-bits",
                bits,
            ],
            input.as_bytes(),
        );
        assert!(got.status.success(), "{bits}");
        assert_eq!(got.stdout, want.stdout, "block bits {bits}");
    }
    let out = run(&["dedup", "--block-bits", "64"], b"a\n");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--block-bits needs --capacity"));
    let out = run(
        &["dedup", "--capacity", "10", "--block-bits", "100"],
        b"a\n",
    );
    assert_eq!(out.status.code(), Some(1));

    let dir = temp_dir("block-bits");
    let state = dir.join("s.bloom");
    let state = state.to_str().unwrap();
    let out = run(
        &state_args(state, &["--capacity", "10k", "--block-bits", "64"]),
        lines_of(0..100).as_bytes(),
    );
    assert!(out.status.success());
    assert_eq!(out.stdout.iter().filter(|&&b| b == b'\n').count(), 100);
    // Reopened: its own size by default, the same size is fine, another is a usage error.
    let again = run(&state_args(state, &[]), lines_of(50..150).as_bytes());
    assert_eq!(again.stdout, lines_of(100..150).as_bytes());
    let same = run(
        &state_args(state, &["--block-bits", "64", "--capacity", "10k"]),
        b"",
    );
    assert!(same.status.success());
    let stats = bin().args(["stats", state]).output().unwrap();
    let t = String::from_utf8(stats.stdout).unwrap();
    assert!(t.contains("blocks of 64)"), "{t}");
    let other = run(
        &state_args(state, &["--block-bits", "512", "--capacity", "10k"]),
        b"",
    );
    assert_eq!(other.status.code(), Some(1));
    let err = String::from_utf8_lossy(&other.stderr);
    assert!(
        err.contains("--block-bits 64, but this run asks for --block-bits 512"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();

    let calc = bin()
        .args(["calc", "--capacity", "1e8", "--block-bits", "64"])
        .output()
        .unwrap();
    let t = String::from_utf8(calc.stdout).unwrap();
    assert!(t.contains("64-bit blocks): 12.14 bits/key"), "{t}");
    let table = bin().args(["calc", "--table"]).output().unwrap();
    let t = String::from_utf8(table.stdout).unwrap();
    assert!(t.contains("9.92 (6)") && t.contains("12.14 (5)"), "{t}");
}

/// `--stats` says how many new lines were taken for repeats (so not printed): within 30%
/// of the count, for distinct lines filled to the capacity.
#[test]
fn stats_estimate_the_lines_lost_to_false_positives() {
    let input = lines_of(0..200_000);
    let out = run(
        &["dedup", "--capacity", "200000", "--stats"],
        input.as_bytes(),
    );
    assert!(out.status.success());
    let lost = (200_000 - count_lines(&out.stdout)) as f64;
    let err = String::from_utf8_lossy(&out.stderr);
    let estimate: f64 = err
        .split("taken for repeats (not printed) ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no estimate in {err}"));
    println!("{lost} lines lost, estimated {estimate}");
    assert!(
        lost > 100.0 && (0.7 * lost..=1.3 * lost).contains(&estimate),
        "{err}"
    );
}

/// A filter given a thousand times its capacity has every bit set: its fill bounds no
/// count, and `--stats` and `stats` say the estimates are unknown (they read 0 lines lost
/// for the expiring filter, and 1.8e21 for the plain one, of 100,000 lines given).
#[test]
fn the_estimates_of_a_full_filter_say_they_are_unknown() {
    let dir = temp_dir("full-estimates");
    let input = lines_of(0..100_000);
    for kind in [&[][..], &["--expire-after", "1h"][..]] {
        let state = dir.join(format!("s{}.bloom", kind.len()));
        let state = state.to_str().unwrap();
        let mut args = vec!["dedup", "--capacity", "100", "--stats", "--state", state];
        args.extend(kind);
        let out = run(&args, input.as_bytes());
        assert!(out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        let unknown = "unknown (the filter is full: every bit is set)";
        let over = if kind.is_empty() {
            "since the state began"
        } else {
            "in the live epochs"
        };
        assert!(
            err.contains(&format!(
                "taken for repeats (not printed) {over} {unknown},"
            )),
            "{kind:?}: {err}"
        );
        let stats = run(&["stats", state], b"");
        let text = String::from_utf8_lossy(&stats.stdout);
        assert!(text.contains(&format!(" {unknown}\n")), "{kind:?}: {text}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `calc --expire-after` sizes the expiring filter `dedup --expire-after` makes: its
/// steady-rate line gives the lines of a state made with the same window, capacity and
/// rate (and 22.39 bits per key at 1% for a 30-day window, the worst burst 2.5 times it;
/// a window of seconds costs more at a steady rate, its epochs being a second longer).
#[test]
fn calc_sizes_the_expiring_filter_dedup_makes() {
    let dir = temp_dir("calc-expiring");
    for (window, fpr) in [("30d", "0.01"), ("2s", "0.001")] {
        let args = ["--capacity", "100k", "--fpr", fpr, "--expire-after", window];
        let out = run(&[&["calc"][..], &args].concat(), b"");
        assert!(out.status.success());
        let t = String::from_utf8(out.stdout).unwrap();
        let bytes = |what: &str| -> u64 {
            let line = t.lines().find(|l| l.contains(what)).expect(what);
            let inner = line.rsplit('(').next().unwrap();
            inner.trim_end_matches(" bytes)").parse().expect(line)
        };
        let (steady, burst) = (bytes("at a steady rate:"), bytes("--worst-burst"));
        let state = dir.join(format!("s{window}.bloom"));
        let state = state.to_str().unwrap();
        assert!(run(&state_args(state, &args), b"a\n").status.success());
        let stats = String::from_utf8(run(&["stats", state], b"").stdout).unwrap();
        let lines: u64 = stats
            .lines()
            .find_map(|l| l.strip_prefix("lines "))
            .and_then(|l| l.split(' ').next())
            .and_then(|n| n.parse().ok())
            .expect("the state's lines");
        assert_eq!(steady, (lines + 1) * 64, "{window}: {t}{stats}"); // and its clock line
        assert!(burst > steady, "{t}");
        if window == "30d" {
            assert!(t.contains("at a steady rate: 22.39 bits/key"), "{t}");
            assert!((2.4..2.6).contains(&(burst as f64 / steady as f64)), "{t}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
