//! Connections: one Redis server, or a Redis Cluster with client-side slot routing (one
//! connection per primary, one pipeline per node, topology refreshed on `MOVED`).

use std::collections::HashMap;
use std::time::Duration;

use redis::{Connection, RedisError, RedisResult, Value};

/// CRC16/XMODEM, the checksum Redis Cluster maps keys to slots with.
fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in data {
        crc ^= (b as u16) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// The cluster slot of `key`: CRC16 of its hash tag (the part between the first `{` and the
/// next `}`, if non-empty) or of the whole key, mod 16384.
pub(crate) fn slot(key: &str) -> u16 {
    let b = key.as_bytes();
    let tagged = b.iter().position(|&c| c == b'{').and_then(|open| {
        let rest = &b[open + 1..];
        rest.iter()
            .position(|&c| c == b'}')
            .filter(|&close| close > 0)
            .map(|close| &rest[..close])
    });
    crc16(tagged.unwrap_or(b)) % 16384
}

enum Topology {
    Single {
        /// Boxed: a `redis::Client` is several times the cluster variant's size.
        client: Box<redis::Client>,
        conn: Option<Connection>,
    },
    Cluster {
        seed: String,
        /// (first slot, last slot, node address "host:port"), from `CLUSTER SLOTS`.
        slots: Vec<(u16, u16, String)>,
        conns: HashMap<String, Connection>,
    },
}

pub(crate) struct Net {
    topo: Topology,
    timeout: Duration,
    /// The process whose connections these are. A child forked from it shares their
    /// sockets with it, so replies meant for one could be read by the other: the child
    /// opens its own (see [`after_fork`](Self::after_fork)).
    pid: u32,
}

/// A client for `url`. For `rediss://` it first makes ring rustls' process-wide crypto
/// provider if none is installed yet: rustls cannot choose one itself when another crate in
/// the program enables a second provider, and it would panic instead.
fn client(url: &str) -> RedisResult<redis::Client> {
    #[cfg(feature = "tls")]
    if url.starts_with("rediss:") {
        static PROVIDER: std::sync::Once = std::sync::Once::new();
        PROVIDER.call_once(|| {
            // Err: a provider is installed already, which is what is needed.
            let _ = rustls::crypto::ring::default_provider().install_default();
        });
    }
    redis::Client::open(url)
}

/// A connection error that names where the connection went ("Connection refused" alone
/// does not): the same kind of I/O error (refused, timed out, dropped), so that every rule
/// that looks at it reads it as before.
fn naming(e: RedisError, addr: &dyn std::fmt::Display) -> RedisError {
    use std::io::ErrorKind as K;
    if !e.is_io_error() {
        return e;
    }
    let kind = if e.is_connection_refusal() {
        K::ConnectionRefused
    } else if e.is_timeout() {
        K::TimedOut
    } else if e.is_connection_dropped() {
        K::ConnectionReset
    } else {
        K::Other
    };
    RedisError::from(std::io::Error::new(kind, format!("{addr}: {e}")))
}

fn open(url: &str, timeout: Duration) -> RedisResult<Connection> {
    let client = client(url)?;
    let c = client
        .get_connection_with_timeout(timeout)
        .map_err(|e| naming(e, &client.get_connection_info().addr()))?;
    c.set_read_timeout(Some(timeout))?;
    c.set_write_timeout(Some(timeout))?;
    Ok(c)
}

/// The URL of cluster node `addr` (`host:port`, as `CLUSTER SLOTS` names it): the seed's
/// scheme (`rediss` keeps TLS) and credentials (a password-protected cluster asks every node
/// for it), the node's address.
fn node_url(seed: &str, addr: &str) -> String {
    let (scheme, rest) = seed.split_once("://").unwrap_or(("redis", seed));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let credentials = match authority.rsplit_once('@') {
        Some((c, _)) => format!("{c}@"),
        None => String::new(),
    };
    format!("{scheme}://{credentials}{addr}/")
}

/// Whether the connection is unusable after `e` (so it must be dropped and reopened).
fn broken(e: &RedisError) -> bool {
    // A reply that did not parse (an "unknown command" error quoting binary arguments)
    // leaves the rest of the stream unread: the connection is not reused.
    e.is_io_error()
        || e.is_timeout()
        || e.is_connection_dropped()
        || e.kind() == redis::ErrorKind::Parse
}

pub(crate) fn moved(e: &RedisError) -> bool {
    matches!(e.code(), Some("MOVED") | Some("ASK"))
        || e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::Moved)
}

