//! Loom model checks of `ExpiringBloomFilter`'s "at most one winner" (its guarantee 4): racing
//! `insert_if_absent_at` calls for one key, with clocks in the same epoch and a second apart
//! (across an epoch change, whose sweep runs inside one of the racing calls); and of an
//! epoch's sweep split between calls, a chunk each (a line under loom), recorded only once
//! every chunk is cleared.
//!
//! Run with `scripts/loom.sh` (see `tests/loom.rs` for what loom explores). The races' filter
//! is one line of four planes, and keys are chosen so that their bits span both words of
//! a plane.
#![cfg(blockbloom_loom)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use blockbloom::ExpiringBloomFilter;
use loom::sync::Arc;
use loom::thread;

/// A two-second window: epochs of (2 s + 1 s) / 3 = 1 s.
fn tiny() -> Arc<ExpiringBloomFilter> {
    let f = ExpiringBloomFilter::builder()
        .expire_after(Duration::from_secs(2))
        .capacity(1)
        .fpr(0.2)
        .seed(0xB10C_B100_5EED)
        .build()
        .unwrap();
    assert_eq!(f.num_lines(), 1);
    Arc::new(f)
}

/// Keys whose bits span both words of their plane, pairwise disjoint, consecutive ones
/// sharing a word.
fn keys(f: &ExpiringBloomFilter, n: usize) -> Vec<u64> {
    let mut out: Vec<u64> = Vec::new();
    let mut used = [0u64; 2];
    for id in 0..10_000u64 {
        let m = f.__plane_bits(&id);
        if m.iter().filter(|&&w| w != 0).count() < 2 {
            continue;
        }
        let disjoint = m.iter().zip(&used).all(|(a, b)| a & b == 0);
        let shares = out.is_empty() || m.iter().zip(&used).any(|(a, b)| *a != 0 && *b != 0);
        if disjoint && shares {
            used.iter_mut().zip(m).for_each(|(u, w)| *u |= w);
            out.push(id);
            if out.len() == n {
                return out;
            }
        }
    }
    panic!("no suitable keys");
}

/// Epoch starts are whole seconds (and even ones, for a five-second window's epochs of 2 s):
/// `at(s)` is `s` seconds after one.
fn at(secs: f64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_000_000) + Duration::from_secs_f64(secs)
}

fn race(f: &Arc<ExpiringBloomFilter>, key: u64, t: SystemTime) -> thread::JoinHandle<bool> {
    let f = Arc::clone(f);
    thread::spawn(move || f.insert_if_absent_at(&key, t))
}

#[test]
fn same_key_same_epoch_one_winner() {
    loom::model(|| {
        let f = tiny();
        let key = keys(&f, 1)[0];
        f.insert_at(&u64::MAX, at(0.0)); // the filter has seen this epoch: no sweep owed
        let (a, b) = (race(&f, key, at(0.1)), race(&f, key, at(0.2)));
        let wins = a.join().unwrap() as u32 + b.join().unwrap() as u32;
        assert_eq!(wins, 1);
        assert!(f.contains_at(&key, at(1.9)));
    });
}

/// Clocks a second apart (two epochs): the one ahead moves the filter's newest epoch on and
/// sweeps while the other races it.
#[test]
fn same_key_clocks_a_second_apart_one_winner() {
    loom::model(|| {
        let f = tiny();
        f.insert_at(&u64::MAX, at(0.0));
        race_a_second_apart(&f);
    });
}

/// The same race as the first calls on a new filter: one of them makes the filter's first
/// advance, which sweeps nothing (there is no word yet), while the other races it.
#[test]
fn same_key_first_calls_on_a_new_filter_one_winner() {
    loom::model(|| race_a_second_apart(&tiny()));
}

/// One key raced at 0.4 s and 1.4 s: one winner, and the key seen for the window of the
/// earlier clock.
fn race_a_second_apart(f: &Arc<ExpiringBloomFilter>) {
    let key = keys(f, 1)[0];
    let (a, b) = (race(f, key, at(0.4)), race(f, key, at(1.4)));
    let wins = a.join().unwrap() as u32 + b.join().unwrap() as u32;
    assert_eq!(wins, 1);
    assert!(
        f.contains_at(&key, at(2.3)),
        "seen for the window of the earlier clock"
    );
}

/// A third key sharing words with the raced one, inserted at an epoch in between.
#[test]
fn same_key_race_with_a_third_key_sharing_words() {
    loom::model(|| {
        let f = tiny();
        let ks = keys(&f, 2);
        f.insert_at(&u64::MAX, at(0.0));
        let (a, b) = (race(&f, ks[0], at(0.4)), race(&f, ks[0], at(1.0)));
        let c = race(&f, ks[1], at(0.6));
        let wins = a.join().unwrap() as u32 + b.join().unwrap() as u32;
        assert!(c.join().unwrap());
        assert_eq!(wins, 1);
        assert!(f.contains_at(&ks[0], at(1.0)) && f.contains_at(&ks[1], at(1.0)));
    });
}

/// A sweep split between two calls of a new epoch, one chunk (a line, under loom) each,
/// while a third thread reads the recorded sweep: whoever sees it recorded sees every dead
/// word cleared, and after both calls it is recorded and the filter is empty.
#[test]
fn a_sweep_split_between_two_calls_is_recorded_after_both_chunks() {
    loom::model(|| {
        // A five-second window: epochs of 2 s; a word is cleared at age 4.
        let f = (1..64)
            .map(|capacity| {
                ExpiringBloomFilter::builder()
                    .expire_after(Duration::from_secs(5))
                    .capacity(capacity)
                    .fpr(0.2)
                    .seed(0xB10C_B100_5EED)
                    .build()
                    .unwrap()
            })
            .find(|f| f.num_lines() == 2)
            .map(Arc::new)
            .expect("a filter of two lines");
        // Keys until each line holds some (few: every nonzero word is swept by a
        // compare-exchange, each a point for loom to interleave).
        for id in 0u64.. {
            if f.__key_words().chunks(8).all(|l| l.iter().any(|&w| w != 0)) {
                break;
            }
            f.insert_at(&id, at(0.0));
        }
        let swept = f.__last_sweep();
        let call = |t: SystemTime| {
            let f = Arc::clone(&f);
            thread::spawn(move || f.contains_at(&u64::MAX, t))
        };
        let (a, b) = (call(at(8.0)), call(at(9.0)));
        let g = Arc::clone(&f);
        let recorded = swept + 4; // one more than the number of the epoch 4 later
        let c = thread::spawn(move || {
            let now = g.__last_sweep();
            assert!(now < recorded || g.__key_words().iter().all(|&w| w == 0));
        });
        let _ = (a.join().unwrap(), b.join().unwrap());
        c.join().unwrap();
        assert_eq!(
            f.__last_sweep(),
            recorded,
            "both chunks done: the sweep is recorded"
        );
        assert!(f.__key_words().iter().all(|&w| w == 0));
    });
}
