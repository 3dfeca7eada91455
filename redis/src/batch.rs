//! A batch's way to the bits: grouped by shard, then either one function call per shard
//! (`bb_set`/`bb_get`), or the two steps — the keys' blocks read with plain `GETRANGE`s,
//! then only the missing bits set (`bb_or` where the server keeps its writes, else a plain
//! `BITFIELD`).

use std::hash::Hash;

use redis::Value;

use crate::meta::SHARD_HEADER_BYTES;
use crate::server::{Call, Op};
use crate::{Error, RedisBloomFilter, Result, LINE_BYTES};

/// The per-key answers of a function call (`{1, a1, a2, …}`), or `None` if the shard's
/// header was not the caller's incarnation (`{0, header}`).
fn answers(reply: Value, keys: usize) -> Result<Option<Vec<i64>>> {
    let answers: Vec<i64> = match reply {
        Value::Array(items) if matches!(items.first(), Some(Value::Int(1))) => {
            redis::from_redis_value_ref(&Value::Array(items[1..].to_vec()))?
        }
        Value::Array(items) if matches!(items.first(), Some(Value::Int(0))) => return Ok(None),
        other => return Err(Error::Protocol(format!("reply {other:?}"))),
    };
    if answers.len() != keys {
        return Err(Error::Protocol(format!(
            "{} answers for {keys} keys",
            answers.len()
        )));
    }
    Ok(Some(answers))
}

impl RedisBloomFilter {
    /// Groups `keys` by shard: per shard, the key indices and the call arguments (`k`, then
    /// `k` bit offsets per key in Redis' bit numbering).
    fn plan<K: Hash>(&self, keys: &[K]) -> Vec<(u64, Vec<usize>, Vec<u64>)> {
        let k = self.meta.hashes as usize;
        let mut by_shard: Vec<(u64, Vec<usize>, Vec<u64>)> = Vec::new();
        for (idx, key) in keys.iter().enumerate() {
            let p = self.layout.probe(key);
            let block = p.line() as u64;
            let shard = block / self.meta.shard_blocks;
            // Each shard starts with its header (one block), then its blocks.
            let base = SHARD_HEADER_BYTES * 8 + (block % self.meta.shard_blocks) * 512;
            let entry = match by_shard.iter_mut().find(|e| e.0 == shard) {
                Some(e) => e,
                None => {
                    by_shard.push((shard, Vec::new(), vec![k as u64]));
                    by_shard.last_mut().expect("just pushed")
                }
            };
            entry.1.push(idx);
            let start = entry.2.len();
            for (w, mut word) in p.mask().into_iter().enumerate() {
                while word != 0 {
                    let i = word.trailing_zeros() as u64;
                    word &= word - 1;
                    // Local bit i of word w sits in byte 8w + i/8 of the block, bit i%8 from
                    // the least significant end; Redis numbers bits from the most significant.
                    entry.2.push(base + 64 * w as u64 + 8 * (i / 8) + 7 - i % 8);
                }
            }
            let first = entry.2[start];
            entry.2.resize(start + k, first); // pad: a repeated SET changes nothing
        }
        by_shard
    }

    pub(crate) fn batch<K: Hash>(&mut self, op: Op, keys: &[K]) -> Result<Vec<bool>> {
        let mut out = vec![false; keys.len()];
        if keys.is_empty() {
            return Ok(out);
        }
        if self.native {
            return self.native_batch(op, keys);
        }
        let inc = self.incarnation.to_be_bytes().to_vec();
        let (indices, calls): (Vec<Vec<usize>>, Vec<Call>) = self
            .plan(keys)
            .into_iter()
            .map(|(shard, idx, nums)| {
                let key = self.shard_key(shard);
                let head = vec![inc.clone()];
                (
                    idx,
                    Call {
                        op,
                        key,
                        head,
                        nums,
                    },
                )
            })
            .unzip();
        if self.direct {
            return match op {
                Op::Set => self.two_step_set(keys.len(), &indices, calls),
                _ => self.read_present(keys.len(), &indices, &calls),
            };
        }
        self.call_and_answer(&indices, &calls, &mut out)?;
        Ok(out)
    }

