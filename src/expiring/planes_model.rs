//! The planes protocol alone on one line and a newest-epoch word, for its loom models
//! (`loom-tests/tests/planes.rs`; hidden, feature `internals`).

use super::planes::{contains, insert_if_absent, PlaneEpoch};
use crate::line::{Line, PlaneClaim, WORDS};
use crate::sync::{seq_cst_order, AtomicU64, Ordering::SeqCst};

/// One line and a newest-epoch word: the planes protocol alone, for its loom models
/// (hidden; feature `internals`).
#[doc(hidden)]
pub struct PlanesModel {
    line: Line,
    newest: AtomicU64,
}

impl PlanesModel {
    /// An empty line whose newest epoch is `n`.
    #[doc(hidden)]
    pub fn new(n: u64) -> PlanesModel {
        PlanesModel {
            line: Line::new(),
            newest: AtomicU64::new(n),
        }
    }
    /// Moves the newest epoch on to `n` (SeqCst, as the filter's clock line).
    #[doc(hidden)]
    pub fn advance(&self, n: u64) {
        self.newest.fetch_max(n, SeqCst);
    }
    /// The newest epoch.
    #[doc(hidden)]
    pub fn newest(&self) -> u64 {
        self.newest.load(SeqCst)
    }
    /// [`insert_if_absent`] for a caller that read the newest epoch as `n`.
    #[doc(hidden)]
    pub fn insert_if_absent(&self, n: u64, mask: [u64; 2]) -> bool {
        insert_if_absent(&self.line, &self.newest, n, mask)
    }
    /// The negative control: the claim in `n`'s plane without the re-read of the newest
    /// epoch after a win. Two callers across an epoch change can both win.
    #[doc(hidden)]
    pub fn insert_if_absent_without_re_read(&self, n: u64, mask: [u64; 2]) -> bool {
        let e = PlaneEpoch::at(n);
        seq_cst_order();
        let words: [u64; WORDS] = core::array::from_fn(|i| self.line.word(i).load(SeqCst));
        !e.holds(&words, mask, None)
            && self
                .line
                .claim_plane(e.plane, e.label, mask, |l| e.replaceable(e.plane, l))
                == PlaneClaim::Won
    }
    /// [`contains`] in epoch `n`.
    #[doc(hidden)]
    pub fn contains(&self, n: u64, mask: [u64; 2]) -> bool {
        contains(&self.line, n, mask)
    }
}
