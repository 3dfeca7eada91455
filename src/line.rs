//! One line: 512 bits in eight atomic words, aligned to (and exactly filling) a cache line,
//! and every operation on its words.
//!
//! Every key lands in one line (a 512-bit block, or a smaller block inside it), so an
//! operation costs one cache-line miss whatever the number of hash functions. A line knows
//! bit positions and masks, not keys: which bits a key owns is `layout`'s business.

use crate::sync::{
    AtomicU64,
    Ordering::{self, AcqRel, Acquire, Relaxed},
};

/// Words per line.
pub(crate) const WORDS: usize = 8;
/// Bits per line.
pub(crate) const LINE_BITS: u64 = 512;
/// Bytes per line.
pub(crate) const LINE_BYTES: usize = 64;

/// A 512-bit line. `repr(C, align(64))`: the eight words sit in one 64-byte cache line on
/// x86-64 and on most AArch64 parts (Apple's M-series have 128-byte lines; a line then
/// shares a hardware line with its neighbour, which costs no extra miss since a key touches one).
#[repr(C, align(64))]
pub(crate) struct Line([AtomicU64; WORDS]);

#[cfg(not(blockbloom_loom))]
const _: () = assert!(core::mem::size_of::<Line>() == LINE_BYTES);

impl Line {
    /// A line of zero words, built value by value (loom's atomics cannot come from zeroed
    /// memory, and its `AtomicU64::new` is not `const`).
    #[cfg_attr(not(blockbloom_loom), allow(dead_code))]
    pub(crate) fn new() -> Self {
        Line(core::array::from_fn(|_| AtomicU64::new(0)))
    }

    /// The eight words (for structures with their own word protocols: the counting filter's
    /// compare-exchange loops, the bitset's single-bit operations).
    #[inline(always)]
    pub(crate) fn words(&self) -> &[AtomicU64; WORDS] {
        &self.0
    }

    /// Word `w`.
    #[inline(always)]
    pub(crate) fn word(&self, w: usize) -> &AtomicU64 {
        &self.0[w]
    }

    /// Whether every bit of `bits` (positions 0..512) is set, testing each bit where it lies
    /// instead of building the eight-word mask: fewer instructions per key, so more keys'
    /// cache misses overlap. The loads hit one cache line.
    ///
    /// Branch-free: the set bits are *counted*. Written as "OR together the missing bits,
    /// compare with 0", LLVM turns the test into one early exit per bit, and for a new key or
    /// a non-member the first missing bit sits at a random position: a mispredicted branch
    /// on almost every such call (ARCHITECTURE.md, "The hot path").
    #[inline(always)]
    pub(crate) fn all_set(&self, bits: impl Iterator<Item = u32>, order: Ordering) -> bool {
        let (mut present, mut wanted) = (0u32, 0u32);
        for bit in bits {
            present += ((self.0[(bit >> 6) as usize].load(order) >> (bit & 63)) & 1) as u32;
            wanted += 1;
        }
        present == wanted
    }

    /// ORs in the bits of `mask` missing from the `N` words from word `first` on (a block
    /// of `64·N` bits inside this line), one load per word and one `fetch_or` per word that
    /// misses bits (Relaxed: what `insert` promises, no false negatives, follows from each
    /// word's modification order). A key already present leaves the line clean.
    #[inline(always)]
    pub(crate) fn or_missing_words<const N: usize>(&self, first: usize, mask: [u64; N]) {
        for (word, m) in self.0[first..first + N].iter().zip(mask) {
            let missing = m & !word.load(Relaxed);
            if missing != 0 {
                word.fetch_or(missing, Relaxed);
            }
        }
    }

    /// Sets the bits at `bits` (positions 0..512, a key's `k` positions): one load
    /// per position; if any is clear, one `fetch_or` (Relaxed) per position, set or not, with
    /// no branch on which (a mispredicted branch before a locked operation waits out the
    /// cache miss: see [`claim_bits`](Self::claim_bits)). No eight-word mask is built. A key
    /// already present writes nothing.
    #[inline(always)]
    pub(crate) fn or_missing_bits(&self, bits: impl Iterator<Item = u32> + Clone) {
        let mut missing = 0u64; // nonzero <=> some position was seen clear
        for p in bits.clone() {
            missing |= !self.0[(p >> 6) as usize].load(Relaxed) >> (p & 63) & 1;
        }
        if missing == 0 {
            return;
        }
        for p in bits {
            self.0[(p >> 6) as usize].fetch_or(1 << (p & 63), Relaxed);
        }
    }

