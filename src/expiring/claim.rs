//! Reading and writing a key's bits in its line's planes (`planes.rs`): `contains`, `insert`
//! and the `insert_if_absent` protocol (proved at
//! [`insert_if_absent_at`](ExpiringBloomFilter::insert_if_absent_at)).

use super::planes::{self, PlaneEpoch};
use super::{ExpiringBloomFilter, NEWEST};
use crate::layout::plane_mask;
use crate::line::Line;
use crate::storage::{prefetch_read, prefetch_write};

impl ExpiringBloomFilter {
    /// The lines of the keys (all but the clock line).
    #[inline(always)]
    pub(super) fn key_lines(&self) -> &[Line] {
        &self.store.lines[1..]
    }

    /// The line of the key hashed to `h`.
    #[inline(always)]
    pub(super) fn line_of(&self, h: u64) -> &Line {
        &self.key_lines()[self.layout.locate::<9>(h).0]
    }

    /// The hash of `key` and its line, the line's fetch started (a prefetch, for writing if
    /// `write`): one call's cache miss then overlaps its clock, epoch and mask instead of
    /// following them.
    #[inline(always)]
    pub(super) fn hash_fetching<K: core::hash::Hash + ?Sized>(
        &self,
        key: &K,
        write: bool,
    ) -> (u64, &Line) {
        let h = self.layout.hasher.hash(key);
        let line = self.line_of(h);
        if write {
            prefetch_write(line);
        } else {
            prefetch_read(line);
        }
        (h, line)
    }

    /// `contains` of the key hashed to `h`, in epoch `e`, in a batch: whether a live plane
    /// holds every bit of the key under one label, the four planes tested without a branch.
    #[inline(always)]
    pub(super) fn contains_in(&self, h: u64, line: &Line, e: &PlaneEpoch) -> bool {
        let mask = plane_mask(h, self.layout.num_hashes());
        planes::contains_in(line, e, mask)
    }

    /// `contains_in` for a single call: the planes tested newest first, leaving at the
    /// first that holds the key (`PlaneEpoch::holds_newest_first`): cheaper for a member of
    /// the newest plane and for a non-member, no dearer for members spread over the planes.
    /// A batch keeps the branch-free test, since there a mispredicted exit also throws away
    /// the next keys' work already under way (figures: docs/PERFORMANCE.md, "The expiring
    /// filter against its goals", the APBF).
    #[inline(always)]
    pub(super) fn contains_one_in(&self, h: u64, line: &Line, e: &PlaneEpoch) -> bool {
        let mask = plane_mask(h, self.layout.num_hashes());
        e.holds_newest_first(line, mask)
    }

    /// `insert` of the key hashed to `h`, in epoch `e`: its bits set in `e`'s plane.
    #[inline]
    pub(super) fn insert_in(&self, h: u64, line: &Line, e: &PlaneEpoch) {
        let mask = plane_mask(h, self.layout.num_hashes());
        planes::insert(line, self.clock(NEWEST), e, mask)
    }

    /// `insert_if_absent` of the key hashed to `h`, in epoch `e`: the protocol proved at
    /// [`insert_if_absent_at`](Self::insert_if_absent_at).
    #[inline(always)]
    pub(super) fn insert_if_absent_in(&self, h: u64, line: &Line, e: &PlaneEpoch) -> bool {
        let mask = plane_mask(h, self.layout.num_hashes());
        let won = planes::insert_if_absent_in(line, self.clock(NEWEST), e, mask);
        if won {
            self.store.lines.count_new_key(h); // huge pages once dense (storage/huge.rs)
        }
        won
    }
}
