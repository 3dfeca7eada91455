//! The filter's identity: its parameters as stored in Redis (`{name}.meta`) and in the
//! 64-byte header at the start of every shard, and their checks.
//!
//! The identity lives with the bits: every shard starts with a header holding the
//! parameters, the seed and the filter's *incarnation* (a random non-zero number chosen
//! when the filter is created, and again whenever state is found lost). So a parameter hash
//! that vanished (restart, eviction, `FLUSHALL`) is re-created from a shard's header — never
//! with a new seed — and a shard that vanished is noticed by the next call that touches it
//! (its header is gone), never silently re-created.

use xxhash_rust::xxh3::xxh3_64;

use crate::{Error, Result, LINE_BYTES, MAX_SHARD_BYTES};

/// Version of the parameter hash's and the shard header's format.
pub(crate) const META_FORMAT: u32 = 2;
/// Bytes of a shard's header; the shard's blocks follow it.
pub(crate) const SHARD_HEADER_BYTES: u64 = 64;
/// An expiring filter's shard: its header, the window (8 bytes, little-endian), the newest
/// epoch any call used (20 ASCII digits; zero bytes: none yet), then a ring of the last
/// [`RING`] epochs whose generation was created (20 digits each, at `epoch % RING`).
pub(crate) const CLOCK_BYTES: u64 = SHARD_HEADER_BYTES + 8 + 20 + RING * 20;
/// Slots in the ring of created generations: more than the epochs a call reads (at most
/// 4 + 2 × 4 + 1).
pub(crate) const RING: u64 = 16;
/// An expiring filter's shard in the planes layout (the module's expiring type): its
/// header, then a clock line of eight little-endian words (the window, the newest epoch
/// any call used, the last completed sweep's epoch plus one, the sweep in progress: its
/// epoch plus one and the next line it sweeps; 0 where none yet), then its lines, as the
/// local `ExpiringBloomFilter`'s (`blockbloom::planes_in_place`).
pub(crate) const PLANES_HEAD_BYTES: u64 = SHARD_HEADER_BYTES + LINE_BYTES;
/// The bit of the header's `hashes` field that marks an expiring filter in the planes
/// layout (with [`EXPIRES`]).
const PLANES: u32 = 1 << 30;
/// The bit of the header's `hashes` field that marks an expiring filter (readers that do
/// not know it refuse the header: `hashes` out of range).
const EXPIRES: u32 = 1 << 31;
/// Most shards a filter may have: every call that visits all shards (open, re-arming,
/// `to_local`) is bounded by it.
pub(crate) const MAX_SHARDS: u64 = 1 << 16;
/// Most blocks a filter may have (4 TiB of bits: far beyond any Redis deployment).
pub(crate) const MAX_BLOCKS: u64 = 1 << 36;

/// Bytes Redis' allocator (jemalloc, its default) gives a request of `n` bytes: its size
/// classes are 16 bytes apart up to 128, then four per doubling.
fn allocated(n: u64) -> u64 {
    if n <= 128 {
        return n.div_ceil(16) * 16;
    }
    let spacing = 1u64 << (63 - (n - 1).leading_zeros() - 2);
    n.div_ceil(spacing) * spacing
}

/// Bytes a Redis string of `len` bytes allocates: its sds header (3, 5, 9 or 17 bytes by
/// length), the bytes, and a terminating zero.
fn string_allocation(len: u64) -> u64 {
    let header = match len {
        0..256 => 3,
        256..65_536 => 5,
        65_536..0x1_0000_0000 => 9,
        _ => 17,
    };
    allocated(header + len + 1)
}

/// Lines per shard for a filter of `blocks` blocks whose shards (`head` bytes before the
/// lines included) take at most `max_bytes`: of the sizes that fill one of the allocator's size classes, and the
/// largest allowed, the largest whose shards take in all (each counted with about 100
/// bytes for its key) within 1% of the bits of the least such memory — so that Redis memory
/// stays close to the bits with as few shards (calls per batch) as that allows.
pub(crate) fn shard_blocks_for(blocks: u64, max_bytes: u64, head: u64) -> u64 {
    const PER_KEY: u64 = 100;
    let largest = (max_bytes / LINE_BYTES - head / LINE_BYTES).min(blocks);
    let cost = |per: u64| {
        let n = blocks.div_ceil(per);
        let last = blocks - (n - 1) * per;
        let len = |b: u64| head + b * LINE_BYTES;
        (n - 1) * string_allocation(len(per)) + string_allocation(len(last)) + n * PER_KEY
    };
    let top = string_allocation(head + largest * LINE_BYTES);
    let mut candidates = vec![(cost(largest), largest)];
    'classes: for p in 7..63u32 {
        for j in 1..=4u64 {
            let class = (1u64 << p) + j * (1u64 << (p - 2));
            if class > top {
                break 'classes;
            }
            // The most blocks whose string fits the class.
            let per = (class.saturating_sub(9 + 1 + head)) / LINE_BYTES;
            if per >= 1 && per <= largest && blocks.div_ceil(per) <= MAX_SHARDS {
                candidates.push((cost(per), per));
            }
        }
    }
    let least = candidates.iter().map(|c| c.0).min().expect("one at least");
    let within = least + blocks * LINE_BYTES / 100;
    candidates
        .into_iter()
        .filter(|c| c.0 <= within)
        .map(|c| c.1)
        .max()
        .expect("the least is within")
}

