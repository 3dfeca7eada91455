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

use crate::{Error, Result, BLOCK_BYTES, MAX_SHARD_BYTES};

/// Version of the parameter hash's and the shard header's format.
pub(crate) const META_FORMAT: u32 = 2;
/// Bytes of a shard's header; the shard's blocks follow it.
pub(crate) const SHARD_HEADER_BYTES: u64 = 64;
/// Most shards a filter may have: every call that visits all shards (open, re-arming,
/// `to_local`) is bounded by it.
pub(crate) const MAX_SHARDS: u64 = 1 << 16;
/// Most blocks a filter may have (4 TiB of bits: far beyond any Redis deployment).
pub(crate) const MAX_BLOCKS: u64 = 1 << 36;

/// The filter's parameters and seed: what every client must agree on.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Meta {
    pub(crate) seed: u128,
    pub(crate) blocks: u64,
    pub(crate) hashes: u32,
    pub(crate) capacity: u64,
    pub(crate) fpr: f64,
    pub(crate) shard_blocks: u64,
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
        )
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
    }

    /// Whether `o` has the same parameters, ignoring the seed.
    pub(crate) fn same_shape(&self, o: &Meta) -> bool {
        (
            self.blocks,
            self.hashes,
            self.capacity,
            self.fpr.to_bits(),
            self.shard_blocks,
        ) == (
            o.blocks,
            o.hashes,
            o.capacity,
            o.fpr.to_bits(),
            o.shard_blocks,
        )
    }

    /// [`Error::Conflict`] naming the first parameter in which `stored` differs from ours.
    pub(crate) fn conflict(&self, stored: &Meta) -> Error {
        let fields = [
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

    /// Checks every bound (so that no call is sized by a damaged value).
    fn check(self) -> Result<Meta> {
        let ok = self.blocks >= 1
            && self.blocks <= MAX_BLOCKS
            && self.shard_blocks >= 1
            && self.shard_blocks < MAX_SHARD_BYTES / BLOCK_BYTES
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
        h[56..60].copy_from_slice(&self.hashes.to_le_bytes());
        let sum = xxh3_64(&h[8..60]) as u32;
        h[60..64].copy_from_slice(&sum.to_le_bytes());
        h
    }

    /// Parses a shard header: `None` for a missing one (all zero, or shorter: the shard is
    /// gone or was never armed); [`Error::BadMeta`] for a damaged one.
    pub(crate) fn from_header(h: &[u8]) -> Result<Option<Stored>> {
        if h.len() < SHARD_HEADER_BYTES as usize || h[0..8].iter().all(|&b| b == 0) {
            return Ok(None);
        }
        let u64_at = |a: usize| u64::from_le_bytes(h[a..a + 8].try_into().expect("8 bytes"));
        let sum = u32::from_le_bytes(h[60..64].try_into().expect("4 bytes"));
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
            hashes: u32::from_le_bytes(h[56..60].try_into().expect("4 bytes")),
        }
        .check()?;
        Ok(Some(Stored {
            meta,
            incarnation: u64::from_be_bytes(h[0..8].try_into().expect("8 bytes")),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> Meta {
        Meta {
            seed: 7 << 100 | 5,
            blocks: 1000,
            hashes: 7,
            capacity: 40_000,
            fpr: 0.01,
            shard_blocks: 300,
        }
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
