//! Loom model checks of the expiring filter's planes protocol: two calls for one
//! new key, one in an epoch that has just ended and one in the next, have exactly one
//! winner; without the winner's re-read of the newest epoch (the negative control) loom
//! finds two.
#![cfg(blockbloom_loom)]

use blockbloom::__planes::PlanesModel;
use loom::sync::Arc;
use loom::thread;

/// A key in both words of a plane.
const MASK: [u64; 2] = [1 << 3 | 1 << 40, 1 << 9];

/// A reads the newest epoch as 20; B moves it on to 21 and inserts there.
fn race(re_read: bool) -> u32 {
    let m = Arc::new(PlanesModel::new(20));
    let a = {
        let m = m.clone();
        thread::spawn(move || match re_read {
            true => m.insert_if_absent(20, MASK),
            false => m.insert_if_absent_without_re_read(20, MASK),
        })
    };
    let b = {
        let m = m.clone();
        thread::spawn(move || {
            m.advance(21);
            let n = m.newest();
            m.insert_if_absent(n, MASK)
        })
    };
    let won = a.join().unwrap() as u32 + b.join().unwrap() as u32;
    assert!(m.contains(21, MASK));
    won
}

#[test]
fn one_winner_across_an_epoch_change() {
    loom::model(|| assert_eq!(race(true), 1));
}

#[test]
#[should_panic]
fn negative_control_without_the_re_read_finds_two_winners() {
    loom::model(|| assert_eq!(race(false), 1));
}

#[test]
fn one_winner_in_one_epoch_and_in_a_plane_being_reclaimed() {
    loom::model(|| {
        // Epoch 24 writes plane 0, which holds epoch 20's key until then: both callers
        // replace the dead words, one wins.
        let m = Arc::new(PlanesModel::new(20));
        assert!(m.insert_if_absent(20, [1 << 7, 0]));
        m.advance(24);
        let calls: Vec<_> = (0..2)
            .map(|_| {
                let m = m.clone();
                thread::spawn(move || m.insert_if_absent(24, MASK))
            })
            .collect();
        let won: u32 = calls.into_iter().map(|c| c.join().unwrap() as u32).sum();
        assert_eq!(won, 1);
        assert!(m.contains(24, MASK) && !m.contains(24, [1 << 7, 0]));
    });
}
