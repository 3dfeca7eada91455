//! `blockbloom calc`: size a filter against a standard Bloom filter and a `HashSet`.

use std::io::{self, Write};

use std::time::Duration;

use blockbloom::math::{blocked_fpr_sized, size_filter_sized, standard_fpr, BLOCK_SIZES};
use blockbloom::{Arrival, ExpiringBloomFilter, ExpiryWindow};

use crate::filter::human_duration;
use crate::{human_bytes, write_err, Failure};

pub(crate) fn run(
    capacity: Option<u64>,
    fpr: f64,
    block_bits: u32,
    key_len: f64,
    table: bool,
) -> Result<(), Failure> {
    let mut out = io::stdout().lock();
    if table {
        let ks = 1..=8u32;
        let mut s = String::from("m/n   ");
        for k in ks.clone() {
            s += &format!("  k={k:<9}");
        }
        s += "\n";
        for c in [
            2u32, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 18, 20, 24, 28, 32,
        ] {
            s += &format!("{c:<6}");
            for k in ks.clone() {
                s += &format!("  {:<11.3e}", standard_fpr(c as f64, k));
            }
            s += "\n";
        }
        s += "(standard Bloom filter formula (1 - e^(-k·n/m))^k; a blocked filter has a higher rate)\n\n";
        s += "blocked filter (blockbloom), bits per key (k) for a rate, by block size:\n";
        s += "rate    ";
        for b in BLOCK_SIZES {
            s += &format!("  {:<12}", format!("{b}-bit"));
        }
        s += "\n";
        for rate in [0.1, 0.01, 0.001, 1e-4, 1e-5, 1e-6] {
            s += &format!("{rate:<8}");
            for b in BLOCK_SIZES {
                // Sized for 10^9 keys: bits per key no longer depend on the rounding to lines.
                let z = size_filter_sized(1_000_000_000, rate, None, None, b)?;
                let c = z.blocks as f64 * 512.0 / 1e9;
                s += &format!("  {:<12}", format!("{c:.2} ({})", z.hashes));
            }
            s += "\n";
        }
        s += "(smaller blocks: one or two locked writes per new key instead of about five, for more memory)\n";
        return out.write_all(s.as_bytes()).map_err(write_err);
    }
    let n = capacity.expect("clap requires --capacity without --table");
    let sizing = size_filter_sized(n, fpr, None, None, block_bits)?;
    let k = sizing.hashes;
    let blocks = sizing.blocks as f64;
    let bloom_bytes = sizing.bytes() as f64;
    let c_std = -fpr.ln() / (2f64.ln() * 2f64.ln());
    let k_std = (c_std * 2f64.ln()).round().max(1.0) as u32;
    let std_bytes = c_std * n as f64 / 8.0;
    // hashbrown: a power-of-two number of buckets at most 7/8 full, each a 24-byte String
    // plus a control byte; plus the strings' own bytes (allocator overhead not counted).
    let buckets = (n as f64 * 8.0 / 7.0).log2().ceil().exp2();
    let set_bytes = buckets * 25.0 + n as f64 * key_len;
    let bits_per_key = blocks * 512.0 / n as f64;
    let s = format!(
        "keys {n}, target false-positive rate {fpr}\n\
         blocked Bloom filter (blockbloom, {block_bits}-bit blocks): {bits_per_key:.2} bits/key ({:.3} bytes), k = {k}, {} ({})\n\
         standard Bloom filter:             {c_std:.2} bits/key ({:.3} bytes), k = {k_std}, {}\n\
         HashSet<String> ({key_len}-byte keys):   {:.1} bytes/key, {} (requested bytes, before allocator overhead)\n\
         false-positive rate at 2x the keys: {:.4}% (blocked), {:.4}% (standard)\n",
        bits_per_key / 8.0,
        human_bytes(bloom_bytes),
        format_args!("{} bytes", bloom_bytes as u64),
        c_std / 8.0,
        human_bytes(std_bytes),
        set_bytes / n as f64,
        human_bytes(set_bytes),
        100.0 * blocked_fpr_sized(bits_per_key / 2.0, k, block_bits),
        100.0 * standard_fpr(c_std / 2.0, k_std),
    );
    out.write_all(s.as_bytes()).map_err(write_err)
}

/// `calc --expire-after`: the expiring filter of `window` for `n` keys per window at rate
/// `fpr` (at its worst moment), at a steady rate and for the worst burst, sized as `dedup
/// --expire-after` sizes it (the library's own sizing, no memory taken).
pub(crate) fn expiring(n: u64, fpr: f64, window: Duration) -> Result<(), Failure> {
    let w = ExpiryWindow::new(window)?;
    let mut s = format!(
        "expiring filter, window {} (epochs of {}; a key forgotten {} after its insert at most), \
         rate at most {fpr} at every moment:\n",
        human_duration(window),
        human_duration(w.epoch()),
        human_duration(w.forgotten_after()),
    );
    for (arrival, what) in [
        (Arrival::Steady, "keys per window at a steady rate"),
        (Arrival::WorstBurst, "in any order (--worst-burst)"),
    ] {
        let layout = ExpiringBloomFilter::builder()
            .expire_after(window)
            .capacity(n)
            .fpr(fpr)
            .arrival(arrival)
            .seed(0)
            .layout()?;
        let lines = layout.num_lines() as f64;
        let bits_per_key = lines * 512.0 / n as f64;
        // Its key lines and the clock line.
        let bytes = (lines + 1.0) * 64.0;
        s += &format!(
            "  {what}: {bits_per_key:.2} bits/key ({:.3} bytes), k = {}, {} ({} bytes)\n",
            bits_per_key / 8.0,
            layout.num_hashes(),
            human_bytes(bytes),
            bytes as u64,
        );
    }
    io::stdout()
        .lock()
        .write_all(s.as_bytes())
        .map_err(write_err)
}
