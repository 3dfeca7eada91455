//! A key's 512-bit line mask built in vector registers on x86-64 — eight words, one bit per
//! position — instead of eight read-modify-writes of a stack array at run-time indices
//! (a store-to-load forwarding chain: half the cost of [`BloomFilter::probe`] on the AMD
//! machine here). Every other architecture, and loom, builds it word by word.
//!
//! The one `unsafe` outside `storage`: calling a `#[target_feature]` function — the AVX2
//! version once the CPU is checked to have AVX2, else the SSE2 one (every x86-64 CPU has
//! SSE2, but rustc asks for `unsafe` all the same).
//!
//! [`BloomFilter::probe`]: crate::BloomFilter::probe
#![allow(unsafe_code)] // one call, after the CPU is checked; SAFETY note below

/// The eight words of a 512-bit line with a bit set at each of `bits` (0..512): word
/// `p / 64`, bit `p % 64`.
#[inline(always)]
pub(crate) fn line_mask(bits: impl Iterator<Item = u32>) -> [u64; 8] {
    #[cfg(all(target_arch = "x86_64", not(blockbloom_loom)))]
    {
        // Detected once per process and cached (one load and a predicted branch per call);
        // a constant where the build enables AVX2 itself.
        if cfg!(target_feature = "avx2") || std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the one requirement of a `#[target_feature(enable = "avx2")]`
            // function is a CPU with AVX2, checked on the line above.
            return unsafe { x86::line_mask_avx2(bits) };
        }
        // SAFETY: SSE2 is in the x86-64 baseline: every x86-64 CPU has it, and the target
        // enables it (`cfg(target_feature = "sse2")`, asserted at compile time in `x86`).
        unsafe { x86::line_mask_sse2(bits) }
    }
    #[cfg(not(all(target_arch = "x86_64", not(blockbloom_loom))))]
    line_mask_scalar(bits)
}

/// [`line_mask`] word by word: the reference the vector versions are tested against.
#[cfg_attr(all(target_arch = "x86_64", not(blockbloom_loom)), allow(dead_code))]
#[inline(always)]
pub(crate) fn line_mask_scalar(bits: impl Iterator<Item = u32>) -> [u64; 8] {
    let mut mask = [0u64; 8];
    for bit in bits {
        mask[(bit >> 6) as usize] |= 1u64 << (bit & 63);
    }
    mask
}

#[cfg(all(target_arch = "x86_64", not(blockbloom_loom)))]
pub(crate) mod x86 {
    use core::arch::x86_64::*;

    const _: () = assert!(cfg!(target_feature = "sse2"), "x86-64 without SSE2");

    /// Two 256-bit registers hold the eight words. Each position is broadcast to the four
    /// lanes of each, minus the lane's first bit (0, 64, …, 448), and `1` is shifted left by
    /// that: `vpsllvq` gives 0 for a count of 64 or more (a negative difference reads as a
    /// huge unsigned count), so only the position's own word gets its bit. Three
    /// instructions per register per position, no memory.
    #[target_feature(enable = "avx2")]
    pub(crate) fn line_mask_avx2(bits: impl Iterator<Item = u32>) -> [u64; 8] {
        let one = _mm256_set1_epi64x(1);
        let lo_first = _mm256_setr_epi64x(0, 64, 128, 192);
        let hi_first = _mm256_setr_epi64x(256, 320, 384, 448);
        let (mut lo, mut hi) = (_mm256_setzero_si256(), _mm256_setzero_si256());
        for p in bits {
            let p = _mm256_set1_epi64x(i64::from(p));
            lo = _mm256_or_si256(lo, _mm256_sllv_epi64(one, _mm256_sub_epi64(p, lo_first)));
            hi = _mm256_or_si256(hi, _mm256_sllv_epi64(one, _mm256_sub_epi64(p, hi_first)));
        }
        [
            _mm256_extract_epi64::<0>(lo) as u64,
            _mm256_extract_epi64::<1>(lo) as u64,
            _mm256_extract_epi64::<2>(lo) as u64,
            _mm256_extract_epi64::<3>(lo) as u64,
            _mm256_extract_epi64::<0>(hi) as u64,
            _mm256_extract_epi64::<1>(hi) as u64,
            _mm256_extract_epi64::<2>(hi) as u64,
            _mm256_extract_epi64::<3>(hi) as u64,
        ]
    }

    /// SSE2 has no per-lane shift, so the position's bit (`1 << p % 64`) is broadcast and
    /// kept, by a 32-bit compare of the word index `p / 64` with each lane's, in its word
    /// only: four 128-bit registers of two words.
    #[target_feature(enable = "sse2")]
    #[inline]
    pub(crate) fn line_mask_sse2(bits: impl Iterator<Item = u32>) -> [u64; 8] {
        let words = [
            _mm_setr_epi32(0, 0, 1, 1),
            _mm_setr_epi32(2, 2, 3, 3),
            _mm_setr_epi32(4, 4, 5, 5),
            _mm_setr_epi32(6, 6, 7, 7),
        ];
        let mut acc = [_mm_setzero_si128(); 4];
        for p in bits {
            let bit = _mm_set1_epi64x((1u64 << (p & 63)) as i64);
            let word = _mm_set1_epi32((p >> 6) as i32);
            for (a, w) in acc.iter_mut().zip(words) {
                *a = _mm_or_si128(*a, _mm_and_si128(bit, _mm_cmpeq_epi32(word, w)));
            }
        }
        let mut out = [0u64; 8];
        for (pair, a) in out.chunks_exact_mut(2).zip(acc) {
            pair[0] = _mm_cvtsi128_si64(a) as u64;
            pair[1] = _mm_cvtsi128_si64(_mm_unpackhi_epi64(a, a)) as u64;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::{positions, KeyHasher, MAX_HASHES};

    /// Every version gives the word-by-word mask: all k in 1..=32, hashes of 20,000 keys,
    /// and the edge positions (0, 63, 64, 511, a position twice).
    #[test]
    fn vector_masks_equal_the_scalar_mask() {
        let h = KeyHasher::new(3);
        let mut cases: Vec<Vec<u32>> = vec![vec![0], vec![63, 64], vec![511, 448, 447], vec![5, 5]];
        for i in 0..20_000u64 {
            let k = 1 + (i % u64::from(MAX_HASHES)) as u32;
            cases.push(positions::<9>(h.hash(&i), k).collect());
        }
        for bits in &cases {
            let want = line_mask_scalar(bits.iter().copied());
            assert_eq!(line_mask(bits.iter().copied()), want, "{bits:?}");
            #[cfg(all(target_arch = "x86_64", not(blockbloom_loom)))]
            {
                // SAFETY: SSE2 is in the x86-64 baseline.
                let sse2 = unsafe { x86::line_mask_sse2(bits.iter().copied()) };
                assert_eq!(sse2, want, "{bits:?}");
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: the CPU has AVX2, checked on the line above.
                    let avx2 = unsafe { x86::line_mask_avx2(bits.iter().copied()) };
                    assert_eq!(avx2, want, "{bits:?}");
                }
            }
        }
    }
}
