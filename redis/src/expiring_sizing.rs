//! How many lines an expiring filter in Redis takes, of either kind: the local filter's
//! planes (the module's expiring type) or the Functions' generations of stamp lines.

use std::time::Duration;

use blockbloom::{Arrival, ExpiringBloomFilter};

use crate::Result;

/// Lines and bits per key of an expiring filter for `capacity` keys per window `w` at
/// `fpr`: the local filter's planes (`planes`), or the Functions' generations.
pub(crate) fn expiring_lines(
    planes: bool,
    capacity: u64,
    fpr: f64,
    arrival: Arrival,
    w: Duration,
) -> Result<(u64, u32)> {
    if !planes {
        return stamp_sizing(capacity, fpr, arrival);
    }
    let layout = ExpiringBloomFilter::builder()
        .capacity(capacity)
        .fpr(fpr)
        .arrival(arrival)
        .expire_after(w)
        .layout()?;
    Ok((layout.num_lines(), layout.num_hashes()))
}

/// The stamp lines and stamps per key of an expiring filter's generations, for `capacity`
/// keys per window at `fpr`: a counting filter's sizing for the keys live at once, a window
/// and the quarter after it at a steady rate (`1.25 × capacity`), twice the capacity in
/// the worst burst. (The local filter's planes are sized otherwise: `blockbloom`'s
/// `ExpiringBuilder::layout`.)
fn stamp_sizing(capacity: u64, fpr: f64, arrival: blockbloom::Arrival) -> Result<(u64, u32)> {
    let live = match arrival {
        blockbloom::Arrival::Steady => capacity.saturating_add(capacity.div_ceil(4)),
        blockbloom::Arrival::WorstBurst => capacity.saturating_mul(2),
    };
    let s = blockbloom::math::size_counting(live, fpr)?;
    Ok((s.blocks, s.hashes))
}
