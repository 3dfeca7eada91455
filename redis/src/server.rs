//! The server side: loading the Lua library (Redis Functions, or `EVALSHA` scripts), and
//! sending a batch's calls — one per shard, pipelined per node — with the retry rules.

use redis::{ConnectionLike, ErrorKind, RedisError, ServerErrorKind, Value};

use crate::{net, Error, RedisBloomFilter, Result};

/// The Lua source of the server side (see `src/blockbloom.lua`).
const LUA: &str = include_str!("blockbloom.lua");
/// Name of the function library; bump the suffix when the Lua changes incompatibly.
const LIBRARY: &str = "blockbloom_v4";
/// Suffix of the function names in [`LIBRARY`].
const VERSION: &str = "_v4";

/// A server-side operation on one key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// Set a batch's missing bits in a shard, answering whether each key was new.
    Set,
    /// Set the bits a read found missing (the second step of the two-step insert),
    /// answering whether each key was new.
    Or,
    /// Read a batch's bits in a shard, answering whether each key is present.
    Get,
    /// Create the parameter hash unless it exists.
    Meta,
    /// Replace the parameter hash's incarnation after a loss (or re-create the hash).
    Reincarnate,
    /// Write a shard's header unless it holds another incarnation.
    Arm,
    /// An expiring filter's `insert_if_absent` in a shard and its generations.
    XSet,
    /// An expiring filter's `insert` (renewing the window).
    XIns,
    /// An expiring filter's `contains` (which may move the shard's newest epoch on).
    XGet,
    /// Read whole blocks (plain commands): one `GETRANGE` per block start in `nums`, then
    /// the header's incarnation (`BITFIELD_RO … GET i64 0`), answered as one array.
    Read,
    /// Read an expiring shard's clock and some of its generations' lines (plain commands):
    /// the clock's bytes (`GETRANGE`), then for each of the `nums[0]` epochs that follow
    /// one `BITFIELD_RO` of its generation — its header's incarnation, then the 128-bit line
    /// at each bit offset of the rest of `nums`, as two `i64` — answered as one array.
    XRead,
    /// `BB.SHARD.INSERT_IF_ABSENT` of the server module: `nums` are the keys' hashes.
    NativeSet,
    /// `BB.SHARD.CONTAINS` of the server module.
    NativeGet,
    /// `BB.SHARD.XINSERT_IF_ABSENT` of the module (an expiring filter in the planes
    /// layout): `head` the incarnation and the caller's time, `nums` the hashes.
    PlanesSet,
    /// `BB.SHARD.XINSERT`.
    PlanesIns,
    /// `BB.SHARD.XCONTAINS`.
    PlanesGet,
    /// `BB.SHARD.XCENSUS` (no hashes).
    PlanesCensus,
}

impl Op {
    const ALL: [Op; 9] = [
        Op::Set,
        Op::Or,
        Op::Get,
        Op::Meta,
        Op::Reincarnate,
        Op::Arm,
        Op::XSet,
        Op::XIns,
        Op::XGet,
    ];

    /// The Lua function body that runs it.
    fn body(self) -> &'static str {
        match self {
            Op::Set => "bb_set",
            Op::Or => "bb_or",
            Op::Get => "bb_get",
            Op::Meta => "bb_meta",
            Op::Reincarnate => "bb_reincarnate",
            Op::Arm => "bb_arm",
            Op::XSet => "bb_xset",
            Op::XIns => "bb_xins",
            Op::XGet => "bb_xget",
            _ => unreachable!("plain or module commands only"),
        }
    }

    /// Whether the operation may change the server's data (else sending it twice is safe,
    /// and its function is registered `no-writes`).
    fn writes(self) -> bool {
        !matches!(
            self,
            Op::Get | Op::Read | Op::XRead | Op::NativeGet | Op::PlanesGet | Op::PlanesCensus
        )
    }
}

/// One server-side call: the operation, its key, its leading byte-string arguments (the
/// incarnation; a header), then its integer arguments (`k` and the bit offsets; the
/// counts and offsets of `Or`; a shard's length).
#[derive(Clone, Debug)]
pub(crate) struct Call {
    pub(crate) op: Op,
    pub(crate) key: String,
    pub(crate) head: Vec<Vec<u8>>,
    pub(crate) nums: Vec<u64>,
}

/// How the Lua runs on this server: Redis Functions, or `EVALSHA` with one script per
/// [`Op`] (in the order of `Op::ALL`).
#[derive(Clone, Debug)]
pub(crate) enum Mode {
    Functions,
    Scripts(Vec<String>),
}

