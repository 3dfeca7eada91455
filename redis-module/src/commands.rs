//! The commands: arguments parsed, shards opened (`shard`), answers replied, and what
//! changed propagated. Every command checks everything before it writes anything.

use std::collections::BTreeMap;
use std::ffi::c_int;

use blockbloom::StrBytes;
use blockbloom_redis::shard_format::{self, Estimates, ShardIdentity, MODULE_PROTOCOL};

use crate::api::{Ctx, OK};
use crate::shard::{self, Refusal, Shard};

/// The command the module replicates an insert as: the same command with only the keys
/// that were new (a replica or the AOF gets 8 bytes per new key, nothing for a repeat).
const REPLICATED_INSERT: &std::ffi::CStr = c"BB.SHARD.INSERT_IF_ABSENT";

/// The error of a write refused past `maxmemory` (Redis' own words for it).
pub const OOM: &str =
    "OOM command not allowed when used memory > 'maxmemory' (an insert that would set bits).";

/// `BB.VERSION`: the version of the module's commands (clients use the module only where
/// it is theirs).
pub fn version(ctx: &Ctx<'_>) -> c_int {
    if ctx.argc() != 1 {
        return ctx.wrong_arity();
    }
    ctx.reply_int(MODULE_PROTOCOL)
}

/// `BB.SHARD.INSERT_IF_ABSENT shard incarnation hashes` and `BB.SHARD.CONTAINS …`: the
/// client's path. `hashes` packs 8 bytes per key (the key's `KeyHash`, little-endian). The
/// reply is one byte per key (1: new / present, 0: not); or, where the shard is missing or
/// of another incarnation, `[0, first 8 header bytes]`, and nothing is done.
pub fn shard_call(ctx: &Ctx<'_>, write: bool) -> c_int {
    if ctx.argc() != 4 {
        return ctx.wrong_arity();
    }
    let (key, incarnation, packed) = (ctx.arg(1), ctx.arg(2), ctx.arg(3));
    if incarnation.len() != 8 || packed.len() % 8 != 0 {
        return ctx.reply_error(
            "ERR the incarnation is 8 bytes and the hashes 8 bytes each (little-endian)",
        );
    }
    let Some(index) = shard_format::shard_index(key) else {
        return ctx.reply_error("ERR not a filter's shard key ({name.i}.bits)");
    };
    let mut sh = match shard::open(ctx, key, index, write, false, Some(incarnation), false) {
        Ok(s) => s,
        Err(r) => return refuse(ctx, r),
    };
    let hashes = unpack_hashes(packed);
    let probes = match hashes
        .iter()
        .map(|&h| sh.place(h))
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(p) => p,
        Err(e) => return ctx.reply_error(&e),
    };
    if write && ctx.out_of_memory() && sh.contains(&probes).contains(&false) {
        return ctx.reply_error(OOM);
    }
    let answers = if write {
        match sh.insert_if_absent(&probes) {
            Ok(a) => {
                propagate(ctx, &sh, key, &hashes, &a);
                a
            }
            Err(e) => return ctx.reply_error(&e),
        }
    } else {
        sh.contains(&probes)
    };
    let bytes: Vec<u8> = answers.into_iter().map(u8::from).collect();
    ctx.reply_bytes(&bytes)
}

/// The keys' hashes packed 8 bytes each, little-endian (a length checked to be a multiple
/// of 8).
pub fn unpack_hashes(packed: &[u8]) -> Vec<u64> {
    packed
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect()
}

/// Replicates the new keys' hashes of an insert into shard `key` (nothing if none was
/// new) and fires the keyspace event `bb.insert`.
fn propagate(ctx: &Ctx<'_>, sh: &Shard<'_>, key: &[u8], hashes: &[u64], new: &[bool]) {
    let fresh: Vec<u8> = hashes
        .iter()
        .zip(new)
        .filter(|(_, &n)| n)
        .flat_map(|(h, _)| h.to_le_bytes())
        .collect();
    if !fresh.is_empty() {
        ctx.replicate(REPLICATED_INSERT, key, &sh.id.incarnation, &fresh);
        sh.key.notify(c"bb.insert");
    }
}

/// A refused shard as a reply.
pub fn refuse(ctx: &Ctx<'_>, r: Refusal) -> c_int {
    match r {
        Refusal::Lost(head) => {
            ctx.reply_array(2);
            ctx.reply_int(0);
            ctx.reply_bytes(&head)
        }
        Refusal::Error(e) => ctx.reply_error(&e),
    }
}

/// What a filter-level command (`BB.INSERT_IF_ABSENT name key …`) does with its keys.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum KeyOp {
    /// Answers 1 for each key that was new.
    InsertIfAbsent,
    /// Answers how many keys were new.
    Insert,
    /// Answers 1 for each key present.
    Contains,
}

/// The identity of filter `name`, from its first shard (on a server, not a cluster: there
/// a filter's shards are on several nodes).
pub fn identity_of(ctx: &Ctx<'_>, name: &str) -> Result<ShardIdentity, String> {
    if ctx.in_cluster() {
        return Err(
            "ERR on a cluster a filter's shards are on several nodes: use a client \
                    (blockbloom-redis, the Python package) or BB.SHARD.*"
                .into(),
        );
    }
    let key = shard_format::shard_key(name, 0);
    shard::open(ctx, key.as_bytes(), 0, false, true, None, false)
        .map(|s| s.id)
        .map_err(|r| lost_filter(name, r))
}

