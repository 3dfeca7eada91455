//! Facts with one home: where the docs repeat one, a test checks the copy against it.

use std::path::Path;

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
}

/// `[`X`](link)` and `[`X`]` (rustdoc links) as plain `` `X` ``.
fn plain(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(i) = rest.find("[`") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let end = after.find("`]").expect("a closed link") + 1;
        out.push_str(&after[..end]);
        rest = &after[end + 1..];
        if rest.starts_with('(') {
            rest = &rest[rest.find(')').expect("a closed target") + 1..];
        }
    }
    out.push_str(rest);
    out
}

/// The snapshot format's table in `docs/FILES.md` is the one in `src/format.rs`'s docs, row
/// for row (the README once showed version 1 and 4-byte flags long after version 2).
#[test]
fn the_format_table_in_the_docs_is_the_source_s() {
    let source: Vec<String> = read("src/format.rs")
        .lines()
        .filter_map(|l| l.strip_prefix("//! |"))
        .map(|l| plain(&format!("|{l}")))
        .collect();
    assert!(source.len() > 10, "the table in src/format.rs");
    let docs: Vec<String> = read("docs/FILES.md")
        .lines()
        .skip_while(|l| !l.starts_with("| offset |"))
        .take_while(|l| l.starts_with('|'))
        .map(str::to_string)
        .collect();
    assert_eq!(docs, source);
}