    /// Runs one function call per shard (`calls`, for the keys at `indices`) and writes each
    /// key's answer into `out`; a shard not of our incarnation is a loss, recovered from
    /// ([`Error::StateLost`]).
    pub(crate) fn call_and_answer(
        &mut self,
        indices: &[Vec<usize>],
        calls: &[Call],
        out: &mut [bool],
    ) -> Result<()> {
        // `run_calls` answers every call or fails.
        let replies = self.run_calls(calls)?;
        let mut lost = None;
        for ((idx, call), reply) in indices.iter().zip(calls).zip(replies) {
            let Some(answers) = answers(reply, idx.len())? else {
                lost.get_or_insert(call.key.clone());
                continue;
            };
            for (&i, r) in idx.iter().zip(answers) {
                out[i] = r == 1;
            }
        }
        match lost {
            Some(shard) => Err(self.recover(&shard)),
            None => Ok(()),
        }
    }

    /// The bits of a plain `BITFIELD` reply (`GET i64 0` first): `None` if the shard's
    /// header is not our incarnation's.
    fn direct_bits(&self, reply: &Value, bits: usize) -> Result<Option<Vec<i64>>> {
        let v: Vec<i64> = redis::from_redis_value_ref(reply)?;
        if v.first() != Some(&(self.incarnation as i64)) {
            return Ok(None);
        }
        if v.len() != 1 + bits {
            return Err(Error::Protocol(format!("{} bits for {bits}", v.len() - 1)));
        }
        Ok(Some(v[1..].to_vec()))
    }

