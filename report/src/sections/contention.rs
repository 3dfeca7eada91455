//! "Contention: same-key race".

use crate::report::*;

/// Same-key race: every thread runs insert_if_absent over the same keys in the same order,
/// all threads meeting at a spin barrier before each key, so that they really do call it on
/// the same new key at the same moment; a key answered `true` more than once would be
/// crawled more than once.
pub(crate) fn run(r: &mut Report) {
    r.section("Contention: same-key race");
    let threads = *r.cfg.threads.last().unwrap();
    let n = r.cfg.race_keys;
    let keys = Keys::from_ids(0..n as u64);
    let keys = keys.strs();
    let _ = write!(
        r.md,
        "{threads} threads each call insert_if_absent on the same {n} new URLs in the same order, \
         meeting at a spin barrier before every key so that each key is raced; 3 rounds on fresh \
         filters. A key with more than one `true` would be fetched twice by a crawler.\n\n\
         | structure | keys claimed more than once | keys claimed by nobody (false positives) |\n\
         |---|---:|---:|\n"
    );
    let race = |iaa: &(dyn Fn(&str) -> bool + Sync)| -> (usize, usize) {
        let wins: Vec<AtomicU8> = (0..n).map(|_| AtomicU8::new(0)).collect();
        let arrived = AtomicUsize::new(0);
        measure::on_threads(threads, |_| {
            for (i, k) in keys.iter().enumerate() {
                arrived.fetch_add(1, Ordering::AcqRel);
                let mut spins = 0u32;
                while arrived.load(Ordering::Acquire) < threads * (i + 1) {
                    spins += 1;
                    if spins.is_multiple_of(1024) {
                        std::thread::yield_now(); // more threads than cores
                    } else {
                        std::hint::spin_loop();
                    }
                }
                if iaa(k) {
                    wins[i].fetch_add(1, Ordering::Relaxed);
                }
            }
            0
        });
        let w: Vec<u8> = wins.iter().map(|w| w.load(Ordering::Relaxed)).collect();
        (
            w.iter().filter(|&&x| x > 1).count(),
            w.iter().filter(|&&x| x == 0).count(),
        )
    };
    let mut rows = Vec::new();
    let (mut twice, mut none) = (0, 0);
    for round in 0..3 {
        let f = BloomFilter::builder()
            .capacity(n as u64)
            .fpr(FPR)
            .seed(round)
            .build()
            .unwrap();
        let (a, b) = race(&|k| f.insert_if_absent(k));
        (twice, none) = (twice + a, none + b);
    }
    rows.push(("blockbloom", twice, none));
    let (mut twice, mut none) = (0, 0);
    for _ in 0..3 {
        let f = Fast::new(n as u64, FPR);
        let (a, b) = race(&|k| f.insert_if_absent(k));
        (twice, none) = (twice + a, none + b);
    }
    rows.push(("fastbloom atomic (xxh3)", twice, none));
    for (name, twice, none) in rows {
        let _ = writeln!(
            r.md,
            "| {name} | {twice} of {} ({:.2}%) | {none} |",
            3 * n,
            twice as f64 * 100.0 / (3 * n) as f64
        );
    }
    r.md.push('\n');
}
