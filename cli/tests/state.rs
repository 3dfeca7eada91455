//! `dedup --state` at the boundaries a user lives on: runs at once (one printer per line),
//! a reader that stops early, signals, a full disk, files left over from earlier runs, a
//! state that cannot grow, `--seed` and `merge`.

mod common;
use common::*;

use std::collections::HashSet;
use std::io::{Read, Write};
use std::process::{Command, Stdio};

use blockbloom_workload::url;

#[test]
fn state_carries_across_runs_like_anew() {
    let dir = temp_dir("state");
    let state = dir.join("seen.bloom");
    let state = state.to_str().unwrap();
    let first: String = (0..5000).map(|i| url(i) + "\n").collect();
    let second: String = (2500..7500).map(|i| url(i) + "\n").collect();
    let out1 = run(
        &[
            "dedup",
            "--capacity",
            "1M",
            "--fpr",
            "1e-6",
            "--state",
            state,
        ],
        first.as_bytes(),
    );
    assert!(out1.status.success());
    assert_eq!(out1.stdout, first.as_bytes());
    let out2 = run(&["dedup", "--state", state], second.as_bytes());
    assert!(out2.status.success());
    let expect: String = (5000..7500).map(|i| url(i) + "\n").collect();
    assert_eq!(String::from_utf8(out2.stdout).unwrap(), expect);
    // stats and merge on the state file
    let s = bin().args(["stats", state]).output().unwrap();
    assert!(s.status.success());
    let text = String::from_utf8(s.stdout).unwrap();
    assert!(text.contains("estimated distinct keys"), "{text}");
    let merged = dir.join("merged.bloom");
    let m = bin()
        .args(["merge", merged.to_str().unwrap(), state, state])
        .output()
        .unwrap();
    assert!(m.status.success(), "{}", String::from_utf8_lossy(&m.stderr));
    let out3 = run(
        &["dedup", "--state", merged.to_str().unwrap()],
        second.as_bytes(),
    );
    assert!(out3.stdout.is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Ctrl-C with --state: what was printed is saved, so a rerun does not print it again.
#[cfg(unix)]
#[test]
fn interrupt_saves_state() {
    let dir = temp_dir("sigint");
    let state = dir.join("seen.bloom");
    let mut child = bin()
        .args(["dedup", "--state", state.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let batch: String = (0..1000).map(|i| url(i) + "\n").collect();
    stdin.write_all(batch.as_bytes()).unwrap();
    stdin.flush().unwrap();
    // stdin stays open: the tool is waiting for more input when the signal arrives.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        out.stdout,
        batch.as_bytes(),
        "everything read before Ctrl-C was printed"
    );
    let again = run(
        &["dedup", "--state", state.to_str().unwrap()],
        batch.as_bytes(),
    );
    assert!(again.status.success());
    assert!(again.stdout.is_empty(), "state was not saved on Ctrl-C");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An existing state keeps its size: other --capacity/--fpr are a usage error (exit 1)
/// before any input is read, the state's own are fine, and omitting them uses the state's.
#[test]
fn state_parameters_must_match_or_be_omitted() {
    let dir = temp_dir("params");
    let state = dir.join("s.bloom");
    let state = state.to_str().unwrap();
    let first = lines_of(0..100);
    let out = run(
        &state_args(state, &["--capacity", "100", "--fpr", "0.1"]),
        first.as_bytes(),
    );
    assert!(out.status.success());
    let more = lines_of(100..300);
    let out = run(
        &state_args(state, &["--capacity", "1e7", "--fpr", "0.0001"]),
        more.as_bytes(),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        out.stdout.is_empty(),
        "input was processed despite the conflict"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("capacity") && err.contains("omit"), "{err}");
    let same = run(
        &state_args(state, &["--capacity", "100", "--fpr", "0.1"]),
        more.as_bytes(),
    );
    assert!(same.status.success());
    let omitted = run(&state_args(state, &[]), lines_of(0..300).as_bytes());
    assert!(omitted.status.success());
    assert!(omitted.stdout.len() < 300 * 20, "state answered nothing");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A state used past its capacity says so, with its current rate.
#[test]
fn a_full_state_warns() {
    let dir = temp_dir("full");
    let state = dir.join("s.bloom");
    let out = run(
        &state_args(state.to_str().unwrap(), &["--capacity", "1000"]),
        lines_of(0..5000).as_bytes(),
    );
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("warning") && err.contains("false-positive rate"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A full disk, for the state and for the output. `--state` on a disk without room: exit 2
/// with the file system's message, not a `SIGBUS` (the state file is mapped; its blocks are
/// reserved when it is opened); a growing state that outgrows the disk keeps going in its
/// last layer and warns. Output to a disk that fills: exit 2, and no line recorded that was
/// not written whole — the next run prints the rest. The disk is a 1 MiB tmpfs in a mount
/// namespace of its own (`unshare`: root), skipped where that cannot be made unless
/// `BLOCKBLOOM_REQUIRE_ALL` is set.
#[test]
#[cfg(target_os = "linux")]
fn a_full_disk_loses_nothing() {
    let unshare = ["--mount", "--propagation", "private"];
    let can = Command::new("unshare")
        .args(unshare)
        .args(["mount", "-t", "tmpfs", "tmpfs", "/mnt"])
        .status()
        .is_ok_and(|s| s.success());
    if !can {
        assert!(
            std::env::var_os("BLOCKBLOOM_REQUIRE_ALL").is_none(),
            "cannot mount a tmpfs in a mount namespace"
        );
        eprintln!("SKIPPED: cannot mount a tmpfs in a mount namespace (unshare, mount)");
        return;
    }
    let dir = temp_dir("full-disk");
    let small = dir.join("small");
    std::fs::create_dir(&small).unwrap();
    let input = lines_of(0..500_000);
    // In the namespace: mount the small disk on $1, then run `script` ($2: the binary).
    let on_small_disk = |script: &str| {
        let mut cmd = Command::new("unshare");
        cmd.args(unshare)
            .args(["sh", "-c"])
            .arg(format!(
                "mount -t tmpfs -o size=1m tmpfs \"$1\" && {script}"
            ))
            .args(["sh".as_ref(), small.as_os_str()])
            .arg(env!("CARGO_BIN_EXE_blockbloom"));
        run_command(cmd, input.as_bytes())
    };
    let out = on_small_disk("exec \"$2\" dedup --capacity 10M --state \"$1/s.bloom\"");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}: {err}", out.status);
    assert!(
        err.contains("s.bloom") && err.contains("No space left"),
        "{err}"
    );
    assert!(out.stdout.is_empty());

    // A growing state that outgrows the disk stops before its rate passes the target (exit
    // 2, the cause named); with room made (the disk enlarged), the next run prints the rest,
    // none twice. (A rate of 1e-6: no line is lost to a false positive either, but by
    // chance.)
    let input_file = dir.join("in.txt");
    std::fs::write(&input_file, &input).unwrap();
    let out = on_small_disk(&format!(
        "\"$2\" dedup --fpr 1e-6 --state \"$1/s.bloom\" < '{0}'; echo \"rc=$?\"; \
         mount -o remount,size=64m \"$1\" && \"$2\" dedup --state \"$1/s.bloom\" < '{0}'; \
         echo \"rc=$?\"",
        input_file.display()
    ));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot grow") && err.contains("No space left"),
        "{err}"
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let (first, rest) = text.split_once("rc=2\n").expect("the first run exits 2");
    let (second, end) = rest.split_once("rc=").unwrap();
    assert_eq!(end, "0\n", "{err}");
    let (a, b) = (first.lines().count(), second.lines().count());
    // The first layer holds 100,000 lines; the second does not fit on the disk.
    assert!(
        a > 90_000 && a <= 100_000,
        "{a} lines before the disk was full"
    );
    let printed: HashSet<&str> = first.lines().chain(second.lines()).collect();
    assert_eq!(printed.len(), a + b, "a line printed by both runs");
    assert!(
        printed.len() >= 500_000 - 3,
        "{} of 500,000 printed",
        printed.len()
    );

    // The output fills the disk (the state is elsewhere); what was cut off is printed by the
    // next run, to a disk with room. (A rate of 1e-9: no line of the second run is lost to a
    // false positive either.)
    let state = dir.join("out.bloom");
    let out = on_small_disk(&format!(
        "\"$2\" dedup --capacity 1M --fpr 1e-9 --state '{}' > \"$1/out\"; rc=$?; cat \"$1/out\"; exit $rc",
        state.display()
    ));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}: {err}", out.status);
    assert!(err.contains("No space left"), "{err}");
    let first = String::from_utf8(out.stdout).unwrap();
    let whole = first.rsplit_once('\n').map_or("", |(lines, _cut)| lines);
    let n = whole.lines().count();
    assert!(n > 1_000 && n < 500_000, "{n}");
    let rest = run(&state_args(state.to_str().unwrap(), &[]), input.as_bytes());
    assert!(rest.status.success());
    let rest = String::from_utf8(rest.stdout).unwrap();
    let got: HashSet<&str> = whole.lines().chain(rest.lines()).collect();
    let lost = input.lines().filter(|l| !got.contains(l)).count();
    assert_eq!(lost, 0, "lines recorded in the state but never written");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A state that is not one — the input file given by mistake, an empty file made by hand,
/// another member's snapshot — is refused with a message that says so, and left as it was.
#[test]
fn a_file_that_is_not_a_state_is_refused_and_left_alone() {
    let dir = temp_dir("notastate");
    let text = dir.join("urls.txt");
    std::fs::write(&text, lines_of(0..1000)).unwrap();
    let empty = dir.join("empty.bloom");
    std::fs::write(&empty, b"").unwrap();
    // Another member's snapshot, saved by a program: it says whose it is.
    let counts = dir.join("c.counts");
    let c = blockbloom::CountingBloomFilter::with_capacity(100, 0.01).unwrap();
    c.save(&counts).unwrap();
    let bits = dir.join("s.bits");
    blockbloom::AtomicBitSet::new(100)
        .unwrap()
        .save(&bits)
        .unwrap();
    for (path, says) in [
        (&text, "bad magic"),
        (&empty, "the file is empty"),
        (&counts, "a CountingBloomFilter's snapshot"),
        (&bits, "an AtomicBitSet's snapshot"),
    ] {
        let before = std::fs::read(path).unwrap();
        let out = run(&["dedup", "--state", path.to_str().unwrap()], b"a\nb\n");
        assert_eq!(out.status.code(), Some(2));
        assert!(out.stdout.is_empty());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{err}");
        assert_eq!(std::fs::read(path).unwrap(), before, "{}", path.display());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs sharing one state at once: of `procs` runs fed the same 300,000 new lines at the
/// same time, through pipes, exactly one prints each line (its `insert_if_absent` won it),
/// at least 99% of the lines are printed between them (the rest are false positives), and
/// the state has all of them afterwards. `create` makes the state first.
fn runs_at_once(name: &str, create: &[&str], procs: usize, grows: bool) {
    let dir = temp_dir(name);
    let state = dir.join("s.bloom");
    let state = state.to_str().unwrap();
    run(&state_args(state, create), b"");
    let input = lines_of(0..300_000);
    let outs: Vec<_> = std::thread::scope(|s| {
        let runs: Vec<_> = (0..procs)
            .map(|_| s.spawn(|| run(&state_args(state, &[]), input.as_bytes())))
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let mut printed = HashSet::new();
    let mut counts = Vec::new();
    for o in &outs {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let lines: Vec<&[u8]> = o.stdout.split_inclusive(|&c| c == b'\n').collect();
        counts.push(lines.len());
        for l in lines {
            assert!(
                printed.insert(l),
                "printed by two runs: {}",
                String::from_utf8_lossy(l)
            );
        }
    }
    eprintln!("{procs} runs printed {counts:?}: {} lines", printed.len());
    assert!(
        printed.len() >= 297_000,
        "only {} of 300,000",
        printed.len()
    );
    let again = run(&state_args(state, &[]), input.as_bytes());
    assert!(again.stdout.is_empty(), "the state lost lines");
    assert_eq!(dir.join("s.bloom.1").exists(), grows);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn two_runs_at_once_print_each_line_once() {
    runs_at_once("two", &["--capacity", "1M", "--fpr", "1e-5"], 2, false);
}

#[test]
fn three_runs_at_once_print_each_line_once() {
    runs_at_once("three", &["--capacity", "1M", "--fpr", "1e-5"], 3, false);
}

/// The same through an expiring state (the runs name no window: the state's own).
#[test]
fn runs_at_once_share_an_expiring_state() {
    runs_at_once(
        "exp2",
        &["--expire-after", "1h", "--capacity", "1M", "--fpr", "1e-4"],
        2,
        false,
    );
}

/// The same through a growing state (first layer 100,000 lines): the runs grow it while
/// they race.
#[test]
fn runs_at_once_share_a_growing_state() {
    runs_at_once("grow2", &[], 2, true);
    runs_at_once("grow3", &[], 3, true);
}

/// Without --capacity a state grows with its lines: a one-line state is small, and one
/// past its first layer keeps the rate asked for.
#[test]
fn a_state_without_capacity_grows() {
    let dir = temp_dir("grows");
    let state = dir.join("s.bloom");
    let s = state.to_str().unwrap();
    assert!(run(&state_args(s, &[]), b"a\n").status.success());
    let size = std::fs::metadata(&state).unwrap().len();
    assert!(size < 1 << 20, "a one-line state takes {size} bytes");
    assert!(!dir.join("s.bloom.1").exists());
    let out = run(&state_args(s, &[]), lines_of(0..400_000).as_bytes());
    assert!(out.status.success());
    assert!(
        dir.join("s.bloom.2").exists(),
        "100k + 200k layers cannot hold 400k"
    );
    let fresh = run(&state_args(s, &[]), lines_of(400_000..500_000).as_bytes());
    let printed = fresh.stdout.iter().filter(|&&c| c == b'\n').count();
    assert!(
        printed >= 98_500,
        "only {printed} of 100,000 new lines printed at --fpr 0.01"
    );
    let stats = bin().args(["stats", s]).output().unwrap();
    let text = String::from_utf8_lossy(&stats.stdout);
    assert!(text.contains("layers 3"), "{text}");
    // A growing state has no capacity to match.
    let conflict = run(&state_args(s, &["--capacity", "1M"]), b"x\n");
    assert_eq!(conflict.status.code(), Some(1));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `| head -1` on 1,000,000 new lines: what the run recorded but nobody read is bounded by
/// a pipe's buffer and one group of lines, and counted on stderr; at least 98% of the lines
/// are printed again by the next run. (A rate of 1e-7: no line is lost to a false positive,
/// but by chance.)
#[cfg(unix)]
#[test]
fn head_leaves_at_most_a_bounded_tail_recorded() {
    let dir = temp_dir("head");
    let state = dir.join("s.bloom");
    let input = dir.join("in.txt");
    let lines = lines_of(0..1_000_000);
    std::fs::write(&input, &lines).unwrap();
    let cmd = format!(
        "{} dedup --fpr 1e-7 --state {} < {} | head -1",
        env!("CARGO_BIN_EXE_blockbloom"),
        state.display(),
        input.display()
    );
    let first = Command::new("sh").args(["-c", &cmd]).output().unwrap();
    assert!(first.status.success());
    assert_eq!(first.stdout, (url(0) + "\n").as_bytes());
    let err = String::from_utf8_lossy(&first.stderr);
    let unread: usize = err
        .split_once(" printed lines were recorded")
        .and_then(|(n, _)| n.rsplit(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no count of unread lines: {err}"));
    let again = run(&state_args(state.to_str().unwrap(), &[]), lines.as_bytes());
    assert!(again.status.success());
    let n = again.stdout.iter().filter(|&&c| c == b'\n').count();
    eprintln!("head -1: {unread} recorded but unread, {n} of 999,999 printed again");
    assert!(
        n >= 980_000,
        "only {n} of the 999,999 unread lines printed again"
    );
    // The lines head took (one read of at most a pipe's 64 KiB) and the unread ones it
    // counted are all that is not printed again.
    let head_took = 999_999 - n - unread;
    let longest = lines.lines().map(str::len).max().unwrap() + 1;
    assert!(
        head_took <= 65_536 / (longest / 2),
        "{head_took} lines neither printed again nor counted"
    );
    assert!(!again.stdout.starts_with(first.stdout.as_slice()));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// SIGTERM and SIGHUP, as SIGINT: exit 128 + the signal, what was delivered is recorded,
/// and no temporary file is left next to the state.
#[cfg(unix)]
#[test]
fn signals_record_what_was_delivered() {
    for (sig, code) in [("TERM", 143), ("HUP", 129)] {
        let dir = temp_dir(&format!("sig{sig}"));
        let state = dir.join("seen.bloom");
        let mut child = bin()
            .args(["dedup", "--state", state.to_str().unwrap()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let batch = lines_of(0..1000);
        stdin.write_all(batch.as_bytes()).unwrap();
        stdin.flush().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut got = vec![0u8; batch.len()];
        stdout.read_exact(&mut got).unwrap(); // the output was taken
        let status = Command::new("kill")
            .args([&format!("-{sig}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let out = child.wait_with_output().unwrap();
        drop(stdin);
        assert_eq!(out.status.code(), Some(code), "{sig}");
        let again = run(&state_args(state.to_str().unwrap(), &[]), batch.as_bytes());
        assert!(
            again.stdout.is_empty(),
            "{sig}: delivered lines not recorded"
        );
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["seen.bloom"], "{sig}: files left behind");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// `stats` reads a state whose last user was killed (still flagged in use).
#[cfg(unix)]
#[test]
fn stats_reads_a_state_left_in_use() {
    let dir = temp_dir("inuse");
    let state = dir.join("s.bloom");
    let mut child = bin()
        .args(["dedup", "--state", state.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    child.stdin.as_mut().unwrap().write_all(b"a\nb\n").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    child.kill().unwrap(); // SIGKILL: the state stays flagged in use
    child.wait().unwrap();
    let s = bin()
        .args(["stats", state.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(s.status.success(), "{}", String::from_utf8_lossy(&s.stderr));
    let text = String::from_utf8_lossy(&s.stdout);
    assert!(
        text.contains("(growing)") && text.contains("distinct keys 2"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
