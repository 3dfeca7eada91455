//! One block: 512 bits in eight atomic words, aligned to (and exactly filling) a cache line.
//!
//! Every probe of a key lands in one block, so an operation costs one cache-line miss
//! whatever the number of hash functions.

use crate::sync::{
    AtomicU64,
    Ordering::{AcqRel, Relaxed},
};

/// Words per block.
pub(crate) const WORDS: usize = 8;
/// Bits per block.
pub(crate) const BLOCK_BITS: u64 = 512;
/// Bytes per block.
pub(crate) const BLOCK_BYTES: usize = 64;

/// A 512-bit block. `repr(C, align(64))`: the eight words sit in one 64-byte cache line on
/// x86-64 and on most AArch64 parts (Apple's M-series have 128-byte lines; a block then
/// shares a line with its neighbour, which costs no extra miss since a key touches one block).
#[repr(C, align(64))]
pub(crate) struct Block(pub(crate) [AtomicU64; WORDS]);

#[cfg(not(blockbloom_loom))]
const _: () = assert!(core::mem::size_of::<Block>() == BLOCK_BYTES);

impl Block {
    /// A block of zero words, built value by value (loom's atomics cannot come from zeroed
    /// memory, and its `AtomicU64::new` is not `const`).
    #[cfg_attr(not(blockbloom_loom), allow(dead_code))]
    pub(crate) fn new() -> Self {
        Block(core::array::from_fn(|_| AtomicU64::new(0)))
    }
}

/// ORs every word of `src` into `dst` (blocks paired in order): the union of two filters or
/// sets. Words whose bits are all present already are not written (their lines stay clean).
/// AcqRel, as an insert's `fetch_or`: a reader that acquires these bits also sees what
/// happened before them.
pub(crate) fn or_into(dst: &[Block], src: &[Block]) {
    for (mine, theirs) in dst.iter().zip(src) {
        for (w, o) in mine.0.iter().zip(&theirs.0) {
            let bits = o.load(Relaxed);
            if bits & !w.load(Relaxed) != 0 {
                w.fetch_or(bits, AcqRel);
            }
        }
    }
}
