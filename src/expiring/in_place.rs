//! The planes' rules on lines that one caller owns at a time: the Redis module keeps an
//! expiring filter's lines in a Redis string and the server runs one command at a time, so
//! it reads and writes a line's words without atomics. The labels, planes, masks and
//! sweep rule are the local filter's (`planes.rs`), so a line written here reads as the
//! local filter's line for the same keys and epochs; a line's live bits and rate
//! (`live_bits`, `line_fpr`) are here, summed by `PlanesCensus` for both filters
//! (`estimates.rs`).
//!
//! Not public API (`blockbloom::planes_in_place`, for `blockbloom-redis-module`): no
//! stability promise.

use super::planes::{self, PlaneEpoch, PLANES};
use crate::layout::PLANE_BITS;
use crate::line::{DATA, LABEL_SHIFT, WORDS};
use crate::KeyHash;

/// Epochs past the last completed sweep before a label could read as live again.
pub const SWEEP_MARGIN: u64 = super::planes::SWEEP_MARGIN;
/// Epochs from one pass to the next, as the local filter's (`epochs.rs`).
pub const PASS_EVERY: u64 = super::epochs::PASS_EVERY;
/// How far ahead of this machine's clock a call may move the newest epoch.
pub const SKEW: std::time::Duration = super::window::SKEW;

/// A line's words, little-endian in memory: word `i` is bytes `8i..8i + 8`.
pub type LineWords = [u64; WORDS];

/// The key's bits within its plane, two words of 60 bits: `⌈k/2⌉` positions in one and
/// `⌊k/2⌋` in the other.
pub fn plane_mask(h: KeyHash, k: u32) -> [u64; 2] {
    crate::layout::plane_mask(h.to_bits(), k)
}

/// Whether the line holds the key of `mask` in a plane live for a caller in epoch `n`.
pub fn contains(words: &LineWords, n: u64, mask: [u64; 2]) -> bool {
    PlaneEpoch::at(n).holds(words, mask, None)
}

/// The words of a line that a caller in epoch `n` reads as live, where only epochs up to
/// `newest` were written (a read-only command does not move the newest epoch on): a plane
/// is live for its epoch of `n − 3 ..= n` if that is at most `newest`; the rest read as
/// empty. For `n = newest`, the line as [`contains`] reads it.
pub fn live_at(words: &LineWords, newest: u64, n: u64) -> LineWords {
    let mut out = [0; WORDS];
    if n >= newest.saturating_add(PLANES) {
        return out;
    }
    for q in 0..PLANES as usize {
        let x = n - (n + PLANES - q as u64) % PLANES;
        for w in 2 * q..2 * q + 2 {
            if x <= newest && words[w] >> LABEL_SHIFT == planes::label(x) {
                out[w] = words[w];
            }
        }
    }
    out
}

/// Whether the line holds the key of `mask` for a caller in epoch `n`, read without moving
/// the newest epoch `newest` on ([`live_at`]).
pub fn contains_at(words: &LineWords, newest: u64, n: u64, mask: [u64; 2]) -> bool {
    contains(&live_at(words, newest, n), n, mask)
}

/// Line `i` of lines in bytes (see [`LineBytes`]).
pub fn read_line(bytes: &[u8], i: u64) -> LineWords {
    let at = i as usize * 64;
    core::array::from_fn(|w| {
        let b = &bytes[at + 8 * w..at + 8 * w + 8];
        u64::from_le_bytes(b.try_into().expect("8 bytes"))
    })
}

/// A word of the epoch's plane holds a later epoch's label: the line was written at an epoch
/// after the caller's, which a shard whose newest epoch only moves on cannot hold (damage).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaterEpochInLine;

/// Whether an insert in epoch `n` can write the line: no word of `n`'s plane holds a later
/// epoch's label (else [`insert`] refuses it, [`LaterEpochInLine`]).
pub fn writable(words: &LineWords, n: u64) -> bool {
    let e = PlaneEpoch::at(n);
    words[2 * e.plane..2 * e.plane + 2].iter().all(|v| {
        let l = v >> LABEL_SHIFT;
        l == e.label || e.replaceable(e.plane, l)
    })
}

