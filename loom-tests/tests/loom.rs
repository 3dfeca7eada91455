//! Loom model checks of `BloomFilter`'s atomic protocols (its guarantees 1–3).
//!
//! Run with `scripts/loom.sh` (it sets `RUSTFLAGS="--cfg blockbloom_loom"` and
//! `LOOM_MAX_PREEMPTIONS=2`). Loom runs each closure under every thread interleaving (bounded
//! to 2 preemptions) and, for every load, every value the C11 memory model allows it to read
//! given the orderings used, so "at most one winner" is checked over all of them, not just
//! the ones a real machine happens to produce. (Loom does not model every relaxed behaviour —
//! e.g. load buffering — which is why the docs also carry a paper proof.)
//!
//! Filters here are 1 or 2 blocks with k = 3, and keys are chosen so that their bits span
//! several words: that is where the word-by-word protocol could go wrong.
#![cfg(blockbloom_loom)]

use blockbloom::BloomFilter;
use loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

const SEED: u128 = 0xB10C_B100_5EED;

fn tiny(blocks: u64) -> Arc<BloomFilter> {
    tiny_sized(blocks, 512)
}

/// `lines` 64-byte lines of blocks of `block_bits` bits.
fn tiny_sized(lines: u64, block_bits: u32) -> Arc<BloomFilter> {
    Arc::new(
        BloomFilter::builder()
            .capacity(4)
            .bits(512 * lines)
            .num_hashes(3)
            .block_bits(block_bits)
            .seed(SEED)
            .build()
            .unwrap(),
    )
}

fn words_used(f: &BloomFilter, key: u64) -> usize {
    f.probe(&key).mask().iter().filter(|&&w| w != 0).count()
}

/// Keys (u64 ids) whose bits span at least two words, pairwise disjoint in bits, in `block`,
/// with at least one word shared between consecutive keys when possible.
fn keys(f: &BloomFilter, n: usize, block: usize) -> Vec<u64> {
    // A 64-bit block has one word: there, keys span it and share it.
    let min_words = (f.block_bits() as usize / 64).min(2);
    let mut out: Vec<u64> = Vec::new();
    let mut used = [0u64; 8];
    for id in 0..10_000u64 {
        let p = f.probe(&id);
        if p.line() != block || words_used(f, id) < min_words {
            continue;
        }
        let m = p.mask();
        let disjoint = m.iter().zip(&used).all(|(a, b)| a & b == 0);
        let shares_word = out.is_empty() || m.iter().zip(&used).any(|(a, b)| *a != 0 && *b != 0);
        if disjoint && shares_word {
            for (u, w) in used.iter_mut().zip(m) {
                *u |= w;
            }
            out.push(id);
            if out.len() == n {
                return out;
            }
        }
    }
    panic!("no suitable keys found");
}

fn spawn_iaa(f: &Arc<BloomFilter>, key: u64) -> thread::JoinHandle<bool> {
    let f = Arc::clone(f);
    thread::spawn(move || f.insert_if_absent(&key))
}

/// Guarantee 3: two threads, same new key → exactly one `true`; and guarantee 1 after join.
#[test]
fn same_key_two_threads_one_winner() {
    loom::model(|| {
        let f = tiny(1);
        let x = keys(&f, 1, 0)[0];
        let a = spawn_iaa(&f, x);
        let b = spawn_iaa(&f, x);
        let wins = a.join().unwrap() as u32 + b.join().unwrap() as u32;
        assert_eq!(wins, 1, "same key claimed {wins} times");
        assert!(f.contains(&x));
        assert!(!f.insert_if_absent(&x));
    });
}