    /// Sets the bits at `bits` (positions 0..512, a key's `k` positions) and returns `true`
    /// iff this call decided that they were not all present before: the protocol of
    /// [`BloomFilter::insert_if_absent`](crate::BloomFilter::insert_if_absent), whose docs
    /// carry the proof that two racing calls with the same positions cannot both return
    /// `true`.
    ///
    /// 1. One Acquire load per position: `t` = the highest missing position. None: `false`,
    ///    no write.
    /// 2. `fetch_or` (AcqRel) every position but `t`, one by one, then `t` alone.
    /// 3. `true` iff that last `fetch_or` flipped `t`.
    ///
    /// Step 2 ORs in every position, present or not, with no branch on which: the only
    /// value that steers it is `t`, and the position equal to `t` is ORed as a zero mask
    /// (a locked no-op) rather than skipped. A branch per position, or a loop over the
    /// missing ones, mispredicts on most new keys, and on x86 a locked instruction waits
    /// for every earlier branch to resolve — which waits for the cache miss. So the
    /// branch-free form is faster for new keys (`examples/per_call.rs` measures it) though
    /// it spends two or three more locked operations (on a line already held) than there
    /// are missing bits. ORing a bit
    /// already set changes no value, so the proof (which orders only `t` after the other
    /// bits) is unchanged. The key's eight-word mask is never built.
    #[inline(always)]
    pub(crate) fn claim_bits(&self, bits: impl Iterator<Item = u32> + Clone) -> bool {
        let mut top = 0u32; // the highest missing position + 1; 0: none
        for p in bits.clone() {
            // Acquire: pairs with the AcqRel fetch_or of whoever set a bit we see, so that
            // everything that thread did before is visible to us: the synchronisation step
            // of the proof.
            let set = ((self.0[(p >> 6) as usize].load(Acquire) >> (p & 63)) & 1) as u32;
            top = top.max((p + 1) & set.wrapping_sub(1));
        }
        if top == 0 {
            return false;
        }
        let t = top - 1;
        for p in bits {
            // Every position but t (two salts may give t twice: setting it early would make
            // this call lose to itself). AcqRel: Release publishes our earlier writes to
            // whoever later reads this word; Acquire orders us after whoever set bits here
            // before us. Result unused: one `lock or` on x86.
            let bit = ((p != t) as u64) << (p & 63);
            self.0[(p >> 6) as usize].fetch_or(bit, AcqRel);
        }
        // The deciding operation: a single-bit fetch_or whose result is tested for that bit
        // compiles to `lock bts` on x86.
        let bit = 1u64 << (t & 63);
        self.0[(t >> 6) as usize].fetch_or(bit, AcqRel) & bit == 0
    }

    /// [`claim_words`](Self::claim_words) on word `w` alone (a 64-bit block), with one locked operation
    /// where the protocol needs two: a single compare-exchange from the value loaded to
    /// that value with the missing bits set. If it succeeds, this call flipped every missing
    /// bit at once: `true`. If the word changed meanwhile, the protocol runs as on any
    /// block (no retry loop: wait-free).
    ///
    /// At most one winner still: all the racers' read-modify-writes are on this one word, so
    /// they are totally ordered; after the first winner's deciding operation (its successful
    /// compare-exchange, or its `fetch_or` of the top bit, which follows its `fetch_or` of
    /// the other missing bits) every bit of the mask is set, and bits never clear — so a
    /// later compare-exchange cannot find the value it loaded with bits missing, and a later
    /// top-bit `fetch_or` cannot flip its bit.
    #[inline(always)]
    pub(crate) fn claim_word(&self, w: usize, mask: u64) -> bool {
        let word = &self.0[w];
        let seen = word.load(Acquire);
        let missing = mask & !seen;
        if missing == 0 {
            return false;
        }
        // AcqRel on success and Acquire on failure: the orderings of the protocol's
        // fetch_or and load.
        match word.compare_exchange(seen, seen | missing, AcqRel, Acquire) {
            Ok(_) => true,
            Err(_) => self.claim_words::<1>(w, [mask]),
        }
    }

