//! Between Redis and a local [`BloomFilter`]: copying out, merging in, exporting.

use blockbloom::BloomFilter;

use crate::meta::{Meta, SHARD_HEADER_BYTES};
use crate::{Error, RedisBloomFilter, Result, LINE_BYTES};

impl RedisBloomFilter {
    /// Copies the filter into a local [`BloomFilter`] with the same parameters and seed, so
    /// that it answers exactly as this one did at the time of the copy (shard by shard, each
    /// read atomically).
    ///
    /// # Example
    /// Filters built by each node of a batch job, merged into the shared one, and a copy of
    /// it taken back for an offline run:
    /// ```no_run
    /// use blockbloom::BloomFilter;
    /// use blockbloom_redis::RedisBloomFilter;
    ///
    /// let node = BloomFilter::builder().capacity(1_000_000).fpr(0.01).seed(7).build()?;
    /// node.insert("https://a.example/");
    /// // A new shared filter with the node's parameters and seed, holding its keys.
    /// let mut shared = RedisBloomFilter::export("redis://127.0.0.1/", "crawl:seen", &node)?;
    /// println!("{} bytes in Redis", shared.memory_bytes()?);
    /// let other_node = BloomFilter::builder().capacity(1_000_000).fpr(0.01).seed(7).build()?;
    /// other_node.insert("https://b.example/");
    /// shared.union_from(&other_node)?;
    /// let copy = shared.to_local()?;
    /// assert!(copy.contains("https://a.example/") && copy.contains("https://b.example/"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// [`Error::StateLost`] if a shard was lost (evicted, deleted, a restart without
    /// persistence) or the filter was re-armed after a loss: the copy would miss that
    /// shard's keys. The filter is re-armed, as after any `StateLost`; copying again gives
    /// what it holds now. Connection and protocol errors as elsewhere.
    pub fn to_local(&mut self) -> Result<BloomFilter> {
        let local = self.local_twin()?;
        for s in 0..self.num_shards() {
            let key = self.shard_key(s);
            let mut bytes: Vec<u8> =
                self.with_key(&key, |c| redis::cmd("GET").arg(&key).query(c))?;
            // The shard's header, then its blocks. A header that is missing or not this
            // incarnation's: the shard's bits are not (all) the filter's.
            let ours = Meta::from_header(&bytes)?
                .is_some_and(|h| h.incarnation == self.incarnation && h.meta == self.meta);
            if !ours {
                return Err(self.recover(&key));
            }
            bytes.drain(..SHARD_HEADER_BYTES as usize);
            let first = (s * self.meta.shard_blocks) as usize;
            let len = self.shard_len(s) as usize * LINE_BYTES as usize;
            if bytes.len() > len {
                return Err(Error::Protocol(format!(
                    "shard {key} is {} bytes, more than its {len}",
                    bytes.len()
                )));
            }
            // A shard whose last bits were never set is shorter: the rest is zeros.
            let mut padded = bytes;
            padded.resize(len, 0);
            local.or_line_bytes(first, &padded)?;
        }
        Ok(local)
    }

    /// Lines in shard `s`.
    pub(crate) fn shard_len(&self, s: u64) -> u64 {
        (self.meta.blocks - s * self.meta.shard_blocks).min(self.meta.shard_blocks)
    }

    /// An empty local filter with this filter's parameters.
    fn local_twin(&self) -> Result<BloomFilter> {
        let f = BloomFilter::builder()
            .capacity(self.meta.capacity)
            .fpr(self.meta.fpr)
            .seed(self.meta.seed)
            .build()?;
        if f.num_lines() as u64 == self.meta.blocks && f.num_hashes() == self.meta.hashes {
            return Ok(f);
        }
        Ok(BloomFilter::builder()
            .capacity(self.meta.capacity)
            .bits(self.meta.blocks * 512)
            .num_hashes(self.meta.hashes)
            .seed(self.meta.seed)
            .build()?)
    }

    /// ORs a local filter with the same parameters and seed into this one (each shard one
    /// atomic `BITOP OR`): the union of node-local filters into the shared one.
    ///
    /// # Errors
    /// [`Error::Conflict`] if the local filter's blocks, block size, hashes or seed differ.
    ///
    /// Example at [`to_local`](Self::to_local).
    pub fn union_from(&mut self, local: &BloomFilter) -> Result<()> {
        for (field, a, b) in [
            // Redis filters have 512-bit blocks; a filter of smaller blocks with as many
            // lines would put its keys' bits elsewhere.
            ("block_bits", 512, local.block_bits() as u64),
            ("blocks", self.meta.blocks, local.num_lines() as u64),
            ("hashes", self.meta.hashes as u64, local.num_hashes() as u64),
        ] {
            if a != b {
                return Err(Error::Conflict {
                    field,
                    stored: a.to_string(),
                    requested: b.to_string(),
                });
            }
        }
        if local.seed() != self.meta.seed {
            return Err(Error::Conflict {
                field: "seed",
                stored: "(secret)".into(),
                requested: "another seed".into(),
            });
        }
        let mut bytes = Vec::new();
        for s in 0..self.num_shards() {
            // Zeros where the shard's header is: OR leaves the header as it is.
            bytes.clear();
            bytes.resize(SHARD_HEADER_BYTES as usize, 0);
            let first = (s * self.meta.shard_blocks) as usize;
            local.line_bytes(first, self.shard_len(s) as usize, &mut bytes)?;
            if bytes.iter().all(|&b| b == 0) {
                continue;
            }
            let key = self.shard_key(s);
            let tmp = format!("{{{}.{s}}}.union.{}", self.name, blockbloom::random_seed());
            let k2 = key.clone();
            let r = self.with_key(&k2, |c| {
                redis::pipe()
                    .cmd("SET")
                    .arg(&tmp)
                    .arg(&bytes[..])
                    .arg("PX")
                    .arg(600_000)
                    .ignore()
                    .cmd("BITOP")
                    .arg("OR")
                    .arg(&key)
                    .arg(&key)
                    .arg(&tmp)
                    .ignore()
                    .cmd("DEL")
                    .arg(&tmp)
                    .ignore()
                    .query::<()>(c)
            });
            r?;
        }
        Ok(())
    }

    /// Creates filter `name` in Redis from a local filter (its parameters and seed) and
    /// copies its bits, or ORs them into an existing filter with the same parameters.
    /// ([`RedisBuilder::export`](crate::RedisBuilder::export) takes the builder's options.)
    ///
    /// Example at [`to_local`](Self::to_local).
    pub fn export(url: &str, name: &str, local: &BloomFilter) -> Result<Self> {
        Self::builder(url, name).export(local)
    }

    /// Bytes the shards occupy in Redis (the sum of their string lengths; Redis adds a few
    /// dozen bytes per key).
    ///
    /// Example at [`to_local`](Self::to_local).
    pub fn memory_bytes(&mut self) -> Result<u64> {
        let mut total = 0;
        for s in 0..self.num_shards() {
            let key = self.shard_key(s);
            let n: u64 = self.with_key(&key, |c| redis::cmd("STRLEN").arg(&key).query(c))?;
            total += n;
        }
        Ok(total)
    }
}