/// The key of the generation of epoch `x` of `shard` (`{name.i}.bits`).
pub(crate) fn generation_key(shard: &str, x: u64) -> String {
    format!("{}g.{x}", &shard[..shard.len() - 4])
}

/// The filter's parameters and seed: what every client must agree on.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Meta {
    pub(crate) seed: u128,
    pub(crate) blocks: u64,
    pub(crate) hashes: u32,
    pub(crate) capacity: u64,
    pub(crate) fpr: f64,
    pub(crate) shard_blocks: u64,
    /// An expiring filter's window in nanoseconds; 0 for a plain filter.
    pub(crate) window_ns: u64,
    /// An expiring filter in the planes layout, kept by the server module (else its
    /// generations, kept by the Functions).
    pub(crate) planes: bool,
}

/// A filter's identity and its current incarnation.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Stored {
    pub(crate) meta: Meta,
    pub(crate) incarnation: u64,
}

/// A fresh incarnation: random, non-zero (zero bytes are a missing header).
pub(crate) fn new_incarnation() -> u64 {
    (blockbloom::random_seed() as u64).max(1)
}

impl Meta {
    /// The identity's fields in a fixed order (the checksum covers exactly these).
    fn canonical(&self) -> String {
        format!(
            "format={META_FORMAT};hash_id={};seed={};blocks={};hashes={};capacity={};fpr={};shard_blocks={}",
            blockbloom::HASH_ALGORITHM_ID,
            self.seed,
            self.blocks,
            self.hashes,
            self.capacity,
            self.fpr.to_bits(),
            self.shard_blocks
        ) + &if self.window_ns == 0 {
            String::new()
        } else {
            format!(";window_ns={}", self.window_ns)
        } + if self.planes { ";layout=planes" } else { "" }
    }

    /// The parameter hash's fields for incarnation `inc`.
    pub(crate) fn fields(&self, inc: u64) -> Vec<(String, String)> {
        vec![
            ("format".into(), META_FORMAT.to_string()),
            ("hash_id".into(), blockbloom::HASH_ALGORITHM_ID.to_string()),
            ("seed".into(), self.seed.to_string()),
            ("blocks".into(), self.blocks.to_string()),
            ("hashes".into(), self.hashes.to_string()),
            ("capacity".into(), self.capacity.to_string()),
            ("fpr".into(), self.fpr.to_string()),
            ("shard_blocks".into(), self.shard_blocks.to_string()),
            (
                "checksum".into(),
                xxh3_64(self.canonical().as_bytes()).to_string(),
            ),
            ("incarnation".into(), inc.to_string()),
        ]
        .into_iter()
        .chain((self.window_ns != 0).then(|| ("window_ns".into(), self.window_ns.to_string())))
        .chain(self.planes.then(|| ("layout".into(), "planes".into())))
        .collect()
    }

    /// Whether `o` has the same parameters, ignoring the seed.
    pub(crate) fn same_shape(&self, o: &Meta) -> bool {
        (
            self.blocks,
            self.hashes,
            self.capacity,
            self.fpr.to_bits(),
            self.shard_blocks,
            self.window_ns,
            self.planes,
        ) == (
            o.blocks,
            o.hashes,
            o.capacity,
            o.fpr.to_bits(),
            o.shard_blocks,
            o.window_ns,
            o.planes,
        )
    }