/// Guarantee 3 with three racers (the main thread is the third).
#[test]
fn same_key_three_threads_one_winner() {
    loom::model(|| {
        let f = tiny(1);
        let x = keys(&f, 1, 0)[0];
        let a = spawn_iaa(&f, x);
        let b = spawn_iaa(&f, x);
        let c = f.insert_if_absent(&x);
        let wins = a.join().unwrap() as u32 + b.join().unwrap() as u32 + c as u32;
        assert_eq!(wins, 1, "same key claimed {wins} times");
        assert!(f.contains(&x));
    });
}

/// Two-block filter: a same-key race in one block next to an unrelated insert in the other.
#[test]
fn two_blocks_same_key_race_and_other_block() {
    loom::model(|| {
        let f = tiny(2);
        let x = keys(&f, 1, 0)[0];
        let y = keys(&f, 1, 1)[0];
        let a = spawn_iaa(&f, x);
        let b = spawn_iaa(&f, y);
        let c = f.insert_if_absent(&x);
        let wins_x = a.join().unwrap() as u32 + c as u32;
        assert_eq!(wins_x, 1);
        assert!(b.join().unwrap(), "y (alone in its block) must be new");
        assert!(f.contains(&x) && f.contains(&y));
    });
}

/// Different keys, same block, bits disjoint but sharing words: each is new and each wins,
/// and neither insert loses the other's bits.
#[test]
fn same_block_different_keys_two_threads() {
    different_keys_race_in(512);
}

/// Two keys in one block of `block_bits` bits, disjoint bits sharing a word: both win,
/// neither loses the other's bits.
fn different_keys_race_in(block_bits: u32) {
    loom::model(move || {
        let f = tiny_sized(1, block_bits);
        let k = keys(&f, 2, 0);
        let a = spawn_iaa(&f, k[0]);
        let b = f.insert_if_absent(&k[1]);
        assert!(
            a.join().unwrap() && b,
            "{block_bits}-bit blocks: a new key with its own bits must win"
        );
        assert!(f.contains(&k[0]) && f.contains(&k[1]));
    });
}

#[test]
fn same_block_different_keys_three_threads() {
    loom::model(|| {
        let f = tiny(1);
        let k = keys(&f, 3, 0);
        let a = spawn_iaa(&f, k[0]);
        let b = spawn_iaa(&f, k[1]);
        let c = f.insert_if_absent(&k[2]);
        assert!(a.join().unwrap() && b.join().unwrap() && c);
        for key in &k {
            assert!(f.contains(key));
        }
    });
}

/// Guarantee 3 at the smaller block sizes (the claim protocol on 1, 2 or 4 words of a
/// line): two threads, same new key → exactly one `true`.
fn same_key_race_in(block_bits: u32) {
    loom::model(move || {
        let f = tiny_sized(1, block_bits);
        let x = keys(&f, 1, 0)[0];
        let a = spawn_iaa(&f, x);
        let b = spawn_iaa(&f, x);
        let wins = a.join().unwrap() as u32 + b.join().unwrap() as u32;
        assert_eq!(
            wins, 1,
            "{block_bits}-bit blocks: same key claimed {wins} times"
        );
        assert!(f.contains(&x));
        assert!(!f.insert_if_absent(&x));
    });
}

#[test]
fn same_key_two_threads_one_winner_64_bit_blocks() {
    same_key_race_in(64);
}

#[test]
fn same_key_two_threads_one_winner_128_bit_blocks() {
    same_key_race_in(128);
}

#[test]
fn same_key_two_threads_one_winner_256_bit_blocks() {
    same_key_race_in(256);
}

/// Two keys in one 64-bit block (one word, disjoint bits): both win, neither loses the
/// other's bits.
#[test]
fn same_word_block_different_keys_two_threads() {
    different_keys_race_in(64);
}

