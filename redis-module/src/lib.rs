//! blockbloom's filter as native Redis commands: a Redis module (`redis-server --loadmodule
//! libblockbloom_redis_module.so`) that sets and tests the bits of a filter shared through
//! Redis in place, in the server, with no Lua.
//!
//! The filter is the one `blockbloom-redis` keeps: shards `{name.i}.bits`, Redis strings
//! that start with the filter's 64-byte header (parameters, seed, incarnation) followed by
//! its 64-byte lines, byte for byte as in a blockbloom snapshot. So the module adds no data
//! type of its own: what Redis does with strings — RDB and AOF (rewrite included),
//! replication, `COPY`, `DUMP`/`RESTORE`, `MEMORY USAGE`, `DEBUG DIGEST`, eviction,
//! cluster slots — it does with a filter, and a filter made or used through the module is
//! the same filter for a client on a server without it (the Lua Functions), and back.
//!
//! Commands (all refuse to touch a shard whose header is missing or damaged, of another
//! kind of filter, or not a string, and check everything before writing anything):
//! * `BB.SHARD.INSERT_IF_ABSENT shard incarnation hashes` / `BB.SHARD.CONTAINS …`: the
//!   clients' path. `hashes` packs each key's 64-bit keyed hash (`KeyHash::to_bits`,
//!   8 bytes little-endian), computed by the client: no URL crosses the wire. Replies one
//!   byte per key (1 = new / present); `[0, header]` where the shard is not of
//!   `incarnation` (lost, re-armed), and then does nothing. An insert is replicated (AOF,
//!   replicas) as the same command with only the keys that were new: nothing for repeats.
//! * `BB.INSERT_IF_ABSENT name key [key …]`, `BB.INSERT name key …`, `BB.CONTAINS name
//!   key …`: keys as bytes, hashed here as the library hashes a `str` (the same answers as
//!   Rust, Python and the CLI for the same filter), for `redis-cli` and any language; on a
//!   server, not a cluster.
//! * `BB.INFO name`: parameters, bytes, bits set, `estimated_len`, `estimated_fpr`,
//!   `estimated_false_positives`.
//! * `BB.CREATE name capacity rate [SEED n] [SHARDBYTES n]`: a filter, sized and laid out
//!   as the clients create one; `BB.UNION destination source`: one filter ORed into
//!   another of the same parameters and seed; `BB.DUMP name cursor` / `BB.LOAD name cursor
//!   bytes`: a filter moved in 1 MiB pieces (to another server, or another name).
//! * `BB.SHARD.XINSERT_IF_ABSENT`, `BB.SHARD.XINSERT`, `BB.SHARD.XCONTAINS`,
//!   `BB.SHARD.XAPPLY`, `BB.SHARD.XCENSUS`: the module's expiring type, an expiring filter
//!   in the planes layout (see `planes.rs`); a client creates one where every primary has
//!   the module.
//! * `BB.VERSION`: the version of these commands (clients use the module only where it is
//!   the one they speak).
//!
//! Past `maxmemory` an insert that would set a bit is refused whole (`OOM`, none of it
//! applied), while one of keys all present is answered: it writes nothing (shards are
//! allocated whole when a filter is created, so an insert never allocates).
#![warn(missing_docs)]

mod api;
mod commands;
mod lifecycle;
mod planes;
mod shard;

use std::ffi::{c_int, CStr};

use api::{CommandFn, Ctx, RawCtx, RawString, ERR, OK};
use commands::KeyOp;
use planes::XOp;

/// The module's name in `MODULE LIST`.
const NAME: &CStr = c"blockbloom";

/// Makes a command's C entry point from its body; a panic becomes an error reply (it must
/// not cross into Redis).
macro_rules! entry {
    ($name:ident, |$ctx:ident| $body:expr) => {
        extern "C" fn $name(raw: *mut RawCtx, argv: *mut *mut RawString, argc: c_int) -> c_int {
            // SAFETY: the arguments Redis passed to this command.
            let $ctx = unsafe { Ctx::new(raw, argv, argc) };
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| $body)) {
                Ok(rc) => rc,
                Err(_) => {
                    $ctx.reply_error("ERR blockbloom: internal error (a bug: please report it)")
                }
            }
        }
    };
}

