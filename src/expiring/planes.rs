//! The planes layout of the expiring filter: a line is four planes of two words, each word
//! 4 bits of label and 60 of data. A key inserted in epoch `x` sets its bits in plane
//! `x mod 4`, under label `x mod 15 + 1` (0: an empty word). A plane holds only epochs
//! `≡ plane (mod 4)`, so a word's label and plane give its epoch mod 60: the sweep has
//! [`SWEEP_MARGIN`] epochs to clear a dead word before its label could read as live again.
//!
//! A caller in epoch `n` (`window.rs`: epochs of `⌈(W + 1 s) / 3⌉`) reads as live the
//! epochs `n − 3 ..= n` (one per plane) and those of `n + 1 ..= n + 4` (a caller that moved
//! the newest epoch on while this one read it): a key is seen for its whole window, clocks
//! a second apart included, and forgotten at most `4/3 (W + 1 s)` after its insert. The
//! protocol of `insert_if_absent` and its proof are at
//! [`ExpiringBloomFilter::insert_if_absent_at`](crate::ExpiringBloomFilter::insert_if_absent_at).

use crate::line::{Line, PlaneClaim, DATA, LABEL_SHIFT, WORDS};
use crate::sync::{seq_cst_order, AtomicU64, Ordering::SeqCst};

/// Planes per line: the epochs a key is seen in (its own and `window::GENERATIONS` after
/// it).
pub(crate) const PLANES: u64 = 4;
/// Distinct nonzero labels.
const LABELS: u64 = 15;

/// The label an epoch writes.
pub(crate) const fn label(x: u64) -> u64 {
    x % LABELS + 1
}

/// Epochs after which labels and planes repeat together.
const CYCLE: u64 = LABELS * PLANES;

/// What a caller in epoch `n` reads and writes, the same for every `n` of one residue mod
/// [`CYCLE`] ([`VIEWS`]).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct PlaneView {
    /// The plane this epoch writes, and its label.
    pub(crate) plane: usize,
    pub(crate) label: u64,
    /// For each plane, its live label (the epoch of `n − 3 ..= n` it holds) and the label
    /// of the epoch four later (`n + 1 ..= n + 4`: live if written, a newer caller's).
    pub(crate) live: [[u64; 2]; PLANES as usize],
    /// The same labels as words to compare with: the label over all-ones data.
    want: [[u64; 2]; PLANES as usize],
}

/// For each epoch mod [`CYCLE`], its view ([`PlaneEpoch::at`]): tabled once, so that a
/// call looks its epoch up instead of dividing eight times.
static VIEWS: [PlaneView; CYCLE as usize] = {
    const EMPTY: PlaneView = PlaneView {
        plane: 0,
        label: 0,
        live: [[0; 2]; PLANES as usize],
        want: [[0; 2]; PLANES as usize],
    };
    let mut views = [EMPTY; CYCLE as usize];
    let mut m = 0;
    while m < CYCLE {
        let mut q = 0;
        while q < PLANES {
            // The x in m − 3 ..= m with x ≡ q (mod 4), mod the cycle (a multiple of 4 and 15).
            let back = (m + PLANES - q) % PLANES;
            let x = (m + CYCLE - back) % CYCLE;
            views[m as usize].live[q as usize] = [label(x), label(x + PLANES)];
            views[m as usize].want[q as usize] = [
                label(x) << LABEL_SHIFT | DATA,
                label(x + PLANES) << LABEL_SHIFT | DATA,
            ];
            q += 1;
        }
        views[m as usize].plane = (m % PLANES) as usize;
        views[m as usize].label = label(m);
        m += 1;
    }
    views
};

/// What a caller in epoch `n` reads and writes: `n` and its [`PlaneView`] (its fields
/// read through this, as `e.plane`), two words a call keeps in registers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PlaneEpoch {
    pub(crate) n: u64,
    view: &'static PlaneView,
}

impl core::ops::Deref for PlaneEpoch {
    type Target = PlaneView;
    #[inline(always)]
    fn deref(&self) -> &PlaneView {
        self.view
    }
}

impl PlaneEpoch {
    /// Epoch `n`: its plane and label, and for each plane the labels of `n − 3 ..= n` and
    /// of the epoch four later.
    #[inline(always)]
    pub(crate) fn at(n: u64) -> PlaneEpoch {
        PlaneEpoch {
            n,
            view: &VIEWS[(n % CYCLE) as usize],
        }
    }

