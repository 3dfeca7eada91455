//! "Accuracy": measured false-positive rates against the formulas, and the fill plot.

use crate::report::*;

pub(crate) fn run(r: &mut Report) {
    r.section("Accuracy");
    let c = r.cfg.accuracy_capacity;
    let q = r.cfg.queries;
    let queries = Keys::from_ids(1 << 40..(1 << 40) + q as u64);
    let queries = queries.strs();
    let members = Keys::from_ids(0..2 * c);
    let members = members.strs();
    let measured = |f: &BloomFilter| {
        let mut out = vec![false; q];
        f.contains_many(&queries, &mut out);
        out.iter().filter(|&&b| b).count() as f64 / q as f64
    };
    let _ = write!(
        r.md,
        "Filled to capacity ({}) and asked {} never-inserted URLs. `blocked_fpr` is the \
         formula the filter is sized with, at the filter's actual bits per key.\n\n\
         | target | bits/key | k | measured | blocked_fpr (theory) | measured / target |\n\
         |---:|---:|---:|---:|---:|---:|\n",
        fmt_n(c),
        q
    );
    for fpr in [0.1, 0.01, 0.001] {
        let f = BloomFilter::builder()
            .capacity(c)
            .fpr(fpr)
            .seed(77)
            .build()
            .expect("filter");
        f.insert_many(&members[..c as usize]);
        let m = measured(&f);
        let bpk = f.num_bits() as f64 / c as f64;
        let theory = math::blocked_fpr(bpk, f.num_hashes());
        let _ = writeln!(
            r.md,
            "| {}% | {bpk:.2} | {} | {:.4}% | {:.4}% | {:.3} |",
            fpr * 100.0,
            f.num_hashes(),
            m * 100.0,
            theory * 100.0,
            m / fpr
        );
    }
    // Fill curve: 1% filter filled to twice its capacity.
    let f = BloomFilter::builder()
        .capacity(c)
        .fpr(FPR)
        .seed(78)
        .build()
        .expect("filter");
    let steps = 20u64;
    let mut series = vec![
        Series {
            name: "measured".into(),
            points: Vec::new(),
        },
        Series {
            name: "estimated_fpr()".into(),
            points: Vec::new(),
        },
        Series {
            name: "blocked_fpr (theory)".into(),
            points: Vec::new(),
        },
    ];
    let mut done = 0usize;
    let mut table = String::from(
        "\nFill curve of a 1% filter filled to twice its capacity:\n\n\
         | fill | measured | estimated_fpr() | theory |\n|---:|---:|---:|---:|\n",
    );
    for s in 1..=steps {
        let upto = (2 * c * s / steps) as usize;
        f.insert_many(&members[done..upto]);
        done = upto;
        let fill = upto as f64 / c as f64;
        let m = measured(&f);
        let e = f.estimated_fpr();
        let t = math::blocked_fpr(f.num_bits() as f64 / upto as f64, f.num_hashes());
        for (ser, v) in series.iter_mut().zip([m, e, t]) {
            ser.points.push((fill, v * 100.0));
        }
        if s % 5 == 0 {
            let _ = writeln!(
                table,
                "| {:.0}% | {:.3}% | {:.3}% | {:.3}% |",
                fill * 100.0,
                m * 100.0,
                e * 100.0,
                t * 100.0
            );
        }
    }
    r.md.push_str(&table);
    r.md.push('\n');
    let plot = Plot {
        title: "false-positive rate of a 1% filter as it fills",
        x_label: "keys inserted / capacity",
        y_label: "false positives % (log)",
        x: Scale::Linear,
        y: Scale::Log,
    };
    emit_plot(r, "fill.svg", &plot, &series);
}
