//! A batch through the server module (`blockbloom-redis-module`), where every primary has
//! it: the keys' hashes (8 bytes each) grouped by shard, one `BB.SHARD.*` command per
//! shard, all pipelined in one round trip. The module sets or tests the bits in place, in
//! the same shards the Functions use, so handles on either path share one filter.

use std::hash::Hash;

use blockbloom::KeyHash;
use redis::Value;

use crate::server::{Call, Op};
use crate::shard_format::MODULE_PROTOCOL;
use crate::{Error, RedisBloomFilter, Result};

impl RedisBloomFilter {
    /// Whether every primary has the module, speaking this client's version of it.
    pub(crate) fn module_available(&mut self) -> Result<bool> {
        for node in self.net.primaries()? {
            let v = self
                .net
                .on_node(&node, |c| redis::cmd("BB.VERSION").query::<i64>(c));
            match v {
                Ok(MODULE_PROTOCOL) => {}
                Ok(_) => return Ok(false),
                Err(e)
                    if e.kind()
                        == redis::ErrorKind::Server(redis::ServerErrorKind::ResponseError) =>
                {
                    return Ok(false)
                }
                Err(e) if e.code() == Some("NOPERM") => return Ok(false),
                Err(e) => return Err(e.into()),
            }
        }
        Ok(true)
    }

    /// `insert_if_absent_many` (`Op::Set`) or `contains_many` (`Op::Get`) through the
    /// module. A server that lost the module (restarted without it) sends the handle back to
    /// the Functions for this call and the next.
    pub(crate) fn native_batch<K: Hash>(&mut self, op: Op, keys: &[K]) -> Result<Vec<bool>> {
        let native_op = if op == Op::Set {
            Op::NativeSet
        } else {
            Op::NativeGet
        };
        let inc = self.incarnation.to_be_bytes().to_vec();
        match self.module_batch(native_op, keys, vec![inc]) {
            // The module unloaded (its "unknown command" error quotes the binary arguments:
            // it may not even parse).
            Err(Error::Redis(_)) if matches!(self.module_available(), Ok(false)) => {
                self.native = false;
                self.batch(op, keys)
            }
            r => r,
        }
    }

    /// The answers of the module's command `op` for `keys`: their hashes grouped by shard,
    /// one command per shard (`head` its arguments after the shard key), pipelined; a shard
    /// found lost is [`Error::StateLost`] (the filter re-armed).
    pub(crate) fn module_batch<K: Hash>(
        &mut self,
        op: Op,
        keys: &[K],
        head: Vec<Vec<u8>>,
    ) -> Result<Vec<bool>> {
        let mut groups: Vec<(u64, Vec<usize>, Vec<u64>)> = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            let h: KeyHash = self.layout.key_hash(key);
            let shard = self.layout.probe_hash(h).line() as u64 / self.meta.shard_blocks;
            let g = match groups.iter_mut().position(|g| g.0 == shard) {
                Some(p) => &mut groups[p],
                None => {
                    groups.push((shard, Vec::new(), Vec::new()));
                    groups.last_mut().expect("just pushed")
                }
            };
            g.1.push(i);
            g.2.push(h.to_bits());
        }
        let calls: Vec<Call> = groups
            .iter()
            .map(|(shard, _, hashes)| Call {
                op,
                key: self.shard_key(*shard),
                head: head.clone(),
                nums: hashes.clone(),
            })
            .collect();
        let replies = self.run_calls(&calls)?;
        let mut out = vec![false; keys.len()];
        let mut lost = None;
        for ((_, idx, _), (call, reply)) in groups.iter().zip(calls.iter().zip(replies)) {
            match reply {
                Value::BulkString(b) if b.len() == idx.len() => {
                    for (&i, a) in idx.iter().zip(b) {
                        out[i] = a == 1;
                    }
                }
                Value::Array(items) if matches!(items.first(), Some(Value::Int(0))) => {
                    lost.get_or_insert(call.key.clone());
                }
                other => return Err(Error::Protocol(format!("module reply {other:?}"))),
            }
        }
        match lost {
            Some(shard) => Err(self.recover(&shard)),
            None => Ok(out),
        }
    }
}