impl Net {
    pub(crate) fn new(url: &str, cluster: bool, timeout: Duration) -> RedisResult<Net> {
        let topo = if cluster {
            Topology::Cluster {
                seed: url.to_string(),
                slots: Vec::new(),
                conns: HashMap::new(),
            }
        } else {
            Topology::Single {
                client: Box::new(client(url)?),
                conn: None,
            }
        };
        Ok(Net {
            topo,
            timeout,
            pid: std::process::id(),
        })
    }

    /// In a child process forked after connections were opened (Python's `multiprocessing`
    /// does this by default on Linux): leaves the inherited connections to the parent and
    /// starts with none. They are forgotten, not dropped — the child's copy of a descriptor
    /// would only be closed, but a client that shut the socket down on drop would cut the
    /// parent's connection too; the cost is one descriptor per connection in the child.
    fn after_fork(&mut self) {
        let pid = std::process::id();
        if pid == self.pid {
            return;
        }
        self.pid = pid;
        match &mut self.topo {
            Topology::Single { conn, .. } => std::mem::forget(conn.take()),
            Topology::Cluster { conns, .. } => conns.drain().for_each(std::mem::forget),
        }
    }

    /// The connect, read and write timeout of its connections.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// A new `Net` to the same server(s), with no connection yet.
    pub(crate) fn fresh(&self) -> Net {
        let topo = match &self.topo {
            Topology::Single { client, .. } => Topology::Single {
                client: client.clone(),
                conn: None,
            },
            Topology::Cluster { seed, slots, .. } => Topology::Cluster {
                seed: seed.clone(),
                slots: slots.clone(),
                conns: HashMap::new(),
            },
        };
        Net {
            topo,
            timeout: self.timeout,
            pid: std::process::id(),
        }
    }

