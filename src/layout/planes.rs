//! Where an expiring key's bits lie in a plane of its line (`expiring/planes.rs` has the
//! planes): part of `layout.rs`, the only place that places.

use super::SALTS;

/// The bits of an expiring filter's plane: two words of 60 data bits (a word's top 4 bits
/// hold its label), four planes to a line.
pub(crate) const PLANE_BITS: u32 = crate::math::planes::PLANE_BITS;

/// A key's `k` bits in a 120-bit plane, as the masks of the plane's two words (bits 0..60
/// of each): `⌈k/2⌉` positions in one word and `⌊k/2⌋` in the other, the word with more
/// chosen by the hash's low bit. Position `i` is the 16-bit chunk `i mod 4` (from the top)
/// of `h · SALT[i / 4]`, scaled to 0..60: a fixed word per position costs no selection
/// (a position's word drawn at random took seven more instructions each), and a chunk of
/// a product serves four positions. The rate of the split is `math::planes`' model.
#[inline(always)]
pub(crate) fn plane_mask(h: u64, k: u32) -> [u64; 2] {
    // The 1% filters' 7 positions unrolled (a loop of a count known only at run time costs
    // about 4 instructions a position); the branch goes the same way for every key of a
    // filter.
    if k == 7 {
        return plane_mask_of::<7>(h);
    }
    plane_mask_with(h, k)
}

/// [`plane_mask`] for `K` positions known at compile time.
#[inline(always)]
fn plane_mask_of<const K: usize>(h: u64) -> [u64; 2] {
    plane_mask_with(h, K as u32)
}

/// [`plane_mask`]'s positions: the first `⌈k/2⌉` in the first word, the rest in the second,
/// the two swapped if the hash's low bit is set.
#[inline(always)]
fn plane_mask_with(h: u64, k: u32) -> [u64; 2] {
    let heavy = k.div_ceil(2);
    let mut m = [0u64; 2];
    for i in 0..k {
        let product = h.wrapping_mul(SALTS[(i / 4) as usize]);
        let bit = plane_bit(product >> (48 - 16 * (i % 4)));
        // The word by the position's index, not by indexing `m` with a computed word
        // (which would put `m` in memory: each OR waiting for the last one's store).
        if i < heavy {
            m[0] |= 1 << bit;
        } else {
            m[1] |= 1 << bit;
        }
    }
    let swap = (h & 1).wrapping_neg() & (m[0] ^ m[1]);
    [m[0] ^ swap, m[1] ^ swap]
}

/// The bit of a plane's word that a position's chunk (the low 16 bits of `chunk`) scales
/// to: `chunk · 60 >> 16`, in 0..60.
#[inline(always)]
fn plane_bit(chunk: u64) -> u32 {
    (((chunk & 0xFFFF) * u64::from(PLANE_BITS / 2)) >> 16) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::MAX_HASHES;
    use crate::hash::KeyHasher;

    /// A chunk scales to every bit of a word, in order, each from 1,092 or 1,093 chunks.
    #[test]
    fn plane_bits_scale_a_chunk_evenly_over_a_word() {
        let mut counts = [0u32; 60];
        for c in 0..1u64 << 16 {
            counts[plane_bit(c) as usize] += 1;
            assert!(c == 0 || plane_bit(c) >= plane_bit(c - 1));
        }
        assert!(counts.iter().all(|&c| c == 1092 || c == 1093), "{counts:?}");
        // Only the low 16 bits count.
        assert_eq!(plane_bit(0xABCD_0000_FFFF), plane_bit(0xFFFF));
    }

    /// A key's positions split `⌈k/2⌉` and `⌊k/2⌋` between the words (fewer where two
    /// fall on one bit), the heavier word the first for about half the keys.
    #[test]
    fn plane_masks_split_the_positions_between_the_words() {
        let hasher = KeyHasher::new(9);
        for k in [1, 2, 7, 8, MAX_HASHES] {
            let mut first_heavy = 0;
            for i in 0..10_000u64 {
                let h = hasher.hash(&i);
                let m = plane_mask(h, k);
                let ones = m.map(u64::count_ones);
                let heavy = usize::from(h & 1 == 1);
                assert!(
                    ones[heavy] >= 1 && ones[heavy] <= k.div_ceil(2),
                    "{k} {m:x?}"
                );
                assert!(ones[1 - heavy] <= k / 2, "{k} {m:x?}");
                assert!((k == 1) == (m[1 - heavy] == 0), "{k} {m:x?}");
                assert!(m.iter().all(|w| w >> (PLANE_BITS / 2) == 0));
                first_heavy += 1 - heavy;
            }
            assert!((4_800..5_200).contains(&first_heavy), "{k}: {first_heavy}");
        }
    }

    #[test]
    fn plane_masks_are_golden_and_uniform() {
        let h =
            KeyHasher::new(0x0123_4567_89AB_CDEF_FEDC_BA98_7654_3210).hash("https://example.com/");
        let golden = plane_mask(h, 7);
        assert_eq!(golden, [0x0810_0000_0000_0100, 0x0800_0040_8000]);
        assert!(golden.iter().all(|w| w >> (PLANE_BITS / 2) == 0));
        let hasher = KeyHasher::new(5);
        let mut counts = [0u32; PLANE_BITS as usize];
        for i in 0..120_000u64 {
            let m = plane_mask(hasher.hash(&i), 1);
            let p = if m[0] != 0 {
                m[0].trailing_zeros()
            } else {
                60 + m[1].trailing_zeros()
            };
            counts[p as usize] += 1;
        }
        assert!(
            counts.iter().all(|&c| (850..1150).contains(&c)),
            "{counts:?}"
        );
        // Every bit of both words as often as the others under all seven positions (each
        // bit set by about 7/120 of the keys, less the collisions within a word).
        let mut counts = [0u32; PLANE_BITS as usize];
        for i in 0..120_000u64 {
            let m = plane_mask(hasher.hash(&i), 7);
            for (p, c) in counts.iter_mut().enumerate() {
                *c += u32::from(m[p / 60] >> (p % 60) & 1 == 1);
            }
        }
        assert!(
            counts.iter().all(|&c| (6_400..7_200).contains(&c)),
            "{counts:?}"
        );
    }
}