/// Shards `shards` of filter `name`, opened and checked to be of `incarnation`.
pub fn open_filter<'c>(
    ctx: &'c Ctx<'c>,
    name: &str,
    incarnation: &[u8; 8],
    shards: impl Iterator<Item = u64>,
    write: bool,
) -> Result<BTreeMap<u64, Shard<'c>>, String> {
    let mut out = BTreeMap::new();
    for i in shards {
        let key = shard_format::shard_key(name, i);
        let s = shard::open(
            ctx,
            key.as_bytes(),
            i,
            write,
            true,
            Some(incarnation),
            false,
        )
        .map_err(|r| lost_filter(name, r))?;
        out.insert(i, s);
    }
    Ok(out)
}

/// The message for a filter that cannot be used by name.
fn lost_filter(name: &str, r: Refusal) -> String {
    match r {
        Refusal::Lost(_) => format!(
            "ERR no filter '{name}' here, or a shard of it was lost: a client creates it, \
             and re-arms a lost one on its next call"
        ),
        Refusal::Error(e) => e,
    }
}

/// `BB.INSERT_IF_ABSENT name key [key …]`, `BB.INSERT …`, `BB.CONTAINS …`: keys given as
/// bytes and hashed here, as the library hashes a `str` of those bytes (what `redis-cli`
/// and any language can send).
pub fn key_call(ctx: &Ctx<'_>, op: KeyOp) -> c_int {
    if ctx.argc() < 3 {
        return ctx.wrong_arity();
    }
    let name = String::from_utf8_lossy(ctx.arg(1)).into_owned();
    let write = op != KeyOp::Contains;
    // The first shard gives the layout; then the keys are placed and grouped by shard.
    let id = match identity_of(ctx, &name) {
        Ok(id) => id,
        Err(e) => return ctx.reply_error(&e),
    };
    let mut groups: BTreeMap<u64, (Vec<usize>, Vec<u64>)> = BTreeMap::new();
    for i in 2..ctx.argc() {
        let h = id.layout.key_hash(&StrBytes(ctx.arg(i)));
        let line = id.layout.probe_hash(h).line() as u64;
        let g = groups.entry(line / id.shard_lines).or_default();
        g.0.push(i - 2);
        g.1.push(h.to_bits());
    }
    let mut shards = match open_filter(ctx, &name, &id.incarnation, groups.keys().copied(), write) {
        Ok(s) => s,
        Err(e) => return ctx.reply_error(&e),
    };
    let mut placed = Vec::with_capacity(groups.len());
    for (i, (_, hashes)) in &groups {
        match hashes
            .iter()
            .map(|&h| shards[i].place(h))
            .collect::<Result<Vec<_>, _>>()
        {
            Ok(p) => placed.push(p),
            Err(e) => return ctx.reply_error(&e),
        }
    }
    if write
        && ctx.out_of_memory()
        && groups
            .keys()
            .zip(&placed)
            .any(|(i, p)| shards[i].contains(p).contains(&false))
    {
        return ctx.reply_error(OOM);
    }
    let mut answers = vec![false; ctx.argc() - 2];
    for ((i, (idx, hashes)), probes) in groups.iter().zip(placed) {
        let sh = shards.get_mut(i).expect("opened above");
        let got = if write {
            match sh.insert_if_absent(&probes) {
                Ok(a) => a,
                Err(e) => return ctx.reply_error(&e),
            }
        } else {
            sh.contains(&probes)
        };
        if write {
            let key = shard_format::shard_key(&name, *i);
            propagate(ctx, sh, key.as_bytes(), hashes, &got);
        }
        for (&j, a) in idx.iter().zip(got) {
            answers[j] = a;
        }
    }
    if op == KeyOp::Insert {
        return ctx.reply_int(answers.iter().filter(|&&a| a).count() as i64);
    }
    ctx.reply_array(answers.len());
    for a in answers {
        ctx.reply_int(i64::from(a));
    }
    OK
}

/// `BB.INFO name`: the filter's parameters, memory and estimates, as field-value pairs.
pub fn info(ctx: &Ctx<'_>) -> c_int {
    if ctx.argc() != 2 {
        return ctx.wrong_arity();
    }
    let name = String::from_utf8_lossy(ctx.arg(1)).into_owned();
    let first = match identity_of(ctx, &name) {
        Ok(id) => id,
        Err(e) => return ctx.reply_error(&e),
    };
    let lines = first.layout.num_lines();
    let count = lines.div_ceil(first.shard_lines);
    let shards = match open_filter(ctx, &name, &first.incarnation, 0..count, false) {
        Ok(s) => s,
        Err(e) => return ctx.reply_error(&e),
    };
    let (mut ones, mut bytes) = (0u64, 0u64);
    for s in shards.values() {
        let b = s.key.bytes();
        bytes += b.len() as u64;
        ones += b
            .get(shard_format::HEADER_BYTES as usize..)
            .unwrap_or(&[])
            .iter()
            .map(|x| u64::from(x.count_ones()))
            .sum::<u64>();
    }
    let e = Estimates::of(ones, lines, first.layout.num_hashes());
    let ints: [(&str, u64); 7] = [
        ("capacity", first.capacity),
        ("lines", lines),
        ("hashes", u64::from(first.layout.num_hashes())),
        ("shards", count),
        ("bytes", bytes),
        ("ones", ones),
        ("estimated_len", e.keys_in.round() as u64),
    ];
    let floats = [
        ("target_fpr", first.fpr),
        ("estimated_fpr", e.fpr),
        ("estimated_false_positives", e.false_positives),
    ];
    ctx.reply_array(2 * (ints.len() + floats.len()) + 2);
    ctx.reply_bytes(b"incarnation");
    ctx.reply_bytes(&first.incarnation);
    for (k, v) in ints {
        ctx.reply_bytes(k.as_bytes());
        ctx.reply_int(v.min(i64::MAX as u64) as i64);
    }
    for (k, v) in floats {
        ctx.reply_bytes(k.as_bytes());
        ctx.reply_double(v);
    }
    OK
}
