//! "Targets": the project's speed targets, checked against this run's figures.

use crate::report::*;

impl Report {
    /// ns/op of `op` for `peer` at size `n` with `threads` threads, if measured.
    fn ns(&self, n: u64, peer: &str, threads: usize, op: Op) -> Option<f64> {
        self.rows
            .iter()
            .find(|(m, row)| *m == n && row.threads == threads && row.peer == peer)
            .and_then(|(_, row)| row.get(op))
            .map(|c| c.ns)
    }
}

/// The speed targets the project holds today, checked against this run's figures (a
/// withdrawn one — ×10 fastbloom at the large size, set from a run whose keys were
/// scattered in memory — is not listed).
pub(crate) fn run(r: &mut Report) {
    r.section("Targets");
    let iaa = Op::InsertIfAbsent;
    let small = r.cfg.sizes[0];
    let large = *r.cfg.sizes.last().unwrap();
    let max_t = *r.cfg.threads.last().unwrap();
    let mut lines = vec![
        "| target | figures | ratio | met? |".to_string(),
        "|---|---|---:|---|".to_string(),
    ];
    let mut check = |what: String, a: Option<f64>, b: Option<f64>, figures: &str, want: f64| {
        let (Some(a), Some(b)) = (a, b) else {
            lines.push(format!("| {what} | not measured | | |"));
            return;
        };
        let ratio = a / b;
        lines.push(format!(
            "| {what} | {} | ×{ratio:.2} | {} |",
            figures
                .replace("{a}", &format!("{a:.1}"))
                .replace("{b}", &format!("{b:.1}")),
            if ratio >= want { "yes" } else { "**no**" }
        ));
    };
    let sn = fmt_n(small);
    let ln = fmt_n(large);
    check(
        format!("1 thread, n = {sn}: no slower than sbbf-rs-safe (≥ ×1.00)"),
        r.ns(small, "sbbf-rs-safe (not atomic)", 1, iaa),
        r.ns(small, "blockbloom", 1, iaa),
        "sbbf {a} ns / blockbloom {b} ns",
        1.0,
    );
    check(
        format!("1 thread, n = {sn}: ≥ ×1.5 faster than fastbloom atomic"),
        r.ns(small, "fastbloom atomic (xxh3)", 1, iaa),
        r.ns(small, "blockbloom", 1, iaa),
        "fastbloom {a} ns / blockbloom {b} ns",
        1.5,
    );
    for peer in ["blockbloom", "blockbloom batched"] {
        check(
            format!("{peer}, n = {sn}: {max_t} threads ≥ ×1.8 the 1-thread throughput"),
            r.ns(small, peer, 1, iaa),
            r.ns(small, peer, max_t, iaa),
            &format!("1 thread {{a}} ns / {max_t} threads {{b}} ns"),
            1.8,
        );
    }
    if large != small {
        check(
            format!("1 thread, n = {ln}: one at a time no slower than sbbf-rs-safe"),
            r.ns(large, "sbbf-rs-safe (not atomic)", 1, iaa),
            r.ns(large, "blockbloom", 1, iaa),
            "sbbf {a} ns / blockbloom {b} ns",
            1.0,
        );
        for peer in ["blockbloom batched", "blockbloom batched +huge pages"] {
            check(
                format!("1 thread, n = {ln}: {peer} ≥ ×3.5 faster than fastbloom atomic"),
                r.ns(large, "fastbloom atomic (xxh3)", 1, iaa),
                r.ns(large, peer, 1, iaa),
                "fastbloom {a} ns / ours {b} ns",
                3.5,
            );
            check(
                format!("1 thread, n = {ln}: {peer} within ×1.25 of its cost in cache (n = {sn})"),
                r.ns(small, "blockbloom batched", 1, iaa).map(|c| 1.25 * c),
                r.ns(large, peer, 1, iaa),
                "1.25 × in cache {a} ns / ours {b} ns",
                1.0,
            );
        }
    }
    for (n, t, huge, limit) in r.limits.clone().into_iter().filter(|l| l.0 == large) {
        let peer = if huge {
            "blockbloom batched +huge pages"
        } else {
            "blockbloom batched"
        };
        check(
            format!(
                "n = {}, {t} thread(s): {peer} within ×3 of the physical limit",
                fmt_n(n)
            ),
            Some(3.0 * limit),
            r.ns(n, peer, t, iaa),
            "3 × limit {a} ns / ours {b} ns",
            1.0,
        );
    }
    r.md.push_str(&lines.join("\n"));
    r.md.push_str(
        "\n\nA ratio is the first figure over the second; \"met\" means it reaches the bound \
         named in the target. Where a target is missed, docs/PERFORMANCE.md says why; \
         for the sbbf-rs-safe targets (a filter that is not atomic, usable from one thread \
         only), \"The price of atomicity\" above measures what the locked operations that a \
         shared filter needs cost on this machine.\n",
    );
}
