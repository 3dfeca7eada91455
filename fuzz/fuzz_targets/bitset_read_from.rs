//! Fuzzes the bitset snapshot reader like `read_from`: `Ok` or a clean `Err`, never a panic;
//! an accepted input re-serialises to the same bytes and has no id beyond its universe.
#![no_main]

use blockbloom::AtomicBitSet;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = AtomicBitSet::read_from(data) {
        assert!(s.iter().all(|i| i < s.universe()));
        let mut out = Vec::new();
        s.write_to(&mut out).expect("writing to a Vec cannot fail");
        assert_eq!(out, data, "accepted input does not round-trip");
    }
});