/// `insert_if_absent` of the key of `mask` in epoch `n`, the shard's newest: `true` (and
/// its bits set under `n`'s label, a dead epoch's word replaced) if no live plane holds it.
pub fn insert_if_absent(
    words: &mut LineWords,
    n: u64,
    mask: [u64; 2],
) -> Result<bool, LaterEpochInLine> {
    if contains(words, n, mask) {
        return Ok(false);
    }
    insert(words, n, mask).map(|()| true)
}

/// `insert` of the key of `mask` in epoch `n`: its bits set in `n`'s plane under `n`'s
/// label, present or not (an insert renews the window).
pub fn insert(words: &mut LineWords, n: u64, mask: [u64; 2]) -> Result<(), LaterEpochInLine> {
    let e = PlaneEpoch::at(n);
    let mut new = [0u64; 2];
    for (w, (out, m)) in new.iter_mut().zip(mask).enumerate() {
        let v = words[2 * e.plane + w];
        let have = match v >> LABEL_SHIFT {
            l if l == e.label => v & DATA,
            l if e.replaceable(e.plane, l) => 0,
            _ => return Err(LaterEpochInLine),
        };
        // A word the key does not touch keeps what it holds (as the local claim leaves it).
        *out = if m == 0 {
            v
        } else {
            e.label << LABEL_SHIFT | have | m
        };
    }
    words[2 * e.plane..2 * e.plane + 2].copy_from_slice(&new);
    Ok(())
}

/// Clears the line's words that are dead for every caller once the newest epoch is
/// `target` (`newest`: the shard's newest epoch, at most `target`); `true` if one changed.
pub fn sweep(words: &mut LineWords, newest: u64, target: u64) -> bool {
    let mut changed = false;
    for (i, w) in words.iter_mut().enumerate() {
        let keep = planes::swept(*w, i / 2, newest, target);
        changed |= keep != *w;
        *w = keep;
    }
    changed
}

/// Lines in bytes, 64 per line, each word little-endian (a Redis string's, unaligned).
pub struct LineBytes<'a>(pub &'a mut [u8]);

impl LineBytes<'_> {
    /// Lines held.
    pub fn len(&self) -> u64 {
        (self.0.len() / 64) as u64
    }

    /// Whether it holds no line.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Line `i`'s words.
    pub fn read(&self, i: u64) -> LineWords {
        read_line(self.0, i)
    }

    /// Writes line `i`'s words.
    pub fn write(&mut self, i: u64, words: &LineWords) {
        let at = i as usize * 64;
        for (w, v) in words.iter().enumerate() {
            self.0[at + 8 * w..at + 8 * w + 8].copy_from_slice(&v.to_le_bytes());
        }
    }
}

/// Lines a write sweeps at most for its epoch's pass: the local filter's chunk (64 KiB).
pub const CHUNK_LINES: u64 = 1024;

/// A shard's clock, as the local filter's clock line keeps it for the whole filter: the
/// newest epoch any call used, the last completed sweep (its epoch + 1; 0: none), and the
/// sweep in progress (its epoch + 1, 0: none; and the next line it sweeps). All zero: a
/// shard no call has used (it has no word yet).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShardClock {
    /// The newest epoch any call used.
    pub newest: u64,
    /// The last completed sweep's epoch + 1.
    pub swept: u64,
    /// The sweep in progress: its epoch + 1 (0: none).
    pub pass: u64,
    /// The next line the sweep in progress sweeps.
    pub cursor: u64,
}

impl ShardClock {
    /// Whether [`advance`](Self::advance) to `n` sweeps the whole shard first: `n` is
    /// [`SWEEP_MARGIN`] epochs past the last completed sweep.
    fn sweeps_whole(&self, n: u64) -> bool {
        self.swept != 0 && n > self.newest && n + 1 >= self.swept + SWEEP_MARGIN
    }

    /// A line as [`advance`](Self::advance) to `n` leaves it, for a check made before
    /// anything is written ([`writable`], a query for `maxmemory`): swept if the move
    /// sweeps the whole shard, since a word it clears can read as a later epoch's (after a
    /// pause of 56 epochs a word's label and plane are those of the epoch four after the
    /// caller's); as it is otherwise (a chunk's sweep clears only words every reader takes
    /// as dead already).
    pub fn line_after_advance(&self, n: u64, mut words: LineWords) -> LineWords {
        if self.sweeps_whole(n) {
            sweep(&mut words, self.newest, n);
        }
        words
    }

