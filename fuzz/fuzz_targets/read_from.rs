//! Fuzzes the snapshot reader: any input must give `Ok` or a clean `Err`, never a panic,
//! an abort or a huge allocation that is actually touched; and anything accepted must
//! re-serialise to the same bytes (so it was a well-formed snapshot, not a misread).
#![no_main]

use blockbloom::BloomFilter;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(f) = BloomFilter::read_from(data) {
        let mut out = Vec::new();
        f.write_to(&mut out).expect("writing to a Vec cannot fail");
        assert_eq!(out, data, "accepted input does not round-trip");
    }
});