    /// [`Error::Conflict`] naming the first parameter in which `stored` differs from ours.
    pub(crate) fn conflict(&self, stored: &Meta) -> Error {
        let fields = [
            (
                "expire_after",
                window_text(stored.window_ns),
                window_text(self.window_ns),
            ),
            (
                "capacity",
                stored.capacity.to_string(),
                self.capacity.to_string(),
            ),
            ("fpr", stored.fpr.to_string(), self.fpr.to_string()),
            ("blocks", stored.blocks.to_string(), self.blocks.to_string()),
            ("hashes", stored.hashes.to_string(), self.hashes.to_string()),
            (
                "shard_blocks",
                stored.shard_blocks.to_string(),
                self.shard_blocks.to_string(),
            ),
        ];
        let (field, stored, requested) = fields.into_iter().find(|f| f.1 != f.2).unwrap_or((
            "seed",
            "(secret)".into(),
            "another seed".into(),
        ));
        Error::Conflict {
            field,
            stored,
            requested,
        }
    }

    /// [`fields`](Self::fields) as the arguments of a Redis call: name, value, name, ….
    pub(crate) fn field_args(&self, inc: u64) -> Vec<Vec<u8>> {
        self.fields(inc)
            .into_iter()
            .flat_map(|(a, b)| [a.into_bytes(), b.into_bytes()])
            .collect()
    }

    /// Number of shards.
    pub(crate) fn shards(&self) -> u64 {
        self.blocks.div_ceil(self.shard_blocks)
    }

    /// Bytes of shard `i`: its header and its blocks (the last shard holds the rest).
    pub(crate) fn shard_len(&self, i: u64) -> u64 {
        let blocks = self.shard_blocks.min(self.blocks - i * self.shard_blocks);
        match (self.window_ns, self.planes) {
            (0, _) => SHARD_HEADER_BYTES + blocks * LINE_BYTES,
            (_, true) => PLANES_HEAD_BYTES + blocks * LINE_BYTES,
            (_, false) => CLOCK_BYTES,
        }
    }

    /// Checks every bound (so that no call is sized by a damaged value).
    fn check(self) -> Result<Meta> {
        let ok = self.blocks >= 1
            && self.blocks <= MAX_BLOCKS
            && self.shard_blocks >= 1
            && self.shard_blocks < MAX_SHARD_BYTES / LINE_BYTES
            && self.shard_blocks <= self.blocks
            && self.shards() <= MAX_SHARDS
            && self.hashes >= 1
            && self.hashes <= blockbloom::MAX_HASHES
            && self.capacity >= 1
            && self.fpr > 0.0
            && self.fpr < 1.0;
        if !ok {
            return Err(Error::BadMeta("a parameter is out of range".into()));
        }
        Ok(self)
    }

    /// Parses `HGETALL` pairs of the parameter hash, verifying its checksum.
    pub(crate) fn parse(pairs: &[String]) -> Result<Stored> {
        let get = |name: &str| -> Result<&str> {
            pairs
                .chunks_exact(2)
                .find(|p| p[0] == name)
                .map(|p| p[1].as_str())
                .ok_or_else(|| Error::BadMeta(format!("field {name} missing")))
        };
        fn num<T: std::str::FromStr>(name: &str, v: &str) -> Result<T> {
            v.parse()
                .map_err(|_| Error::BadMeta(format!("field {name} = {v:?} is not a number")))
        }
        let format: u32 = num("format", get("format")?)?;
        if format != META_FORMAT {
            return Err(Error::BadMeta(format!(
                "format {format}, this version reads {META_FORMAT}"
            )));
        }
        let hash_id: u32 = num("hash_id", get("hash_id")?)?;
        if hash_id != blockbloom::HASH_ALGORITHM_ID {
            return Err(Error::BadMeta(format!(
                "hash algorithm {hash_id}, this version implements {}",
                blockbloom::HASH_ALGORITHM_ID
            )));
        }
        let m = Meta {
            seed: num("seed", get("seed")?)?,
            blocks: num("blocks", get("blocks")?)?,
            hashes: num("hashes", get("hashes")?)?,
            capacity: num("capacity", get("capacity")?)?,
            fpr: num("fpr", get("fpr")?)?,
            shard_blocks: num("shard_blocks", get("shard_blocks")?)?,
            window_ns: match get("window_ns") {
                Ok(v) => num("window_ns", v)?,
                Err(_) => 0,
            },
            planes: match get("layout") {
                Ok("planes") => true,
                Ok(other) => return Err(Error::BadMeta(format!("layout {other:?}"))),
                Err(_) => false,
            },
        };
        let sum: u64 = num("checksum", get("checksum")?)?;
        if sum != xxh3_64(m.canonical().as_bytes()) {
            return Err(Error::BadMeta(
                "the checksum does not match the parameters (edited or damaged)".into(),
            ));
        }
        let incarnation = num("incarnation", get("incarnation")?)?;
        if incarnation == 0 {
            return Err(Error::BadMeta("incarnation 0".into()));
        }
        Ok(Stored {
            meta: m.check()?,
            incarnation,
        })
    }

