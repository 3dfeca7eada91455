//! [`RedisExpiringBloomFilter`] as the server module's expiring type: the local
//! `ExpiringBloomFilter`'s planes in each shard, line for line, set and tested in place by
//! `BB.SHARD.X*` (`blockbloom-redis-module`). Created so wherever every primary has the
//! module (and [`RedisBuilder::use_module`] is on); elsewhere an expiring filter keeps
//! generations through the Functions (`expiring.rs`).

use std::hash::Hash;
use std::time::{Duration, SystemTime};

use blockbloom::planes_in_place::PlanesCensus;
use blockbloom::Layout;
use redis::Value;

use crate::meta::Meta;
use crate::server::{Call, Op};
use crate::{Error, RedisBloomFilter, RedisBuilder, RedisExpiringBloomFilter, Result};

impl RedisBuilder {
    /// [`expiring_lines`] for this builder's filter.
    pub(crate) fn expiring_lines(&self, capacity: u64, w: Duration) -> Result<(u64, u32)> {
        crate::expiring_sizing::expiring_lines(self.planes, capacity, self.fpr, self.arrival, w)
    }

    /// This builder as the server `f` is connected to takes it: an expiring filter is
    /// created in the planes layout where every primary has the module (and the module is
    /// wanted), else in generations.
    pub(crate) fn for_server(&self, f: &mut RedisBloomFilter) -> Result<RedisBuilder> {
        let mut b = self.clone();
        b.planes = self.expiring && self.module && f.module_available()?;
        Ok(b)
    }
}

impl RedisBloomFilter {
    /// Takes `meta` as the identity this handle proposes (before it is stored).
    pub(crate) fn propose(&mut self, meta: Meta) -> Result<()> {
        self.layout = Layout::new(meta.seed, meta.blocks, meta.hashes)?;
        self.meta = meta;
        Ok(())
    }
}

/// Nanoseconds from 1970 to `t` (0 before it).
fn nanos(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos().min(u128::from(u64::MAX)) as u64)
}

impl RedisExpiringBloomFilter {
    /// The module's answers of `op` (`XSet`, `XIns` or `XGet`) for `keys` at `t`: one
    /// `BB.SHARD.X*` per shard the batch touches, pipelined.
    pub(crate) fn planes_batch<K: Hash>(
        &mut self,
        op: Op,
        keys: &[K],
        t: SystemTime,
    ) -> Result<Vec<bool>> {
        let op = match op {
            Op::XSet => Op::PlanesSet,
            Op::XIns => Op::PlanesIns,
            _ => Op::PlanesGet,
        };
        let f = &mut self.inner;
        let head = vec![
            f.incarnation.to_be_bytes().to_vec(),
            nanos(t).to_string().into_bytes(),
        ];
        f.module_batch(op, keys, head)
            .map_err(|e| module_missing(f, e))
    }

    /// The census of every shard as the calls at `t` read it (`BB.SHARD.XCENSUS`).
    pub(crate) fn census(&mut self, t: SystemTime) -> Result<PlanesCensus> {
        let f = &mut self.inner;
        let head = vec![
            f.incarnation.to_be_bytes().to_vec(),
            nanos(t).to_string().into_bytes(),
        ];
        let calls: Vec<Call> = (0..f.num_shards())
            .map(|s| Call {
                op: Op::PlanesCensus,
                key: f.shard_key(s),
                head: head.clone(),
                nums: Vec::new(),
            })
            .collect();
        let replies = match f.run_calls(&calls) {
            Ok(r) => r,
            Err(e) => return Err(module_missing(f, e)),
        };
        let mut total = PlanesCensus::default();
        for (call, reply) in calls.iter().zip(replies) {
            let Value::Array(items) = reply else {
                return Err(Error::Protocol(format!("census reply {reply:?}")));
            };
            if matches!(items.first(), Some(Value::Int(0))) {
                return Err(f.recover(&call.key));
            }
            let census: (i64, u64, f64, u64, u64, u64, u64) =
                redis::from_redis_value_ref(&Value::Array(items))?;
            total.add(&PlanesCensus {
                lines: census.1,
                fpr_sum: census.2,
                ones: [census.3, census.4, census.5, census.6],
            });
        }
        Ok(total)
    }
}

/// `e`, or [`Error::ModuleMissing`] where a primary does not have the module now (its
/// "unknown command" error quotes the binary arguments: it may not even parse).
fn module_missing(f: &mut RedisBloomFilter, e: Error) -> Error {
    match e {
        Error::Redis(_) if matches!(f.module_available(), Ok(false)) => {
            Error::ModuleMissing(f.name.clone())
        }
        e => e,
    }
}