/// Guarantee 1 without join: whoever learns (through a release/acquire flag) that an insert
/// returned sees the key, with `insert` and with `insert_if_absent`.
#[test]
fn insert_visible_to_happens_after() {
    for use_iaa in [false, true] {
        loom::model(move || {
            let f = tiny(1);
            let x = keys(&f, 1, 0)[0];
            let flag = Arc::new(AtomicUsize::new(0));
            let writer = {
                let (f, flag) = (Arc::clone(&f), Arc::clone(&flag));
                thread::spawn(move || {
                    if use_iaa {
                        f.insert_if_absent(&x);
                    } else {
                        f.insert(&x);
                    }
                    flag.store(1, Ordering::Release);
                })
            };
            if flag.load(Ordering::Acquire) == 1 {
                assert!(f.contains(&x), "false negative after synchronisation");
                assert!(!f.insert_if_absent(&x));
            }
            writer.join().unwrap();
            assert!(f.contains(&x));
        });
    }
}

/// Guarantee 2 under concurrency: once one call returned `true`, later racing calls for the
/// same key all return `false`.
#[test]
fn after_a_winner_everyone_loses() {
    loom::model(|| {
        let f = tiny(1);
        let x = keys(&f, 1, 0)[0];
        assert!(f.insert_if_absent(&x));
        let a = spawn_iaa(&f, x);
        let b = spawn_iaa(&f, x);
        assert!(!a.join().unwrap() && !b.join().unwrap());
    });
}

/// A plain `insert` racing two `insert_if_absent`s of the same key: at most one `true`.
#[test]
fn plain_insert_racing_insert_if_absent() {
    loom::model(|| {
        let f = tiny(1);
        let x = keys(&f, 1, 0)[0];
        let plain = {
            let f = Arc::clone(&f);
            thread::spawn(move || f.insert(&x))
        };
        let a = spawn_iaa(&f, x);
        let b = f.insert_if_absent(&x);
        plain.join().unwrap();
        let wins = a.join().unwrap() as u32 + b as u32;
        assert!(wins <= 1, "same key claimed {wins} times");
        assert!(f.contains(&x));
    });
}

/// Negative control: the naive rule "true if any fetch_or changed a bit", on the same kind
/// of two-word key, double-claims under some interleaving — and loom finds it. This shows
/// the harness can fail, and why the filter uses the highest-missing-bit rule instead.
#[test]
#[should_panic(expected = "naive rule")]
fn naive_rule_is_caught() {
    fn naive(words: &[AtomicU64; 2], mask: [u64; 2]) -> bool {
        let mut changed = false;
        for (w, m) in words.iter().zip(mask) {
            let missing = m & !w.load(Ordering::Acquire);
            if missing != 0 {
                changed |= w.fetch_or(missing, Ordering::AcqRel) & missing != missing;
            }
        }
        changed
    }
    loom::model(|| {
        let words = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
        let mask = [1u64 << 3, 1u64 << 40];
        let other = {
            let words = Arc::clone(&words);
            thread::spawn(move || naive(&words, mask))
        };
        let mine = naive(&words, mask);
        let theirs = other.join().unwrap();
        assert!(!(mine && theirs), "naive rule: both threads won");
    });
}

/// `union` racing a same-key `insert_if_absent` pair: at most one winner, and afterwards the
/// target holds the keys of both filters.
#[test]
fn union_racing_insert_if_absent() {
    loom::model(|| {
        let f = tiny(1);
        let other = tiny(1);
        let k = keys(&f, 2, 0);
        other.insert(&k[1]);
        other.insert(&k[0]);
        let merger = {
            let (f, other) = (Arc::clone(&f), Arc::clone(&other));
            thread::spawn(move || f.union(&other).unwrap())
        };
        let a = spawn_iaa(&f, k[0]);
        let b = f.insert_if_absent(&k[0]);
        merger.join().unwrap();
        let wins = a.join().unwrap() as u32 + b as u32;
        assert!(wins <= 1, "same key claimed {wins} times");
        assert!(f.contains(&k[0]) && f.contains(&k[1]));
    });
}

