//! The module's expiring type: an expiring filter in the planes layout. Its shard holds the
//! header, a clock line (the window, then the newest epoch and the sweeps:
//! `blockbloom::planes_in_place::ShardClock`) and the lines, set and tested in place with
//! the local `ExpiringBloomFilter`'s rules, so the same keys at the same epochs give the
//! same lines.
//!
//! * `BB.SHARD.XINSERT_IF_ABSENT shard incarnation time hashes`, `BB.SHARD.XINSERT …`
//!   (renews the window of keys present) and `BB.SHARD.XCONTAINS …`: `time` is the caller's
//!   clock in nanoseconds since 1970 (ASCII digits), `hashes` 8 bytes per key. A call works
//!   in the shard's newest epoch, or its own if later, but never past this server's clock
//!   plus one second; a write moves the newest epoch on and sweeps what that owes, a read
//!   moves nothing. Replies one byte per key (1: new / present); `[0, header]` where the
//!   shard is not of `incarnation`, and then does nothing.
//! * `BB.SHARD.XAPPLY shard incarnation‖epoch hashes`: what a write is replicated as (AOF,
//!   replicas): the keys whose bits it set, inserted at the epoch it worked in, after the
//!   same sweeping, so that a replica holds the same bytes whatever its clock says.
//! * `BB.SHARD.XCENSUS shard incarnation time`: what the client's estimates need, as the
//!   calls at `time` read the shard: `[1, lines, rate summed over lines, live bits by age
//!   (4)]`.

use std::ffi::c_int;
use std::time::{Duration, SystemTime};

use blockbloom::planes_in_place::{self as planes, LineBytes, PlanesCensus, ShardClock};
use blockbloom::{ExpiryWindow, KeyHash};
use blockbloom_redis::shard_format::{self, read_clock, write_clock, MAX_EPOCH, PLANES_HEAD_BYTES};

use crate::api::{Ctx, OK};
use crate::commands::{refuse, unpack_hashes, OOM};
use crate::shard::{self, Shard};

/// The command a write is replicated as.
const REPLICATED: &std::ffi::CStr = c"BB.SHARD.XAPPLY";

/// What an expiring command does with its keys.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum XOp {
    /// `XINSERT_IF_ABSENT`: 1 for each key that was new.
    InsertIfAbsent,
    /// `XINSERT`: every key's bits set in the epoch's plane; 1 for each that was new.
    Insert,
    /// `XCONTAINS`: 1 for each key present.
    Contains,
    /// `XAPPLY` (replicated): `XINSERT` at the epoch given.
    Apply,
}

/// The time `nanos` after 1970.
fn time(nanos: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_nanos(nanos)
}

/// The epoch a call at `nanos` works in on a shard whose newest epoch is `newest`: its own,
/// at most this server's clock plus the skew, or the newest if later.
fn epoch_for(window: &ExpiryWindow, nanos: u64, newest: u64) -> u64 {
    let latest = window.epoch_of(SystemTime::now() + planes::SKEW);
    window.epoch_of(time(nanos)).min(latest).max(newest)
}

/// The error reply for a damaged shard.
fn damaged(ctx: &Ctx<'_>, key: &[u8], why: &str) -> c_int {
    ctx.reply_error(&format!(
        "ERR shard '{}' is damaged: {why}; delete the filter and create it again",
        String::from_utf8_lossy(key)
    ))
}

/// A digit string as a number.
fn number(arg: &[u8]) -> Option<u64> {
    std::str::from_utf8(arg).ok()?.parse().ok()
}