    /// Whether any primary keeps what is written to it — an append-only file, or a replica
    /// attached — so that the bytes an insert writes cost disk and network (an unreadable
    /// answer counts as yes).
    pub(crate) fn server_keeps_writes(&mut self) -> Result<bool> {
        for node in self.net.primaries()? {
            let info = self.net.on_node(&node, |c| {
                redis::cmd("INFO")
                    .arg("persistence")
                    .arg("replication")
                    .query::<String>(c)
            });
            let Ok(info) = info else { return Ok(true) };
            let field = |name: &str| {
                info.lines()
                    .find_map(|l| l.strip_prefix(name))
                    .map(|v| v.trim().to_string())
            };
            let aof = field("aof_enabled:").is_none_or(|v| v != "0");
            let replicas = field("connected_slaves:").is_none_or(|v| v != "0");
            if aof || replicas {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Reads the blocks of the keys of each call (`Op::Read`: one `GETRANGE` per key, then
    /// the shard's header) and returns, per call, the keys' bits (`k` per key, in the
    /// order of the call's offsets), or `Err(shard)` for a shard whose header is not ours.
    #[allow(clippy::type_complexity)]
    fn read_bits(
        &mut self,
        indices: &[Vec<usize>],
        calls: &[Call],
    ) -> Result<std::result::Result<Vec<Vec<u8>>, String>> {
        let k = self.meta.hashes as usize;
        let reads: Vec<Call> = indices
            .iter()
            .zip(calls)
            .map(|(idx, c)| Call {
                op: Op::Read,
                key: c.key.clone(),
                head: Vec::new(),
                // The byte where each key's block starts (all its offsets are in it).
                nums: (0..idx.len())
                    .map(|j| c.nums[1 + j * k] / 512 * 64)
                    .collect(),
            })
            .collect();
        let replies = self.run_calls(&reads)?;
        let mut out = Vec::with_capacity(calls.len());
        for ((idx, call), reply) in indices.iter().zip(calls).zip(replies) {
            let Value::Array(mut parts) = reply else {
                return Err(Error::Protocol(format!("read reply {reply:?}")));
            };
            let head: Vec<i64> = redis::from_redis_value_ref(&parts.pop().unwrap_or(Value::Nil))?;
            if head.first() != Some(&(self.incarnation as i64)) {
                return Ok(Err(call.key.clone()));
            }
            if parts.len() != idx.len() {
                return Err(Error::Protocol(format!(
                    "{} blocks for {} keys",
                    parts.len(),
                    idx.len()
                )));
            }
            let mut bits = Vec::with_capacity(idx.len() * k);
            for (j, part) in parts.iter().enumerate() {
                // A shard whose last blocks were never written is shorter: zeros.
                let block: Vec<u8> = redis::from_redis_value_ref(part)?;
                for &o in &call.nums[1 + j * k..1 + (j + 1) * k] {
                    let byte = ((o / 8) % LINE_BYTES) as usize;
                    bits.push(block.get(byte).map_or(0, |b| (b >> (7 - o % 8)) & 1));
                }
            }
            out.push(bits);
        }
        Ok(Ok(out))
    }

    /// `contains_many` with plain commands: one read round trip.
    fn read_present(
        &mut self,
        n: usize,
        indices: &[Vec<usize>],
        calls: &[Call],
    ) -> Result<Vec<bool>> {
        let k = self.meta.hashes as usize;
        let bits = match self.read_bits(indices, calls)? {
            Ok(b) => b,
            Err(shard) => return Err(self.recover(&shard)),
        };
        let mut out = vec![false; n];
        for (idx, bits) in indices.iter().zip(bits) {
            for (&i, b) in idx.iter().zip(bits.chunks_exact(k)) {
                out[i] = !b.contains(&0);
            }
        }
        Ok(out)
    }

    /// `insert_if_absent_many` in two steps per shard: read the keys' blocks (plain
    /// `GETRANGE`s), then set only the missing bits — with `bb_or`, which ORs them into their
    /// blocks and writes back the changed bytes, where the server keeps its writes, else
    /// with a plain `BITFIELD … SET u1` per bit — each step one pipelined round trip, so
    /// that keys already present write nothing. A key is new iff one of *its* bits was still
    /// 0 when set. At most one winner across processes: a call's set covers every bit of the
    /// key that its read found missing and runs atomically, so after the first set that
    /// flips any bit of a key all its bits are 1, and every later one finds only 1s (bits
    /// never go back to 0, whichever way they were set); the same holds for a key repeated
    /// in one batch, whose bits are set in order within one call.
    fn two_step_set(
        &mut self,
        n: usize,
        indices: &[Vec<usize>],
        calls: Vec<Call>,
    ) -> Result<Vec<bool>> {
        let k = self.meta.hashes as usize;
        let read = match self.read_bits(indices, &calls)? {
            Ok(b) => b,
            Err(shard) => return Err(self.recover(&shard)),
        };
        let inc = self.incarnation.to_be_bytes().to_vec();
        let (mut sets, mut owners) = (Vec::new(), Vec::new());
        for ((idx, call), bits) in indices.iter().zip(&calls).zip(read) {
            // `bb_or`: per key a count and its missing offsets; the plain BITFIELD: the
            // offsets, each answered by its old value.
            let (mut nums, mut owner) = (Vec::new(), Vec::new());
            for (j, &i) in idx.iter().enumerate() {
                let missing = (0..k).filter(|&b| bits[j * k + b] == 0);
                let missing: Vec<u64> = missing.map(|b| call.nums[1 + j * k + b]).collect();
                if missing.is_empty() {
                    continue;
                }
                if self.compact_writes {
                    nums.push(missing.len() as u64);
                    owner.push(i);
                } else {
                    owner.extend(std::iter::repeat_n(i, missing.len()));
                }
                nums.extend(missing);
            }
            if !owner.is_empty() {
                let (op, head) = if self.compact_writes {
                    (Op::Or, vec![inc.clone()])
                } else {
                    (Op::Set, Vec::new())
                };
                sets.push(Call {
                    op,
                    key: call.key.clone(),
                    head,
                    nums,
                });
                owners.push(owner);
            }
        }
        let mut out = vec![false; n];
        let mut lost: Option<String> = None;
        let replies = self.run_calls(&sets)?;
        for ((owner, call), reply) in owners.iter().zip(&sets).zip(replies) {
            let answers = if self.compact_writes {
                answers(reply, owner.len())?
            } else {
                self.direct_bits(&reply, owner.len())?
                    .map(|old| old.into_iter().map(|b| i64::from(b == 0)).collect())
            };
            let Some(answers) = answers else {
                lost.get_or_insert(call.key.clone());
                continue;
            };
            for (&i, a) in owner.iter().zip(answers) {
                out[i] |= a == 1;
            }
        }
        if let Some(shard) = lost {
            return Err(self.recover(&shard));
        }
        Ok(out)
    }
}