    /// The 64-byte shard header for incarnation `inc`: incarnation (8 bytes, big-endian),
    /// seed (16), blocks (8), shard blocks (8), capacity (8), fpr bits (8), hashes (4),
    /// checksum of the rest (4, the low half of XXH3-64) — all little-endian but the first.
    pub(crate) fn header(&self, inc: u64) -> [u8; SHARD_HEADER_BYTES as usize] {
        let mut h = [0u8; SHARD_HEADER_BYTES as usize];
        h[0..8].copy_from_slice(&inc.to_be_bytes());
        h[8..24].copy_from_slice(&self.seed.to_le_bytes());
        h[24..32].copy_from_slice(&self.blocks.to_le_bytes());
        h[32..40].copy_from_slice(&self.shard_blocks.to_le_bytes());
        h[40..48].copy_from_slice(&self.capacity.to_le_bytes());
        h[48..56].copy_from_slice(&self.fpr.to_bits().to_le_bytes());
        let flag = match (self.window_ns, self.planes) {
            (0, _) => 0,
            (_, false) => EXPIRES,
            (_, true) => EXPIRES | PLANES,
        };
        h[56..60].copy_from_slice(&(self.hashes | flag).to_le_bytes());
        let sum = xxh3_64(&h[8..60]) as u32;
        h[60..64].copy_from_slice(&sum.to_le_bytes());
        h
    }

    /// What an expiring shard is armed with: its header, the window, and an empty clock.
    pub(crate) fn armed_shard(&self, inc: u64) -> Vec<u8> {
        let mut v = self.header(inc).to_vec();
        if self.window_ns != 0 {
            v.extend(self.window_ns.to_le_bytes());
            // A planes shard's clock and lines are left as they are: a shard re-armed
            // after another was lost keeps its keys and the epochs they were written in.
            if !self.planes {
                v.resize(CLOCK_BYTES as usize, 0);
            }
        }
        v
    }

    /// Parses a shard header: `None` for a missing one (all zero, or shorter: the shard is
    /// gone or was never armed); [`Error::BadMeta`] for a damaged one.
    pub(crate) fn from_header(h: &[u8]) -> Result<Option<Stored>> {
        if h.len() < SHARD_HEADER_BYTES as usize || h[0..8].iter().all(|&b| b == 0) {
            return Ok(None);
        }
        let u64_at = |a: usize| u64::from_le_bytes(h[a..a + 8].try_into().expect("8 bytes"));
        let sum = u32::from_le_bytes(h[60..64].try_into().expect("4 bytes"));
        let hashes = u32::from_le_bytes(h[56..60].try_into().expect("4 bytes"));
        if sum != xxh3_64(&h[8..60]) as u32 {
            return Err(Error::BadMeta(
                "a shard header's checksum does not match".into(),
            ));
        }
        let meta = Meta {
            seed: u128::from_le_bytes(h[8..24].try_into().expect("16 bytes")),
            blocks: u64_at(24),
            shard_blocks: u64_at(32),
            capacity: u64_at(40),
            fpr: f64::from_bits(u64_at(48)),
            hashes: hashes & !(EXPIRES | PLANES),
            window_ns: if hashes & EXPIRES != 0 {
                // An expiring shard: the window follows the header.
                match h.get(64..72) {
                    Some(w) => u64::from_le_bytes(w.try_into().expect("8 bytes")).max(1),
                    None => return Err(Error::BadMeta("an expiring shard is cut short".into())),
                }
            } else {
                0
            },
            planes: hashes & (EXPIRES | PLANES) == EXPIRES | PLANES,
        }
        .check()?;
        Ok(Some(Stored {
            meta,
            incarnation: u64::from_be_bytes(h[0..8].try_into().expect("8 bytes")),
        }))
    }
}

