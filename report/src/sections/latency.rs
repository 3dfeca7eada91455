//! "Latency of single operations": percentiles of one timed call at a time.

use crate::report::*;

pub(crate) fn run(r: &mut Report) {
    r.section("Latency of single operations");
    let n = r.cfg.sizes[0];
    let w = Workload::new(n, r.cfg.ops);
    let overhead = measure::timer_overhead_ns();
    let _ = write!(
        r.md,
        "n = {}; each operation timed on its own with two clock reads, which alone take {overhead} ns \
         (median, included in every figure below).\n\n\
         | structure | operation | threads | p50 ns | p90 ns | p99 ns | p99.9 ns | max ns |\n\
         |---|---|---:|---:|---:|---:|---:|---:|\n",
        fmt_n(n)
    );
    let max_t = *r.cfg.threads.last().unwrap();
    let mut lines = Vec::new();
    let mut line = |name: &str, op: Op, t: usize, h: hdrhistogram::Histogram<u64>| {
        let q = |x: f64| h.value_at_quantile(x);
        lines.push(format!(
            "| {name} | {} | {t} | {} | {} | {} | {} | {} |",
            op.name(),
            q(0.5),
            q(0.9),
            q(0.99),
            q(0.999),
            h.max()
        ));
    };
    let ops = [Op::InsertIfAbsent, Op::ContainsMember];
    {
        let mut b = Bloom::new(n, FPR, false, false);
        fill(&b, n);
        b.snapshot_prototype();
        for op in ops {
            let c = w.cell(op);
            let k = c.keys();
            line("blockbloom", op, 1, measure::latency_seq(&mut b, op, k));
            line(
                "blockbloom",
                op,
                max_t,
                measure::latency_par(&mut b, op, k, max_t),
            );
        }
    }
    {
        let mut h = Seq(RefCell::new(HashSet::with_capacity(n as usize)), "");
        fill(&h, n);
        for op in ops {
            let c = w.cell(op);
            let k = c.keys();
            line(
                "HashSet<String>",
                op,
                1,
                measure::latency_seq(&mut h, op, k),
            );
        }
    }
    {
        let mut h = Seq(
            RefCell::new(HashSet::with_capacity_and_hasher(
                n as usize,
                ahash::RandomState::new(),
            )),
            "",
        );
        fill(&h, n);
        for op in ops {
            let c = w.cell(op);
            let k = c.keys();
            line(
                "AHashSet<String>",
                op,
                1,
                measure::latency_seq(&mut h, op, k),
            );
        }
    }
    {
        let mut m = Locked(Mutex::new(HashSet::with_capacity(n as usize)));
        fill(&m, n);
        for op in ops {
            let c = w.cell(op);
            let k = c.keys();
            let h = measure::latency_par(&mut m, op, k, max_t);
            line("Mutex<HashSet<String>>", op, max_t, h);
        }
    }
    {
        let mut d = Dash(dashmap::DashSet::with_capacity(n as usize));
        fill(&d, n);
        for op in ops {
            let c = w.cell(op);
            let k = c.keys();
            line(
                "DashSet<String>",
                op,
                max_t,
                measure::latency_par(&mut d, op, k, max_t),
            );
        }
    }
    r.md.push_str(&lines.join("\n"));
    r.md.push_str("\n\n");
}