    /// Moves the newest epoch on to `n` (if later) and does the sweeping that owes, as the
    /// local filter's calls do: the whole shard first if `n` is [`SWEEP_MARGIN`] epochs past
    /// the last completed sweep (a label could read as live again), else a chunk of
    /// [`CHUNK_LINES`] of the pass owed once the newest epoch is [`PASS_EVERY`] past the
    /// last completed one's. Deterministic: a replica that
    /// applies the same calls at the same epochs holds the same bytes.
    pub fn advance(&mut self, n: u64, lines: &mut LineBytes<'_>) {
        if self.swept == 0 {
            // No call yet: no word to sweep.
            (self.newest, self.swept) = (n, n + 1);
            return;
        }
        if n > self.newest {
            if self.sweeps_whole(n) {
                for i in 0..lines.len() {
                    let mut w = lines.read(i);
                    if sweep(&mut w, self.newest, n) {
                        lines.write(i, &w);
                    }
                }
                (self.swept, self.pass, self.cursor) = (n + 1, 0, 0);
            }
            self.newest = n;
        }
        if self.swept + (PASS_EVERY - 1) > self.newest {
            return; // no pass owed: the last is fewer than `PASS_EVERY` epochs old
        }
        if self.pass <= self.swept {
            (self.pass, self.cursor) = (self.newest + 1, 0);
        }
        let end = (self.cursor + CHUNK_LINES).min(lines.len());
        for i in self.cursor..end {
            let mut w = lines.read(i);
            if sweep(&mut w, self.newest, self.pass - 1) {
                lines.write(i, &w);
            }
        }
        self.cursor = end;
        if end == lines.len() {
            (self.swept, self.pass, self.cursor) = (self.pass, 0, 0);
        }
    }
}

/// What a filter's live bits say, gathered line by line ([`add_line`](Self::add_line)),
/// shard by shard ([`add`](Self::add)): the local filter's estimates come from the same
/// census of its lines.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PlanesCensus {
    /// Lines counted.
    pub lines: u64,
    /// The sum over lines of each line's rate (`1 − Π (1 − r_q)` over its live planes).
    pub fpr_sum: f64,
    /// Live bits by age: `[0]` the epoch's own plane, `[3]` the oldest live one.
    pub ones: [u64; PLANES as usize],
}

impl PlanesCensus {
    /// Counts a line as a caller in epoch `n` reads it (`k` bits per key).
    pub fn add_line(&mut self, words: &LineWords, n: u64, k: u32) {
        self.lines += 1;
        self.fpr_sum += line_fpr(words, n, k);
        for (o, b) in self.ones.iter_mut().zip(live_bits(words, n)) {
            *o += u64::from(b[0] + b[1]);
        }
    }

    /// Another census (of other lines, in the same epoch) added to this one.
    pub fn add(&mut self, other: &PlanesCensus) {
        self.lines += other.lines;
        self.fpr_sum += other.fpr_sum;
        for (o, b) in self.ones.iter_mut().zip(other.ones) {
            *o += b;
        }
    }

    /// The false-positive rate: the mean of the lines' rates.
    pub fn fpr(&self) -> f64 {
        match self.lines {
            0 => 0.0,
            lines => self.fpr_sum / lines as f64,
        }
    }

    /// The keys in the live planes by age, from each plane's live bits (the inverse of a
    /// plane's expected fill, `math::planes::keys_from_plane_ones`): infinite for a plane
    /// whose every bit is set (its fill bounds no count), 0 for an empty census.
    pub fn keys_per_age(&self, k: u32) -> [f64; PLANES as usize] {
        self.ones
            .map(|o| crate::math::planes::keys_from_plane_ones(o, self.lines, k))
            .map(|x| if x.is_nan() { 0.0 } else { x })
    }

    /// Distinct keys remembered: offered in the live epochs.
    pub fn len(&self, k: u32) -> f64 {
        self.keys_per_age(k).iter().sum()
    }