    /// Whether a word of plane `q` with label `l` may be overwritten: empty, or a dead
    /// epoch's (neither live nor newer).
    pub(crate) fn replaceable(&self, q: usize, l: u64) -> bool {
        l != self.live[q][0] && l != self.live[q][1]
    }

    /// The bits of a plane's two words that [`holds`](Self::holds) compares with a live
    /// label over all-ones data: a word XORed with it is zero in them where it holds the
    /// key — its label bits if the key touches the word, and the key's bits in it.
    #[inline(always)]
    fn test(mask: [u64; 2]) -> [u64; 2] {
        let label_bits = |m: u64| if m != 0 { !DATA } else { 0 };
        [label_bits(mask[0]) | mask[0], label_bits(mask[1]) | mask[1]]
    }

    /// Whether a plane's two words `a` and `b` hold the key of `test` ([`test`](Self::test))
    /// under the label of `want` (that label over all-ones data).
    #[inline(always)]
    fn held_under(a: u64, b: u64, want: u64, test: [u64; 2]) -> bool {
        ((a ^ want) & test[0]) | ((b ^ want) & test[1]) == 0
    }

    /// Whether a single query reads the key of `mask` in `line`: [`holds`](Self::holds)
    /// with no `after`, each plane's words read and tested newest plane first, leaving at
    /// the first plane that holds the key. One call at a time it is the cheaper test (a
    /// member of the newest plane at its first test, and no dearer for others); a batch
    /// keeps the branch-free one, where a mispredicted exit would also throw away the next
    /// keys' work already under way (`claim.rs`).
    #[inline(always)]
    pub(crate) fn holds_newest_first(&self, line: &Line, mask: [u64; 2]) -> bool {
        let test = Self::test(mask);
        (0..PLANES as usize).any(|age| {
            let q = (self.plane + PLANES as usize - age) % PLANES as usize;
            let (a, b) = (
                line.word(2 * q).load(SeqCst),
                line.word(2 * q + 1).load(SeqCst),
            );
            self.want[q]
                .iter()
                .any(|&want| Self::held_under(a, b, want, test))
        })
    }

    /// [`holds`](Self::holds) with no `after`, under the labels of `n − 3 ..= n` alone: the
    /// same answer wherever no word of a later epoch is among `words`, which the newest
    /// epoch read after them shows (a writer moves it on before it writes).
    #[inline(always)]
    pub(crate) fn holds_up_to_n(&self, words: &[u64; WORDS], mask: [u64; 2]) -> bool {
        self.holds_under(words, mask, false)
    }

    /// `Line::plane_holds` for every plane under its live label, and under its newer one if
    /// `newer`, with one XOR and one AND per word ([`test`](Self::test); a mask is never
    /// empty, and live labels never 0).
    #[inline(always)]
    fn holds_under(&self, words: &[u64; WORDS], mask: [u64; 2], newer: bool) -> bool {
        let test = Self::test(mask);
        let mut held = false;
        for q in 0..PLANES as usize {
            let (a, b) = (words[2 * q], words[2 * q + 1]);
            held |= Self::held_under(a, b, self.want[q][0], test);
            if newer {
                held |= Self::held_under(a, b, self.want[q][1], test);
            }
        }
        held
    }

    /// Whether the line (its words as loaded) holds the key of `mask` in a live plane,
    /// other than those of epochs up to `after` (a call deciding again, whose own bits
    /// are in `after`'s plane).
    #[inline(always)]
    pub(crate) fn holds(&self, words: &[u64; WORDS], mask: [u64; 2], after: Option<u64>) -> bool {
        if after.is_none() {
            return self.holds_under(words, mask, true);
        }
        (0..PLANES as usize).any(|q| {
            let mut live = self.live[q];
            if let Some(a) = after {
                // Leave out the labels of epochs up to `a` in this plane.
                for (i, l) in live.iter_mut().enumerate() {
                    let back = (self.n + PLANES - q as u64) % PLANES;
                    let x = self.n.wrapping_sub(back) + i as u64 * PLANES;
                    if x <= a {
                        *l = u64::MAX; // no label matches
                    }
                }
            }
            Line::plane_holds(words, q, mask, live)
        })
    }
}

