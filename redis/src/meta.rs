//! The filter's parameters as stored in Redis (`{name}.meta`), and their checks.

use crate::{Error, Result, BLOCK_BYTES, MAX_SHARD_BYTES};

/// Version of the parameter hash's format.
pub(crate) const META_FORMAT: u32 = 1;

/// The filter's parameters, as stored in `{name}.meta`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Meta {
    pub(crate) seed: u128,
    pub(crate) blocks: u64,
    pub(crate) hashes: u32,
    pub(crate) capacity: u64,
    pub(crate) fpr: f64,
    pub(crate) shard_blocks: u64,
}

impl Meta {
    pub(crate) fn fields(&self) -> Vec<(String, String)> {
        vec![
            ("format".into(), META_FORMAT.to_string()),
            ("hash_id".into(), blockbloom::HASH_ALGORITHM_ID.to_string()),
            ("seed".into(), self.seed.to_string()),
            ("blocks".into(), self.blocks.to_string()),
            ("hashes".into(), self.hashes.to_string()),
            ("capacity".into(), self.capacity.to_string()),
            ("fpr".into(), self.fpr.to_string()),
            ("shard_blocks".into(), self.shard_blocks.to_string()),
        ]
    }

    pub(crate) fn parse(pairs: &[String]) -> Result<Meta> {
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
        if m.blocks == 0
            || m.shard_blocks == 0
            || m.shard_blocks > MAX_SHARD_BYTES / BLOCK_BYTES
            || m.hashes == 0
            || m.hashes > blockbloom::MAX_HASHES
            || m.capacity == 0
            || !(m.fpr > 0.0 && m.fpr < 1.0)
        {
            return Err(Error::BadMeta("a parameter is out of range".into()));
        }
        Ok(m)
    }
}
