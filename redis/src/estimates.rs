//! What a shared filter's bits say: the keys it holds, its rate now and the new keys it has
//! taken for repeats so far, as the local filters' `estimated_*` say it from theirs.

use std::time::SystemTime;

use blockbloom::math::{false_positives_over_fill, fpr_of_fills, keys_from_ones};

use crate::expiring::GENERATION_LINE_BYTES;
use crate::meta::generation_key;
use crate::meta::SHARD_HEADER_BYTES;
use crate::{RedisBloomFilter, RedisExpiringBloomFilter, Result, LINE_BYTES};

/// Slots per line of an expiring filter's generation (one bit each).
const SLOTS_PER_LINE: u32 = GENERATION_LINE_BYTES as u32 * 8;

/// What a plain filter's count of 1 bits says, as the local filter says it from its own:
/// the same numbers from the client (a `BITCOUNT` per shard) and the module (`BB.INFO`).
///
/// ```
/// use blockbloom_redis::shard_format::Estimates;
/// let empty = Estimates::of(0, 1000, 7);
/// assert_eq!((empty.keys_in, empty.fpr, empty.false_positives), (0.0, 0.0, 0.0));
/// let some = Estimates::of(7000, 1000, 7);
/// assert!(some.keys_in > 990.0 && some.fpr > 0.0);
/// let full = Estimates::of(1000 * 512, 1000, 7); // every bit set: no count is bounded
/// assert_eq!((full.keys_in, full.fpr, full.false_positives), (f64::INFINITY, 1.0, f64::INFINITY));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Estimates {
    /// Keys inserted, estimated (not rounded).
    pub keys_in: f64,
    /// The false-positive rate now.
    pub fpr: f64,
    /// New keys answered "present" so far.
    pub false_positives: f64,
}

impl Estimates {
    /// The estimates of a filter of `lines` 512-bit lines and `hashes` bits per key whose
    /// bits hold `ones` ones (example at [`Estimates`]).
    pub fn of(ones: u64, lines: u64, hashes: u32) -> Estimates {
        let bits = lines * LINE_BYTES * 8;
        let keys_in = keys_from_ones(ones, bits, hashes, 512);
        let fpr = if keys_in <= 0.0 {
            0.0
        } else {
            blockbloom::math::blocked_fpr(bits as f64 / keys_in, hashes).min(1.0)
        };
        Estimates {
            keys_in,
            fpr,
            false_positives: false_positives_over_fill(keys_in, bits, hashes, 512),
        }
    }
}

impl RedisBloomFilter {
    /// The bits set, over every shard: one `BITCOUNT` of each shard's blocks (the server
    /// counts; nothing is copied).
    fn count_ones(&mut self) -> Result<u64> {
        let mut ones = 0;
        for s in 0..self.num_shards() {
            let key = self.shard_key(s);
            let n: u64 = self.with_key(&key, |c| {
                redis::cmd("BITCOUNT")
                    .arg(&key)
                    .arg(SHARD_HEADER_BYTES)
                    .arg(-1)
                    .query(c)
            })?;
            ones += n;
        }
        Ok(ones)
    }

    /// Estimated number of distinct keys in the filter, from its bits set (one `BITCOUNT`
    /// per shard), as [`BloomFilter::estimated_len`](blockbloom::BloomFilter::estimated_len).
    ///
    /// ```no_run
    /// use blockbloom_redis::RedisBloomFilter;
    /// let mut f = RedisBloomFilter::open_or_create("redis://127.0.0.1/", "crawl:seen", 1_000_000, 0.01)?;
    /// f.insert_if_absent_many(&["https://a.example/", "https://b.example/"])?;
    /// println!(
    ///     "{} keys, rate now {:.4}%, about {:.1} new keys taken for repeats so far",
    ///     f.estimated_len()?,
    ///     100.0 * f.estimated_fpr()?,
    ///     f.estimated_false_positives()?
    /// );
    /// # Ok::<(), blockbloom_redis::Error>(())
    /// ```
    ///
    /// # Errors
    /// Connection and protocol errors.
    pub fn estimated_len(&mut self) -> Result<u64> {
        Ok(self.keys_in()?.round() as u64)
    }

    fn keys_in(&mut self) -> Result<f64> {
        let ones = self.count_ones()?;
        Ok(Estimates::of(ones, self.meta.blocks, self.meta.hashes).keys_in)
    }

    /// The false-positive rate at the filter's current fill (the blocked formula at
    /// [`estimated_len`](Self::estimated_len) keys).
    ///
    /// Example at [`estimated_len`](Self::estimated_len).
    ///
    /// # Errors
    /// Connection and protocol errors.
    pub fn estimated_fpr(&mut self) -> Result<f64> {
        let ones = self.count_ones()?;
        Ok(Estimates::of(ones, self.meta.blocks, self.meta.hashes).fpr)
    }

    /// The expected number of new keys taken for repeats so far (pages not fetched), from
    /// the fill, as
    /// [`BloomFilter::estimated_false_positives`](blockbloom::BloomFilter::estimated_false_positives).
    ///
    /// Example at [`estimated_len`](Self::estimated_len).
    ///
    /// # Errors
    /// Connection and protocol errors.
    pub fn estimated_false_positives(&mut self) -> Result<f64> {
        let ones = self.count_ones()?;
        Ok(Estimates::of(ones, self.meta.blocks, self.meta.hashes).false_positives)
    }
}

