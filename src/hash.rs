//! Keyed, portable hashing of keys to 64 bits, and of 64-bit hashes to block probes.
//!
//! # The algorithm (hash id [`HASH_ALGORITHM_ID`] = 1)
//!
//! A filter's 128-bit seed `(k0, k1)` (low, high halves) is expanded into a 192-byte XXH3
//! secret: word `i` (little-endian) is `fmix64(k0 + (i+1)·φ) ^ rotl(fmix64(k1 ^ (i+1)·ψ), 32)`.
//! A key is hashed by feeding its [`Hash`] implementation into a [`Hasher`] whose state `acc`
//! starts at `k1` and absorbs each call as
//!
//! * `write(bytes)`: `acc = rotl(acc, 29) ^ XXH3_64_with_secret(bytes)`
//! * `write_u8/16/32/64/usize(x)`: `acc = fmix64(rotl(acc, 29) ^ (x as u64))`
//!   (`u128`: low half, then high half) — except `write_u8(0xff)` directly after a
//!   `write(bytes)` (the terminator `str`'s `Hash` writes), which is `acc ^= 0x5354525F5445524D`:
//!   the state is then a fresh XXH3 output, and a constant XOR keeps it fully mixed
//!
//! and `finish()` returns `acc`. Integers are absorbed by value, never by their in-memory
//! bytes, so the result is the same on every endianness and pointer width; XXH3 has a fixed
//! specification, so it is the same with or without SIMD and on every `-C target-cpu`.
//! (`ahash`, by contrast, changes its output when AES instructions are enabled.)
//!
//! A `str` key thus costs one XXH3 pass over its bytes and an XOR, with no copying; `&str`, `String`, `Box<str>` and
//! `Cow<str>` of the same text give the same hash, and so do `[u8]` and `Vec<u8>`.
//!
//! # From hash to probe
//!
//! Line index: `(h · nlines) >> 64` (multiply-shift: any block count, no division).
//! Bit `i` of the key within its 512-bit block: the top 9 bits of `h · SALT[i]` for fixed odd
//! constants `SALT[i]`.

use core::hash::{Hash, Hasher};
use xxhash_rust::xxh3::xxh3_64_with_secret;

/// Identifies the hashing scheme above. Stored in snapshots and shared-filter metadata:
/// a filter's bits are only meaningful to code that hashes exactly the same way.
///
/// ```
/// use blockbloom::{BloomFilter, HASH_ALGORITHM_ID, MAX_HASHES};
/// let f = BloomFilter::builder().capacity(1000).num_hashes(MAX_HASHES).build()?;
/// let mut bytes = Vec::new();
/// f.write_to(&mut bytes)?;
/// // The snapshot header names the hashing scheme (a little-endian u32 at offset 12).
/// assert_eq!(bytes[12..16], HASH_ALGORITHM_ID.to_le_bytes());
/// assert!(BloomFilter::builder().capacity(1000).num_hashes(MAX_HASHES + 1).build().is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub const HASH_ALGORITHM_ID: u32 = 1;

const SECRET_BYTES: usize = 192;
const STR_TERMINATOR: u64 = 0x5354_525F_5445_524D; // "STR_TERM"
pub(crate) const PHI: u64 = 0x9E37_79B9_7F4A_7C15;
const PSI: u64 = 0xD1B5_4A32_D192_ED03;

/// MurmurHash3's 64-bit finaliser: a bijection with full avalanche.
#[inline(always)]
pub(crate) const fn fmix64(mut z: u64) -> u64 {
    z ^= z >> 33;
    z = z.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    z ^= z >> 33;
    z = z.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    z ^ (z >> 33)
}

/// A key's keyed hash in a filter, from [`BloomFilter::key_hash`](crate::BloomFilter::key_hash): valid in every filter
/// with the same seed. Example at [`HashedFilter`](crate::HashedFilter).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KeyHash(pub(crate) u64);