    /// The claim of [`claim_bits`](Self::claim_bits) on the `N` words from word `first` on
    /// (a block of `64·N` bits inside this line), given the key's mask there: the missing
    /// bits are grouped by word, one `fetch_or` per word (the protocol and its proof are the
    /// same on any run of words).
    #[inline(always)]
    pub(crate) fn claim_words<const N: usize>(&self, first: usize, mask: [u64; N]) -> bool {
        let words: &[AtomicU64; N] = self.0[first..first + N]
            .try_into()
            .expect("a block lies within its line");
        claim_words(words, mask)
    }

    /// ORs every word of `other` into this line. Words whose bits are all present already
    /// are not written (their lines stay clean). AcqRel, as an insert's `fetch_or`: a reader
    /// that acquires these bits also sees what happened before them.
    #[inline]
    pub(crate) fn or_line(&self, other: &Line) {
        for (w, o) in self.0.iter().zip(&other.0) {
            Self::or_word(w, o.load(Relaxed));
        }
    }

    #[inline(always)]
    fn or_word(w: &AtomicU64, bits: u64) {
        if bits & !w.load(Relaxed) != 0 {
            w.fetch_or(bits, AcqRel);
        }
    }

    /// Keeps only the bits also set in `other` (word-wise `fetch_and`).
    pub(crate) fn and_line(&self, other: &Line) {
        for (w, o) in self.0.iter().zip(&other.0) {
            w.fetch_and(o.load(Relaxed), AcqRel);
        }
    }

    /// Clears every bit.
    pub(crate) fn clear(&self) {
        for w in &self.0 {
            w.store(0, Relaxed);
        }
    }

    /// Number of bits set.
    #[inline]
    pub(crate) fn count_ones(&self) -> u32 {
        self.0.iter().map(|w| w.load(Relaxed).count_ones()).sum()
    }

    /// Appends the 64 bytes of the line (eight little-endian words): the snapshot format's
    /// layout, and that of a filter stored as one byte string elsewhere.
    #[inline]
    pub(crate) fn append_le_bytes(&self, out: &mut Vec<u8>) {
        for w in &self.0 {
            out.extend_from_slice(&w.load(Relaxed).to_le_bytes());
        }
    }

    /// ORs 64 bytes in the layout of [`append_le_bytes`](Self::append_le_bytes) into the
    /// line (as [`or_line`](Self::or_line)).
    pub(crate) fn or_le_bytes(&self, bytes: &[u8]) {
        for (w, word) in self.0.iter().zip(bytes.chunks_exact(8)) {
            Self::or_word(w, u64::from_le_bytes(word.try_into().expect("8 bytes")));
        }
    }

    /// Stores 64 bytes in the layout of [`append_le_bytes`](Self::append_le_bytes) into a
    /// line being loaded (no one else sees it yet). Zero words are not written, so the
    /// pages of an all-zero region of a lazily zeroed allocation stay untouched; whether
    /// any word was.
    pub(crate) fn store_le_bytes(&self, bytes: &[u8]) -> bool {
        let mut any = false;
        for (w, word) in self.0.iter().zip(bytes.chunks_exact(8)) {
            let v = u64::from_le_bytes(word.try_into().expect("8 bytes"));
            if v != 0 {
                w.store(v, Relaxed);
                any = true;
            }
        }
        any
    }
}

/// Where a plane word's label lies (its top 4 bits; 0: an empty word), and its data bits.
pub(crate) const LABEL_SHIFT: u32 = 60;
pub(crate) const DATA: u64 = (1 << LABEL_SHIFT) - 1;

/// What [`Line::claim_plane`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PlaneClaim {
    /// This call set the last of the key's bits under its label: the key is new.
    Won,
    /// Every bit was there under the label (or another call set the deciding one first).
    Lost,
    /// A word holds a label the caller may neither write under nor replace: a later
    /// epoch's (the caller's epoch is stale).
    Stale,
}

