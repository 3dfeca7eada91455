//! `dedup --canonical-urls`: spellings of one page are one line (the first printed as it
//! was written), in memory, across runs of a state and with threads; lines that are not
//! URLs are compared as they are. (The canonical forms against w3lib's, on the links of
//! the Python docs: `python/tests/test_url.py`.)

mod common;
use common::*;

const SPELLINGS: &str = "\
http://Example.com/a?y=2&x=1#top
http://example.com/a?x=1&y=2
HTTP://EXAMPLE.COM:/a?x=1&y=2
http://example.com/b
http://example.com/%7Euser/
not a url
not a url
mailto:Someone@Example.com
mailto:someone@example.com
http://[::1/
http://[::1/
http://example.com/~user/
http://b\u{fc}cher.de/\r
http://xn--bcher-kva.de/
";

const FIRST_SPELLINGS: &str = "\
http://Example.com/a?y=2&x=1#top
http://example.com/b
http://example.com/%7Euser/
not a url
mailto:Someone@Example.com
mailto:someone@example.com
http://[::1/
http://b\u{fc}cher.de/\r
";

#[test]
fn spellings_of_one_page_are_printed_once_as_first_written() {
    for threads in ["1", "3"] {
        let out = run(
            &["dedup", "--canonical-urls", "--threads", threads],
            SPELLINGS.as_bytes(),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            FIRST_SPELLINGS,
            "--threads {threads}"
        );
    }
    // Without the flag, every distinct string is a line of its own.
    let raw = run(&["dedup"], SPELLINGS.as_bytes());
    assert_eq!(count_lines(&raw.stdout), SPELLINGS.lines().count() - 2);
}

#[test]
fn a_state_keeps_pages_across_runs() {
    let dir = temp_dir("canonical");
    let state = dir.join("s.bloom");
    let args = state_args(state.to_str().unwrap(), &["--canonical-urls"]);
    let first = run(&args, b"http://example.com/a?x=1&y=2\n");
    assert_eq!(first.stdout, b"http://example.com/a?x=1&y=2\n");
    let again = run(
        &args,
        b"HTTP://example.COM/a?y=2&x=1#again\nhttp://example.com/new\n",
    );
    assert!(again.status.success());
    assert_eq!(again.stdout, b"http://example.com/new\n");
}

#[test]
fn lossy_options_merge_more_spellings_and_need_the_flag() {
    let input = "http://ex.com:80/a/?utm_source=x&sid=1&b=2\nhttp://ex.com/a?b=2\nhttp://ex.com/a?b=2&ref_x=1\n";
    let plain = run(&["dedup", "--canonical-urls"], input.as_bytes());
    assert_eq!(
        count_lines(&plain.stdout),
        3,
        "without options: three pages"
    );
    let args = [
        "dedup",
        "--canonical-urls",
        "--strip-tracking-params",
        "--strip-param",
        "sid",
        "--strip-param",
        "ref_*",
        "--strip-default-port",
        "--strip-trailing-slash",
    ];
    let stripped = run(&args, input.as_bytes());
    assert_eq!(
        stripped.stdout,
        b"http://ex.com:80/a/?utm_source=x&sid=1&b=2\n"
    );
    let refused = run(&["dedup", "--strip-default-port"], input.as_bytes());
    assert_eq!(
        refused.status.code(),
        Some(1),
        "--strip-… needs --canonical-urls"
    );
}