/// The epoch of a word of plane `q` with label `l` (nonzero), for a sweep that read the
/// newest epoch as `newest` after the word: the one epoch `≤ newest` of that plane and
/// label within 60 (a writer publishes its epoch before it writes, so the word's is at
/// most `newest`; the sweep margin keeps every word younger than 56 epochs). `None` if
/// that epoch would be before 1970's first (a word no call wrote: damage).
pub(crate) fn epoch_of(q: usize, l: u64, newest: u64) -> Option<u64> {
    let r = (l - 1) % LABELS;
    // x ≡ q (mod 4) and x ≡ r (mod 15): one residue mod 60.
    let x60 = (0..PLANES)
        .map(|j| r + LABELS * j)
        .find(|x| x % PLANES == q as u64)
        .expect("4 and 15 are coprime");
    newest.checked_sub((newest + 60 - x60) % 60)
}

/// Epochs past the last completed sweep the newest epoch may reach before a word that
/// sweep left could alias: a pass for epoch `p` leaves words of epochs `p − 3` and later,
/// and a word of epoch `x` would read as live again at `x + 56` (its label and plane come
/// round every 60 epochs, and a caller reads `n + 4` as live). One epoch to spare.
pub(crate) const SWEEP_MARGIN: u64 = 52;

/// What the sweep for epoch `target` leaves of word `v` of plane `q` when the newest epoch
/// is `newest` (read after the word): `v`, or 0 if its epoch is dead for every caller in
/// `target` or the newest, whichever is later (4 or more epochs before it), as a claim in
/// its plane would find it.
pub(crate) fn swept(v: u64, q: usize, newest: u64, target: u64) -> u64 {
    let l = v >> crate::line::LABEL_SHIFT;
    if l == 0 {
        return v;
    }
    match epoch_of(q, l, newest) {
        Some(x) if newest.max(target) - x < PLANES => v,
        _ => 0,
    }
}

/// `insert_if_absent` of the key whose plane mask is `mask`, in `line`, for a caller that
/// read the newest epoch `newest` as `n`: the protocol proved at
/// `ExpiringBloomFilter::insert_if_absent_at`.
#[cfg(any(test, feature = "internals"))]
pub(crate) fn insert_if_absent(line: &Line, newest: &AtomicU64, n: u64, mask: [u64; 2]) -> bool {
    insert_if_absent_in(line, newest, &PlaneEpoch::at(n), mask)
}

/// [`insert_if_absent`] with the epoch's labels computed once (a batch's). The protocol's
/// first pass is inlined: it decides every call but those that meet an epoch's change (a
/// later epoch's word in the way, or a newer epoch after the win), which go on out of line
/// ([`decide_from`]), so that the common pass keeps its values in registers.
///
/// Out of cache, each step between the line's arrival and the first compare-exchange costs
/// more than its instructions (the locked operation waits for every branch before it):
/// the key's own plane is tested first, leaving at once for a key seen this epoch, and the
/// claim starts from the words step 1 loaded (figures: docs/EXPIRING-AT-SCALE.md, "Where
/// the time goes").
#[inline(always)]
pub(crate) fn insert_if_absent_in(
    line: &Line,
    newest: &AtomicU64,
    e: &PlaneEpoch,
    mask: [u64; 2],
) -> bool {
    // The newest epoch was read before the line (by the caller).
    seq_cst_order();
    // (`% PLANES` changes nothing, and spares the bounds checks of the indices below.)
    let p = e.plane % PLANES as usize;
    let (a, b) = (
        line.word(2 * p).load(SeqCst),
        line.word(2 * p + 1).load(SeqCst),
    );
    if PlaneEpoch::held_under(a, b, e.want[p][0], PlaneEpoch::test(mask)) {
        return false; // step 1 in this epoch's plane alone: a key seen this epoch
    }
    let words: [u64; WORDS] = core::array::from_fn(|i| line.word(i).load(SeqCst));
    if e.holds_up_to_n(&words, mask) {
        return false;
    }
    // Step 1's labels of `n + 1 ..= n + 4` are needed only if the newest epoch has moved on
    // since the caller read it: a writer moves it on before it writes, so a word of a later
    // epoch among those loaded means a newer epoch read now. Then step 1 is run again with
    // them, out of line.
    seq_cst_order();
    if newest.load(SeqCst) != e.n {
        return decide_from(line, newest, e.n, None, mask);
    }
    let seen = [words[2 * p], words[2 * p + 1]];
    match line.claim_plane_seen(p, e.label, mask, |l| e.replaceable(p, l), seen) {
        PlaneClaim::Lost => false,
        PlaneClaim::Stale => {
            let n = e.n.max(newest.load(SeqCst)).max(e.n + 1);
            decide_from(line, newest, n, None, mask)
        }
        PlaneClaim::Won => {
            // The winning write before the re-read of the newest epoch.
            seq_cst_order();
            let now = newest.load(SeqCst);
            now <= e.n || decide_from(line, newest, now, Some(e.n), mask)
        }
    }
}