/// `BB.SHARD.X* shard incarnation time hashes` (`XAPPLY`: `incarnation‖epoch`, no time).
pub fn shard_call(ctx: &Ctx<'_>, op: XOp) -> c_int {
    let args = if op == XOp::Apply { 4 } else { 5 };
    if ctx.argc() != args {
        return ctx.wrong_arity();
    }
    let (key, packed) = (ctx.arg(1), ctx.arg(args - 1));
    let (incarnation, at) = match op {
        XOp::Apply if ctx.arg(2).len() == 16 => ctx.arg(2).split_at(8),
        XOp::Apply => {
            return ctx.reply_error("ERR XAPPLY takes the incarnation and epoch, 16 bytes")
        }
        _ => (ctx.arg(2), ctx.arg(3)),
    };
    let at = match op {
        XOp::Apply => Some(u64::from_le_bytes(at.try_into().expect("8 bytes"))),
        _ => number(at),
    };
    let Some(at) = at else {
        return ctx.reply_error("ERR the time is nanoseconds since 1970, in digits");
    };
    if incarnation.len() != 8 || packed.len() % 8 != 0 {
        return ctx.reply_error(
            "ERR the incarnation is 8 bytes and the hashes 8 bytes each (little-endian)",
        );
    }
    let Some(index) = shard_format::shard_index(key) else {
        return ctx.reply_error("ERR not a filter's shard key ({name.i}.bits)");
    };
    let write = op != XOp::Contains;
    let mut sh = match shard::open(ctx, key, index, write, false, Some(incarnation), true) {
        Ok(s) => s,
        Err(r) => return refuse(ctx, r),
    };
    let window = match ExpiryWindow::new(Duration::from_nanos(sh.id.window_ns)) {
        Ok(w) => w,
        Err(e) => return ctx.reply_error(&format!("ERR the shard's window: {e}")),
    };
    let hashes = unpack_hashes(packed);
    let probes = match hashes
        .iter()
        .map(|&h| place(&sh, h))
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(p) => p,
        Err(e) => return ctx.reply_error(&e),
    };
    let clock = match read_clock(sh.key.bytes()) {
        Ok(c) => c,
        Err(e) => return damaged(ctx, key, &e),
    };
    let n = match op {
        XOp::Apply if at > MAX_EPOCH => return ctx.reply_error("ERR an epoch no time has"),
        XOp::Apply => at.max(clock.newest),
        _ => epoch_for(&window, at, clock.newest),
    };
    let lines = &sh.key.bytes()[PLANES_HEAD_BYTES as usize..];
    let read = |line: u64| planes::read_line(lines, line);
    if op == XOp::Contains {
        let bytes: Vec<u8> = probes
            .iter()
            .map(|&(line, mask)| u8::from(planes::contains_at(&read(line), clock.newest, n, mask)))
            .collect();
        return ctx.reply_bytes(&bytes);
    }
    // Checked before anything is written, on the lines as the clock's move to `n` will
    // leave them: a line the insert cannot write (damage), and past `maxmemory`, a key that
    // would set a bit.
    let ahead = |line: u64| clock.line_after_advance(n, read(line));
    if let Some(&(line, _)) = probes
        .iter()
        .find(|&&(line, _)| !planes::writable(&ahead(line), n))
    {
        let why = format!("its line {line} holds an epoch after the shard's newest ({n})");
        return damaged(ctx, key, &why);
    }
    let oom = ctx.out_of_memory();
    if oom
        && probes
            .iter()
            .any(|&(line, mask)| !planes::contains_at(&ahead(line), clock.newest, n, mask))
    {
        return ctx.reply_error(OOM);
    }
    match apply(&mut sh, op, n, clock, &probes) {
        Ok((answers, changed)) => {
            let wrote: Vec<u8> = hashes
                .iter()
                .zip(&changed)
                .filter(|(_, &c)| c)
                .flat_map(|(h, _)| h.to_le_bytes())
                .collect();
            let moved = read_clock(sh.key.bytes()).ok() != Some(clock);
            if op != XOp::Apply && (moved || !wrote.is_empty()) {
                let mut head = sh.id.incarnation.to_vec();
                head.extend(n.to_le_bytes());
                ctx.replicate(REPLICATED, key, &head, &wrote);
            }
            if answers.contains(&true) {
                sh.key.notify(c"bb.insert");
            }
            let bytes: Vec<u8> = answers.into_iter().map(u8::from).collect();
            ctx.reply_bytes(&bytes)
        }
        Err(e) => ctx.reply_error(&e),
    }
}

