//! "Physical limit": the same cache-line work without any hashing or filter logic, and
//! "The price of atomicity": what the `lock` prefix costs per operation.

use crate::report::*;

pub(crate) fn run(r: &mut Report) {
    r.section("Physical limit");
    let _ = write!(
        r.md,
        "The cheapest possible operation on an array as large as the filter: a random 64-byte \
         line, prefetched {} operations ahead with write intent, one `fetch_or` into it; no key \
         hashing. Compared with blockbloom's batched insert_if_absent (which also hashes a \
         ~70-byte URL per operation) from the throughput section.\n\n\
         | n | filter bytes | threads | huge pages | limit ns/op | blockbloom batched ns/op | ratio |\n\
         |---:|---:|---:|---|---:|---:|---:|\n",
        blockbloom::PREFETCH_DISTANCE
    );
    for n in r.cfg.sizes.clone() {
        let lines = BloomFilter::builder()
            .capacity(n)
            .fpr(FPR)
            .build()
            .expect("filter")
            .num_lines();
        for &t in &r.cfg.threads.clone() {
            for huge in [false, true] {
                if huge && lines * 64 < 2 << 20 {
                    continue;
                }
                let limit = measure::physical_limit(lines, r.cfg.ops * 4, t, huge);
                r.limits.push((n, t, huge, limit));
                let name = if huge {
                    "blockbloom batched +huge pages"
                } else {
                    "blockbloom batched"
                };
                let ours = r
                    .rows
                    .iter()
                    .find(|(m, row)| *m == n && row.threads == t && row.peer == name)
                    .and_then(|(_, row)| row.get(Op::InsertIfAbsent))
                    .map_or(f64::NAN, |c| c.ns);
                let _ = writeln!(
                    r.md,
                    "| {} | {:.1} MiB | {t} | {} | {limit:.1} | {ours:.1} | ×{:.2} |",
                    fmt_n(n),
                    (lines * 64) as f64 / 1048576.0,
                    if huge { "yes" } else { "no" },
                    ours / limit
                );
            }
        }
    }
    r.md.push('\n');
    price_of_atomicity(r);
}

/// Why a concurrent filter cannot match a non-atomic one key for key: the measured price of
/// the `lock` prefix, and how many locked read-modify-writes a new key needs.
fn price_of_atomicity(r: &mut Report) {
    let n = r.cfg.sizes[0];
    // The throughput section's blockbloom, filled the same way.
    let bloom = Bloom::new(n, FPR, false, false);
    fill(&bloom, n);
    let f = &bloom.f;
    // For never-inserted keys at the benchmark's fill: how many have a missing bit, and in
    // how many words. insert_if_absent then performs k + 1 locked operations on a 512-bit
    // block, whatever the number missing: a `lock or` per position (the deciding one's as
    // a zero mask: no branch on which are missing) and the deciding `lock bts`.
    let (mut keys, mut new_keys, mut words, mut ops) = (0u64, 0u64, 0u64, 0u64);
    let mut buf = String::with_capacity(128);
    let mut block = Vec::with_capacity(64);
    for i in n..n + 100_000 {
        buf.clear();
        write_url(i, &mut buf);
        let p = f.probe(buf.as_str());
        block.clear();
        f.line_bytes(p.line(), 1, &mut block)
            .expect("block in range");
        let mask = p.mask();
        let missing: [u64; 8] = std::array::from_fn(|w| {
            let word = u64::from_le_bytes(block[w * 8..w * 8 + 8].try_into().expect("8 bytes"));
            mask[w] & !word
        });
        keys += 1;
        let nonzero = missing.iter().filter(|&&m| m != 0).count() as u64;
        if nonzero > 0 {
            new_keys += 1;
            words += nonzero;
            ops += u64::from(f.num_hashes()) + 1;
        }
    }
    let lines = f.num_lines();
    let ops_per = r.cfg.ops * 2;
    let plain = measure::eight_ors(lines, ops_per, false);
    let locked = measure::eight_ors(lines, ops_per, true);
    let per_lock = (locked - plain) / 8.0;
    let per_key = ops as f64 / new_keys.max(1) as f64;
    let _ = write!(
        r.md,
        "### The price of atomicity\n\n\
         On an array the size of the {} filter (in cache), one thread: OR one bit into each of \
         the 8 words of a random line with plain loads and stores (what a non-atomic filter \
         such as sbbf-rs-safe does) or with `fetch_or` (`lock or` on x86: what a filter shared \
         between threads must do, or it loses other threads' bits).\n\n\
         | 8 plain ORs ns/op | 8 `fetch_or` ns/op | one locked read-modify-write |\n\
         |---:|---:|---:|\n\
         | {plain:.1} | {locked:.1} | +{per_lock:.1} ns |\n\n\
         At the benchmark's fill (the filter holds its n keys), {:.1}% of never-inserted keys \
         have a missing bit, in {:.2} words on average; insert_if_absent spends {per_key:.2} \
         locked operations on such a key (a `lock or` per position, set or not, so that no \
         branch depends on which are missing, then the deciding `lock bts`): about {:.1} ns that a \
         non-atomic filter does not pay, {:.1} ns per operation of the 50%-duplicate stream. \
         A duplicate writes nothing and pays none.\n\n",
        fmt_n(n),
        100.0 * new_keys as f64 / keys as f64,
        words as f64 / new_keys.max(1) as f64,
        per_key * per_lock,
        per_key * per_lock * new_keys as f64 / keys as f64 / 2.0,
    );
    next_miss(r);
}

/// Whether a locked operation keeps the next call's cache miss from starting (x86's locked
/// instructions are full barriers to memory ordering): one word per call in 1 GiB, well
/// beyond any cache, loaded or `fetch_or`ed, each call free or chained to the one before.
fn next_miss(r: &mut Report) {
    const LINES: usize = (1 << 30) / 64;
    let ops = r.cfg.ops;
    let load = measure::one_word_per_call::<false, false>(LINES, ops);
    let load_chained = measure::one_word_per_call::<false, true>(LINES, ops);
    let locked = measure::one_word_per_call::<true, false>(LINES, ops);
    let locked_chained = measure::one_word_per_call::<true, true>(LINES, ops);
    let _ = write!(
        r.md,
        "### Does a locked operation stop the next call's miss?\n\n\
         One word of a random line per call in 1 GiB, one thread, no prefetch: each call's \
         line free of the calls before, or chained to the word the call before read (one miss \
         at a time). A locked instruction is a full barrier to x86's memory ordering; if it \
         also kept the next call's miss from starting, the free `fetch_or` would cost what \
         the chained one does.\n\n\
         | | free ns/call | chained ns/call | misses in flight |\n\
         |---|---:|---:|---:|\n\
         | load | {load:.1} | {load_chained:.1} | {:.1} |\n\
         | `fetch_or` | {locked:.1} | {locked_chained:.1} | {:.1} |\n\n",
        load_chained / load,
        locked_chained / locked,
    );
}
