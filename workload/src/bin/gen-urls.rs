//! Writes a crawl-order stream of synthetic URLs, one per line, to stdout.
//!
//! `gen-urls [LINES] [DUP_FRACTION] [SEED] [crawl]` (defaults: 10000000 0.4 42: about 6.0
//! million distinct URLs of ~68 bytes). With `crawl`, the stream of
//! `blockbloom_workload::crawl_stream` (a crawl's links: mostly navigation repeats) with
//! `1 - DUP_FRACTION` new links.

use std::io::{BufWriter, Write};

fn main() {
    let mut args = std::env::args().skip(1);
    let lines: usize = args
        .next()
        .map_or(10_000_000, |s| s.parse().expect("LINES: a number"));
    let dup: f64 = args
        .next()
        .map_or(0.4, |s| s.parse().expect("DUP_FRACTION: a number"));
    let seed: u64 = args
        .next()
        .map_or(42, |s| s.parse().expect("SEED: a number"));
    let (ids, _) = if args.next().as_deref() == Some("crawl") {
        blockbloom_workload::crawl_stream(lines, 1.0 - dup, seed)
    } else {
        blockbloom_workload::dup_stream(lines, dup, seed)
    };
    let stdout = std::io::stdout();
    let mut out = BufWriter::with_capacity(1 << 20, stdout.lock());
    let mut buf = String::new();
    for id in ids {
        buf.clear();
        blockbloom_workload::write_url(id, &mut buf);
        buf.push('\n');
        if out.write_all(buf.as_bytes()).is_err() {
            return; // closed pipe
        }
    }
    let _ = out.flush();
}