/// w3lib's other arguments as flags: `--keep-fragments` tells `#x` from `#y`,
/// `--drop-blank-values` merges `?a=1&b=` with `?a=1`, `--query-separator ';'` sorts the
/// arguments between `;`. Each is recorded in a state: a run without it is refused.
#[test]
fn w3lib_s_arguments_as_flags() {
    let lines = |out: &std::process::Output| String::from_utf8_lossy(&out.stdout).lines().count();
    let input = b"http://a.com/#x\nhttp://a.com/#y\nhttp://a.com/#x\n";
    assert_eq!(lines(&run(&["dedup", "--canonical-urls"], input)), 1);
    assert_eq!(
        lines(&run(
            &["dedup", "--canonical-urls", "--keep-fragments"],
            input
        )),
        2
    );
    let blank = b"http://a.com/?a=1&b=\nhttp://a.com/?a=1\n";
    assert_eq!(lines(&run(&["dedup", "--canonical-urls"], blank)), 2);
    assert_eq!(
        lines(&run(
            &["dedup", "--canonical-urls", "--drop-blank-values"],
            blank
        )),
        1
    );
    let semi = b"http://a.com/?b=2;a=1\nhttp://a.com/?a=1;b=2\n";
    assert_eq!(lines(&run(&["dedup", "--canonical-urls"], semi)), 2);
    let args = ["dedup", "--canonical-urls", "--query-separator", ";"];
    assert_eq!(lines(&run(&args, semi)), 1);
    let dir = temp_dir("canonical-flags");
    let state = dir.join("s.bloom");
    let state = state.to_str().unwrap();
    let with = run(
        &state_args(state, &["--canonical-urls", "--keep-fragments"]),
        input,
    );
    assert!(with.status.success());
    let without = run(&state_args(state, &["--canonical-urls"]), input);
    assert_eq!(without.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&without.stderr).contains("--keep-fragments"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--w3lib` picks the release whose forms to follow (2.6 by default: `faß.de` is not
/// `fass.de`, `0x7f.1` is `127.0.0.1`; 2.5 the other way round), and a state records it: a
/// state made with 2.5's forms (as every state made before 2.6 was followed) is refused
/// by a run with 2.6's, with the flag that reads it.
#[test]
fn the_w3lib_release_is_chosen_and_recorded() {
    let input = "http://fass.de/\nhttp://fa\u{df}.de/\nhttp://0x7f.1/\nhttp://127.0.0.1/\n";
    let out = run(&["dedup", "--canonical-urls"], input.as_bytes());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "http://fass.de/\nhttp://fa\u{df}.de/\nhttp://0x7f.1/\n"
    );
    let args = ["dedup", "--canonical-urls", "--w3lib", "2.5"];
    let out = run(&args, input.as_bytes());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "http://fass.de/\nhttp://0x7f.1/\nhttp://127.0.0.1/\n"
    );
    for bad in [
        &["dedup", "--canonical-urls", "--w3lib", "2.4"][..],
        &["dedup", "--w3lib", "2.5"],
    ] {
        let refused = run(bad, input.as_bytes());
        assert!(!refused.status.success(), "{bad:?}");
        assert!(refused.stdout.is_empty(), "{bad:?}");
    }
    let err = run(&["dedup", "--canonical-urls", "--w3lib", "2.4"], b"");
    assert!(String::from_utf8_lossy(&err.stderr).contains("2.5 and 2.6"));

    let dir = temp_dir("canonical-w3lib");
    let state = dir.join("s.bloom");
    let state = state.to_str().unwrap();
    let made = run(
        &state_args(state, &["--canonical-urls", "--w3lib", "2.5"]),
        b"http://fass.de/\n",
    );
    assert!(made.status.success());
    let newer = run(
        &state_args(state, &["--canonical-urls"]),
        "http://fa\u{df}.de/\n".as_bytes(),
    );
    assert_eq!(newer.status.code(), Some(1));
    assert!(newer.stdout.is_empty());
    assert!(String::from_utf8_lossy(&newer.stderr).contains("--canonical-urls --w3lib 2.5"));
    let same = run(
        &state_args(state, &["--canonical-urls", "--w3lib", "2.5.0"]),
        "http://fa\u{df}.de/\nhttp://b.de/\n".as_bytes(),
    );
    assert!(same.status.success());
    assert_eq!(same.stdout, b"http://b.de/\n");
    std::fs::remove_dir_all(&dir).unwrap();
}