/// The protocol's loop from epoch `n` on, for a call whose first pass did not decide: a
/// caller that won in epoch `after` and must decide again in `n`, one whose plane held a
/// later epoch's word, or one that found the newest epoch moved on after loading its line
/// (step 1 again in its own epoch, the later epochs' labels included).
#[cold]
#[inline(never)]
fn decide_from(
    line: &Line,
    newest: &AtomicU64,
    mut n: u64,
    mut after: Option<u64>,
    mask: [u64; 2],
) -> bool {
    loop {
        let e = PlaneEpoch::at(n);
        // The newest epoch was read before the line (ours below, or the first pass's).
        seq_cst_order();
        let words: [u64; WORDS] = core::array::from_fn(|i| line.word(i).load(SeqCst));
        if e.holds(&words, mask, after) {
            return false;
        }
        match line.claim_plane(e.plane, e.label, mask, |l| e.replaceable(e.plane, l)) {
            PlaneClaim::Lost => return false,
            PlaneClaim::Stale => n = n.max(newest.load(SeqCst)).max(n + 1),
            PlaneClaim::Won => {
                // The winning write before the re-read of the newest epoch.
                seq_cst_order();
                let now = newest.load(SeqCst);
                if now <= n {
                    return true;
                }
                (after, n) = (Some(n), now);
            }
        }
    }
}

/// `insert` of the key of `mask` in `line` in epoch `e.n`: its bits set in the epoch's
/// plane, present or not (an insert renews the window), moving on to the newest epoch if a
/// later epoch's word is in the way.
#[inline(always)]
pub(crate) fn insert(line: &Line, newest: &AtomicU64, e: &PlaneEpoch, mask: [u64; 2]) {
    let mut n = e.n;
    loop {
        let e = if n == e.n { *e } else { PlaneEpoch::at(n) };
        match line.claim_plane(e.plane, e.label, mask, |l| e.replaceable(e.plane, l)) {
            PlaneClaim::Stale => n = n.max(newest.load(SeqCst)).max(n + 1),
            PlaneClaim::Won | PlaneClaim::Lost => return,
        }
    }
}

/// Whether a caller in epoch `n` reads the key of `mask` as present, as a single call
/// tests it ([`PlaneEpoch::holds_newest_first`]).
#[cfg(any(test, feature = "internals"))]
pub(crate) fn contains(line: &Line, n: u64, mask: [u64; 2]) -> bool {
    PlaneEpoch::at(n).holds_newest_first(line, mask)
}

/// [`contains`] with the epoch's labels computed once, as a batch tests it: every plane,
/// without a branch ([`PlaneEpoch::holds`]).
#[inline(always)]
pub(crate) fn contains_in(line: &Line, e: &PlaneEpoch, mask: [u64; 2]) -> bool {
    let words: [u64; WORDS] = core::array::from_fn(|i| line.word(i).load(SeqCst));
    e.holds(&words, mask, None)
}

#[cfg(all(test, not(blockbloom_loom)))]
mod tests {
    use super::*;

