//! Nothing damaged is used: a state or snapshot with a byte flipped in its header (every
//! offset, every kind `dedup` writes) or in the lines of a cleanly closed file is refused by
//! `dedup --state`, `stats` and `merge` (exit 2, naming the file) and left as it was; a
//! state records how its keys were made (`--canonical-urls`) and refuses a run that makes
//! them another way (exit 1); `merge` never replaces what it was not given.

mod common;
use common::*;

use std::path::Path;

const HEADER: usize = 128;

/// Every command that reads `state` refuses it (exit 2, naming it) and leaves every file in
/// `dir` as it was.
fn refused_by_every_command(dir: &Path, state: &str, what: &str) {
    let before: Vec<_> = files_of(dir);
    let out = dir.join("merged.bloom");
    let input = lines_of(0..100);
    for args in [
        state_args(state, &[]),
        vec!["stats", state],
        vec!["merge", out.to_str().unwrap(), state],
    ] {
        let r = run(&args, input.as_bytes());
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "{what}: {args:?} {err}");
        assert!(
            r.stdout.is_empty() || args[0] == "stats",
            "{what}: {args:?}"
        );
        assert!(
            err.contains(state),
            "{what}: {args:?} does not name the file: {err}"
        );
    }
    assert!(before == files_of(dir), "{what}: a file changed");
}

fn files_of(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    v.sort();
    v
}

