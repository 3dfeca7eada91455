//! What the CLI's test files share: the binary, running it, temporary directories, inputs.
#![allow(dead_code)] // each test file uses its own part

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use blockbloom_workload::url;

pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_blockbloom"))
}

pub fn run(args: &[&str], stdin: &[u8]) -> Output {
    let mut cmd = bin();
    cmd.args(args);
    run_command(cmd, stdin)
}

/// Runs `cmd` with `stdin` as its input, and waits for it.
pub fn run_command(mut cmd: Command, stdin: &[u8]) -> Output {
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

pub fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("blockbloom-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

pub fn lines_of(range: std::ops::Range<u64>) -> String {
    range.map(|i| url(i) + "\n").collect()
}

pub fn state_args<'a>(state: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec!["dedup", "--state", state];
    v.extend_from_slice(extra);
    v
}

/// Runs `args` with standard input kept open (nothing written), and expects the run to end
/// by itself within 20 s — before reading any input — with that output.
pub fn run_without_input(args: &[&str]) -> Output {
    let mut child = bin()
        .args(args)
        .stdin(Stdio::piped()) // kept open: the tool must not wait for it
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        assert!(std::time::Instant::now() < deadline, "waited for input");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    out
}

/// Lines of output.
pub fn count_lines(out: &[u8]) -> usize {
    out.iter().filter(|&&c| c == b'\n').count()
}
