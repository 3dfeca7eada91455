//! The expiring filter's two steps (the default, as [`RedisBuilder::direct_bitfield`] for
//! the plain filter): read the shard's clock and its live generations' bits with plain
//! commands, answer from them what they settle, and send only the rest to the atomic
//! function.
//!
//! [`RedisBuilder::direct_bitfield`]: crate::RedisBuilder::direct_bitfield

use redis::Value;

use crate::meta::{RING, SHARD_HEADER_BYTES};
use crate::server::{Call, Op};
use crate::{Error, RedisExpiringBloomFilter, Result};

/// Where the newest epoch (20 ASCII digits) sits in an expiring shard's clock; the ring of
/// created epochs follows it.
const NEWEST_AT: usize = SHARD_HEADER_BYTES as usize + 8;

/// A clock field: 20 ASCII digits, or `None` if never written.
fn digits(field: &[u8]) -> Option<u64> {
    match field.first() {
        None | Some(0) => None,
        Some(_) => std::str::from_utf8(field).ok()?.parse().ok(),
    }
}

impl RedisExpiringBloomFilter {
    /// The answers of `op` (`XSet` or `XGet`) at epoch `own` for the keys of `calls` (one
    /// function call per shard, the keys' indices in `indices`), in two steps.
    ///
    /// First, one pipelined round trip of plain commands per node: per shard, its clock,
    /// then for each epoch a caller could read (`own − 4` to `own` + the tolerated lag) one
    /// `BITFIELD_RO` of that generation's header and of every slot of the batch's keys. A
    /// key whose every slot is set in a generation of our incarnation inside the caller's
    /// window (`w − 4 ..= newest`, `w` the core's epoch rule) is present: `contains` says
    /// so, and `insert_if_absent` answers `false` without writing. Those bits were set by
    /// inserts of this incarnation and are never cleared before they leave the window, so
    /// the answer is the one the function would have given when the read ran.
    ///
    /// Second, the keys not settled go to the atomic function, which checks again and sets:
    /// every `true` of an `insert_if_absent` comes from it, so one new key has at most one
    /// winner as with the function alone. A shard goes to the function whole when the read
    /// cannot answer as it would: the caller is the first of a new epoch there (the
    /// function moves the shard's newest epoch on), the newest epoch is beyond what was
    /// read, or its header or a generation its clock lists is not ours (the function then
    /// reports the loss, [`Error::StateLost`]).
    pub(crate) fn two_steps(
        &mut self,
        op: Op,
        own: u64,
        n: usize,
        indices: &[Vec<usize>],
        calls: &[Call],
    ) -> Result<Vec<bool>> {
        let k = self.inner.meta.hashes as usize;
        let lag = self.window.tolerated_lag();
        let (lo, hi) = (own.saturating_sub(4), own + lag);
        let reads: Vec<Call> = calls
            .iter()
            .map(|c| {
                let mut nums = vec![lo, hi];
                for key in c.nums[1..].chunks_exact(k + 1) {
                    let base = (SHARD_HEADER_BYTES + key[0] * 16) * 8;
                    nums.extend(key[1..].iter().map(|&s| base + s));
                }
                Call {
                    op: Op::XRead,
                    key: c.key.clone(),
                    head: Vec::new(),
                    nums,
                }
            })
            .collect();
        let replies = self.inner.run_calls(&reads)?;
        let inc = self.inner.incarnation;
        let mut out = vec![false; n];
        let (mut rest_idx, mut rest_calls) = (Vec::new(), Vec::new());
        for ((idx, call), reply) in indices.iter().zip(calls).zip(replies) {
            let present = self.settled(reply, idx.len(), k, own, (lo, hi), inc)?;
            let mut rest = (Vec::new(), vec![call.nums[0]]);
            for (j, &i) in idx.iter().enumerate() {
                match present.as_ref().map(|p| p[j]) {
                    Some(true) => out[i] = op == Op::XGet,
                    Some(false) if op == Op::XGet => out[i] = false,
                    _ => {
                        rest.0.push(i);
                        rest.1
                            .extend_from_slice(&call.nums[1 + j * (k + 1)..1 + (j + 1) * (k + 1)]);
                    }
                }
            }
            if !rest.0.is_empty() {
                rest_idx.push(rest.0);
                rest_calls.push(Call {
                    op: call.op,
                    key: call.key.clone(),
                    head: call.head.clone(),
                    nums: rest.1,
                });
            }
        }
        if !rest_calls.is_empty() {
            self.inner
                .call_and_answer(&rest_idx, &rest_calls, &mut out)?;
        }
        Ok(out)
    }

    /// Whether each of a shard's `keys` is present, from the reply of its `XRead` over
    /// generations `read.0..=read.1`; `None` if the read cannot answer as the function
    /// would (see [`two_steps`](Self::two_steps)).
    fn settled(
        &self,
        reply: Value,
        keys: usize,
        k: usize,
        own: u64,
        read: (u64, u64),
        inc: u64,
    ) -> Result<Option<Vec<bool>>> {
        let Value::Array(mut parts) = reply else {
            return Err(Error::Protocol(format!("read reply {reply:?}")));
        };
        if parts.len() as u64 != 2 + read.1 - read.0 {
            return Err(Error::Protocol(format!("{} read replies", parts.len())));
        }
        let gens = parts.split_off(1);
        let clock: Vec<u8> = redis::from_redis_value(&parts[0])?;
        let field = |at: usize| clock.get(at..at + 20).and_then(digits);
        if clock.get(..8) != Some(&inc.to_be_bytes()[..]) {
            return Ok(None);
        }
        let Some(newest) = field(NEWEST_AT) else {
            return Ok(None);
        };
        if newest < own || newest > read.1 {
            return Ok(None);
        }
        let w = own.max(newest - self.window.tolerated_lag());
        let mut live = vec![false; keys * k];
        for (x, g) in (read.0..=read.1).zip(gens) {
            let bits: Vec<i64> = redis::from_redis_value(&g)?;
            if bits.len() != 1 + keys * k {
                return Err(Error::Protocol(format!(
                    "{} bits for {keys} keys",
                    bits.len()
                )));
            }
            let ours = bits[0] == inc as i64;
            let listed = field(NEWEST_AT + 20 + (x % RING) as usize * 20) == Some(x);
            if x + 4 < w || x > newest {
                continue;
            }
            if listed && !ours {
                return Ok(None);
            }
            if ours {
                for (l, &b) in live.iter_mut().zip(&bits[1..]) {
                    *l |= b == 1;
                }
            }
        }
        Ok(Some(
            live.chunks_exact(k).map(|s| s.iter().all(|&b| b)).collect(),
        ))
    }
}