    /// Reads the slot map from the seed node (or any node we know).
    fn refresh(&mut self) -> RedisResult<()> {
        let timeout = self.timeout;
        let Topology::Cluster { seed, slots, conns } = &mut self.topo else {
            return Ok(());
        };
        let mut candidates = vec![seed.clone()];
        candidates.extend(slots.iter().map(|s| node_url(seed, &s.2)));
        let mut last = None;
        for url in candidates {
            let reply = open(&url, timeout)
                .and_then(|mut c| redis::cmd("CLUSTER").arg("SLOTS").query::<Value>(&mut c));
            match reply {
                Ok(Value::Array(ranges)) => {
                    let mut map = Vec::new();
                    for r in ranges {
                        let Value::Array(r) = r else { continue };
                        let (Some(Value::Int(a)), Some(Value::Int(b)), Some(Value::Array(node))) =
                            (r.first(), r.get(1), r.get(2))
                        else {
                            continue;
                        };
                        let host: String = redis::from_redis_value_ref(&node[0])?;
                        let port: i64 = redis::from_redis_value_ref(&node[1])?;
                        let host = if host.contains(':') {
                            format!("[{host}]") // an IPv6 address
                        } else {
                            host
                        };
                        map.push((*a as u16, *b as u16, format!("{host}:{port}")));
                    }
                    *slots = map;
                    conns.retain(|addr, _| slots.iter().any(|s| &s.2 == addr));
                    return Ok(());
                }
                Ok(_) => {
                    last = Some(RedisError::from((
                        redis::ErrorKind::Server(redis::ServerErrorKind::ResponseError),
                        "unexpected CLUSTER SLOTS reply",
                    )))
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.expect("at least the seed was tried"))
    }

    /// The node (address) that owns `key` ("" for a single server).
    pub(crate) fn node_of(&mut self, key: &str) -> RedisResult<String> {
        if let Topology::Cluster { slots, .. } = &self.topo {
            if slots.is_empty() {
                self.refresh()?;
            }
        }
        match &self.topo {
            Topology::Single { .. } => Ok(String::new()),
            Topology::Cluster { slots, .. } => {
                let s = slot(key);
                slots
                    .iter()
                    .find(|r| r.0 <= s && s <= r.1)
                    .map(|r| r.2.clone())
                    .ok_or_else(|| {
                        RedisError::from((
                            redis::ErrorKind::Server(redis::ServerErrorKind::ClusterDown),
                            "no node serves the slot",
                            format!("slot {s}"),
                        ))
                    })
            }
        }
    }

    /// Every primary ("" for a single server).
    pub(crate) fn primaries(&mut self) -> RedisResult<Vec<String>> {
        if let Topology::Cluster { slots, .. } = &self.topo {
            if slots.is_empty() {
                self.refresh()?;
            }
        }
        Ok(match &self.topo {
            Topology::Single { .. } => vec![String::new()],
            Topology::Cluster { slots, .. } => {
                let mut v: Vec<String> = slots.iter().map(|s| s.2.clone()).collect();
                v.sort();
                v.dedup();
                v
            }
        })
    }

    /// Runs `f` on the connection to `node` (from [`node_of`](Self::node_of)), opening it if
    /// needed and dropping it after an I/O-level error. On `MOVED`, refreshes the slot map
    /// (the command did not run; the caller decides whether to retry).
    pub(crate) fn on_node<T>(
        &mut self,
        node: &str,
        f: impl FnOnce(&mut Connection) -> RedisResult<T>,
    ) -> RedisResult<T> {
        self.after_fork();
        let timeout = self.timeout;
        let r = match &mut self.topo {
            Topology::Single { client, conn } => {
                if conn.is_none() {
                    let c = client
                        .get_connection_with_timeout(timeout)
                        .map_err(|e| naming(e, &client.get_connection_info().addr()))?;
                    c.set_read_timeout(Some(timeout))?;
                    c.set_write_timeout(Some(timeout))?;
                    *conn = Some(c);
                }
                let r = f(conn.as_mut().expect("connected"));
                if matches!(&r, Err(e) if broken(e)) {
                    *conn = None;
                }
                r
            }
            Topology::Cluster { seed, conns, .. } => {
                if !conns.contains_key(node) {
                    conns.insert(node.to_string(), open(&node_url(seed, node), timeout)?);
                }
                let r = f(conns.get_mut(node).expect("connected"));
                if matches!(&r, Err(e) if broken(e)) {
                    conns.remove(node);
                }
                r
            }
        };
        if let Err(e) = &r {
            if moved(e) {
                let _ = self.refresh();
            }
        }
        r
    }

    /// Whether a connection to `node` is open (opened by an earlier call).
    fn connected(&mut self, node: &str) -> bool {
        self.after_fork();
        match &self.topo {
            Topology::Single { conn, .. } => conn.is_some(),
            Topology::Cluster { conns, .. } => conns.contains_key(node),
        }
    }

    /// [`on_node`](Self::on_node) for commands that change nothing. A connection opened by
    /// an earlier call may have been closed by the server since (a restart, `CLIENT KILL`,
    /// its idle `timeout`): the command then meets end-of-file or a reset. Such a command
    /// runs once more on a new connection, so a restart between two calls is not an error
    /// to the second. Only commands without effects are sent twice: after a dropped
    /// connection nobody can tell whether a write ran (the caller is told, see the crate's
    /// Faults section), and a timeout is not retried (the server is slow, not gone).
    pub(crate) fn on_node_read<T>(
        &mut self,
        node: &str,
        mut f: impl FnMut(&mut Connection) -> RedisResult<T>,
    ) -> RedisResult<T> {
        let reused = self.connected(node);
        match self.on_node(node, &mut f) {
            Err(e) if reused && e.is_connection_dropped() => self.on_node(node, f),
            r => r,
        }
    }

    /// Runs `f` on the connection for `key`, retrying once after a `MOVED` (the command did
    /// not run on the wrong node).
    pub(crate) fn on_key<T>(
        &mut self,
        key: &str,
        mut f: impl FnMut(&mut Connection) -> RedisResult<T>,
    ) -> RedisResult<T> {
        let node = self.node_of(key)?;
        match self.on_node(&node, &mut f) {
            Err(e) if moved(&e) => {
                let node = self.node_of(key)?;
                self.on_node(&node, f)
            }
            r => r,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_match_redis() {
        // Values from the Redis Cluster specification and `CLUSTER KEYSLOT`.
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(slot("foo"), 12182);
        assert_eq!(slot("{user1000}.following"), slot("{user1000}.followers"));
        assert_eq!(slot("foo{}{bar}"), slot("foo{}{bar}")); // empty tag: whole key
        assert_ne!(slot("foo{}{bar}"), slot("bar"));
        assert_eq!(slot("foo{{bar}}zap"), slot("{bar"));
    }
}