impl Line {
    /// Sets `mask` (bits 0..60 of each word) in plane `p` (words `2p`, `2p + 1`) under
    /// `label`, replacing a word whose label `replaceable` says may go (an empty word, or
    /// a dead epoch's: its data is dropped in the same compare-exchange that writes the new
    /// label and bits). The claim of [`claim_bits`](Self::claim_bits), word by word: the
    /// highest missing bit decides, and is set last (with the other missing bits of its
    /// word, in one compare-exchange), so that of the calls setting one key's bits under
    /// one label at most one returns [`PlaneClaim::Won`]. A word with another label that
    /// is not replaceable stops the claim: [`PlaneClaim::Stale`].
    ///
    /// SeqCst: the expiring filter's proof across planes orders the winner's last write
    /// before its re-read of the newest epoch (a store-buffering pattern).
    #[inline(always)]
    pub(crate) fn claim_plane(
        &self,
        p: usize,
        label: u64,
        mask: [u64; 2],
        replaceable: impl Fn(u64) -> bool,
    ) -> PlaneClaim {
        use crate::sync::Ordering::SeqCst;
        let seen = [self.0[2 * p].load(SeqCst), self.0[2 * p + 1].load(SeqCst)];
        self.claim_plane_seen(p, label, mask, replaceable, seen)
    }

    /// [`claim_plane`](Self::claim_plane) from the plane's words as the caller loaded them
    /// (`seen`): each write is a compare-exchange from the value it was decided on, so the
    /// claim is one on fresh loads, with two loads fewer before its first locked operation.
    #[inline(always)]
    pub(crate) fn claim_plane_seen(
        &self,
        p: usize,
        label: u64,
        mask: [u64; 2],
        replaceable: impl Fn(u64) -> bool,
        seen: [u64; 2],
    ) -> PlaneClaim {
        use crate::sync::Ordering::SeqCst;
        let words = [&self.0[2 * p], &self.0[2 * p + 1]];
        // The word's bits under `label` (none if replaceable), or `None` if it blocks.
        let ours = |v: u64| match v >> LABEL_SHIFT {
            l if l == label => Some(v & DATA),
            l if replaceable(l) => Some(0),
            _ => None,
        };
        let mut missing = [0u64; 2];
        for (m, (&v, want)) in missing.iter_mut().zip(seen.iter().zip(mask)) {
            match ours(v) {
                Some(have) => *m = want & !have,
                None => return PlaneClaim::Stale,
            }
        }
        let top = match missing {
            [0, 0] => return PlaneClaim::Lost,
            [_, 0] => 0,
            _ => 1,
        };
        let top_bit = 1u64 << (63 - missing[top].leading_zeros());
        // The other word's missing bits first, relabelling it where it must be.
        let other = 1 - top;
        if missing[other] != 0 {
            let mut cur = seen[other];
            loop {
                let Some(have) = ours(cur) else {
                    return PlaneClaim::Stale;
                };
                let new = label << LABEL_SHIFT | have | mask[other];
                if new == cur {
                    break;
                }
                match words[other].compare_exchange_weak(cur, new, SeqCst, SeqCst) {
                    Ok(_) => break,
                    Err(now) => cur = now,
                }
            }
        }
        // The deciding word: its missing bits and the deciding one in one compare-exchange.
        let mut cur = seen[top];
        loop {
            let Some(have) = ours(cur) else {
                return PlaneClaim::Stale;
            };
            if have & top_bit != 0 {
                return PlaneClaim::Lost;
            }
            match words[top].compare_exchange_weak(
                cur,
                label << LABEL_SHIFT | have | mask[top],
                SeqCst,
                SeqCst,
            ) {
                Ok(_) => return PlaneClaim::Won,
                Err(now) => cur = now,
            }
        }
    }

    /// Whether plane `p` holds every bit of `mask` under one label of `live`, read from
    /// `words` (the line's eight words, loaded once): both words the key touches must carry
    /// the same label, and it must be live.
    #[inline(always)]
    pub(crate) fn plane_holds(
        words: &[u64; WORDS],
        p: usize,
        mask: [u64; 2],
        live: [u64; 2],
    ) -> bool {
        let (a, b) = (words[2 * p], words[2 * p + 1]);
        let (la, lb) = (a >> LABEL_SHIFT, b >> LABEL_SHIFT);
        let label = if mask[0] != 0 { la } else { lb };
        // `&`, not `&&`: no branch on the words (live labels are never 0, the empty label).
        let agree = (mask[0] == 0 || la == label) & (mask[1] == 0 || lb == label);
        agree
            & ((label == live[0]) | (label == live[1]))
            & (a & mask[0] == mask[0])
            & (b & mask[1] == mask[1])
    }
}

