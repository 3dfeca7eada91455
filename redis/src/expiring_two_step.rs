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

/// Whether slot `s` of a line read as two `i64` (Redis numbers bits from the most
/// significant) is set.
fn slot_set(line: (i64, i64), s: u64) -> bool {
    let word = if s < 64 { line.0 } else { line.1 } as u64;
    word >> (63 - s % 64) & 1 == 1
}

impl RedisExpiringBloomFilter {
    /// The answers of `op` (`XSet` or `XGet`) at epoch `own` for the keys of `calls` (one
    /// function call per shard, the keys' indices in `indices`), in two steps.
    ///
    /// First, one pipelined round trip of plain commands per node: per shard, its clock,
    /// then one `BITFIELD_RO` per generation it had created when last read (within `own − 4`
    /// to `own` + the tolerated lag), reading its header and every key's line. A key whose
    /// every slot is set in a generation of our incarnation inside the caller's window
    /// (`w − 4 ..= newest`, `w` the core's epoch rule) is present: `contains` says so, and
    /// `insert_if_absent` answers `false` without writing. Those bits were set by inserts
    /// of this incarnation and are never cleared before they leave the window, so the
    /// answer is the one the function would have given when the read ran.
    ///
    /// Second, the keys not settled go to the atomic function, which checks again and sets:
    /// every `true` of an `insert_if_absent` comes from it, so one new key has at most one
    /// winner as with the function alone. A shard goes to the function whole when the read
    /// cannot answer as it would: the caller is the first of a new epoch there (the
    /// function moves the shard's newest epoch on), the newest epoch is beyond what was
    /// read, its clock lists a generation in the window that was not read (the next read
    /// includes it), or its header or a listed generation is not ours (the function then
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
        let (lo, hi) = (own.saturating_sub(4), own + self.window.tolerated_lag());
        let reads: Vec<Call> = calls
            .iter()
            .map(|c| {
                // The generations last seen created (all, the first time).
                let mut nums: Vec<u64> = match self.created.get(&c.key) {
                    Some(known) => known
                        .iter()
                        .copied()
                        .filter(|x| (lo..=hi).contains(x))
                        .collect(),
                    None => (lo..=hi).collect(),
                };
                nums.insert(0, nums.len() as u64);
                nums.extend(
                    c.nums[1..]
                        .chunks_exact(k + 1)
                        .map(|key| (SHARD_HEADER_BYTES + key[0] * 16) * 8),
                );
                Call {
                    op: Op::XRead,
                    key: c.key.clone(),
                    head: Vec::new(),
                    nums,
                }
            })
            .collect();
        let replies = self.inner.run_calls(&reads)?;
        let mut out = vec![false; n];
        let (mut rest_idx, mut rest_calls) = (Vec::new(), Vec::new());
        for (((idx, call), read), reply) in indices.iter().zip(calls).zip(&reads).zip(replies) {
            let epochs = &read.nums[1..1 + read.nums[0] as usize];
            let present = self.settled(reply, call, epochs, own)?;
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

    /// Whether each key of a shard's `call` is present, from the reply of its `XRead` of
    /// generations `epochs`; `None` if the read cannot answer as the function would (see
    /// [`two_steps`](Self::two_steps)). Remembers which generations the clock lists.
    fn settled(
        &mut self,
        reply: Value,
        call: &Call,
        epochs: &[u64],
        own: u64,
    ) -> Result<Option<Vec<bool>>> {
        let k = self.inner.meta.hashes as usize;
        let inc = self.inner.incarnation;
        // One command (no generation read) is answered by its reply alone.
        let mut parts = match reply {
            Value::Array(parts) if !epochs.is_empty() => parts,
            clock if epochs.is_empty() => vec![clock],
            other => return Err(Error::Protocol(format!("read reply {other:?}"))),
        };
        if parts.len() != 1 + epochs.len() {
            return Err(Error::Protocol(format!("{} read replies", parts.len())));
        }
        let gens = parts.split_off(1);
        let clock: Vec<u8> = redis::from_redis_value_ref(&parts[0])?;
        let field = |at: usize| clock.get(at..at + 20).and_then(digits);
        let listed: Vec<u64> = (0..RING as usize)
            .filter_map(|i| field(NEWEST_AT + 20 + 20 * i))
            .collect();
        self.created.insert(call.key.clone(), listed.clone());
        if clock.get(..8) != Some(&inc.to_be_bytes()[..]) {
            return Ok(None);
        }
        let Some(newest) = field(NEWEST_AT) else {
            return Ok(None);
        };
        let lag = self.window.tolerated_lag();
        if newest < own || newest > own + lag {
            return Ok(None);
        }
        let w = own.max(newest - lag);
        let window = w.saturating_sub(4)..=newest;
        if listed
            .iter()
            .any(|x| window.contains(x) && !epochs.contains(x))
        {
            return Ok(None);
        }
        let keys = (call.nums.len() - 1) / (k + 1);
        let mut present = vec![false; keys * k];
        for (x, g) in epochs.iter().zip(gens) {
            let words: Vec<i64> = redis::from_redis_value_ref(&g)?;
            if words.len() != 1 + 2 * keys {
                return Err(Error::Protocol(format!(
                    "{} words for {keys} keys",
                    words.len()
                )));
            }
            let ours = words[0] == inc as i64;
            if !window.contains(x) {
                continue;
            }
            if listed.contains(x) && !ours {
                return Ok(None);
            }
            if !ours {
                continue;
            }
            for (j, key) in call.nums[1..].chunks_exact(k + 1).enumerate() {
                let line = (words[1 + 2 * j], words[2 + 2 * j]);
                for (b, &s) in key[1..].iter().enumerate() {
                    present[j * k + b] |= slot_set(line, s);
                }
            }
        }
        Ok(Some(
            present
                .chunks_exact(k)
                .map(|s| s.iter().all(|&b| b))
                .collect(),
        ))
    }
}
