//! The commands on a whole filter by name: `BB.CREATE`, `BB.UNION`, and the migration pair
//! `BB.DUMP` / `BB.LOAD` (a server, not a cluster, as for the other name-level commands).
//! Each is replicated so that a replica or the AOF makes exactly the same filter: a
//! creation as `BB.LOAD name 1 <header>` (its seed and incarnation included), the others
//! as they were called (they are deterministic).

use std::ffi::c_int;

use blockbloom_redis::shard_format::{self, NewFilter, HEADER_BYTES};

use crate::api::{Ctx, KeyKind};
use crate::commands::{identity_of, open_filter};

/// Bytes per 64-byte line.
const LINE_BYTES: u64 = 64;
/// Lines per chunk of a dump: 1 MiB.
const CHUNK_LINES: u64 = 16_384;

/// Parses a number argument, naming it in the error.
fn number<T: std::str::FromStr>(ctx: &Ctx<'_>, i: usize, what: &str) -> Result<T, String> {
    std::str::from_utf8(ctx.arg(i))
        .ok()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("ERR {what} is not a valid number"))
}

/// Creates `plan` unless any of its keys exists: the parameter hash, then each shard at
/// its full length with its header.
fn create(ctx: &Ctx<'_>, name: &str, plan: &NewFilter) -> Result<(), String> {
    if ctx.in_cluster() {
        return Err(
            "ERR on a cluster a filter's shards are on several nodes: create it with \
                    a client (blockbloom-redis, the Python package)"
                .into(),
        );
    }
    let keys =
        std::iter::once(plan.meta_key.as_str()).chain(plan.shards.iter().map(|s| s.0.as_str()));
    for k in keys {
        if ctx.open(k.as_bytes(), true, true)?.kind() != KeyKind::Empty {
            return Err(format!("ERR filter '{name}' exists ('{k}')"));
        }
    }
    let mut meta = ctx.open(plan.meta_key.as_bytes(), true, true)?;
    for pair in plan.meta_fields.chunks_exact(2) {
        meta.hash_set(&pair[0], &pair[1])?;
    }
    if meta.kind() != KeyKind::Hash {
        return Err("ERR could not write the parameter hash".into());
    }
    for (key, header, len) in &plan.shards {
        let mut k = ctx.open(key.as_bytes(), true, true)?;
        k.create_string(*len as usize)?;
        k.bytes_mut(*len as usize)?[..header.len()].copy_from_slice(header);
    }
    meta.notify_generic(c"bb.create");
    ctx.replicate(c"BB.LOAD", name.as_bytes(), b"1", &plan.header);
    Ok(())
}

/// `BB.CREATE name capacity rate [SEED n] [SHARDBYTES n]`: a filter for `capacity` keys at
/// `rate`, sized and laid out as the clients create one (the seed random unless given).
pub fn create_command(ctx: &Ctx<'_>) -> c_int {
    let argc = ctx.argc();
    if !(4..=8).contains(&argc) || !argc.is_multiple_of(2) {
        return ctx.wrong_arity();
    }
    let r = (|| -> Result<(), String> {
        let name = String::from_utf8_lossy(ctx.arg(1)).into_owned();
        let capacity: u64 = number(ctx, 2, "capacity")?;
        let rate: f64 = number(ctx, 3, "rate")?;
        let (mut seed, mut shard_bytes) = (None, None);
        for i in (4..argc).step_by(2) {
            match ctx.arg(i).to_ascii_uppercase().as_slice() {
                b"SEED" => seed = Some(number::<u128>(ctx, i + 1, "SEED")?),
                b"SHARDBYTES" => shard_bytes = Some(number::<u64>(ctx, i + 1, "SHARDBYTES")?),
                _ => return Err("ERR options: SEED n, SHARDBYTES n".to_string()),
            }
        }
        let plan = shard_format::new_filter(&name, capacity, rate, seed, shard_bytes)
            .map_err(|e| format!("ERR {e}"))?;
        create(ctx, &name, &plan)
    })();
    match r {
        Ok(()) => ctx.reply_simple("OK"),
        Err(e) => ctx.reply_error(&e),
    }
}

/// `BB.UNION destination source`: ORs filter `source` into `destination` (the same
/// parameters and seed: a copy, or filters made alike); answers the bits newly set.
pub fn union_command(ctx: &Ctx<'_>) -> c_int {
    if ctx.argc() != 3 {
        return ctx.wrong_arity();
    }
    let r = (|| -> Result<u64, String> {
        let dest = String::from_utf8_lossy(ctx.arg(1)).into_owned();
        let src = String::from_utf8_lossy(ctx.arg(2)).into_owned();
        let (d, s) = (identity_of(ctx, &dest)?, identity_of(ctx, &src)?);
        let same = d.seed == s.seed
            && d.layout.num_lines() == s.layout.num_lines()
            && d.layout.num_hashes() == s.layout.num_hashes()
            && d.shard_lines == s.shard_lines;
        if !same {
            return Err(format!(
                "ERR '{src}' and '{dest}' differ in parameters or seed: their bits do not mix"
            ));
        }
        let n = d.layout.num_lines().div_ceil(d.shard_lines);
        let sources = open_filter(ctx, &src, &s.incarnation, 0..n, false)?;
        let mut dests = open_filter(ctx, &dest, &d.incarnation, 0..n, true)?;
        let mut set = 0u64;
        for (i, from) in &sources {
            let to = dests.get_mut(i).expect("opened");
            let len = (HEADER_BYTES + to.lines * LINE_BYTES) as usize;
            let from = from.key.bytes();
            let bytes = to.key.bytes_mut(len)?;
            for (a, b) in bytes[HEADER_BYTES as usize..]
                .iter_mut()
                .zip(&from[HEADER_BYTES as usize..])
            {
                set += u64::from((*b & !*a).count_ones());
                *a |= *b;
            }
        }
        if set > 0 {
            ctx.replicate_verbatim();
        }
        Ok(set)
    })();
    match r {
        Ok(set) => ctx.reply_int(set as i64),
        Err(e) => ctx.reply_error(&e),
    }
}