/// The claim protocol of [`Line::claim_bits`] on a run of `N` words (a block smaller than
/// the line), a word at a time: the argument in
/// [`BloomFilter::insert_if_absent`](crate::BloomFilter::insert_if_absent) orders words and
/// bits, never counts them, so it holds for any `N`.
#[inline(always)]
fn claim_words<const N: usize>(words: &[AtomicU64; N], mask: [u64; N]) -> bool {
    let mut missing = [0u64; N];
    let mut nonzero = 0u32; // bit w set <=> word w has missing bits
    for (w, (word, m)) in words.iter().zip(mask).enumerate() {
        // Acquire: pairs with the AcqRel fetch_or of whoever set a bit we see, so that
        // everything that thread did before (its lower-word fetch_ors) is visible to us:
        // the synchronisation step of the proof.
        missing[w] = m & !word.load(Acquire);
        nonzero |= ((missing[w] != 0) as u32) << w;
    }
    if nonzero == 0 {
        return false; // every bit present: no write, the cache line stays clean
    }
    let top = (31 - nonzero.leading_zeros()) as usize;
    let top_bit = 1u64 << (63 - missing[top].leading_zeros());
    // Every missing bit but the deciding one, a `fetch_or` on every word of the block —
    // zero masks included (a locked no-op) — so that no branch depends on which words
    // miss bits: as in `claim_bits`, a mispredicted branch before a locked operation waits
    // out the cache miss.
    for (w, (word, m)) in words.iter().zip(missing).enumerate() {
        // AcqRel: Release publishes our earlier writes to whoever later reads this word;
        // Acquire orders us after whoever set bits here before us. Result unused, so on
        // x86 this is one `lock or`.
        word.fetch_or(
            m & !(top_bit & 0u64.wrapping_sub((w == top) as u64)),
            AcqRel,
        );
    }
    // The deciding operation, AcqRel for the same reasons. A single-bit fetch_or whose
    // result is tested for that bit compiles to `lock bts` on x86 (a multi-bit one whose
    // old value is used would be a compare-exchange loop).
    let before = words[top].fetch_or(top_bit, AcqRel);
    before & top_bit == 0
}

/// ORs every line of `src` into `dst` (lines paired in order): the union of two filters or
/// sets.
pub(crate) fn or_into(dst: &[Line], src: &[Line]) {
    for (mine, theirs) in dst.iter().zip(src) {
        mine.or_line(theirs);
    }
}

#[cfg(all(test, not(blockbloom_loom)))]
mod tests {
    use super::*;

    const LIVE: u64 = 3;
    const AHEAD: u64 = 7;
    /// Labels other than the live and the ahead one may be replaced.
    fn replaceable(l: u64) -> bool {
        l != LIVE && l != AHEAD
    }

    fn words(line: &Line) -> [u64; WORDS] {
        core::array::from_fn(|i| line.word(i).load(Relaxed))
    }

    #[test]
    fn a_plane_claim_wins_once_and_replaces_only_dead_words() {
        let line = Line::new();
        let mask = [0b1010, 1 << 59];
        assert_eq!(
            line.claim_plane(1, LIVE, mask, replaceable),
            PlaneClaim::Won
        );
        assert_eq!(
            line.claim_plane(1, LIVE, mask, replaceable),
            PlaneClaim::Lost
        );
        let w = words(&line);
        assert_eq!((w[2], w[3]), (LIVE << 60 | 0b1010, LIVE << 60 | 1 << 59));
        assert!(Line::plane_holds(&w, 1, mask, [LIVE, AHEAD]));
        assert!(
            !Line::plane_holds(&w, 1, mask, [4, 5]),
            "another label is not live"
        );
        assert!(
            !Line::plane_holds(&w, 0, mask, [LIVE, AHEAD]),
            "another plane"
        );
        // A dead word's data is dropped with its label.
        line.word(4).store(9 << 60 | DATA, Relaxed);
        assert_eq!(
            line.claim_plane(2, LIVE, [1, 0], replaceable),
            PlaneClaim::Won
        );
        assert_eq!(line.word(4).load(Relaxed), LIVE << 60 | 1);
        // A later epoch's word stops the claim, unchanged.
        line.word(6).store(AHEAD << 60 | 1, Relaxed);
        assert_eq!(
            line.claim_plane(3, LIVE, [2, 0], replaceable),
            PlaneClaim::Stale
        );
        assert_eq!(line.word(6).load(Relaxed), AHEAD << 60 | 1);
        // Words the key does not touch keep their labels.
        let w = words(&line);
        assert!(Line::plane_holds(&w, 3, [1, 0], [LIVE, AHEAD]));
        assert_eq!(w[5] >> 60, 0);
    }