impl RedisExpiringBloomFilter {
    /// Each line's count of live slots at `t`: the generations live then (the last four
    /// epochs, and any up to the tolerated lag ahead) read shard by shard and ORed.
    fn live_per_line(&mut self, t: SystemTime) -> Result<Vec<u32>> {
        let now = self.window.epoch_of(t);
        let oldest = now.saturating_sub(self.window.generations());
        let newest = now + self.window.tolerated_lag();
        let f = &mut self.inner;
        let mut fills = Vec::with_capacity(f.meta.blocks as usize);
        for s in 0..f.num_shards() {
            let shard = f.shard_key(s);
            let lines = f.shard_len(s) as usize;
            let mut live = vec![0u8; lines * GENERATION_LINE_BYTES as usize];
            for x in f.created_generations(s)? {
                if x < oldest || x > newest {
                    continue;
                }
                let key = generation_key(&shard, x);
                let bytes: Vec<u8> = f.with_key(&key, |c| {
                    redis::cmd("GETRANGE")
                        .arg(&key)
                        .arg(SHARD_HEADER_BYTES)
                        .arg(-1)
                        .query(c)
                })?;
                for (l, b) in live.iter_mut().zip(bytes) {
                    *l |= b;
                }
            }
            fills.extend(
                live.chunks(GENERATION_LINE_BYTES as usize)
                    .map(|line| line.iter().map(|b| b.count_ones()).sum::<u32>()),
            );
        }
        Ok(fills)
    }

    /// Estimated number of distinct keys with live stamps now (inserted in the last four to
    /// five epochs), from the live generations (every one is read: 16 bytes per line
    /// each), as
    /// [`ExpiringBloomFilter::estimated_len`](blockbloom::ExpiringBloomFilter::estimated_len).
    ///
    /// ```no_run
    /// use blockbloom_redis::RedisExpiringBloomFilter;
    /// use std::time::Duration;
    /// let day = Duration::from_secs(86_400);
    /// let mut f = RedisExpiringBloomFilter::open_or_create("redis://127.0.0.1/", "crawl:fetched", 1_000_000, 0.01, 30 * day)?;
    /// f.insert_if_absent_many(&["https://a.example/"])?;
    /// println!(
    ///     "{} keys in the window, rate now {:.4}%, about {:.1} new keys taken for repeats",
    ///     f.estimated_len()?,
    ///     100.0 * f.estimated_fpr()?,
    ///     f.estimated_false_positives()?
    /// );
    /// # Ok::<(), blockbloom_redis::Error>(())
    /// ```
    ///
    /// # Errors
    /// Connection and protocol errors.
    pub fn estimated_len(&mut self) -> Result<u64> {
        Ok(self.keys_in()?.round() as u64)
    }

    fn keys_in(&mut self) -> Result<f64> {
        if self.inner.meta.planes {
            let k = self.inner.meta.hashes;
            return Ok(self.census(SystemTime::now())?.len(k));
        }
        let fills = self.live_per_line(SystemTime::now())?;
        let ones = fills.iter().map(|&f| f as u64).sum();
        let slots = fills.len() as u64 * SLOTS_PER_LINE as u64;
        Ok(keys_from_ones(
            ones,
            slots,
            self.inner.meta.hashes,
            SLOTS_PER_LINE,
        ))
    }

    /// The false-positive rate now: the mean over lines of `(live slots / 128)^k`.
    ///
    /// Example at [`estimated_len`](Self::estimated_len).
    ///
    /// # Errors
    /// Connection and protocol errors.
    pub fn estimated_fpr(&mut self) -> Result<f64> {
        self.estimated_fpr_at(SystemTime::now())
    }

    /// The false-positive rate at `t`, as the local filter's
    /// [`estimated_fpr_at`](blockbloom::ExpiringBloomFilter::estimated_fpr_at).
    ///
    /// Example at [`estimated_len`](Self::estimated_len).
    ///
    /// # Errors
    /// Connection and protocol errors.
    pub fn estimated_fpr_at(&mut self, t: SystemTime) -> Result<f64> {
        if self.inner.meta.planes {
            return Ok(self.census(t)?.fpr());
        }
        let fills = self.live_per_line(t)?;
        Ok(fpr_of_fills(
            fills.into_iter(),
            SLOTS_PER_LINE,
            self.inner.meta.hashes,
        ))
    }

    /// The expected number of new keys taken for repeats while the keys remembered now were
    /// inserted, as
    /// [`ExpiringBloomFilter::estimated_false_positives`](blockbloom::ExpiringBloomFilter::estimated_false_positives).
    ///
    /// Example at [`estimated_len`](Self::estimated_len).
    ///
    /// # Errors
    /// Connection and protocol errors.
    pub fn estimated_false_positives(&mut self) -> Result<f64> {
        if self.inner.meta.planes {
            let k = self.inner.meta.hashes;
            return Ok(self.census(SystemTime::now())?.false_positives(k));
        }
        let n = self.keys_in()?;
        let slots = self.inner.meta.blocks * SLOTS_PER_LINE as u64;
        Ok(false_positives_over_fill(
            n,
            slots,
            self.inner.meta.hashes,
            SLOTS_PER_LINE,
        ))
    }
}