    #[test]
    fn each_plane_has_one_live_epoch_and_one_newer() {
        for n in 3..200u64 {
            let e = PlaneEpoch::at(n);
            assert_eq!((e.plane, e.label), ((n % 4) as usize, n % 15 + 1));
            for q in 0..4usize {
                let x = (n - 3..=n).find(|x| x % 4 == q as u64).unwrap();
                assert_eq!(e.live[q], [label(x), label(x + 4)], "n {n} plane {q}");
                // Every other epoch of this plane within 55 back is replaceable.
                for back in (4..=55).filter(|b| (n + 60 - b) % 4 == q as u64) {
                    if let Some(y) = n.checked_sub(back) {
                        assert!(e.replaceable(q, label(y)), "n {n}: epoch {y} in plane {q}");
                    }
                }
                assert!(e.replaceable(q, 0));
            }
        }
    }

    /// `holds`' word arithmetic (and `holds_newest_first`'s) is `Line::plane_holds` over the
    /// four planes: random lines
    /// (labels live, newer, dead or empty; bits dense or sparse) and masks in one word or both.
    #[test]
    fn holds_is_plane_holds_in_every_plane() {
        use crate::line::LABEL_SHIFT;
        let mut rng = 0x1234_5678_9abc_def0u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let (mut held, mut checked) = (0, 0);
        for _ in 0..200_000 {
            let n = 100 + next() % 120;
            let e = PlaneEpoch::at(n);
            let words: [u64; WORDS] = core::array::from_fn(|i| {
                let l = match next() % 4 {
                    0 => 0,
                    1 => e.live[i / 2][0],
                    2 => e.live[i / 2][1],
                    _ => label(n + 7),
                };
                let bits = if next() % 2 == 0 {
                    next() | next()
                } else {
                    next() & next()
                };
                l << LABEL_SHIFT | bits & crate::line::DATA
            });
            let mut mask = [next() & next() & next() & crate::line::DATA, 0];
            mask[1] = next() & next() & next() & crate::line::DATA;
            match next() % 3 {
                0 => mask[0] = 0,
                1 => mask[1] = 0,
                _ => {}
            }
            if mask == [0, 0] {
                continue;
            }
            let want = (0..PLANES as usize).any(|q| Line::plane_holds(&words, q, mask, e.live[q]));
            let line = Line::new();
            for (i, w) in words.iter().enumerate() {
                line.word(i).store(*w, SeqCst);
            }
            assert_eq!(
                e.holds_newest_first(&line, mask),
                want,
                "newest first: {words:x?} {mask:x?} n {n}"
            );
            assert_eq!(
                e.holds(&words, mask, None),
                want,
                "{words:x?} {mask:x?} n {n}"
            );
            held += usize::from(want);
            checked += 1;
        }
        assert!(
            held > checked / 20 && held < checked / 2,
            "{held} of {checked}"
        );
    }

    #[test]
    fn the_sweep_clears_a_word_four_to_55_epochs_old_and_nothing_younger() {
        use crate::line::LABEL_SHIFT;
        for x in 60..200u64 {
            let q = (x % PLANES) as usize;
            let v = label(x) << LABEL_SHIFT | 0b101;
            for newest in x..x + 56 {
                assert_eq!(
                    epoch_of(q, label(x), newest),
                    Some(x),
                    "x {x} newest {newest}"
                );
                let want = if newest - x < 4 { v } else { 0 };
                assert_eq!(swept(v, q, newest, newest), want, "x {x} newest {newest}");
            }
        }
        assert_eq!(swept(0, 1, 500, 500), 0);
        // A word whose label and plane name no epoch since 1970 (damage, in a file): no
        // panic, cleared.
        let damaged = label(7) << LABEL_SHIFT | 1;
        assert_eq!(epoch_of(3, label(7), 2), None);
        assert_eq!(swept(damaged, 3, 2, 2), 0);
        // For a target ahead of the newest (a sweep before a jump): dead at the target.
        let v = label(100) << LABEL_SHIFT | 1;
        assert_eq!((swept(v, 0, 100, 103), swept(v, 0, 100, 104)), (v, 0));
    }

    /// The rate from the live bits against the rate measured with absent keys, in lines
    /// filled with an epoch's keys in each plane.
    #[test]
    fn a_key_is_seen_for_three_epochs_after_its_own_and_forgotten_in_the_fourth() {
        let (line, newest) = (Line::new(), AtomicU64::new(100));
        let mask = [1 << 3 | 1 << 40, 1 << 9];
        assert!(insert_if_absent(&line, &newest, 100, mask));
        assert!(!insert_if_absent(&line, &newest, 100, mask));
        for n in 100..=103 {
            assert!(contains(&line, n, mask), "epoch {n}");
        }
        assert!(!contains(&line, 104, mask));
        // A caller one epoch behind (it read the newest before it moved on) sees it too.
        assert!(contains(&line, 99, mask));
        // In epoch 104 the plane is reclaimed: the key is new, once.
        newest.store(104, SeqCst);
        assert!(insert_if_absent(&line, &newest, 104, mask));
        assert!(!insert_if_absent(&line, &newest, 104, mask));
    }