entry!(cmd_version, |ctx| commands::version(&ctx));
entry!(cmd_shard_insert, |ctx| commands::shard_call(&ctx, true));
entry!(cmd_shard_contains, |ctx| commands::shard_call(&ctx, false));
entry!(cmd_insert_if_absent, |ctx| commands::key_call(
    &ctx,
    KeyOp::InsertIfAbsent
));
entry!(cmd_insert, |ctx| commands::key_call(&ctx, KeyOp::Insert));
entry!(cmd_contains, |ctx| commands::key_call(
    &ctx,
    KeyOp::Contains
));
entry!(cmd_info, |ctx| commands::info(&ctx));
entry!(cmd_x_insert_if_absent, |ctx| planes::shard_call(
    &ctx,
    XOp::InsertIfAbsent
));
entry!(cmd_x_insert, |ctx| planes::shard_call(&ctx, XOp::Insert));
entry!(cmd_x_contains, |ctx| planes::shard_call(
    &ctx,
    XOp::Contains
));
entry!(cmd_x_apply, |ctx| planes::shard_call(&ctx, XOp::Apply));
entry!(cmd_x_census, |ctx| planes::census(&ctx));
entry!(cmd_create, |ctx| lifecycle::create_command(&ctx));
entry!(cmd_union, |ctx| lifecycle::union_command(&ctx));
entry!(cmd_dump, |ctx| lifecycle::dump_command(&ctx));
entry!(cmd_load, |ctx| lifecycle::load_command(&ctx));

/// Name, entry point, flags, first key, last key, key step: the shard commands declare
/// their key (cluster routing, ACLs); the filter-level ones find their shards from the
/// name and check the caller's key permissions themselves.
const COMMANDS: [(&CStr, CommandFn, &CStr, c_int, c_int, c_int); 16] = [
    (c"bb.version", cmd_version, c"readonly fast", 0, 0, 0),
    (
        c"bb.shard.insert_if_absent",
        cmd_shard_insert,
        c"write fast",
        1,
        1,
        1,
    ),
    (
        c"bb.shard.contains",
        cmd_shard_contains,
        c"readonly fast",
        1,
        1,
        1,
    ),
    (
        c"bb.insert_if_absent",
        cmd_insert_if_absent,
        c"write",
        0,
        0,
        0,
    ),
    (c"bb.insert", cmd_insert, c"write", 0, 0, 0),
    (c"bb.contains", cmd_contains, c"readonly", 0, 0, 0),
    (c"bb.info", cmd_info, c"readonly", 0, 0, 0),
    (
        c"bb.shard.xinsert_if_absent",
        cmd_x_insert_if_absent,
        c"write fast",
        1,
        1,
        1,
    ),
    (c"bb.shard.xinsert", cmd_x_insert, c"write fast", 1, 1, 1),
    (
        c"bb.shard.xcontains",
        cmd_x_contains,
        c"readonly fast",
        1,
        1,
        1,
    ),
    (c"bb.shard.xapply", cmd_x_apply, c"write fast", 1, 1, 1),
    (c"bb.shard.xcensus", cmd_x_census, c"readonly", 1, 1, 1),
    (c"bb.create", cmd_create, c"write deny-oom", 0, 0, 0),
    (c"bb.union", cmd_union, c"write", 0, 0, 0),
    (c"bb.dump", cmd_dump, c"readonly", 0, 0, 0),
    (c"bb.load", cmd_load, c"write deny-oom", 0, 0, 0),
];

/// Redis' entry point: registers the commands.
///
/// # Safety
/// Called by Redis with its load context.
#[no_mangle]
pub unsafe extern "C" fn RedisModule_OnLoad(
    ctx: *mut RawCtx,
    _argv: *mut *mut RawString,
    _argc: c_int,
) -> c_int {
    // SAFETY: `ctx` is the load context.
    match unsafe { api::init(ctx, NAME, 1, &COMMANDS) } {
        Ok(()) => OK,
        Err(e) => {
            eprintln!("blockbloom module: {e}");
            ERR
        }
    }
}