/// For a state made with `extra`, every header byte flipped, and bytes of its lines.
fn each_damage_is_refused(name: &str, extra: &[&str], damaged_file: &str) {
    let dir = temp_dir(name);
    let s = dir.join("s.bloom");
    let state = s.to_str().unwrap();
    let made = run(&state_args(state, extra), lines_of(0..3_000).as_bytes());
    assert!(made.status.success(), "{made:?}");
    let damaged = dir.join(damaged_file);
    let good = std::fs::read(&damaged).unwrap();
    let lines = u64::from_le_bytes(good[32..40].try_into().unwrap()) as usize;
    let end = HEADER + 64 * lines;
    let offsets = (0..HEADER).chain([HEADER, HEADER + 64 * lines / 2 + 9, end - 1, end]);
    for at in offsets {
        if at == 44 {
            continue; // the flags: the in-use bit is "not closed cleanly" (below)
        }
        let mut bad = good.clone();
        bad[at] ^= 0x5a;
        std::fs::write(&damaged, &bad).unwrap();
        refused_by_every_command(&dir, state, &format!("{name}: byte {at}"));
    }
    // Put back, it is used again; a run killed before it closed (the flag left set) is
    // used too, and `stats` says it was not closed cleanly.
    std::fs::write(&damaged, &good).unwrap();
    let again = run(&state_args(state, &[]), lines_of(0..3_000).as_bytes());
    assert!(
        again.status.success() && again.stdout.is_empty(),
        "{again:?}"
    );
    let mut crashed = std::fs::read(&s).unwrap();
    crashed[44] |= 1;
    std::fs::write(&s, &crashed).unwrap();
    let stats = bin().args(["stats", state]).output().unwrap();
    let text = String::from_utf8_lossy(&stats.stdout);
    assert!(stats.status.success(), "{stats:?}");
    assert!(text.contains("not closed cleanly"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_damaged_fixed_state_is_refused_and_left_as_it_was() {
    each_damage_is_refused(
        "int-fixed",
        &["--capacity", "5000", "--seed", "7"],
        "s.bloom",
    );
}

#[test]
fn a_damaged_growing_state_is_refused_and_left_as_it_was() {
    each_damage_is_refused("int-growing", &[], "s.bloom");
}

#[test]
fn a_damaged_expiring_state_is_refused_and_left_as_it_was() {
    each_damage_is_refused("int-expiring", &["--expire-after", "1h"], "s.bloom");
}

#[test]
fn a_damaged_snapshot_is_refused_and_left_as_it_was() {
    let dir = temp_dir("int-snapshot");
    let s = dir.join("s.bloom");
    let state = s.to_str().unwrap();
    let made = run(
        &state_args(state, &["--capacity", "5000", "--seed", "7"]),
        lines_of(0..3_000).as_bytes(),
    );
    assert!(made.status.success());
    let snapshot = dir.join("snap.bloom");
    let merged = bin()
        .args(["merge", snapshot.to_str().unwrap(), state])
        .output()
        .unwrap();
    assert!(merged.status.success(), "{merged:?}");
    std::fs::remove_file(&s).unwrap();
    let good = std::fs::read(&snapshot).unwrap();
    for at in [
        0,
        20,
        33,
        41,
        50,
        60,
        72,
        100,
        121,
        HEADER + 3,
        good.len() - 1,
    ] {
        let mut bad = good.clone();
        bad[at] ^= 0x01;
        std::fs::write(&snapshot, &bad).unwrap();
        refused_by_every_command(&dir, snapshot.to_str().unwrap(), &format!("byte {at}"));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--canonical-urls` and its lossy options are recorded in a new state; a run that makes
/// keys another way is refused (exit 1) before reading, naming both ways.
#[test]
fn a_state_refuses_keys_made_another_way() {
    let dir = temp_dir("int-keys");
    let s = dir.join("s.bloom");
    let state = s.to_str().unwrap();
    let urls = "http://Example.com/a?b=2&a=1\nhttp://example.com/a?a=1&b=2\n";
    let made = run(&state_args(state, &["--canonical-urls"]), urls.as_bytes());
    assert_eq!(String::from_utf8_lossy(&made.stdout).lines().count(), 1);
    for other in [
        vec![],
        vec!["--canonical-urls", "--strip-trailing-slash"],
        vec!["--canonical-urls", "--strip-param", "sid"],
    ] {
        let r = run_without_input(&state_args(state, &other));
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(1), "{other:?}: {err}");
        assert!(err.contains("--canonical-urls"), "{err}");
    }
    let same = run(&state_args(state, &["--canonical-urls"]), urls.as_bytes());
    assert!(same.status.success() && same.stdout.is_empty(), "{same:?}");
    let stats = bin().args(["stats", state]).output().unwrap();
    assert!(String::from_utf8_lossy(&stats.stdout).contains("keys from --canonical-urls"));
    // and the other way round: a state of raw lines refuses --canonical-urls
    let raw = dir.join("raw.bloom");
    let raw = raw.to_str().unwrap();
    assert!(run(&state_args(raw, &[]), urls.as_bytes()).status.success());
    let r = run_without_input(&state_args(raw, &["--canonical-urls"]));
    assert_eq!(r.status.code(), Some(1));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `merge OUT …` onto an existing file that is no input: a text file (arguments in `cp`
/// order), an expiring state or a filter of other parameters is refused and left as it was;
/// one of the inputs' kind and parameters is merged in; `--force` replaces; a symlinked
/// OUT is written through to its target.
#[test]
fn merge_never_replaces_what_it_was_not_given() {
    let dir = temp_dir("int-merge");
    let p = |n: &str| dir.join(n).to_str().unwrap().to_owned();
    let fixed = |name: &str, range: std::ops::Range<u64>, seed: &str| {
        let r = run(
            &state_args(&p(name), &["--capacity", "10000", "--seed", seed]),
            lines_of(range).as_bytes(),
        );
        assert!(r.status.success(), "{r:?}");
    };
    fixed("a.bloom", 0..1_000, "7");
    fixed("b.bloom", 1_000..2_000, "7");
    fixed("other.bloom", 0..10, "8");
    std::fs::write(p("victim.txt"), "precious\n").unwrap();
    let exp = run(
        &state_args(&p("exp.bloom"), &["--expire-after", "1h"]),
        b"x\n",
    );
    assert!(exp.status.success());
    for (out, why) in [
        ("victim.txt", "is not a blockbloom"),
        ("exp.bloom", "an expiring state"),
        ("other.bloom", "other parameters"),
    ] {
        let before = std::fs::read(p(out)).unwrap();
        let r = bin()
            .args(["merge", &p(out), &p("a.bloom"), &p("b.bloom")])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "{out}: {err}");
        assert!(err.contains(why) && err.contains("--force"), "{out}: {err}");
        assert_eq!(std::fs::read(p(out)).unwrap(), before, "{out} changed");
    }
    // Same kind and parameters: merged in.
    fixed("c.bloom", 2_000..3_000, "7");
    let r = bin()
        .args(["merge", &p("c.bloom"), &p("a.bloom"), &p("b.bloom")])
        .output()
        .unwrap();
    assert!(r.status.success(), "{r:?}");
    let all = run(
        &state_args(&p("c.bloom"), &[]),
        lines_of(0..3_000).as_bytes(),
    );
    assert!(all.stdout.is_empty(), "{} new", count_lines(&all.stdout));
    // --force replaces.
    let r = bin()
        .args(["merge", "--force", &p("victim.txt"), &p("a.bloom")])
        .output()
        .unwrap();
    assert!(r.status.success(), "{r:?}");
    assert_ne!(std::fs::read(p("victim.txt")).unwrap(), b"precious\n");
    // Through a symlink, to its target; the link stays a link.
    std::os::unix::fs::symlink("target.bloom", p("link.bloom")).unwrap();
    let r = bin()
        .args(["merge", &p("link.bloom"), &p("a.bloom")])
        .output()
        .unwrap();
    assert!(r.status.success(), "{r:?}");
    let link = std::fs::symlink_metadata(p("link.bloom")).unwrap();
    assert!(link.file_type().is_symlink());
    assert!(Path::new(&p("target.bloom")).is_file());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// After merging two growing states that share keys, `stats` estimates the union, not the
/// sum of the two counts.
#[test]
fn stats_of_merged_growing_states_estimate_the_union() {
    let dir = temp_dir("int-union");
    let p = |n: &str| dir.join(n).to_str().unwrap().to_owned();
    for (name, range) in [("a.bloom", 0..14_000), ("b.bloom", 6_000..50_000)] {
        let r = run(
            &state_args(&p(name), &["--seed", "3"]),
            lines_of(range).as_bytes(),
        );
        assert!(r.status.success());
    }
    let r = bin()
        .args(["merge", &p("m.bloom"), &p("a.bloom"), &p("b.bloom")])
        .output()
        .unwrap();
    assert!(r.status.success(), "{r:?}");
    let stats = String::from_utf8(
        bin()
            .args(["stats", &p("m.bloom")])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let n: u64 = stats
        .lines()
        .find_map(|l| l.strip_prefix("distinct keys "))
        .expect("distinct keys")
        .parse()
        .unwrap();
    // 50,000 distinct; the sum of the two would be 58,000.
    assert!((49_000..=51_000).contains(&n), "{stats}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A state that cannot be created is named as the user gave it, not by a temporary file.
#[test]
fn messages_name_the_path_given() {
    let r = run_without_input(&["dedup", "--state", "/nonexistent/dir/s.bloom"]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2));
    assert!(
        err.contains("/nonexistent/dir/s.bloom") && !err.contains(".new."),
        "{err}"
    );
}

/// Extreme numbers in every numeric flag: exit 1 with a message (a bad flag value), never a
/// panic, never exit 2 (which says a state is bad).
#[test]
fn extreme_flag_values_are_usage_errors_never_panics() {
    let dir = temp_dir("int-extremes");
    let state = dir.join("s.bloom");
    let state = state.to_str().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["dedup", "--capacity", "0"],
        vec!["dedup", "--capacity", "1.7e19"],
        vec!["dedup", "--capacity", "1e300"],
        vec!["dedup", "--capacity", "nan"],
        vec!["dedup", "--capacity", "-1"],
        vec!["dedup", "--fpr", "0"],
        vec!["dedup", "--fpr", "nan"],
        vec!["dedup", "--fpr", "inf"],
        vec!["dedup", "--capacity", "1000", "--fpr", "1e-300"],
        vec!["dedup", "--capacity", "1000", "--block-bits", "1024"],
        vec!["dedup", "--seed", "340282366920938463463374607431768211456"],
        vec!["dedup", "--expire-after", "0s"],
        vec!["dedup", "--expire-after", "1e12d"],
        vec!["dedup", "--expire-after", "1e15d"],
        vec!["dedup", "--expire-after", "1e300s"],
        vec!["dedup", "--expire-after", "nan"],
        vec!["dedup", "--threads", "0"],
        vec!["dedup", "--threads", "65"],
        vec!["dedup", "--state", state, "--capacity", "1.7e19"],
        vec!["dedup", "--state", state, "--expire-after", "1e12d"],
        vec![
            "dedup",
            "--state",
            state,
            "--capacity",
            "1000",
            "--fpr",
            "1e-300",
        ],
        vec!["calc", "--capacity", "1.7e19"],
        vec!["calc", "--capacity", "1e15", "--expire-after", "213503d"],
        vec!["calc", "--capacity", "1000", "--fpr", "1e-300"],
        vec!["calc", "--capacity", "1000", "--key-len", "nan"],
        vec!["calc", "--capacity", "1000", "--key-len", "1e308"],
    ];
    for args in cases {
        let out = run(&args, b"x\n");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(
            out.status.code() == Some(1) || (args[0] == "calc" && out.status.success()),
            "{args:?}: exit {:?}: {err}",
            out.status.code()
        );
    }
    assert!(
        !std::path::Path::new(state).exists(),
        "a refused run made a state"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
