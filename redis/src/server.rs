//! The server side: loading the Lua library (Redis Functions, or `EVALSHA` scripts), and
//! sending a batch's calls — one per shard, pipelined per node — with the retry rules.

use redis::{ConnectionLike, ErrorKind, RedisError, Value};

use crate::meta::Meta;
use crate::{net, Error, RedisBloomFilter, Result};

/// The Lua source of the server side (see `src/blockbloom.lua`).
const LUA: &str = include_str!("blockbloom.lua");
/// Name of the function library; bump the suffix when the Lua changes incompatibly.
const LIBRARY: &str = "blockbloom_v1";

/// A server-side operation on one key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// Set a batch's bits in a shard, answering whether each key was new.
    Set,
    /// Read a batch's bits in a shard, answering whether each key is present.
    Get,
    /// Create the parameter hash unless it exists.
    Meta,
}

impl Op {
    /// The Redis Function that runs it.
    fn function(self) -> &'static str {
        match self {
            Op::Set => "bb_set_v1",
            Op::Get => "bb_get_v1",
            Op::Meta => "bb_meta_v1",
        }
    }

    /// The plain command that runs it (`Set` and `Get` only).
    fn bitfield_command(self) -> &'static str {
        match self {
            Op::Set => "BITFIELD",
            _ => "BITFIELD_RO",
        }
    }
}

/// One server-side call: the operation, its key, its arguments.
pub(crate) type Call = (Op, String, Vec<u64>);

/// How the Lua runs on this server.
#[derive(Clone, Debug)]
pub(crate) enum Mode {
    Functions,
    Scripts {
        set: String,
        get: String,
        meta: String,
    },
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
            let code = format!(
                "#!lua name={LIBRARY}\n{LUA}\n\
                 redis.register_function('bb_set_v1', bb_set)\n\
                 redis.register_function{{function_name='bb_get_v1', callback=bb_get, flags={{'no-writes'}}}}\n\
                 redis.register_function('bb_meta_v1', bb_meta)\n"
            );
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
                    // Unknown command (Redis < 7) or not allowed: fall back to scripts.
                    Err(e) if e.kind() == ErrorKind::ResponseError => {
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
        for body in ["bb_set", "bb_get", "bb_meta"] {
            let script = format!("{LUA}\nreturn {body}(KEYS, ARGV)\n");
            let mut sha = String::new();
            for node in self.net.primaries()? {
                sha = self.net.on_node(&node, |c| {
                    redis::cmd("SCRIPT").arg("LOAD").arg(&script).query(c)
                })?;
            }
            shas.push(sha);
        }
        let [set, get, meta]: [String; 3] = shas.try_into().expect("three scripts");
        self.mode = Mode::Scripts { set, get, meta };
        Ok(())
    }

    /// Adds one server-side call on `key` to `pipe`.
    fn add_call(&self, pipe: &mut redis::Pipeline, op: Op, key: &str, args: &[u64]) {
        if self.direct && op != Op::Meta {
            // One BITFIELD command: all SETs (GETs) of the batch's keys in this shard, run
            // atomically, answering each bit's old value.
            let c = pipe.cmd(op.bitfield_command()).arg(key);
            for &o in &args[1..] {
                match op {
                    Op::Set => c.arg("SET").arg("u1").arg(o).arg(1),
                    _ => c.arg("GET").arg("u1").arg(o),
                };
            }
            return;
        }
        let cmd = match &self.mode {
            Mode::Functions => pipe.cmd("FCALL").arg(op.function()),
            Mode::Scripts { set, get, meta } => {
                let sha = match op {
                    Op::Set => set,
                    Op::Get => get,
                    Op::Meta => meta,
                };
                pipe.cmd("EVALSHA").arg(sha.as_str())
            }
        };
        cmd.arg(1).arg(key).arg(args);
    }