impl KeyHash {
    /// The hash as a number, to send elsewhere (the Redis module takes a batch's hashes
    /// from its client, 8 bytes each) and turn back with [`from_bits`](Self::from_bits).
    ///
    /// ```
    /// use blockbloom::{BloomFilter, KeyHash};
    /// let f = BloomFilter::with_capacity(1000, 0.01)?;
    /// let h = f.key_hash("https://example.com/");
    /// assert_eq!(KeyHash::from_bits(h.to_bits()), h);
    /// # Ok::<(), blockbloom::Error>(())
    /// ```
    pub fn to_bits(self) -> u64 {
        self.0
    }

    /// The hash whose [`to_bits`](Self::to_bits) is `bits` (example there).
    pub fn from_bits(bits: u64) -> KeyHash {
        KeyHash(bits)
    }
}

/// The per-filter hashing key: the expanded secret and the state's starting value.
#[derive(Clone)]
pub(crate) struct KeyHasher {
    secret: [u8; SECRET_BYTES],
    init: u64,
}

impl KeyHasher {
    pub(crate) fn new(seed: u128) -> Self {
        let k0 = seed as u64;
        let k1 = (seed >> 64) as u64;
        let mut secret = [0u8; SECRET_BYTES];
        for (i, chunk) in secret.chunks_exact_mut(8).enumerate() {
            let n = i as u64 + 1;
            let w = fmix64(k0.wrapping_add(n.wrapping_mul(PHI)))
                ^ fmix64(k1 ^ n.wrapping_mul(PSI)).rotate_left(32);
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        KeyHasher { secret, init: k1 }
    }

    /// The 64-bit hash of `key`.
    #[inline]
    pub(crate) fn hash<K: Hash + ?Sized>(&self, key: &K) -> u64 {
        let mut state = State {
            secret: &self.secret,
            acc: self.init,
            after_bytes: false,
        };
        key.hash(&mut state);
        state.acc
    }
}

struct State<'a> {
    secret: &'a [u8; SECRET_BYTES],
    acc: u64,
    /// The last call was `write(bytes)`: `acc` is a fresh XXH3 output, fully mixed.
    after_bytes: bool,
}

impl State<'_> {
    #[inline(always)]
    fn absorb(&mut self, x: u64) {
        self.acc = fmix64(self.acc.rotate_left(29) ^ x);
        self.after_bytes = false;
    }
}

impl Hasher for State<'_> {
    #[inline]
    fn finish(&self) -> u64 {
        self.acc
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        // XXH3's output is already a keyed, fully mixed hash: fold it in without another mix.
        self.acc = self.acc.rotate_left(29) ^ xxh3_64_with_secret(bytes, self.secret);
        self.after_bytes = true;
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        if i == 0xff && self.after_bytes {
            // `str`'s terminator right after its bytes: the state is a fresh XXH3 output, so
            // a constant XOR (a bijection) keeps it fully mixed and saves a dependent fmix64
            // on the hottest path (URL keys).
            self.acc ^= STR_TERMINATOR;
            self.after_bytes = false;
        } else {
            self.absorb(i as u64);
        }
    }
    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.absorb(i as u64);
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.absorb(i as u64);
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.absorb(i);
    }
    #[inline]
    fn write_u128(&mut self, i: u128) {
        self.absorb(i as u64);
        self.absorb((i >> 64) as u64);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.absorb(i as u64);
    }
}