/// `BB.DUMP name cursor`: the filter in pieces, `[next cursor, bytes]`: from cursor 0 its
/// header (parameters, seed, incarnation), then its lines 1 MiB at a time, until the next
/// cursor is 0. `BB.LOAD name cursor bytes`, given each answer in turn, makes the same
/// filter (on another server, or under another name). A filter changed while it is dumped
/// loads with a mix of its bits before and after (nothing is lost that was there at the
/// first call).
pub fn dump_command(ctx: &Ctx<'_>) -> c_int {
    if ctx.argc() != 3 {
        return ctx.wrong_arity();
    }
    let r = (|| -> Result<(u64, Vec<u8>), String> {
        let name = String::from_utf8_lossy(ctx.arg(1)).into_owned();
        let cursor: u64 = number(ctx, 2, "the cursor")?;
        let id = identity_of(ctx, &name)?;
        let lines = id.layout.num_lines();
        let start = match cursor {
            0 => {
                let key = shard_format::shard_key(&name, 0);
                let k = ctx.open(key.as_bytes(), false, true)?;
                return Ok((1, k.bytes()[..HEADER_BYTES as usize].to_vec()));
            }
            1 => 0,
            c => {
                let first = c - 2;
                first + chunk_at(first, lines, id.shard_lines)
            }
        };
        if start >= lines {
            return Ok((0, Vec::new()));
        }
        let n = chunk_at(start, lines, id.shard_lines);
        let shard = start / id.shard_lines;
        let s = open_filter(ctx, &name, &id.incarnation, shard..shard + 1, false)?;
        let at = (HEADER_BYTES + (start - shard * id.shard_lines) * LINE_BYTES) as usize;
        let bytes = s[&shard].key.bytes();
        let mut out = bytes.get(at..).unwrap_or(&[]).to_vec();
        out.resize((n * LINE_BYTES) as usize, 0);
        Ok((start + 2, out))
    })();
    match r {
        Ok((next, bytes)) => {
            ctx.reply_array(2);
            ctx.reply_int(next as i64);
            ctx.reply_bytes(&bytes)
        }
        Err(e) => ctx.reply_error(&e),
    }
}

/// Lines in the dump chunk that starts at line `first`: up to 1 MiB, within one shard.
fn chunk_at(first: u64, lines: u64, shard_lines: u64) -> u64 {
    let shard_end = (first / shard_lines + 1) * shard_lines;
    CHUNK_LINES.min(shard_end.min(lines) - first)
}

/// `BB.LOAD name cursor bytes`: see [`dump_command`]. Cursor 1 creates the filter from
/// the header (refused if `name` exists); the others OR their lines in.
pub fn load_command(ctx: &Ctx<'_>) -> c_int {
    if ctx.argc() != 4 {
        return ctx.wrong_arity();
    }
    let r = (|| -> Result<(), String> {
        let name = String::from_utf8_lossy(ctx.arg(1)).into_owned();
        let cursor: u64 = number(ctx, 2, "the cursor")?;
        let data = ctx.arg(3);
        if cursor == 1 {
            let plan = shard_format::new_filter_like(&name, data)
                .map_err(|e| format!("ERR not a dump's first piece: {e}"))?;
            return create(ctx, &name, &plan);
        }
        let id = identity_of(ctx, &name)?;
        let first = cursor
            .checked_sub(2)
            .ok_or_else(|| "ERR cursor 0 is not a piece of a dump".to_string())?;
        let n = data.len() as u64 / LINE_BYTES;
        if !(data.len() as u64).is_multiple_of(LINE_BYTES)
            || first >= id.layout.num_lines()
            || n != chunk_at(first, id.layout.num_lines(), id.shard_lines)
        {
            return Err("ERR this piece does not fit the filter (another dump's?)".into());
        }
        let shard = first / id.shard_lines;
        let mut s = open_filter(ctx, &name, &id.incarnation, shard..shard + 1, true)?;
        let sh = s.get_mut(&shard).expect("opened");
        let len = (HEADER_BYTES + sh.lines * LINE_BYTES) as usize;
        let at = (HEADER_BYTES + (first - shard * id.shard_lines) * LINE_BYTES) as usize;
        let bytes = sh.key.bytes_mut(len)?;
        for (a, b) in bytes[at..at + data.len()].iter_mut().zip(data) {
            *a |= *b;
        }
        ctx.replicate_verbatim();
        Ok(())
    })();
    match r {
        Ok(()) => ctx.reply_simple("OK"),
        Err(e) => ctx.reply_error(&e),
    }
}