    /// Whether no line was counted.
    pub fn is_empty(&self) -> bool {
        self.lines == 0
    }

    /// The expected number of new keys taken for repeats while the live planes filled:
    /// each plane's keys arrived while it filled (a key taken for a repeat sets no bit, so
    /// the fill counts every key offered), the older live planes as they are now.
    /// Infinite if a live plane has every bit set.
    pub fn false_positives(&self, k: u32) -> f64 {
        let bits = self.lines as f64 * f64::from(PLANE_BITS);
        let keys = self.keys_per_age(k);
        if keys.iter().any(|x| x.is_infinite()) {
            return f64::INFINITY;
        }
        // A plane's rate with `x` keys in it: the blocked filter's of 120-bit blocks, as its
        // estimated keys (within 1% of the planes' split draws', `math::planes`, and cheaper
        // to evaluate at every point of the integral).
        let rate = |x: f64| match x > 0.0 {
            true => crate::math::fpr_in_blocks(bits / x, k, f64::from(PLANE_BITS)),
            false => 0.0,
        };
        (0..PLANES as usize)
            .map(|age| {
                // The older live planes, full: a new key is also taken for one of theirs.
                let older: f64 = keys[age + 1..].iter().map(|&x| 1.0 - rate(x)).product();
                crate::math::false_positives_among_offered(keys[age], |x| {
                    1.0 - (1.0 - rate(x)) * older
                })
            })
            .sum()
    }
}

/// The bits each plane of a line holds under a label live in epoch `n`, word by word, from
/// its words (under the live label with more bits, where a plane holds `n − 3 ..= n`'s and
/// a newer one's; a word under the other label holds none of them), indexed by age: `[0]`
/// the plane of `n`, `[3]` that of `n − 3`.
pub(crate) fn live_bits(words: &[u64; WORDS], n: u64) -> [[u32; 2]; PLANES as usize] {
    use crate::line::{DATA, LABEL_SHIFT};
    let e = PlaneEpoch::at(n);
    core::array::from_fn(|age| {
        let q = ((n + PLANES - age as u64) % PLANES) as usize;
        let ones = |l: u64| -> [u32; 2] {
            core::array::from_fn(|w| {
                let v = words[2 * q + w];
                if v >> LABEL_SHIFT == l {
                    (v & DATA).count_ones()
                } else {
                    0
                }
            })
        };
        let [older, newer] = e.live[q].map(ones);
        if newer.iter().sum::<u32>() > older.iter().sum() {
            newer
        } else {
            older
        }
    })
}

/// The false-positive rate of a line for a caller in epoch `n`, from its words: a query
/// tests each plane under its live labels, so the line's rate is `1 − Π (1 − r_q)`, `r_q`
/// the chance that a key's bits all lie on plane `q`'s bits set under one live label
/// (`math::planes::plane_words_fpr`).
pub(crate) fn line_fpr(words: &[u64; WORDS], n: u64, k: u32) -> f64 {
    let none: f64 = live_bits(words, n)
        .iter()
        .map(|&ones| 1.0 - crate::math::planes::plane_words_fpr(ones, k))
        .product();
    1.0 - none
}

#[cfg(all(test, not(blockbloom_loom)))]
mod tests {
    use super::*;
    use crate::line::Line;
    use crate::sync::{AtomicU64, Ordering::SeqCst};

    /// The owned line takes the same words as the local filter's atomic line, for the same
    /// keys and epochs, and answers as it does.
    #[test]
    fn a_line_in_place_is_the_local_filters_line() {
        let hasher = crate::hash::KeyHasher::new(9);
        let (line, newest) = (Line::new(), AtomicU64::new(0));
        let mut owned: LineWords = [0; WORDS];
        let mut key = 0u64;
        for n in (100..130u64).chain(190..200) {
            newest.store(n, SeqCst);
            let e = PlaneEpoch::at(n);
            for _ in 0..12 {
                let m = plane_mask(KeyHash(hasher.hash(&(key % 40))), 7);
                let local = planes::insert_if_absent_in(&line, &newest, &e, m);
                assert_eq!(insert_if_absent(&mut owned, n, m), Ok(local), "epoch {n}");
                key += 1;
            }
            let local: LineWords = core::array::from_fn(|i| line.word(i).load(SeqCst));
            assert_eq!(owned, local, "epoch {n}");
            for probe in 0..60u64 {
                let m = plane_mask(KeyHash(hasher.hash(&probe)), 7);
                assert_eq!(contains(&owned, n, m), planes::contains(&line, n, m));
            }
        }
    }