/// The line (within the shard) and plane mask of hash `h`; `Err` for another shard's.
fn place(sh: &Shard<'_>, h: u64) -> Result<(u64, [u64; 2]), String> {
    let line = sh.id.layout.probe_hash(KeyHash::from_bits(h)).line() as u64;
    if line < sh.first_line || line >= sh.first_line + sh.lines {
        return Err(format!(
            "ERR a hash of line {line} sent to the shard of lines {}..{}",
            sh.first_line,
            sh.first_line + sh.lines
        ));
    }
    let mask = planes::plane_mask(KeyHash::from_bits(h), sh.id.layout.num_hashes());
    Ok((line - sh.first_line, mask))
}

/// A write at epoch `n` (its lines checked writable): the clock moved on and swept, then
/// each key's line written. The answers (new keys), and which keys' lines changed.
fn apply(
    sh: &mut Shard<'_>,
    op: XOp,
    n: u64,
    mut clock: ShardClock,
    probes: &[(u64, [u64; 2])],
) -> Result<(Vec<bool>, Vec<bool>), String> {
    let len = (PLANES_HEAD_BYTES + sh.lines * 64) as usize;
    let bytes = sh.key.bytes_mut(len)?;
    let (head, lines) = bytes.split_at_mut(PLANES_HEAD_BYTES as usize);
    let mut lines = LineBytes(lines);
    clock.advance(n, &mut lines);
    write_clock(head, &clock);
    let (mut answers, mut changed) = (Vec::new(), Vec::new());
    for &(line, mask) in probes {
        let mut words = lines.read(line);
        let before = words;
        let new = match op {
            XOp::InsertIfAbsent => planes::insert_if_absent(&mut words, n, mask),
            _ => {
                let had = planes::contains(&words, n, mask);
                planes::insert(&mut words, n, mask).map(|()| !had)
            }
        }
        .map_err(|_| "ERR a line changed under the insert (a bug: please report it)".to_string())?;
        if words != before {
            lines.write(line, &words);
        }
        answers.push(new);
        changed.push(words != before);
    }
    Ok((answers, changed))
}

/// `BB.SHARD.XCENSUS shard incarnation time`: `[1, lines, rate summed over lines, live
/// bits by age (4)]`, as the calls at `time` read the shard; `[0, header]` for a lost one.
pub fn census(ctx: &Ctx<'_>) -> c_int {
    if ctx.argc() != 4 {
        return ctx.wrong_arity();
    }
    let key = ctx.arg(1);
    let Some(index) = shard_format::shard_index(key) else {
        return ctx.reply_error("ERR not a filter's shard key ({name.i}.bits)");
    };
    let Some(at) = number(ctx.arg(3)) else {
        return ctx.reply_error("ERR the time is nanoseconds since 1970, in digits");
    };
    let sh = match shard::open(ctx, key, index, false, false, Some(ctx.arg(2)), true) {
        Ok(s) => s,
        Err(r) => return refuse(ctx, r),
    };
    let window = match ExpiryWindow::new(Duration::from_nanos(sh.id.window_ns)) {
        Ok(w) => w,
        Err(e) => return ctx.reply_error(&format!("ERR the shard's window: {e}")),
    };
    let bytes = sh.key.bytes();
    let clock = match read_clock(bytes) {
        Ok(c) => c,
        Err(e) => return damaged(ctx, key, &e),
    };
    let n = epoch_for(&window, at, clock.newest);
    let mut c = PlanesCensus::default();
    let lines = &bytes[PLANES_HEAD_BYTES as usize..];
    for i in 0..sh.lines.min((lines.len() / 64) as u64) {
        let live = planes::live_at(&planes::read_line(lines, i), clock.newest, n);
        c.add_line(&live, n, sh.id.layout.num_hashes());
    }
    ctx.reply_array(3 + c.ones.len());
    ctx.reply_int(1);
    ctx.reply_int(c.lines as i64);
    ctx.reply_double(c.fpr_sum);
    for o in c.ones {
        ctx.reply_int(o as i64);
    }
    OK
}