/// The batched path runs the same per-key protocol (the prefetch hint is a no-op under
/// loom): two threads pass the same two new keys in opposite orders through
/// `insert_if_absent_many`; each key is won exactly once, and both are present afterwards.
#[test]
fn batches_in_opposite_orders_one_winner_per_key() {
    loom::model(|| {
        let f = tiny(1);
        let ks = keys(&f, 2, 0);
        let (x, y) = (ks[0], ks[1]);
        let spawn = |order: [u64; 2]| {
            let f = Arc::clone(&f);
            thread::spawn(move || {
                let mut out = [false; 2];
                f.insert_if_absent_many(&order, &mut out);
                out
            })
        };
        let a = spawn([x, y]);
        let b = spawn([y, x]);
        let (a, b) = (a.join().unwrap(), b.join().unwrap());
        // a answers [x, y], b answers [y, x]
        assert_eq!(a[0] as u32 + b[1] as u32, 1, "x won {:?} {:?}", a, b);
        assert_eq!(a[1] as u32 + b[0] as u32, 1, "y won {:?} {:?}", a, b);
        let mut found = [false; 2];
        f.contains_many(&[x, y], &mut found);
        assert_eq!(found, [true, true]);
    });
}

// ---- CountingBloomFilter -------------------------------------------------------------------

use blockbloom::{AtomicBitSet, CountingBloomFilter, GrowableBloomFilter};

fn tiny_counting() -> Arc<CountingBloomFilter> {
    let f = CountingBloomFilter::with_seed(2, 0.2, SEED).unwrap();
    assert_eq!(f.num_counters(), 128, "one block");
    Arc::new(f)
}

/// Keys whose counters span at least two words; `share` asks for keys that share a word.
fn counting_keys(f: &CountingBloomFilter, n: usize) -> Vec<u64> {
    let mut out: Vec<u64> = Vec::new();
    for id in 0..10_000u64 {
        let (_, m) = f.__counters(&id);
        if m.iter().filter(|&&w| w != 0).count() < 2 {
            continue;
        }
        let shares = out.iter().all(|&o| {
            let (_, om) = f.__counters(&o);
            om.iter().zip(&m).any(|(a, b)| *a != 0 && *b != 0)
        });
        let disjoint = out.iter().all(|&o| {
            let (_, om) = f.__counters(&o);
            om.iter().zip(&m).all(|(a, b)| a & b == 0)
        });
        if shares && disjoint {
            out.push(id);
            if out.len() == n {
                return out;
            }
        }
    }
    panic!("no suitable keys");
}

#[test]
fn counting_same_key_two_threads_one_winner_and_losers_undo() {
    loom::model(|| {
        let f = tiny_counting();
        let key = counting_keys(&f, 1)[0];
        let (a, b) = (f.clone(), f.clone());
        let ta = thread::spawn(move || a.insert_if_absent(&key));
        let tb = thread::spawn(move || b.insert_if_absent(&key));
        let wins = ta.join().unwrap() as u32 + tb.join().unwrap() as u32;
        assert_eq!(wins, 1, "exactly one winner (nothing else writes)");
        assert_eq!(
            f.estimated_count(&key),
            1,
            "the loser's increments were undone"
        );
        assert!(f.remove(&key));
        assert_eq!(f.estimated_len(), 0);
    });
}

#[test]
fn counting_same_key_race_with_a_third_key_sharing_words() {
    loom::model(|| {
        let f = tiny_counting();
        let ks = counting_keys(&f, 2);
        let (key, other) = (ks[0], ks[1]);
        let (a, b, c) = (f.clone(), f.clone(), f.clone());
        let ta = thread::spawn(move || a.insert_if_absent(&key));
        let tb = thread::spawn(move || b.insert_if_absent(&key));
        let tc = thread::spawn(move || c.insert_if_absent(&other));
        let wins = ta.join().unwrap() as u32 + tb.join().unwrap() as u32;
        assert!(tc.join().unwrap());
        assert_eq!(wins, 1);
        assert!(f.contains(&key) && f.contains(&other));
    });
}

