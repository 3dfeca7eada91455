//! `dedup --state` and the files around a state: a path that cannot be used, files left
//! over from earlier runs in the layers' places, a directory the state cannot grow in,
//! `--seed`, `merge` of every kind `dedup` writes, and what `stats` shows of them.

mod common;
use common::*;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A state path that cannot be used fails at once (exit 2), before reading any input.
#[test]
fn a_bad_state_path_fails_before_reading() {
    let dir = temp_dir("badpath");
    for state in [
        dir.join("no/such/dir/s.bloom"),
        PathBuf::from("/proc/blockbloom.bloom"),
    ] {
        let out = run_without_input(&["dedup", "--state", state.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{}", state.display());
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `rm s.bloom` leaving `s.bloom.1`, a directory where a layer goes, another state's layer
/// beside a new first file: each is refused before any input is read (exit 2, naming the
/// file and what to do), and `stats` says the same; once it is moved away the run is
/// correct.
#[test]
fn files_in_a_growing_state_s_way_are_refused_before_reading() {
    let dir = temp_dir("leftover");
    let s = dir.join("s.bloom");
    let state = s.to_str().unwrap();
    let input = lines_of(0..300_000);
    let made = run(&state_args(state, &[]), input.as_bytes());
    assert!(made.status.success());
    assert!(dir.join("s.bloom.1").exists());
    let stats = bin().args(["stats", state]).output().unwrap();
    let text = String::from_utf8_lossy(&stats.stdout);
    assert!(
        text.contains(&format!("layer files {state}, {state}.1")),
        "{text}"
    );

    // What anyone does to start over.
    std::fs::remove_file(&s).unwrap();
    let refused = |what: &str| {
        let out = run_without_input(&state_args(state, &[]));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {err}");
        assert!(
            err.contains("s.bloom.1") && err.contains("move it away"),
            "{what}: {err}"
        );
        assert!(out.stdout.is_empty());
    };
    refused("leftover, first file gone");
    assert!(!s.exists(), "a refused run made a new state");
    // A new first file made elsewhere, then put beside the leftover.
    let other = dir.join("other.bloom");
    assert!(run(&state_args(other.to_str().unwrap(), &[]), b"x\n")
        .status
        .success());
    std::fs::rename(&other, &s).unwrap();
    refused("another state's layer beside the first file");
    let stats = bin().args(["stats", state]).output().unwrap();
    assert_eq!(stats.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&stats.stderr).contains("s.bloom.1"));

    // Moved away: the run is correct.
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("s.bloom.")
        {
            std::fs::remove_file(p).unwrap();
        }
    }
    let out = run(&state_args(state, &[]), input.as_bytes());
    assert!(out.status.success());
    assert!(count_lines(&out.stdout) >= 297_000);

    // A directory where the next layer goes.
    let d = temp_dir("leftover-dir");
    std::fs::create_dir(d.join("s.bloom.1")).unwrap();
    let state = d.join("s.bloom");
    let out = run_without_input(&state_args(state.to_str().unwrap(), &[]));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a regular file"));
    std::fs::remove_dir_all(&d).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs `args` as a user who may write the state file but not create files in its
/// directory: as root, the user `nobody` (setpriv); otherwise ourselves, the directory
/// made read-only. `fix` undoes that.
fn as_user_who_cannot_create_in(
    dir: &Path,
    file: &Path,
    args: &[&str],
    input: &[u8],
) -> std::process::Output {
    let root = Command::new("id").arg("-u").output().unwrap().stdout == b"0\n";
    if root {
        std::os::unix::fs::chown(file, Some(65534), Some(65534)).unwrap();
        let mut cmd = Command::new("setpriv");
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_blockbloom"))
            .args(args);
        run_command(cmd, input)
    } else {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).unwrap();
        let mut cmd = bin();
        cmd.args(args);
        let out = run_command(cmd, input);
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        out
    }
}

/// A growing state in a directory where it cannot add its next file: the run stops before
/// the first layer passes its capacity (exit 2, the cause named), never exit 0 with lines
/// dropped; with the cause removed the next run prints the rest, none twice.
#[test]
fn a_state_that_cannot_grow_stops_and_the_next_run_prints_the_rest() {
    let dir = temp_dir("nogrow");
    let s = dir.join("s.bloom");
    let state = s.to_str().unwrap();
    assert!(run(&state_args(state, &["--fpr", "1e-6"]), b"")
        .status
        .success());
    let input = lines_of(0..300_000);
    let out = as_user_who_cannot_create_in(&dir, &s, &state_args(state, &[]), input.as_bytes());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot grow") && err.contains("Permission denied"),
        "{err}"
    );
    let first = out.stdout;
    let a = count_lines(&first);
    assert!(
        a > 90_000 && a <= 100_000,
        "{a} lines printed before growth"
    );
    let rest = run(&state_args(state, &[]), input.as_bytes());
    assert!(rest.status.success());
    let mut printed = HashSet::new();
    for l in first
        .split_inclusive(|&c| c == b'\n')
        .chain(rest.stdout.split_inclusive(|&c| c == b'\n'))
    {
        assert!(
            printed.insert(l),
            "printed twice: {}",
            String::from_utf8_lossy(l)
        );
    }
    assert!(
        printed.len() >= 300_000 - 3,
        "{} of 300,000 printed",
        printed.len()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--seed`: a new state's hashing key; an existing state refuses another (exit 1). `merge`
/// of growing states of different lengths made with one seed answers "seen" for every line
/// of both, into a new state or into an input in place; other seeds are refused, naming
/// them; a later layer's file named on its own is refused, naming its state.
#[test]
fn merge_unites_growing_states_made_with_one_seed() {
    let dir = temp_dir("merge");
    let p = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    let (a, b, c, m) = (p("a.bloom"), p("b.bloom"), p("c.bloom"), p("m.bloom"));
    let (in_a, in_b) = (lines_of(0..50_000), lines_of(100_000..500_000));
    assert!(run(&state_args(&a, &["--seed", "7"]), in_a.as_bytes())
        .status
        .success());
    assert!(run(&state_args(&b, &["--seed", "7"]), in_b.as_bytes())
        .status
        .success());
    assert!(run(&state_args(&c, &["--seed", "0x8"]), b"x\n")
        .status
        .success());
    let other = run(&state_args(&a, &["--seed", "8"]), b"y\n");
    assert_eq!(other.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&other.stderr).contains("seed"));
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        Path::new(&format!("{b}.2")).exists() && !Path::new(&format!("{a}.1")).exists(),
        "{names:?}"
    );

    let merged = bin().args(["merge", &m, &a, &b]).output().unwrap();
    assert!(
        merged.status.success(),
        "{}",
        String::from_utf8_lossy(&merged.stderr)
    );
    let both = in_a.clone() + &in_b;
    let out = run(&state_args(&m, &[]), both.as_bytes());
    assert!(out.status.success());
    assert!(
        out.stdout.is_empty(),
        "{} lines new to the merged state",
        count_lines(&out.stdout)
    );
    let stats = String::from_utf8(bin().args(["stats", &m]).output().unwrap().stdout).unwrap();
    assert!(
        stats.contains(&format!("layer files {m}, {m}.1, {m}.2")),
        "{stats}"
    );

    // In place: into a.
    let into_a = bin().args(["merge", &a, &a, &b]).output().unwrap();
    assert!(
        into_a.status.success(),
        "{}",
        String::from_utf8_lossy(&into_a.stderr)
    );
    assert!(run(&state_args(&a, &[]), both.as_bytes()).stdout.is_empty());

    let refused = bin()
        .args(["merge", &p("n.bloom"), &b, &c])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2));
    assert!(err.contains("seed 7") && err.contains("seed 8"), "{err}");
    let layer = bin()
        .args(["merge", &p("n.bloom"), &format!("{b}.1")])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&layer.stderr);
    assert_eq!(layer.status.code(), Some(2));
    assert!(err.contains("is a layer of the growing state"), "{err}");
    // An existing OUT of the same kind and parameters is merged in, as an input.
    let into_m = bin().args(["merge", &m, &c]).output().unwrap();
    assert_eq!(into_m.status.code(), Some(2), "another seed");
    let into_m = bin().args(["merge", &m, &b]).output().unwrap();
    assert!(into_m.status.success(), "{into_m:?}");
    assert!(run(&state_args(&m, &[]), both.as_bytes()).stdout.is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}