impl RedisBloomFilter {
    /// Runs `f` on the connection to the node holding `key` (reconnecting after an I/O
    /// error, following a cluster's `MOVED` once).
    pub(crate) fn with_key<T>(
        &mut self,
        key: &str,
        f: impl FnMut(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Result<T> {
        self.net.on_key(key, f).map_err(Error::from)
    }

    /// Loads the function library (or, failing that, the scripts).
    pub(crate) fn load_server_code(&mut self) -> Result<()> {
        if self.want_functions {
            let mut code = format!("#!lua name={LIBRARY}\n{LUA}\n");
            for op in Op::ALL {
                let flags = if !op.writes() {
                    ", flags={'no-writes'}"
                } else {
                    ""
                };
                code.push_str(&format!(
                    "redis.register_function{{function_name='{}{VERSION}', callback={}{flags}}}\n",
                    op.body(),
                    op.body()
                ));
            }
            let mut ok = true;
            for node in self.net.primaries()? {
                let r = self.net.on_node(&node, |c| {
                    redis::cmd("FUNCTION")
                        .arg("LOAD")
                        .arg(&code)
                        .query::<String>(c)
                });
                match r {
                    Ok(_) => {}
                    Err(e) if e.detail().is_some_and(|d| d.contains("already exists")) => {}
                    // A read-only replica gets the library from its primary.
                    Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::ReadOnly) => {}
                    // Unknown command (Redis < 7) or not allowed: fall back to scripts.
                    Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::ResponseError) => {
                        ok = false;
                        break;
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            if ok {
                self.mode = Mode::Functions;
                return Ok(());
            }
        }
        let mut shas = Vec::new();
        for op in Op::ALL {
            let script = format!("{LUA}\nreturn {}(KEYS, ARGV)\n", op.body());
            let mut sha = String::new();
            for node in self.net.primaries()? {
                sha = self.net.on_node(&node, |c| {
                    redis::cmd("SCRIPT").arg("LOAD").arg(&script).query(c)
                })?;
            }
            shas.push(sha);
        }
        self.mode = Mode::Scripts(shas);
        Ok(())
    }

    /// Commands a call sends (and replies it gets).
    fn commands(call: &Call) -> usize {
        match call.op {
            Op::Read => call.nums.len() + 1,
            Op::XRead => 1 + call.nums[0] as usize,
            _ => 1,
        }
    }

    /// Adds one server-side call to `pipe`.
    fn add_call(&self, pipe: &mut redis::Pipeline, call: &Call) {
        let op = call.op;
        if op == Op::Read {
            // The blocks first, the header after them: if the header is still ours after
            // the reads, the shard was not lost (and re-armed) before or between them.
            for &start in &call.nums {
                pipe.cmd("GETRANGE")
                    .arg(&call.key)
                    .arg(start)
                    .arg(start + crate::LINE_BYTES - 1);
            }
            pipe.cmd("BITFIELD_RO")
                .arg(&call.key)
                .arg("GET")
                .arg("i64")
                .arg(0);
            return;
        }
        let module = match op {
            Op::NativeSet => Some("BB.SHARD.INSERT_IF_ABSENT"),
            Op::NativeGet => Some("BB.SHARD.CONTAINS"),
            Op::PlanesSet => Some("BB.SHARD.XINSERT_IF_ABSENT"),
            Op::PlanesIns => Some("BB.SHARD.XINSERT"),
            Op::PlanesGet => Some("BB.SHARD.XCONTAINS"),
            Op::PlanesCensus => Some("BB.SHARD.XCENSUS"),
            _ => None,
        };
        if let Some(command) = module {
            let c = pipe.cmd(command).arg(&call.key);
            for h in &call.head {
                c.arg(h);
            }
            if op != Op::PlanesCensus {
                let hashes: Vec<u8> = call.nums.iter().flat_map(|h| h.to_le_bytes()).collect();
                c.arg(hashes);
            }
            return;
        }
        if op == Op::XRead {
            // The clock first: a generation created after it is read is still ours (its
            // header says so), and one the clock lists must be there.
            pipe.cmd("GETRANGE")
                .arg(&call.key)
                .arg(0)
                .arg(crate::meta::CLOCK_BYTES - 1);
            let (epochs, lines) = call.nums[1..].split_at(call.nums[0] as usize);
            for &x in epochs {
                let c = pipe
                    .cmd("BITFIELD_RO")
                    .arg(crate::meta::generation_key(&call.key, x))
                    .arg("GET")
                    .arg("i64")
                    .arg(0);
                for &o in lines {
                    c.arg("GET").arg("i64").arg(o);
                    c.arg("GET").arg("i64").arg(o + 64);
                }
            }
            return;
        }
        if self.direct && op == Op::Set {
            // The two-step insert's set as one plain command: the header's incarnation, then
            // a SET of every missing bit, run atomically, answering each bit's old value.
            let c = pipe
                .cmd("BITFIELD")
                .arg(&call.key)
                .arg("GET")
                .arg("i64")
                .arg(0);
            for &o in &call.nums {
                c.arg("SET").arg("u1").arg(o).arg(1);
            }
            return;
        }
        let cmd = match &self.mode {
            Mode::Functions => pipe.cmd("FCALL").arg(format!("{}{VERSION}", op.body())),
            Mode::Scripts(shas) => {
                let i = Op::ALL.iter().position(|&o| o == op).expect("listed");
                pipe.cmd("EVALSHA").arg(shas[i].as_str())
            }
        };
        cmd.arg(1).arg(&call.key).arg(&call.head).arg(&call.nums);
    }

    /// Sends `calls` (server-side call, key, arguments): one pipeline per node, so one round
    /// trip on a single server. A call the server did not run — our code was lost (restart
    /// without persistence, `FUNCTION FLUSH`) or, in a cluster, its slot `MOVED` — is retried
    /// once after reloading the code / re-reading the slot map, and a pipeline that changes
    /// nothing is sent once more after meeting a connection the server had closed (see
    /// `Net::on_node_read`); every other error fails the batch. Calls that ran are never
    /// sent twice (their answers would change).
    pub(crate) fn run_calls(&mut self, calls: &[Call]) -> Result<Vec<Value>> {
        let mut out: Vec<Option<Value>> = vec![None; calls.len()];
        let mut pending: Vec<usize> = (0..calls.len()).collect();
        for attempt in 0..2 {
            let mut by_node: Vec<(String, Vec<usize>)> = Vec::new();
            for &i in &pending {
                let node = self.net.node_of(&calls[i].key)?;
                match by_node.iter_mut().find(|g| g.0 == node) {
                    Some(g) => g.1.push(i),
                    None => by_node.push((node, vec![i])),
                }
            }
            let (mut retry, mut reload) = (Vec::new(), false);
            for (node, idx) in by_node {
                let mut pipe = redis::pipe();
                for &i in &idx {
                    self.add_call(&mut pipe, &calls[i]);
                }
                let packed = pipe.get_packed_pipeline();
                let total: usize = idx.iter().map(|&i| Self::commands(&calls[i])).sum();
                let send = |c: &mut redis::Connection| c.req_packed_commands(&packed, 0, total);
                let replies = if idx.iter().all(|&i| !calls[i].op.writes()) {
                    self.net.on_node_read(&node, send)?
                } else {
                    self.net.on_node(&node, send)?
                };
                if replies.len() != total {
                    return Err(Error::Protocol(format!(
                        "{} replies for {total} commands",
                        replies.len(),
                    )));
                }
                let mut replies = replies.into_iter();
                for i in idx {
                    let n = Self::commands(&calls[i]);
                    let mut vs: Vec<Value> = replies.by_ref().take(n).collect();
                    let v = match vs.iter().position(|v| matches!(v, Value::ServerError(_))) {
                        Some(e) => vs.swap_remove(e),
                        None if n == 1 => vs.pop().expect("one reply"),
                        None => Value::Array(vs),
                    };
                    match v {
                        Value::ServerError(e) => {
                            let e = RedisError::from(e);
                            if attempt == 0 && (code_missing(&e) || net::moved(&e)) {
                                reload |= code_missing(&e);
                                retry.push(i);
                            } else if e.code() == Some("WRONGTYPE") {
                                return Err(Error::WrongType(calls[i].key.clone()));
                            } else {
                                return Err(e.into());
                            }
                        }
                        v => out[i] = Some(v),
                    }
                }
            }
            if retry.is_empty() {
                break;
            }
            if reload {
                self.load_server_code()?;
            }
            pending = retry;
        }
        out.into_iter()
            .map(|o| o.ok_or_else(|| Error::Protocol("a call was not answered".into())))
            .collect()
    }

    /// Runs one call by itself (reloading our code once if the server lost it).
    pub(crate) fn run_one(&mut self, call: Call) -> Result<Value> {
        let mut r = self.run_calls(std::slice::from_ref(&call))?;
        Ok(r.pop().expect("one answer per call"))
    }
}

/// The `{changed, field, value, …}` answer of `bb_meta` / `bb_reincarnate`: whether the
/// hash was written, and the hash.
pub(crate) fn meta_reply(v: Value) -> Result<(bool, Vec<String>)> {
    let Value::Array(items) = v else {
        return Err(Error::Protocol(format!("parameter hash reply {v:?}")));
    };
    let changed = matches!(items.first(), Some(Value::Int(1)));
    let pairs = items[1..]
        .iter()
        .map(redis::from_redis_value_ref)
        .collect::<std::result::Result<Vec<String>, redis::ParsingError>>()?;
    Ok((changed, pairs))
}

/// The server lost our code (restart without persistence, `FUNCTION FLUSH`, `SCRIPT FLUSH`):
/// the call did not run.
fn code_missing(e: &RedisError) -> bool {
    e.kind() == ErrorKind::Server(ServerErrorKind::NoScript)
        || e.detail().is_some_and(|d| d.contains("Function not found"))
        || e.to_string().contains("Function not found")
}