    #[test]
    fn a_winner_in_a_past_epoch_decides_again_in_the_newest() {
        let (line, newest) = (Line::new(), AtomicU64::new(51));
        let mask = [1 << 5, 1 << 50];
        // A caller that read epoch 50 wins there, sees 51 and claims again in 51's plane:
        // still the only winner, and a caller in 51 now finds the key.
        assert!(insert_if_absent(&line, &newest, 50, mask));
        assert!(!insert_if_absent(&line, &newest, 51, mask));
        let words: [u64; WORDS] = core::array::from_fn(|i| line.word(i).load(SeqCst));
        assert!(Line::plane_holds(&words, 51 % 4, mask, [label(51), 0]));
    }

    /// A caller still in epoch 40 when a newer one has inserted the key in 41: `false`, and
    /// nothing written (the labels of the epochs after 40 are tested, since the newest
    /// epoch has moved on since the caller read it).
    #[test]
    fn a_call_an_epoch_behind_finds_a_newer_callers_key_without_writing() {
        let (line, newest) = (Line::new(), AtomicU64::new(41));
        let mask = [1 << 7 | 1 << 30, 1 << 2];
        assert!(insert_if_absent(&line, &newest, 41, mask));
        let words = || -> [u64; WORDS] { core::array::from_fn(|i| line.word(i).load(SeqCst)) };
        let before = words();
        assert!(!insert_if_absent(&line, &newest, 40, mask));
        assert_eq!(words(), before);
    }

    /// The interleaving the re-read exists for, step by step: B reads the newest epoch as
    /// 21 and finds nothing; A, in 20, wins in 20's plane; B claims in 21's. Without A's
    /// re-read (the negative control) both win; with it, A decides again in 21 first and B
    /// loses there.
    #[test]
    fn the_re_read_of_the_newest_epoch_keeps_one_winner() {
        let mask = [1 << 4 | 1 << 33, 1 << 12];
        for re_read in [false, true] {
            let (line, newest) = (Line::new(), AtomicU64::new(21));
            let b = PlaneEpoch::at(newest.load(SeqCst));
            let words: [u64; WORDS] = core::array::from_fn(|i| line.word(i).load(SeqCst));
            assert!(!b.holds(&words, mask, None));
            let a_won = if re_read {
                insert_if_absent(&line, &newest, 20, mask)
            } else {
                let a = PlaneEpoch::at(20);
                line.claim_plane(a.plane, a.label, mask, |l| a.replaceable(a.plane, l))
                    == PlaneClaim::Won
            };
            let b_won = line.claim_plane(b.plane, b.label, mask, |l| b.replaceable(b.plane, l))
                == PlaneClaim::Won;
            assert!(a_won);
            assert_eq!(b_won, !re_read, "re-read {re_read}");
        }
    }

    #[test]
    fn racing_calls_across_an_epoch_change_have_one_winner() {
        use std::sync::Barrier;
        for round in 0..3_000u64 {
            let (line, newest) = (Line::new(), AtomicU64::new(20));
            let mask = [1 << (round % 60), 1 << (round % 17)];
            let start = Barrier::new(3);
            let won: usize = std::thread::scope(|s| {
                let calls: Vec<_> = (0..3u64)
                    .map(|t| {
                        let (line, newest, start) = (&line, &newest, &start);
                        s.spawn(move || {
                            start.wait();
                            if t == 2 {
                                newest.fetch_max(21, SeqCst); // the epoch moves on
                            }
                            let n = if t == 0 { 20 } else { newest.load(SeqCst) };
                            insert_if_absent(line, newest, n, mask) as usize
                        })
                    })
                    .collect();
                calls.into_iter().map(|c| c.join().unwrap()).sum()
            });
            assert_eq!(won, 1, "round {round}");
        }
    }
}