/// 128 random bits for a new filter's hashing key: std's per-process random hashing keys
/// (seeded by the OS) mixed with a process-wide counter, so that filters built in a row get
/// different seeds. Used by every filter type and by `blockbloom-redis`.
///
/// ```
/// use blockbloom::{random_seed, BloomFilter};
/// let seed = random_seed(); // chosen once, e.g. stored with the crawl's config
/// assert_ne!(seed, random_seed());
/// let a = BloomFilter::builder().capacity(1000).seed(seed).build()?;
/// let b = BloomFilter::builder().capacity(1000).seed(seed).build()?;
/// a.insert("x");
/// b.union(&a)?; // same seed: the same bits for the same key
/// assert!(b.contains("x"));
/// # Ok::<(), blockbloom::Error>(())
/// ```
pub fn random_seed() -> u128 {
    use crate::sync::unmodeled::{next, AtomicU64};
    use std::collections::hash_map::RandomState;
    use std::hash::BuildHasher;
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = next(&COUNTER);
    let state = RandomState::new();
    let lo = state.hash_one((n, 0u8));
    let hi = state.hash_one((n, 1u8));
    (hi as u128) << 64 | lo as u128
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Golden vectors: these values are part of the on-disk and shared-filter format. If this
    /// test fails, the hash changed and every existing snapshot would give false negatives:
    /// do not update the numbers, bump HASH_ALGORITHM_ID and keep the old scheme loadable.
    #[test]
    fn golden_vectors() {
        let h0 = KeyHasher::new(0);
        let h1 = KeyHasher::new(0x0123_4567_89AB_CDEF_FEDC_BA98_7654_3210);
        let got = [
            h0.hash("https://example.com/"),
            h0.hash(""),
            h0.hash(&b"\x00\xff binary"[..]),
            h0.hash(&42u64),
            h1.hash("https://example.com/"),
            h1.hash(&"x".repeat(1000)),
            h1.hash(&(7u32, "tuple", -3i64)),
        ];
        let expected: [u64; 7] = GOLDEN;
        assert_eq!(got, expected, "hash output changed: {got:#018x?}");
    }

    const GOLDEN: [u64; 7] = [
        0x4911_cee1_e570_6bef,
        0xf006_efee_b26a_872c,
        0x79d6_3139_e7b5_25fa,
        0x8108_7960_8e42_59cc,
        0x9d0c_306c_e513_a18c,
        0x39cd_f3d1_426b_b57f,
        0x078f_c4f0_6214_156d,
    ];

    #[test]
    fn equal_text_equal_hash_across_types() {
        let h = KeyHasher::new(99);
        let s = "https://docs.python.org/3/library/index.html";
        assert_eq!(h.hash(s), h.hash(&s.to_string()));
        assert_eq!(h.hash(s), h.hash(&Box::<str>::from(s)));
        assert_eq!(h.hash(s), h.hash(&std::borrow::Cow::Borrowed(s)));
        assert_eq!(h.hash(s.as_bytes()), h.hash(&s.as_bytes().to_vec()));
    }

    #[test]
    fn seed_changes_everything() {
        let a = KeyHasher::new(1);
        let b = KeyHasher::new(1 << 64); // differs only in the high half
        let c = KeyHasher::new(2);
        for key in ["a", "b", "https://example.com/"] {
            assert_ne!(a.hash(key), b.hash(key));
            assert_ne!(a.hash(key), c.hash(key));
        }
        assert_ne!(a.hash(&1u64), b.hash(&1u64));
    }
}

/// Bytes as a key, hashed exactly like a `str` with the same bytes (the bytes, then the
/// `0xff` terminator that `str`'s `Hash` writes), whether or not they are UTF-8: a line read
/// as bytes and the same text as a `&str` are one key. The command line's lines and
/// Python's `bytes` keys are this, so a state written by `blockbloom dedup` answers
/// `contains("line")` here.
///
/// ```
/// use blockbloom::{BloomFilter, StrBytes};
/// let f = BloomFilter::with_capacity(100, 0.01)?;
/// f.insert(&StrBytes(b"https://example.com/"));
/// assert!(f.contains("https://example.com/"));
/// assert!(f.contains(&StrBytes("https://example.com/".as_bytes())));
/// # Ok::<(), blockbloom::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StrBytes<'a>(pub &'a [u8]);

impl core::hash::Hash for StrBytes<'_> {
    #[inline]
    fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
        state.write(self.0);
        state.write_u8(0xff);
    }
}
