//! "Your URLs": the dedup throughput on the user's own list (`--urls FILE`).

use crate::report::*;

/// The dedup throughput on the user's own list of URLs (one per line), in file order.
pub(crate) fn run(r: &mut Report, path: &Path) -> std::io::Result<()> {
    r.section("Your URLs");
    let bytes = std::fs::read(path)?;
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().map(|l| l.trim_end_matches('\r')).collect();
    // Every structure starts empty: any line may be added.
    let all = measure::Keys {
        keys: &lines,
        added: &lines,
    };
    let n = lines.len().max(1) as u64;
    let exact: HashSet<&str> = lines.iter().copied().collect();
    let _ = write!(
        r.md,
        "`{}`: {} lines, {} distinct. One insert_if_absent per line in file order, into a \
         structure sized for the line count; median of {} run(s).\n\n\
         | structure | threads | ns/line | Mops/s | lines kept | missed (false positives) | bytes |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
        path.display(),
        lines.len(),
        exact.len(),
        r.cfg.reps
    );
    let reps = r.cfg.reps;
    let mut out = Vec::new();
    let mut row = |name: String, t: usize, c: Cell, bytes: usize| {
        out.push(format!(
            "| {name} | {t} | {:.1} | {:.1} | {} | {} | {bytes} |",
            c.ns,
            c.mops(),
            c.found,
            exact.len().saturating_sub(c.found)
        ));
    };
    let max_t = *r.cfg.threads.last().unwrap();
    let fresh = |mk: &dyn Fn() -> Bloom| {
        let mut b = mk();
        b.snapshot_prototype(); // empty: reset clears it
        b
    };
    for batched in [false, true] {
        let mut b = fresh(&|| Bloom::new(n, FPR, batched, false));
        let bytes = b.f.memory_bytes();
        row(
            b.name(),
            1,
            measure::seq(&mut b, Op::InsertIfAbsent, all, reps),
            bytes,
        );
        let c = measure::par(&mut b, Op::InsertIfAbsent, all, reps, max_t);
        row(b.name(), max_t, c, bytes);
    }
    {
        let mut f = Fast::new(n, FPR);
        f.snapshot_prototype();
        let bytes = f.own_memory().unwrap_or(0);
        row(
            f.name(),
            1,
            measure::seq(&mut f, Op::InsertIfAbsent, all, reps),
            bytes,
        );
    }
    {
        let before = CountingAlloc::live_bytes();
        let mut h = Seq(RefCell::new(HashSet::new()), "HashSet<String>");
        let c = measure::seq(&mut h, Op::InsertIfAbsent, all, 1);
        let bytes = {
            // measure the full set once more, kept this time
            let keep = Seq(RefCell::new(HashSet::new()), "");
            lines.iter().for_each(|l| keep.insert(l));
            CountingAlloc::live_bytes() - before
        };
        row(h.name(), 1, c, bytes);
    }
    r.md.push_str(&out.join("\n"));
    r.md.push_str("\n\n");
    Ok(())
}
