//! "Line size": the four block sizes side by side — bits per key sized for 1% and 0.1% and
//! the rate measured there, and `insert_if_absent` in and out of the caches, 1 and 2
//! threads, one call at a time and batched, with fastbloom in the same run.

use crate::report::*;
use blockbloom::math::BLOCK_SIZES;

pub(crate) fn run(r: &mut Report) {
    r.section("Line size");
    accuracy(r);
    speed(r);
}

fn accuracy(r: &mut Report) {
    let n = r.cfg.accuracy_capacity;
    let q = r.cfg.queries as u64;
    let _ = write!(
        r.md,
        "Sized for {} keys, filled with them, asked {} never-inserted URLs. `Builder::block_bits` \
         picks the size; the sizing prices it in (`math::blocked_fpr_sized`).\n\n\
         | block bits | rate asked | bits/key | k | measured rate |\n|---:|---:|---:|---:|---:|\n",
        fmt_n(n),
        fmt_n(q)
    );
    let mut buf = String::with_capacity(128);
    for fpr in [0.01, 0.001] {
        for bits in BLOCK_SIZES {
            let f = BloomFilter::builder()
                .capacity(n)
                .fpr(fpr)
                .block_bits(bits)
                .seed(0xB10C)
                .build()
                .expect("filter");
            for i in 0..n {
                buf.clear();
                write_url(i, &mut buf);
                f.insert(buf.as_str());
            }
            let fp = (n..n + q)
                .filter(|&i| {
                    buf.clear();
                    write_url(i, &mut buf);
                    f.contains(buf.as_str())
                })
                .count();
            let _ = writeln!(
                r.md,
                "| {bits} | {}% | {:.2} | {} | {:.3}% |",
                fpr * 100.0,
                f.num_bits() as f64 / n as f64,
                f.num_hashes(),
                100.0 * fp as f64 / q as f64
            );
        }
    }
    r.md.push('\n');
}

fn speed(r: &mut Report) {
    let sizes = [r.cfg.sizes[0], *r.cfg.sizes.last().expect("a size")];
    let t2 = 2;
    let _ = write!(
        r.md,
        "`insert_if_absent`, ns/op (50% duplicates; median of {} repetition(s); batched = {} keys \
         per call):\n\n| structure | {} 1 thr | {} {t2} thr | {} 1 thr | {} {t2} thr | bytes/key |\n\
         |---|---:|---:|---:|---:|---:|\n",
        r.cfg.reps,
        1024,
        fmt_n(sizes[0]),
        fmt_n(sizes[0]),
        fmt_n(sizes[1]),
        fmt_n(sizes[1]),
    );
    // (name, [ns at size 0 (1, 2 threads), at size 1 (1, 2 threads)], bytes per key)
    let mut rows: Vec<(String, [f64; 4], f64)> = Vec::new();
    let mut row = |name: String, at: usize, one: f64, two: f64, bpk: f64| match rows
        .iter_mut()
        .find(|r| r.0 == name)
    {
        Some(r) => {
            r.1[2 * at] = one;
            r.1[2 * at + 1] = two;
        }
        None => {
            let mut v = [f64::NAN; 4];
            v[2 * at] = one;
            v[2 * at + 1] = two;
            rows.push((name, v, bpk));
        }
    };
    for (at, &n) in sizes.iter().enumerate() {
        progress(&format!("block size, n = {n}"));
        let w = Workload::new(n, r.cfg.ops);
        let c = w.cell(Op::InsertIfAbsent);
        for bits in BLOCK_SIZES {
            for batched in [false, true] {
                let mut b = Bloom::with_block_bits(n, FPR, bits, batched, false);
                fill(&b, n);
                b.snapshot_prototype();
                let one = measure::seq(&mut b, Op::InsertIfAbsent, c.keys(), r.cfg.reps).ns;
                let two = measure::par(&mut b, Op::InsertIfAbsent, c.keys(), r.cfg.reps, t2).ns;
                let bpk = b.f.memory_bytes() as f64 / n as f64;
                row(b.name(), at, one, two, bpk);
            }
        }
        let mut f = Fast::new(n, FPR);
        let bytes = fill(&f, n);
        f.snapshot_prototype();
        let one = measure::seq(&mut f, Op::InsertIfAbsent, c.keys(), r.cfg.reps).ns;
        let two = measure::par(&mut f, Op::InsertIfAbsent, c.keys(), r.cfg.reps, t2).ns;
        row(f.name(), at, one, two, bytes as f64 / n as f64);
    }
    let find = |name: &str| rows.iter().find(|r| r.0 == name).map(|r| r.1);
    for (name, ns, bpk) in &rows {
        let _ = writeln!(
            r.md,
            "| {name} | {:.1} | {:.1} | {:.1} | {:.1} | {bpk:.2} |",
            ns[0], ns[1], ns[2], ns[3]
        );
    }
    if let (Some(d), Some(s64), Some(fast), Some(d_b), Some(s64_b)) = (
        find("blockbloom"),
        find("blockbloom 64-bit blocks"),
        find("fastbloom atomic (xxh3)"),
        find("blockbloom batched"),
        find("blockbloom 64-bit blocks batched"),
    ) {
        let _ = write!(
            r.md,
            "\nOne call at a time, 1 thread, {}: fastbloom / blockbloom ×{:.2} at 512-bit blocks, \
             ×{:.2} at 64-bit blocks. Batched, 1 thread, {}: 512-bit blocks / 64-bit blocks \
             ×{:.2}.\n\n\
             Which to pick: 512-bit blocks (the default) take the least memory for a rate — what \
             matters for 10^9 URLs, where the filter is far beyond the caches and memory is the \
             cost; 64-bit blocks take 20–55% more memory (the accuracy table) for one or two \
             locked writes per new key instead of k + 1 (\"The price of atomicity\" counts \
             them) — worth it for a hot, in-cache \
             dedup where the call's cost is the point.\n\n",
            fmt_n(sizes[0]),
            fast[0] / d[0],
            fast[0] / s64[0],
            fmt_n(sizes[1]),
            d_b[2] / s64_b[2],
        );
    }
}
