//! Golden values of the placement of keys and of the snapshot bytes, for every block size and
//! for the counting filter's counters: these are the on-disk and shared-filter formats. If
//! this test fails, existing snapshots, state files and Redis filters would answer wrongly:
//! do not update the numbers (see `hash.rs`'s golden vectors).

use blockbloom::{BloomFilter, CountingBloomFilter};
use xxhash_rust::xxh3::xxh3_64;

/// (block bits, line of "https://example.com/", its mask, xxh3 of the snapshot's lines: the
/// bytes between the header and the checksum, the same in every format version).
fn placements() -> Vec<(u32, usize, [u64; 8], u64)> {
    [512, 256, 128, 64]
        .into_iter()
        .map(|bits| {
            let f = BloomFilter::builder()
                .capacity(1000)
                .fpr(0.01)
                .block_bits(bits)
                .seed(0xB10C_B100_0123_4567_89AB_CDEF)
                .build()
                .unwrap();
            for i in 0..300 {
                f.insert(&format!("https://example.com/{i}"));
            }
            let p = f.probe("https://example.com/");
            let mut bytes = Vec::new();
            f.write_to(&mut bytes).unwrap();
            let header = 128; // format version 3 (docs/FILES.md)
            let lines = &bytes[header..bytes.len() - 8];
            (bits, p.line(), p.mask(), xxh3_64(lines))
        })
        .collect()
}

#[test]
fn placements_and_snapshot_bytes_are_unchanged() {
    let got = placements();
    assert_eq!(got, GOLDEN_PLACEMENTS, "{got:#x?}");
    let c = CountingBloomFilter::with_seed(1000, 0.01, 0xB10C).unwrap();
    assert_eq!(c.__counters("https://example.com/"), GOLDEN_COUNTERS);
}

/// Taken from the build before the one-path-per-key change (commit e048ee8); the lines'
/// hashes from the last build of format version 2 (the lines did not change with it).
const GOLDEN_PLACEMENTS: [(u32, usize, [u64; 8], u64); 4] = [
    (
        512,
        0xe,
        [
            0x2000000000000,
            0,
            0,
            0x20,
            0,
            0x100000000,
            0x100000040,
            0x8000000000000,
        ],
        0x3312b9e18b3e9fb8,
    ),
    (
        256,
        0xe,
        [
            0,
            0,
            0,
            0,
            0x1000000,
            0x400000000,
            0x1000000000000,
            0x200000000010008,
        ],
        0x7b9052d4ecf60a79,
    ),
    (
        128,
        0x10,
        [0, 0, 0x2000000001000, 0x1000010201000000, 0, 0, 0, 0],
        0x8d4e9ec4a12a40ff,
    ),
    (
        64,
        0x11,
        [0, 0, 0, 0, 0, 0, 0, 0x11100001000040],
        0x9f3491035f189536,
    ),
];

/// The line and the counters (low bit of each 4-bit counter, per word) of the same key in a
/// counting filter.
const GOLDEN_COUNTERS: (usize, [u64; 8]) = (
    0x15,
    [
        0,
        0x1000000,
        0x1,
        0x100000100000,
        0,
        0x10000000000000,
        0x1000000000000,
        0,
    ],
);