/// A window for a message: `"none"` for a plain filter.
fn window_text(ns: u64) -> String {
    match ns {
        0 => "none".into(),
        ns => format!("{:?}", std::time::Duration::from_nanos(ns)),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn shards_fill_the_allocator_s_size_classes() {
        use super::{shard_blocks_for, string_allocation, LINE_BYTES, SHARD_HEADER_BYTES};
        let memory = |blocks: u64, per: u64| -> u64 {
            let n = blocks.div_ceil(per);
            let len = |b: u64| SHARD_HEADER_BYTES + b * LINE_BYTES;
            (n - 1) * string_allocation(len(per)) + string_allocation(len(blocks - (n - 1) * per))
        };
        // The crawl stream's filter (776 blocks), 10^6 URLs at 1% (25,184), and sizes from
        // 40 KiB to 64 GiB: the shards' allocations within 3% of the bits (10% is the goal).
        let mut blocks = 640u64;
        for b in [776, 25_184].into_iter().chain(std::iter::from_fn(|| {
            blocks = blocks * 21 / 19 + 1;
            (blocks < 1 << 30).then_some(blocks)
        })) {
            let per = shard_blocks_for(b, crate::DEFAULT_SHARD_BYTES, SHARD_HEADER_BYTES);
            assert!(SHARD_HEADER_BYTES + per * LINE_BYTES <= crate::DEFAULT_SHARD_BYTES);
            let ratio = memory(b, per) as f64 / (b * LINE_BYTES) as f64;
            assert!(ratio <= 1.03, "{b} blocks, {per} per shard: {ratio:.4}");
        }
        // A large filter's shards fill 64 MiB exactly (not 64 MiB + a header: 80 MiB).
        let per = shard_blocks_for(1 << 24, crate::DEFAULT_SHARD_BYTES, SHARD_HEADER_BYTES);
        assert_eq!(
            string_allocation(SHARD_HEADER_BYTES + per * LINE_BYTES),
            64 << 20
        );
        // A named bound is kept.
        assert!(
            shard_blocks_for(1 << 20, 4096, SHARD_HEADER_BYTES) * LINE_BYTES + SHARD_HEADER_BYTES
                <= 4096
        );
    }

    use super::*;

    fn meta() -> Meta {
        Meta {
            seed: 7 << 100 | 5,
            blocks: 1000,
            hashes: 7,
            capacity: 40_000,
            fpr: 0.01,
            shard_blocks: 300,
            window_ns: 0,
            planes: false,
        }
    }

    #[test]
    fn an_expiring_filter_s_window_is_in_its_fields_and_its_shards() {
        let m = Meta {
            window_ns: 2_000_000_000,
            ..meta()
        };
        let pairs: Vec<String> = m.fields(9).into_iter().flat_map(|(a, b)| [a, b]).collect();
        assert_eq!(Meta::parse(&pairs).unwrap().meta, m);
        let shard = m.armed_shard(9);
        assert_eq!(shard.len() as u64, m.shard_len(0));
        assert_eq!(Meta::from_header(&shard).unwrap().unwrap().meta, m);
        // A plain filter's fields and checksum are as before; the two never read as one.
        assert!(!m.same_shape(&meta()) && !meta().fields(9).iter().any(|f| f.0 == "window_ns"));
        assert_eq!(
            Meta::from_header(&meta().header(9)).unwrap().unwrap().meta,
            meta()
        );
    }

    #[test]
    fn fields_and_headers_round_trip_and_refuse_edits() {
        let m = meta();
        let pairs: Vec<String> = m.fields(42).into_iter().flat_map(|(a, b)| [a, b]).collect();
        assert_eq!(
            Meta::parse(&pairs).unwrap(),
            Stored {
                meta: m.clone(),
                incarnation: 42
            }
        );
        // A valid-looking edited seed (or shard size) fails the checksum.
        for (field, value) in [
            ("seed", "12345"),
            ("shard_blocks", "1"),
            ("blocks", "1000000000000"),
        ] {
            let mut edited = pairs.clone();
            let i = edited.iter().position(|f| f == field).unwrap();
            edited[i + 1] = value.into();
            assert!(
                matches!(Meta::parse(&edited), Err(Error::BadMeta(_))),
                "{field}"
            );
        }
        let h = m.header(42);
        assert_eq!(
            Meta::from_header(&h).unwrap().unwrap(),
            Stored {
                meta: m,
                incarnation: 42
            }
        );
        assert!(Meta::from_header(&[0; 64]).unwrap().is_none());
        assert!(Meta::from_header(&[]).unwrap().is_none());
        let mut bad = h;
        bad[30] ^= 1;
        assert!(Meta::from_header(&bad).is_err());
    }

    #[test]
    fn absurd_sizes_are_refused_even_with_a_valid_checksum() {
        let mut m = meta();
        m.blocks = 1 << 40;
        m.shard_blocks = 1;
        let pairs: Vec<String> = m.fields(1).into_iter().flat_map(|(a, b)| [a, b]).collect();
        assert!(matches!(Meta::parse(&pairs), Err(Error::BadMeta(_))));
    }
}