#[test]
fn counting_insert_and_remove_of_keys_sharing_words() {
    loom::model(|| {
        let f = tiny_counting();
        let ks = counting_keys(&f, 2);
        let (x, y) = (ks[0], ks[1]);
        f.insert(&x);
        let (a, b) = (f.clone(), f.clone());
        let ta = thread::spawn(move || {
            assert!(a.remove(&x));
        });
        let tb = thread::spawn(move || {
            b.insert(&y);
            assert!(b.contains(&y), "no false negative after own insert");
        });
        ta.join().unwrap();
        tb.join().unwrap();
        assert!(f.contains(&y));
        assert_eq!(f.estimated_count(&x), 0, "x's counters back to 0");
        assert!(f.remove(&y));
        assert_eq!(f.estimated_len(), 0, "no counter corrupted");
    });
}

// ---- GrowableBloomFilter -------------------------------------------------------------------

fn tiny_growable(initial: u64) -> Arc<GrowableBloomFilter> {
    Arc::new(
        GrowableBloomFilter::builder()
            .initial_capacity(initial)
            .fpr(0.5)
            .seed(SEED)
            .build()
            .unwrap(),
    )
}

/// The first winner fills layer 0 and installs layer 1 while the other thread may still be
/// working in layer 0: the stale-layer path of the protocol.
#[test]
fn growable_same_key_race_across_a_growth_step() {
    loom::model(|| {
        let f = tiny_growable(1);
        let (a, b) = (f.clone(), f.clone());
        let ta = thread::spawn(move || a.insert_if_absent(&7u64));
        let tb = thread::spawn(move || b.insert_if_absent(&7u64));
        let wins = ta.join().unwrap() as u32 + tb.join().unwrap() as u32;
        assert!(wins <= 1, "two winners across a growth step");
        assert!(f.contains(&7u64));
        assert_eq!(f.num_layers(), 2);
    });
}

/// Layer 0 has room for one more key; a third key's insert fills it and installs layer 1
/// during the race, so one racer can work in the stale layer 0 while the other is already in
/// layer 1 (without the post-check in step 3 this model finds two winners).
#[test]
fn growable_same_key_race_while_another_key_grows_the_chain() {
    loom::model(|| {
        let f = tiny_growable(2);
        // A key that is not a false positive of layer 0 once `1` is in it.
        assert!(f.insert_if_absent(&1u64));
        let key = (100..1000u64).find(|k| !f.contains(k)).unwrap();
        let other = (key + 1..2000u64).find(|k| !f.contains(k)).unwrap();
        let (a, b, c) = (f.clone(), f.clone(), f.clone());
        let ta = thread::spawn(move || a.insert_if_absent(&key));
        let tb = thread::spawn(move || b.insert_if_absent(&key));
        let tc = thread::spawn(move || c.insert(&other));
        let wins = ta.join().unwrap() as u32 + tb.join().unwrap() as u32;
        tc.join().unwrap();
        assert!(wins <= 1, "two winners across a growth step");
        assert!(f.contains(&key) && f.contains(&other) && f.contains(&1u64));
    });
}

// ---- AtomicBitSet --------------------------------------------------------------------------

#[test]
fn bitset_exactly_one_winner_per_insert_and_remove() {
    loom::model(|| {
        let s = Arc::new(AtomicBitSet::new(100).unwrap());
        let (a, b) = (s.clone(), s.clone());
        let ta = thread::spawn(move || a.insert_if_absent(42) as u32 + a.remove(42) as u32 * 10);
        let tb = thread::spawn(move || b.insert_if_absent(42) as u32 + b.remove(42) as u32 * 10);
        let total = ta.join().unwrap() + tb.join().unwrap();
        // Every successful insert is matched by exactly one successful remove.
        assert_eq!(total % 10, total / 10, "{total}");
        assert!(total % 10 >= 1);
        assert!(!s.contains(42));
    });
}