    /// A claim from words loaded earlier decides on what each word holds when its
    /// compare-exchange runs: the earlier values only save loads.
    #[test]
    fn a_claim_from_earlier_words_decides_on_the_words_now() {
        let mask = [1 << 4 | 1 << 9, 1 << 2 | 1 << 30];
        // Plane 0 holding `now` while the claim decides from the empty words it loaded.
        let claim = |now: [u64; 2]| {
            let line = Line::new();
            (0..2).for_each(|w| line.word(w).store(now[w], Relaxed));
            let claim = line.claim_plane_seen(0, LIVE, mask, replaceable, [0, 0]);
            (
                claim,
                [line.word(0).load(Relaxed), line.word(1).load(Relaxed)],
            )
        };
        let key = [LIVE << 60 | mask[0], LIVE << 60 | mask[1]];
        // Another call won meanwhile: lost, nothing written.
        assert_eq!(claim(key), (PlaneClaim::Lost, key));
        // Only the deciding bit is missing, set by another call: lost.
        let top = [key[0], LIVE << 60 | 1 << 30];
        assert_eq!(claim(top), (PlaneClaim::Lost, top));
        // A later epoch's word arrived meanwhile: stale, that word unchanged (the other
        // word's bits may be set, as when a claim meets the change between its words).
        assert_eq!(claim([0, AHEAD << 60 | 1]).0, PlaneClaim::Stale);
        assert_eq!(claim([0, AHEAD << 60 | 1]).1[1], AHEAD << 60 | 1);
        assert_eq!(
            claim([AHEAD << 60 | 1, 0]),
            (PlaneClaim::Stale, [AHEAD << 60 | 1, 0])
        );
        // Other keys' bits arrived meanwhile: kept, the key's set with them.
        let others = [LIVE << 60 | 1 << 50, LIVE << 60 | 1 << 2 | 1 << 40];
        let both = [others[0] | key[0], others[1] | key[1]];
        assert_eq!(claim(others), (PlaneClaim::Won, both));
    }

    #[test]
    fn a_plane_needs_one_label_on_every_word_the_key_touches() {
        let mut w = [0u64; WORDS];
        w[0] = LIVE << 60 | 1;
        w[1] = AHEAD << 60 | 1;
        assert!(!Line::plane_holds(&w, 0, [1, 1], [LIVE, AHEAD]));
        assert!(Line::plane_holds(&w, 0, [1, 0], [LIVE, AHEAD]));
        assert!(Line::plane_holds(&w, 0, [0, 1], [LIVE, AHEAD]));
        assert!(
            !Line::plane_holds(&[0; WORDS], 0, [1, 0], [0, 0]),
            "empty is never live"
        );
    }

    #[test]
    fn racing_claims_of_one_key_have_one_winner() {
        use std::sync::Barrier;
        for round in 0..2_000u64 {
            let line = Line::new();
            line.word(0).store(12 << 60 | DATA, Relaxed); // a dead epoch's word to replace
            let mask = [1 << (round % 60) | 1 << 7, 1 << (round % 13)];
            let start = Barrier::new(3);
            let won: usize = std::thread::scope(|s| {
                let tasks: Vec<_> = (0..3)
                    .map(|t| {
                        let (line, start) = (&line, &start);
                        s.spawn(move || {
                            // Two of the three claim from the words as loaded before the
                            // race (the expiring filter's step 1): stale for all but one.
                            let seen = [line.word(0).load(Relaxed), line.word(1).load(Relaxed)];
                            start.wait();
                            let claim = if t == 0 {
                                line.claim_plane(0, LIVE, mask, replaceable)
                            } else {
                                line.claim_plane_seen(0, LIVE, mask, replaceable, seen)
                            };
                            claim == PlaneClaim::Won
                        })
                    })
                    .collect();
                tasks.into_iter().map(|t| t.join().unwrap() as usize).sum()
            });
            assert_eq!(won, 1, "round {round}");
            assert!(Line::plane_holds(&words(&line), 0, mask, [LIVE, AHEAD]));
        }
    }
}
