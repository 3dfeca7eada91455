//! "Memory": bytes per key of every structure at several sizes, and the plot.

use crate::report::*;

pub(crate) fn run(r: &mut Report) {
    r.section("Memory");
    let _ = write!(
        r.md,
        "Heap bytes measured with a counting global allocator while inserting n distinct URLs \
         (`HashSet::new()`, grown as it goes; the strings included); the Bloom filters' size is \
         their allocation, whatever they hold.\n\n\
         | n | HashSet<String> | AHashSet<String> | blockbloom 1% | blockbloom 0.1% | HashSet / blockbloom 1% |\n\
         |---:|---:|---:|---:|---:|---:|\n"
    );
    let mut series: Vec<Series> = [
        "HashSet<String>",
        "AHashSet<String>",
        "blockbloom 1%",
        "blockbloom 0.1%",
    ]
    .iter()
    .map(|s| Series {
        name: s.to_string(),
        points: Vec::new(),
    })
    .collect();
    for n in r.cfg.memory_sizes.clone() {
        progress(&format!("memory n = {n}"));
        let std_bytes = {
            let before = CountingAlloc::live_bytes();
            let h = Seq(RefCell::new(HashSet::new()), "");
            fill(&h, n);
            CountingAlloc::live_bytes() - before
        };
        let a_bytes = {
            let before = CountingAlloc::live_bytes();
            let h = Seq(
                RefCell::new(HashSet::with_hasher(ahash::RandomState::new())),
                "",
            );
            fill(&h, n);
            CountingAlloc::live_bytes() - before
        };
        let bloom = |fpr| {
            BloomFilter::with_capacity(n, fpr)
                .expect("filter")
                .memory_bytes()
        };
        let (b1, b01) = (bloom(0.01), bloom(0.001));
        let per = |b: usize| b as f64 / n as f64;
        let _ = writeln!(
            r.md,
            "| {} | {:.1} MiB ({:.1} B/key) | {:.1} MiB ({:.1} B/key) | {:.2} MiB ({:.2} B/key) | {:.2} MiB ({:.2} B/key) | ×{:.0} |",
            fmt_n(n),
            std_bytes as f64 / 1048576.0,
            per(std_bytes),
            a_bytes as f64 / 1048576.0,
            per(a_bytes),
            b1 as f64 / 1048576.0,
            per(b1),
            b01 as f64 / 1048576.0,
            per(b01),
            std_bytes as f64 / b1 as f64
        );
        for (s, b) in series.iter_mut().zip([std_bytes, a_bytes, b1, b01]) {
            s.points.push((n as f64, b as f64 / 1048576.0));
        }
    }
    r.md.push('\n');
    let plot = Plot {
        title: "memory for n distinct URLs",
        x_label: "n (log)",
        y_label: "MiB (log)",
        x: Scale::Log,
        y: Scale::Log,
    };
    emit_plot(r, "memory.svg", &plot, &series);
}
