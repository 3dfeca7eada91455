//! The rule `RedisExpiringBloomFilter` answers by, written plainly for its tests: each slot
//! of a key (`Layout::probe_slots`, the generations' sizing) remembers the quarter-window
//! epochs it was set in; a key is present at epoch `e` if every slot was set in one of
//! `e − 4 ..= e + lag`. One process, times in order (a caller's epoch is then its own).

use std::collections::HashMap;
use std::hash::Hash;
use std::time::{Duration, SystemTime};

use blockbloom::{Arrival, ExpiryWindow, Layout};

pub struct StampModel {
    layout: Layout,
    window: ExpiryWindow,
    /// (line, slot) → the epochs it was set in.
    set: HashMap<(usize, u32), Vec<u64>>,
}

impl StampModel {
    /// The model of a filter of `capacity` keys per `window` at `fpr`, sized for `arrival`
    /// (a counting filter of the keys live at once: 1.25 × capacity steady, 2× in bursts).
    pub fn new(capacity: u64, fpr: f64, seed: u128, window: Duration, arrival: Arrival) -> Self {
        let live = match arrival {
            Arrival::Steady => capacity + capacity.div_ceil(4),
            Arrival::WorstBurst => 2 * capacity,
        };
        let s = blockbloom::math::size_counting(live, fpr).unwrap();
        StampModel {
            layout: Layout::new(seed, s.blocks, s.hashes).unwrap(),
            window: ExpiryWindow::in_quarters(window).unwrap(),
            set: HashMap::new(),
        }
    }

    pub fn num_lines(&self) -> u64 {
        self.layout.num_lines()
    }

    fn slots<K: Hash + ?Sized>(&self, key: &K) -> Vec<(usize, u32)> {
        let p = self.layout.probe_slots(key);
        (0..128)
            .filter(|s| p.slots() >> s & 1 == 1)
            .map(|s| (p.line(), s))
            .collect()
    }

    fn live(&self, slot: (usize, u32), e: u64) -> bool {
        let lag = self.window.tolerated_lag();
        self.set
            .get(&slot)
            .is_some_and(|xs| xs.iter().any(|&x| x + 4 >= e && x <= e + lag))
    }

    pub fn contains<K: Hash + ?Sized>(&self, key: &K, t: SystemTime) -> bool {
        let e = self.window.epoch_of(t);
        self.slots(key).into_iter().all(|s| self.live(s, e))
    }

    pub fn insert<K: Hash + ?Sized>(&mut self, key: &K, t: SystemTime) {
        let e = self.window.epoch_of(t);
        for s in self.slots(key) {
            self.set.entry(s).or_default().push(e);
        }
    }

    pub fn insert_if_absent<K: Hash + ?Sized>(&mut self, key: &K, t: SystemTime) -> bool {
        let new = !self.contains(key, t);
        if new {
            self.insert(key, t);
        }
        new
    }

    /// The mean over lines of `(live slots / 128)^k` at `t`.
    pub fn estimated_fpr(&self, t: SystemTime) -> f64 {
        let e = self.window.epoch_of(t);
        let mut live = vec![0u32; self.num_lines() as usize];
        for &slot in self.set.keys() {
            live[slot.0] += self.live(slot, e) as u32;
        }
        blockbloom::math::fpr_of_fills(live.into_iter(), 128, self.layout.num_hashes())
    }
}
