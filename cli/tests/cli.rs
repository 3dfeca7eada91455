//! Runs the real `blockbloom` binary.

use std::collections::HashSet;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use blockbloom_workload::{dup_stream, url, SplitMix64};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_blockbloom"))
}

fn run(args: &[&str], stdin: &[u8]) -> Output {
    let mut cmd = bin();
    cmd.args(args);
    run_command(cmd, stdin)
}

/// Runs `cmd` with `stdin` as its input, and waits for it.
fn run_command(mut cmd: Command, stdin: &[u8]) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("blockbloom-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

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
    // DESIGN §1: 118 MiB blocked, 114 MiB standard for 10^8 keys at 1% (not 958 MB); 118.2
    // rather than DESIGN's 118.0 with the variance-corrected formula (ARCHITECTURE.md, 16).
    assert!(t.contains("118.2 MiB"), "{t}");
    assert!(t.contains("114.3 MiB"), "{t}");
    assert!(t.contains("k = 6"), "{t}");
    let table = bin().args(["calc", "--table"]).output().unwrap();
    let t = String::from_utf8(table.stdout).unwrap();
    assert!(t.contains("8.194e-3"), "{t}"); // m/n = 10, k = 7
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

fn lines_of(range: std::ops::Range<u64>) -> String {
    range.map(|i| url(i) + "\n").collect()
}

fn state_args<'a>(state: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["dedup", "--state", state];
    v.extend_from_slice(extra);
    v
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

    let out = on_small_disk("exec \"$2\" dedup --state \"$1/s.bloom\"");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}: {err}", out.status);
    assert!(err.contains("could not add a layer"), "{err}");
    let printed = out.stdout.iter().filter(|&&b| b == b'\n').count();
    assert!(printed > 100_000 && printed < 500_000, "{printed}");

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

/// A state path that cannot be used fails at once (exit 2), before reading any input.
#[test]
fn a_bad_state_path_fails_before_reading() {
    let dir = temp_dir("badpath");
    for state in [
        dir.join("no/such/dir/s.bloom"),
        PathBuf::from("/proc/blockbloom.bloom"),
    ] {
        let mut child = bin()
            .args(["dedup", "--state", state.to_str().unwrap()])
            .stdin(Stdio::piped()) // kept open: the tool must not wait for it
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(std::time::Instant::now() < deadline, "waited for input");
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        assert_eq!(status.code(), Some(2), "{}", state.display());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A state that is not one — the input file given by mistake, an empty file made by hand —
/// is refused with a message that says so, and left as it was.
#[test]
fn a_file_that_is_not_a_state_is_refused_and_left_alone() {
    let dir = temp_dir("notastate");
    let text = dir.join("urls.txt");
    std::fs::write(&text, lines_of(0..1000)).unwrap();
    let empty = dir.join("empty.bloom");
    std::fs::write(&empty, b"").unwrap();
    for (path, says) in [(&text, "bad magic"), (&empty, "the file is empty")] {
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

/// Two runs sharing one state at once lose nothing: every line is printed by one of them,
/// and the state has all of them afterwards. `create` makes the state first, so that both
/// runs open the same file; at most `fp` lines may be lost to false positives.
fn concurrent_runs(name: &str, create: &[&str], fp: usize, grows: bool) {
    let dir = temp_dir(name);
    let state = dir.join("s.bloom");
    let state = state.to_str().unwrap();
    run(&state_args(state, create), b"");
    let a = lines_of(0..150_000);
    let b = lines_of(100_000..250_000); // 50,000 lines in common
    let (ra, rb) = std::thread::scope(|s| {
        let ta = s.spawn(|| run(&state_args(state, &[]), a.as_bytes()));
        let tb = s.spawn(|| run(&state_args(state, &[]), b.as_bytes()));
        (ta.join().unwrap(), tb.join().unwrap())
    });
    assert!(ra.status.success() && rb.status.success());
    let printed: HashSet<&[u8]> = ra
        .stdout
        .split_inclusive(|&c| c == b'\n')
        .chain(rb.stdout.split_inclusive(|&c| c == b'\n'))
        .collect();
    let all = lines_of(0..250_000);
    let missing = all
        .as_bytes()
        .split_inclusive(|&c| c == b'\n')
        .filter(|l| !printed.contains(l))
        .count();
    assert!(missing <= fp, "{missing} lines printed by neither run");
    let again = run(&state_args(state, &[]), all.as_bytes());
    assert!(again.stdout.is_empty(), "the state lost lines");
    assert_eq!(dir.join("s.bloom.1").exists(), grows);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn concurrent_runs_share_a_state() {
    concurrent_runs("shared", &["--capacity", "1M", "--fpr", "1e-5"], 25, false);
}

/// The same through a growing state (first layer 100,000 lines): both runs grow it while
/// they race.
#[test]
fn concurrent_runs_share_a_growing_state() {
    concurrent_runs("sharedgrow", &["--fpr", "1e-4"], 60, true);
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

/// `| head -1`: lines the reader never took from the pipe are not recorded, so the next run
/// prints them; the line head printed is recorded.
#[cfg(unix)]
#[test]
fn head_records_only_what_it_read() {
    let dir = temp_dir("head");
    let state = dir.join("s.bloom");
    let input = dir.join("in.txt");
    std::fs::write(&input, lines_of(0..1000)).unwrap();
    let cmd = format!(
        "{} dedup --state {} < {} | head -1",
        env!("CARGO_BIN_EXE_blockbloom"),
        state.display(),
        input.display()
    );
    let first = Command::new("sh").args(["-c", &cmd]).output().unwrap();
    assert!(first.status.success());
    assert_eq!(first.stdout, (url(0) + "\n").as_bytes());
    let again = run(
        &state_args(state.to_str().unwrap(), &[]),
        &std::fs::read(&input).unwrap(),
    );
    assert!(again.status.success());
    let n = again
        .stdout
        .split(|&c| c == b'\n')
        .filter(|l| !l.is_empty())
        .count();
    // head takes one buffer (a few KiB) from the pipe; the rest was never read.
    assert!(n >= 500, "only {n} of the 999 unread lines printed again");
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
    assert!(String::from_utf8_lossy(&other.stderr).contains("block size"));
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
