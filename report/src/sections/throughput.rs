//! "Throughput": every structure, every operation, 1 and more threads, at each size; the
//! tables, the scaling and the plot.

use crate::report::*;

pub(crate) fn run(r: &mut Report) {
    r.section("Throughput");
    let sizes = r.cfg.sizes.clone();
    for &n in &sizes {
        let w = Workload::new(n, r.cfg.ops);
        progress(&format!("n = {n}"));
        let trip_before = measure::core_round_trip_ns();
        {
            let mut b = Bloom::new(n, FPR, false, false);
            let bytes = fill(&b, n);
            b.snapshot_prototype();
            r.shared(&w, &mut b, bytes);
            b.batched = true;
            r.shared(&w, &mut b, bytes);
        }
        if n as usize * 64 / 50 >= 2 << 20 {
            // huge pages only apply to filters of 2 MiB and more
            let mut b = Bloom::new(n, FPR, true, true);
            let bytes = fill(&b, n);
            b.snapshot_prototype();
            r.shared(&w, &mut b, bytes);
            b.batched = false;
            r.shared(&w, &mut b, bytes);
        }
        {
            let mut f = Fast::new(n, FPR);
            let bytes = fill(&f, n);
            f.snapshot_prototype();
            r.shared(&w, &mut f, bytes);
        }
        {
            let mut s = Sbbf::new(n);
            let bytes = fill(&s, n);
            s.snapshot_prototype();
            r.seq(&w, &mut s, bytes);
        }
        {
            let mut c = Classic::new(n, FPR);
            let bytes = fill(&c, n);
            c.snapshot_prototype();
            r.seq(&w, &mut c, bytes);
        }
        {
            let before = CountingAlloc::live_bytes();
            let mut h = Seq(
                RefCell::new(HashSet::with_capacity(n as usize)),
                "HashSet<String>",
            );
            fill(&h, n);
            let bytes = CountingAlloc::live_bytes() - before;
            r.seq(&w, &mut h, bytes);
        }
        {
            let before = CountingAlloc::live_bytes();
            let mut h = Seq(
                RefCell::new(HashSet::with_capacity_and_hasher(
                    n as usize,
                    ahash::RandomState::new(),
                )),
                "AHashSet<String>",
            );
            fill(&h, n);
            let bytes = CountingAlloc::live_bytes() - before;
            r.seq(&w, &mut h, bytes);
        }
        {
            let before = CountingAlloc::live_bytes();
            let mut m = Locked(Mutex::new(HashSet::with_capacity(n as usize)));
            fill(&m, n);
            let bytes = CountingAlloc::live_bytes() - before;
            r.shared(&w, &mut m, bytes);
        }
        {
            let before = CountingAlloc::live_bytes();
            let mut d = Dash(dashmap::DashSet::with_capacity(n as usize));
            fill(&d, n);
            let bytes = CountingAlloc::live_bytes() - before;
            r.shared(&w, &mut d, bytes);
        }
        r.round_trips
            .push((n, trip_before, measure::core_round_trip_ns()));
        throughput_tables(r, n);
    }
    throughput_plot(r);
}

fn throughput_tables(r: &mut Report, n: u64) {
    let threads = r.cfg.threads.clone();
    for t in threads {
        let rows: Vec<&Row> = r
            .rows
            .iter()
            .filter(|(m, row)| *m == n && row.threads == t)
            .map(|(_, row)| row)
            .collect();
        let base = rows.iter().find(|row| row.peer == "blockbloom").copied();
        let mut md = format!(
            "### n = {}, {t} thread{}\n\n\
             | structure | insert ns | insert_if_absent ns | Mops/s | × blockbloom | contains member ns | contains non-member ns | fpr measured | bytes/key |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
            fmt_n(n),
            if t > 1 { "s" } else { "" }
        );
        for row in &rows {
            let ns = |op| row.get(op).map_or(f64::NAN, |c: &Cell| c.ns);
            let iaa = row.get(Op::InsertIfAbsent).unwrap();
            let ratio = base
                .and_then(|b| b.get(Op::InsertIfAbsent))
                .map_or(f64::NAN, |b| iaa.ns / b.ns);
            let non = row.get(Op::ContainsNonMember).unwrap();
            let _ = writeln!(
                md,
                "| {} | {:.1} | {:.1} | {:.1} | {:.2} | {:.1} | {:.1} | {:.3}% | {:.2} |",
                row.peer,
                ns(Op::Insert),
                iaa.ns,
                iaa.mops(),
                ratio,
                ns(Op::ContainsMember),
                ns(Op::ContainsNonMember),
                non.found as f64 * 100.0 / non.ops as f64,
                row.bytes as f64 / n as f64,
            );
        }
        md.push('\n');
        r.md.push_str(&md);
    }
    // scaling of the shared structures
    let mut md = String::from(
        "Scaling of insert_if_absent (throughput with T threads / with 1 thread):\n\n| structure |",
    );
    let ts: Vec<usize> = r.cfg.threads.iter().copied().filter(|&t| t > 1).collect();
    for t in &ts {
        let _ = write!(md, " {t} threads |");
    }
    md.push_str("\n|---|");
    md.push_str(&"---:|".repeat(ts.len()));
    md.push('\n');
    let names: Vec<String> = r
        .rows
        .iter()
        .filter(|(m, row)| *m == n && row.threads > 1)
        .map(|(_, row)| row.peer.clone())
        .fold(Vec::new(), |mut v, p| {
            if !v.contains(&p) {
                v.push(p);
            }
            v
        });
    for name in names {
        let ns = |t: usize| {
            r.rows
                .iter()
                .find(|(m, row)| *m == n && row.threads == t && row.peer == name)
                .and_then(|(_, row)| row.get(Op::InsertIfAbsent))
                .map_or(f64::NAN, |c| c.ns)
        };
        let _ = write!(md, "| {name} |");
        for &t in &ts {
            let _ = write!(md, " ×{:.2} |", ns(1) / ns(t));
        }
        md.push('\n');
    }
    md.push('\n');
    if let Some(&(_, before, after)) = r.round_trips.iter().find(|t| t.0 == n) {
        let _ = write!(
            md,
            "Core-to-core cache-line round trip (two threads passing a counter through one \
             atomic word), measured before and after this size's cells: {before:.0} ns / \
             {after:.0} ns. Every write to a line that the other core also caches pays for such \
             a transfer, so the scaling of inserts into a shared in-cache filter follows this \
             figure, which on a VM depends on where the hypervisor places the vCPUs (same core \
             complex: tens of ns; apart: hundreds).\n\n"
        );
    }
    r.md.push_str(&md);
}

fn throughput_plot(r: &mut Report) {
    let n = r.cfg.sizes[0];
    let mut series: Vec<Series> = Vec::new();
    for (m, row) in &r.rows {
        if *m != n {
            continue;
        }
        let x = row.threads as f64;
        let y = row.get(Op::InsertIfAbsent).unwrap().mops();
        match series.iter_mut().find(|s| s.name == row.peer) {
            Some(s) => s.points.push((x, y)),
            None => series.push(Series {
                name: row.peer.clone(),
                points: vec![(x, y)],
            }),
        }
    }
    let title = format!("insert_if_absent, n = {}, 50% duplicates", fmt_n(n));
    let plot = Plot {
        title: &title,
        x_label: "threads",
        y_label: "million operations / s (log)",
        x: Scale::Linear,
        y: Scale::Log,
    };
    emit_plot(r, "throughput.svg", &plot, &series);
}
