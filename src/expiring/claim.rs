//! Reading and writing a key's stamps: `contains`, `insert` and the `insert_if_absent`
//! protocol (proved at [`insert_if_absent_at`](ExpiringBloomFilter::insert_if_absent_at)),
//! slot by slot and branch-free, as the plain filter's `contains` and claim: a branch on
//! the state of a slot or a word would be mispredicted on every new key.

use super::window::{stamped, Epoch};
use super::ExpiringBloomFilter;
use crate::layout::{nth_position, positions, slot_word_and_shift};
use crate::line::{Line, WORDS};
use crate::sync::{
    AtomicU64,
    Ordering::{AcqRel, Acquire, Relaxed},
};

/// The word of `words` that holds slot `slot` (0..128), and the slot's shift in it.
#[inline(always)]
fn slot_word(words: &[AtomicU64; WORDS], slot: u32) -> (&AtomicU64, u32) {
    let (w, shift) = slot_word_and_shift(slot);
    (&words[w], shift)
}

impl ExpiringBloomFilter {
    /// The stamp lines.
    #[inline(always)]
    pub(super) fn stamp_lines(&self) -> &[Line] {
        &self.store.lines[1..]
    }

    /// The stamp line of the key hashed to `h`.
    #[inline(always)]
    pub(super) fn line_of(&self, h: u64) -> &Line {
        &self.stamp_lines()[self.layout.locate::<9>(h).0]
    }

    /// `contains` of the key hashed to `h`, in epoch `e`: whether every stamp of the key is
    /// live, slot by slot, counted rather than tested with an early exit (as the plain
    /// filter's `contains`), so that there is no branch on which stamps are live.
    #[inline(always)]
    pub(super) fn contains_in(&self, h: u64, e: &Epoch) -> bool {
        let words = self.line_of(h).words();
        let k = self.layout.num_hashes();
        let live: u32 = positions::<7>(h, k)
            .map(|slot| {
                let (word, shift) = slot_word(words, slot);
                e.is_live(word.load(Relaxed) >> shift) as u32
            })
            .sum();
        live == k
    }

    /// `insert` of the key hashed to `h`, in epoch `e`: every slot stamped.
    #[inline]
    pub(super) fn insert_in(&self, h: u64, e: &Epoch) {
        let words = self.line_of(h).words();
        for slot in positions::<7>(h, self.layout.num_hashes()) {
            stamp(slot_word(words, slot), e);
        }
    }

    /// `insert_if_absent` of the key hashed to `h`, in epoch `e`: the protocol proved at
    /// [`insert_if_absent_at`](Self::insert_if_absent_at).
    #[inline(always)]
    pub(super) fn insert_if_absent_in(&self, h: u64, e: &Epoch) -> bool {
        let words = self.line_of(h).words();
        let k = self.layout.num_hashes();
        // Step 1, one load per slot (Acquire: pairs with the AcqRel write of whoever
        // stamped what we read), each slot's liveness shifted into `live` (the last slot
        // read in bit 0). A repeat, most of a crawl, leaves here; for a new key the deciding
        // slot `top` is the last dead one read: the lowest clear bit, found without a
        // branch or a second pass.
        let mut live = 0u64;
        for slot in positions::<7>(h, k) {
            let (word, shift) = slot_word(words, slot);
            live = 2 * live + e.is_live(word.load(Acquire) >> shift) as u64;
        }
        let dead = !live & ((1 << k) - 1);
        if dead == 0 {
            return false;
        }
        let top = nth_position::<7>(h, k - 1 - dead.trailing_zeros());
        // Step 2: every slot but `top` (two salts may give `top` twice: stamping it early
        // would make this call lose to itself).
        for slot in positions::<7>(h, k) {
            if slot != top {
                stamp(slot_word(words, slot), e);
            }
        }
        // Step 3, the decision.
        let (word, shift) = slot_word(words, top);
        let mut cur = word.load(Acquire);
        loop {
            if e.is_live(cur >> shift) {
                return false; // another call stamped `top` first
            }
            match word.compare_exchange_weak(cur, stamped(cur, shift, e), AcqRel, Acquire) {
                Ok(_) => {
                    self.store.lines.count_new_key(h); // huge pages once dense (storage/huge.rs)
                    return true;
                }
                Err(now) => cur = now,
            }
        }
    }
}

/// Stamps the slot at `shift` of `word` (from [`slot_word`]) with `e`, keeping a stamp ahead
/// of it: a compare-exchange loop, AcqRel, that writes even when nothing changes (as the
/// plain filter's `fetch_or` of a bit already set), so that it has no branch on the slot's
/// state.
#[inline(always)]
fn stamp((word, shift): (&AtomicU64, u32), e: &Epoch) {
    // Relaxed: the compare-exchange that succeeds reads the value it replaces, with Acquire.
    let mut cur = word.load(Relaxed);
    while let Err(now) = word.compare_exchange_weak(cur, stamped(cur, shift, e), AcqRel, Relaxed) {
        cur = now;
    }
}