    #[test]
    fn a_read_ahead_of_the_newest_epoch_sees_what_is_still_live_then() {
        let hasher = crate::hash::KeyHasher::new(4);
        let mut w: LineWords = [0; WORDS];
        let masks: Vec<[u64; 2]> = (0..4u64)
            .map(|i| plane_mask(KeyHash(hasher.hash(&i)), 7))
            .collect();
        for (x, &m) in (100..104).zip(&masks) {
            insert(&mut w, x, m).unwrap();
        }
        for probe in 0..200u64 {
            let m = plane_mask(KeyHash(hasher.hash(&(1000 + probe))), 7);
            assert_eq!(contains_at(&w, 103, 103, m), contains(&w, 103, m));
        }
        for n in 103..110u64 {
            for (x, &m) in (100..104u64).zip(&masks) {
                // Key x is live at n while n - x < 4 (or a false positive in a live plane).
                if n - x < 4 {
                    assert!(contains_at(&w, 103, n, m), "key of {x} at {n}");
                }
            }
            if n >= 107 {
                assert!(masks.iter().all(|&m| !contains_at(&w, 103, n, m)));
            }
        }
    }

    #[test]
    fn an_insert_renews_and_a_later_label_is_refused() {
        let mask = [1 << 3, 1 << 7];
        let mut w: LineWords = [0; WORDS];
        insert(&mut w, 100, mask).unwrap();
        insert(&mut w, 103, mask).unwrap(); // renewed in 103's plane
        assert!(contains(&w, 106, mask) && !contains(&w, 107, mask));
        // Epoch 104's label in plane 0, read by a caller in 100: a later epoch's word.
        let mut later: LineWords = [0; WORDS];
        insert(&mut later, 104, mask).unwrap();
        assert_eq!(insert(&mut later, 100, [1 << 9, 0]), Err(LaterEpochInLine));
        assert!(!writable(&later, 100) && writable(&later, 104) && writable(&w, 103));
    }

    #[test]
    fn the_sweep_clears_dead_words_only() {
        let mask = [1 << 3, 1 << 7];
        let mut w: LineWords = [0; WORDS];
        insert(&mut w, 100, mask).unwrap();
        insert(&mut w, 102, mask).unwrap();
        assert!(!sweep(&mut w, 103, 103));
        assert!(sweep(&mut w, 104, 104)); // 100 is dead at 104
        assert_eq!((w[0], w[1]), (0, 0));
        assert!(contains(&w, 104, mask));
    }

    /// A check made before a write (the module's `writable`) sees the lines as the clock's
    /// move leaves them: after a pause of 56, 116 or 176 epochs the unswept words of the
    /// caller's plane carry the label of the epoch four after its own.
    #[test]
    fn a_check_before_a_long_pause_is_over_sees_the_lines_the_move_sweeps() {
        let hasher = crate::hash::KeyHasher::new(8);
        let lines = 2 * CHUNK_LINES;
        for gap in [1u64, 5, 50, 51, 52, 56, 60, 116, 176, 200] {
            let mut bytes = vec![0u8; lines as usize * 64];
            let mut b = LineBytes(&mut bytes);
            let mut clock = ShardClock::default();
            let start = 1_000u64;
            clock.advance(start, &mut b);
            for i in 0..3_000u64 {
                let h = hasher.hash(&i);
                let mut w = b.read(h % lines);
                insert(&mut w, start, plane_mask(KeyHash(h), 7)).unwrap();
                b.write(h % lines, &w);
            }
            let end = start + gap;
            let ahead: Vec<LineWords> = (0..lines)
                .map(|l| clock.line_after_advance(end, b.read(l)))
                .collect();
            let raw_refused = (0..lines).filter(|&l| !writable(&b.read(l), end)).count();
            assert_eq!(raw_refused > 0, gap % 60 == 56, "gap {gap}");
            assert!(ahead.iter().all(|w| writable(w, end)), "gap {gap}");
            clock.advance(end, &mut b);
            for (l, &w) in ahead.iter().enumerate() {
                // The same words, or (a chunk of the pass owed, short of a whole sweep)
                // the same less its dead ones.
                let mut dead_cleared = w;
                sweep(&mut dead_cleared, end, end);
                let after = b.read(l as u64);
                assert!(
                    after == w || (gap < 52 && after == dead_cleared),
                    "gap {gap}, line {l}"
                );
            }
        }
    }

