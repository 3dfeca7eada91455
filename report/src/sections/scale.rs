//! "Scale": a fill from empty to capacity through the batched path, from in-cache sizes to
//! 10^9 keys, with the default builder (huge pages once dense), 4 KiB pages
//! (`huge_pages(false)`) and huge pages from the start (`huge_pages(true)`); the rate
//! measured at capacity, bytes and ns per key. Where huge pages start to pay is where the
//! default turns them on (`storage/huge.rs`, 16 MiB).

use crate::report::*;

/// Keys per `insert_if_absent_many` call (the CLI's and the Python binding's batch size
/// are of this order).
const BATCH: usize = 1024;

/// Fills of in-cache sizes, of which the median is reported.
const REPS: usize = 5;

/// Never-inserted keys asked after the fill, for the measured rate.
const QUERIES: u64 = 1_000_000;

#[derive(Clone, Copy, PartialEq)]
enum Pages {
    Default,
    Small,
    Huge,
}

impl Pages {
    fn name(self) -> &'static str {
        match self {
            Pages::Default => "default (huge once dense)",
            Pages::Small => "`huge_pages(false)`",
            Pages::Huge => "`huge_pages(true)`",
        }
    }
}

/// One fill: (ns per key of the timed calls alone, measured rate at capacity, bytes).
fn fill(n: u64, pages: Pages) -> (f64, f64, usize) {
    let mut b = BloomFilter::builder().capacity(n).fpr(FPR);
    if pages != Pages::Default {
        b = b.huge_pages(pages == Pages::Huge);
    }
    let f = b.build().expect("filter");
    let mut keys: Vec<String> = vec![String::with_capacity(96); BATCH];
    let mut out = vec![false; BATCH];
    let mut timed = std::time::Duration::ZERO;
    let mut start = 0;
    while start < n {
        let len = BATCH.min((n - start) as usize);
        for (i, k) in keys[..len].iter_mut().enumerate() {
            k.clear();
            write_url(start + i as u64, k);
        }
        let t = Instant::now();
        f.insert_if_absent_many(&keys[..len], &mut out[..len]);
        timed += t.elapsed();
        start += len as u64;
    }
    let mut found = 0u64;
    let mut q = n + 1_000_000_000_000;
    while q < n + 1_000_000_000_000 + QUERIES {
        for (i, k) in keys.iter_mut().enumerate() {
            k.clear();
            write_url(q + i as u64, k);
        }
        f.contains_many(&keys, &mut out);
        found += out.iter().filter(|&&x| x).count() as u64;
        q += BATCH as u64;
    }
    let rate = found as f64 / (q - n - 1_000_000_000_000) as f64;
    (timed.as_nanos() as f64 / n as f64, rate, f.memory_bytes())
}

pub(crate) fn run(r: &mut Report) {
    r.section("Scale: from in-cache to 10^9 keys");
    // (size, with every page choice?) In-cache first: the reference.
    // (keys, the page choices measured): the in-cache reference first.
    let all: &[Pages] = &[Pages::Default, Pages::Small, Pages::Huge];
    let default_and_huge: &[Pages] = &[Pages::Default, Pages::Huge];
    let sizes: Vec<(u64, &[Pages])> = if r.cfg.quick {
        vec![(100_000, &[Pages::Default]), (1_000_000, all)]
    } else {
        vec![
            (1_000_000, &[Pages::Default]),
            (10_000_000, all),
            (16_000_000, all),
            (27_000_000, all),
            (54_000_000, all),
            (100_000_000, all),
            (200_000_000, all),
            (1_000_000_000, default_and_huge),
        ]
    };
    let _ = write!(
        r.md,
        "A fill from empty to capacity with distinct ~70-byte URLs at {:.0}%, through \
         `insert_if_absent_many` in calls of {BATCH} (only the calls are timed, not making \
         the URLs), one thread, then the rate measured on {} never-inserted URLs. In-cache \
         reference: the first row (a 1.2 MiB filter, in the caches; the median of {REPS} fills). The default \
         builder asks for huge pages once a filter of 16 MiB or more is dense (four new keys \
         per 4 KiB page, then `MADV_COLLAPSE`, whose copy is in the timed calls: \
         `Builder::huge_pages`).\n\n\
         | keys | filter | pages | ns/key | × in-cache | rate at capacity | bytes/key |\n\
         |---:|---:|---|---:|---:|---:|---:|\n",
        FPR * 100.0,
        fmt_n(QUERIES)
    );
    let mut in_cache = f64::NAN;
    let mut goal = None;
    for (n, choices) in sizes {
        for &pages in choices {
            progress(&format!("scale: {} keys, {}", fmt_n(n), pages.name()));
            // Small fills take milliseconds: the median of several.
            let reps = if n <= 1_000_000 { REPS } else { 1 };
            let mut runs: Vec<_> = (0..reps).map(|_| fill(n, pages)).collect();
            runs.sort_by(|a, b| a.0.total_cmp(&b.0));
            let (ns, rate, bytes) = runs[reps / 2];
            if in_cache.is_nan() {
                in_cache = ns;
            }
            if n == 200_000_000 && pages == Pages::Default {
                goal = Some(ns / in_cache);
            }
            let _ = writeln!(
                r.md,
                "| {} | {:.1} MiB | {} | {ns:.1} | ×{:.2} | {:.3}% | {:.2} |",
                fmt_n(n),
                bytes as f64 / 1048576.0,
                pages.name(),
                ns / in_cache,
                rate * 100.0,
                bytes as f64 / n as f64
            );
        }
    }
    r.md.push('\n');
    if let Some(ratio) = goal {
        let _ = writeln!(
            r.md,
            "Goal: the batched path at 2·10^8 keys within ×2 of its in-cache cost with the \
             default builder: ×{ratio:.2}, {}.\n",
            if ratio <= 2.0 { "met" } else { "not met" }
        );
    }
}
