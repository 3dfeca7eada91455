//! The textbook exercise (Bentley, *Programming Pearls*, column 1): sort 10^8 distinct
//! integers drawn from 1..10^9 with a bitset, against `Vec::sort_unstable`.
//!
//! ```text
//! cargo run --release --example bitset_sort              # 10^8 of 1..10^9
//! cargo run --release --example bitset_sort -- 1000000 10000000
//! ```
//!
//! Both start from the same shuffled `Vec<u32>` and end with the sorted numbers in a
//! `Vec<u32>`; the bitset also shows the ids need not fit in memory as a list to be sorted
//! (it needs `max / 8` bytes whatever `n` is).

use blockbloom::AtomicBitSet;
use std::time::Instant;

/// SplitMix64: a small, good, seeded generator (no dependency for an example).
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1 << 20) as f64
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(100_000_000);
    let max: u32 = args
        .next()
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(1_000_000_000);
    if n as u64 > max as u64 / 2 {
        return Err("n must be at most max / 2 (distinct numbers from 1..=max)".into());
    }

    // Input: n distinct numbers in 1..=max, in random order (rejection sampling with a plain
    // bitmap to reject repeats; not part of either timing).
    let t = Instant::now();
    let mut taken = vec![0u64; max as usize / 64 + 1];
    let mut input = Vec::with_capacity(n);
    let mut rng = 0x5EED_u64;
    while input.len() < n {
        let x = (splitmix(&mut rng) % max as u64) as u32 + 1;
        let (w, b) = (x as usize / 64, 1u64 << (x % 64));
        if taken[w] & b == 0 {
            taken[w] |= b;
            input.push(x);
        }
    }
    drop(taken);
    eprintln!(
        "input: {n} distinct numbers from 1..={max}, generated in {:.2?}",
        t.elapsed()
    );

    // 1. Bitset: one pass to set bits, one ascending scan to read them out.
    let t = Instant::now();
    let set = AtomicBitSet::new(max as u64 + 1)?;
    for &x in &input {
        set.insert(x as u64);
    }
    let by_bitset: Vec<u32> = set.iter().map(|x| x as u32).collect();
    let bitset_time = t.elapsed();

    // 2. Comparison sort of the list itself.
    let t = Instant::now();
    let mut by_sort = input.clone();
    by_sort.sort_unstable();
    let sort_time = t.elapsed();

    assert_eq!(by_bitset, by_sort, "both orders agree");
    let list_bytes = n * std::mem::size_of::<u32>();
    println!("| method | time | working memory |");
    println!("|---|---|---|");
    println!(
        "| AtomicBitSet (insert all, iterate) | {:.2?} | {:.1} MiB bitset (+ the output) |",
        bitset_time,
        mib(set.memory_bytes())
    );
    println!(
        "| Vec<u32>::sort_unstable | {:.2?} | {:.1} MiB list, sorted in place |",
        sort_time,
        mib(list_bytes)
    );
    println!(
        "bitset / sort time: {:.2}; bitset memory / list memory: {:.2}",
        bitset_time.as_secs_f64() / sort_time.as_secs_f64(),
        set.memory_bytes() as f64 / list_bytes as f64
    );
    Ok(())
}