    /// The shard's sweep keeps every word aliasing-free: keys written and then left for 1
    /// to 200 epochs (writes touching no line, or none at all) are never seen again.
    #[test]
    fn a_shard_clock_sweeps_before_labels_come_round() {
        let hasher = crate::hash::KeyHasher::new(6);
        let lines = 3 * CHUNK_LINES + 5;
        for gap in [1u64, 4, 5, 20, 50, 51, 52, 56, 60, 61, 120, 200] {
            for writes_between in [false, true] {
                let mut bytes = vec![0u8; lines as usize * 64];
                let mut clock = ShardClock::default();
                let keys: Vec<(u64, [u64; 2])> = (0..2_000u64)
                    .map(|i| {
                        let h = hasher.hash(&i);
                        (h % lines, plane_mask(KeyHash(h), 7))
                    })
                    .collect();
                let start = 1_000u64;
                let mut b = LineBytes(&mut bytes);
                clock.advance(start, &mut b);
                for &(l, m) in &keys {
                    let mut w = b.read(l);
                    insert(&mut w, start, m).unwrap();
                    b.write(l, &w);
                }
                let end = start + gap;
                let steps: Vec<u64> = match writes_between {
                    true => (start + 1..=end).collect(),
                    false => vec![end],
                };
                for n in steps {
                    clock.advance(n, &mut b);
                }
                let seen = keys
                    .iter()
                    .filter(|&&(l, m)| contains(&b.read(l), end, m))
                    .count();
                if gap >= 4 {
                    assert_eq!(seen, 0, "gap {gap}, writes between {writes_between}");
                } else {
                    assert_eq!(seen, keys.len());
                }
                assert!(clock.newest == end && clock.swept + SWEEP_MARGIN > end + 1);
            }
        }
    }

    #[test]
    fn a_census_of_an_empty_filter_says_nothing() {
        let mut c = PlanesCensus::default();
        assert!(c.is_empty() && c.fpr() == 0.0);
        c.add_line(&[0; WORDS], 5, 7);
        assert_eq!((c.fpr(), c.len(7), c.false_positives(7)), (0.0, 0.0, 0.0));
    }

    #[test]
    fn the_estimated_rate_is_the_measured_one() {
        let hasher = crate::hash::KeyHasher::new(3);
        let k = 7;
        let (lines, per_plane) = (2_000usize, 8usize);
        let store: Vec<Line> = (0..lines).map(|_| Line::new()).collect();
        let newest = AtomicU64::new(0);
        let mut key = 0u64;
        for n in 100..104u64 {
            newest.store(n, SeqCst);
            for line in &store {
                for _ in 0..per_plane {
                    let mask = crate::layout::plane_mask(hasher.hash(&key), k);
                    planes::insert_if_absent(line, &newest, n, mask);
                    key += 1;
                }
            }
        }
        let estimated: f64 = store
            .iter()
            .map(|l| line_fpr(&core::array::from_fn(|i| l.word(i).load(SeqCst)), 103, k))
            .sum::<f64>()
            / lines as f64;
        let probes = 200_000u64;
        let fp = (0..probes)
            .filter(|i| {
                let h = hasher.hash(&(u64::MAX - i));
                let line = &store[(*i as usize) % lines];
                planes::contains(line, 103, crate::layout::plane_mask(h, k))
            })
            .count() as f64
            / probes as f64;
        eprintln!("estimated {estimated}, measured {fp}");
        assert!(
            (fp * 0.85..fp * 1.15).contains(&estimated),
            "{estimated} vs {fp}"
        );
    }
}