    /// Sends `calls` (server-side call, key, arguments): one pipeline per node, so one round
    /// trip on a single server. A call the server did not run — our code was lost (restart
    /// without persistence, `FUNCTION FLUSH`) or, in a cluster, its slot `MOVED` — is retried
    /// once after reloading the code / re-reading the slot map; every other error fails the
    /// batch. Calls that ran are never sent twice (their answers would change).
    pub(crate) fn run_calls(&mut self, calls: &[Call]) -> Result<Vec<Vec<i64>>> {
        let mut out: Vec<Option<Vec<i64>>> = vec![None; calls.len()];
        let mut pending: Vec<usize> = (0..calls.len()).collect();
        for attempt in 0..2 {
            let mut by_node: Vec<(String, Vec<usize>)> = Vec::new();
            for &i in &pending {
                let node = self.net.node_of(&calls[i].1)?;
                match by_node.iter_mut().find(|g| g.0 == node) {
                    Some(g) => g.1.push(i),
                    None => by_node.push((node, vec![i])),
                }
            }
            let (mut retry, mut reload) = (Vec::new(), false);
            for (node, idx) in by_node {
                let mut pipe = redis::pipe();
                for &i in &idx {
                    let (op, key, args) = &calls[i];
                    self.add_call(&mut pipe, *op, key, args);
                }
                let packed = pipe.get_packed_pipeline();
                let replies = self
                    .net
                    .on_node(&node, |c| c.req_packed_commands(&packed, 0, idx.len()))?;
                if replies.len() != idx.len() {
                    return Err(Error::Protocol(format!(
                        "{} replies for {} calls",
                        replies.len(),
                        idx.len()
                    )));
                }
                for (i, v) in idx.into_iter().zip(replies) {
                    match v {
                        Value::ServerError(e) => {
                            let e = RedisError::from(e);
                            if attempt == 0 && (code_missing(&e) || net::moved(&e)) {
                                reload |= code_missing(&e);
                                retry.push(i);
                            } else {
                                return Err(e.into());
                            }
                        }
                        v => out[i] = Some(redis::from_redis_value(&v)?),
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

    /// Writes the parameter hash unless it exists; returns (created, stored parameters).
    pub(crate) fn put_meta(&mut self, meta: &Meta) -> Result<(bool, Meta)> {
        let args: Vec<String> = meta
            .fields()
            .into_iter()
            .flat_map(|(a, b)| [a, b])
            .collect();
        for attempt in 0..2 {
            let mut cmd = match &self.mode {
                Mode::Functions => {
                    let mut c = redis::cmd("FCALL");
                    c.arg("bb_meta_v1");
                    c
                }
                Mode::Scripts { meta, .. } => {
                    let mut c = redis::cmd("EVALSHA");
                    c.arg(meta.as_str());
                    c
                }
            };
            cmd.arg(1).arg(&self.meta_key).arg(&args);
            let key = self.meta_key.clone();
            match self.with_key(&key, |c| cmd.query::<Vec<redis::Value>>(c)) {
                Err(Error::Redis(e)) if attempt == 0 && code_missing(&e) => {
                    self.load_server_code()?
                }
                Err(e) => return Err(e),
                Ok(v) => {
                    let created = matches!(v.first(), Some(redis::Value::Int(1)));
                    let pairs: Vec<String> = v[1..]
                        .iter()
                        .map(redis::from_redis_value)
                        .collect::<redis::RedisResult<_>>()?;
                    return Ok((created, Meta::parse(&pairs)?));
                }
            }
        }
        unreachable!("returns on the second attempt")
    }
}

/// The server lost our code (restart without persistence, `FUNCTION FLUSH`, `SCRIPT FLUSH`):
/// the call did not run.
fn code_missing(e: &RedisError) -> bool {
    e.kind() == ErrorKind::NoScriptError
        || e.detail().is_some_and(|d| d.contains("Function not found"))
        || e.to_string().contains("Function not found")
}
