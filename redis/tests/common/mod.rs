//! A real `redis-server` for the tests: its own free loopback port and temporary directory,
//! killed (and the directory removed) on drop. `.ci/run` installs redis-server.
#![allow(dead_code)]

use blockbloom_redis::{Error, RedisBloomFilter};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Server {
    pub port: u16,
    pub dir: PathBuf,
    child: Option<Child>,
    args: Vec<String>,
    /// Started once: a restart keeps the port and directory.
    started: bool,
}

/// A fresh directory for the server on `port`.
fn test_dir(port: u16) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "blockbloom-redis-test-{}-{port}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Whether `redis-server` can be run here. Without it the Redis tests are skipped with a
/// message — unless `BLOCKBLOOM_REQUIRE_REDIS` is set (CI sets it), which makes it a failure.
pub fn available() -> bool {
    let ok = Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var_os("BLOCKBLOOM_REQUIRE_REDIS").is_none(),
            "redis-server is required (BLOCKBLOOM_REQUIRE_REDIS is set) but cannot be run"
        );
        eprintln!("SKIPPED: redis-server not found (apt-get install -y redis-server)");
    }
    ok
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Server {
    /// A server without persistence.
    pub fn start() -> Server {
        Self::with_args(&["--save", "", "--appendonly", "no"])
    }

    /// A server without persistence under `maxmemory` with an eviction policy.
    pub fn with_maxmemory(bytes: &str, policy: &str) -> Server {
        Self::with_args(&[
            "--save",
            "",
            "--appendonly",
            "no",
            "--maxmemory",
            bytes,
            "--maxmemory-policy",
            policy,
        ])
    }

    /// A server that keeps its data across restarts: an append-only file synced at every
    /// write, then `extra` arguments.
    pub fn persistent(extra: &[&str]) -> Server {
        let aof = [
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
        ];
        Self::with_args(&[&aof[..], extra].concat())
    }

    /// A server with `extra` configuration arguments.
    pub fn with_args(extra: &[&str]) -> Server {
        let port = free_port();
        let mut s = Server {
            port,
            dir: test_dir(port),
            child: None,
            args: extra.iter().map(|s| s.to_string()).collect(),
            started: false,
        };
        s.spawn();
        s.started = true;
        s
    }

    fn spawn(&mut self) {
        for attempt in 0.. {
            let child = Command::new("redis-server")
                .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
                .args(["--dir", self.dir.to_str().unwrap()])
                .args(&self.args)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("redis-server must be installed (apt-get install -y redis-server)");
            let pid = child.id();
            self.child = Some(child);
            // The server answering is ours, not another test's that took the port between
            // `free_port` and this start (ours then failed to bind and exited). Ours also
            // exits when another test took its cluster bus port: then nothing answers.
            if self.wait_ready_or_exit() && self.process_id() == Some(pid) {
                return;
            }
            self.kill();
            assert!(attempt < 5, "redis-server kept losing its ports to others");
            assert!(
                !self.started,
                "another server took port {} during a restart",
                self.port
            );
            self.port = free_port();
            self.dir = test_dir(self.port);
            if let Some(i) = self.args.iter().position(|a| a == "--cluster-port") {
                self.args[i + 1] = free_port().to_string();
            }
        }
    }

    /// The `process_id` of the server answering on our port.
    fn process_id(&self) -> Option<u32> {
        let info: String = redis::cmd("INFO")
            .arg("server")
            .query(&mut self.conn())
            .ok()?;
        info.lines()
            .find_map(|l| l.strip_prefix("process_id:"))
            .and_then(|p| p.trim().parse().ok())
    }

    /// The server's URL, with its password if it was started with `--requirepass`.
    pub fn url(&self) -> String {
        match self.password() {
            Some(pw) => format!("redis://:{pw}@127.0.0.1:{}/", self.port),
            None => format!("redis://127.0.0.1:{}/", self.port),
        }
    }

    /// The `--requirepass` it was started with.
    pub fn password(&self) -> Option<&str> {
        let i = self.args.iter().position(|a| a == "--requirepass")?;
        self.args.get(i + 1).map(String::as_str)
    }

    /// Waits until a server answers `PING` on our port (true), or until our process has
    /// exited without one answering (false). A server that is alive but silent for a minute
    /// fails the test: on 2 cores under every test binary at once a start has taken seconds.
    fn wait_ready_or_exit(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(mut c) = redis::Client::open(self.url())
                .unwrap()
                .get_connection_with_timeout(Duration::from_millis(200))
            {
                // Ready once loaded (PING answers LOADING while replaying the AOF).
                if redis::cmd("PING").query::<String>(&mut c).is_ok() {
                    return true;
                }
            }
            let child = self.child.as_mut().expect("a spawned server");
            if child.try_wait().expect("redis-server's status").is_some() {
                return false;
            }
            assert!(
                Instant::now() < deadline,
                "redis-server did not answer in 60 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL (no shutdown save).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Kills and starts again on the same port and directory.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    pub fn conn(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .unwrap()
            .get_connection()
            .unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A 3-node Redis Cluster on loopback (`redis-server --cluster-enabled yes` ×3, `redis-cli
/// --cluster create`), every node asking for `password` if one is given; returned once
/// every node sees the whole cluster.
pub fn cluster(password: Option<&str>) -> Vec<Server> {
    cluster_with(password, &[])
}

/// [`cluster`] with `extra` arguments for every node (a `--loadmodule`).
pub fn cluster_with(password: Option<&str>, extra: &[&str]) -> Vec<Server> {
    let mut args = vec![
        "--save",
        "",
        "--appendonly",
        "no",
        "--cluster-enabled",
        "yes",
        "--cluster-node-timeout",
        "3000",
    ];
    if let Some(pw) = password {
        args.extend(["--requirepass", pw, "--masterauth", pw]);
    }
    args.extend(extra);
    // The bus on a free port of its own: the default, port + 10000, is past 65535 for a
    // quarter of the ephemeral ports.
    let nodes: Vec<Server> = (0..3)
        .map(|_| {
            let bus = free_port().to_string();
            Server::with_args(&[&args[..], &["--cluster-port", &bus]].concat())
        })
        .collect();
    let addrs: Vec<String> = nodes
        .iter()
        .map(|s| format!("127.0.0.1:{}", s.port))
        .collect();
    let mut create = std::process::Command::new("redis-cli");
    if let Some(pw) = password {
        create.args(["-a", pw, "--no-auth-warning"]);
    }
    let status = create
        .args(["--cluster", "create"])
        .args(&addrs)
        .args(["--cluster-replicas", "0", "--cluster-yes"])
        .stdout(std::process::Stdio::null())
        .status()
        .expect("redis-cli");
    assert!(status.success(), "redis-cli --cluster create failed");
    // Wait until every node sees the whole cluster.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    for s in &nodes {
        loop {
            let info: String = redis::cmd("CLUSTER")
                .arg("INFO")
                .query(&mut s.conn())
                .unwrap();
            if info.contains("cluster_state:ok") {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "cluster did not converge"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    nodes
}

/// Offers `keys` in batches; a batch answered `StateLost` is counted and sent again, as is
/// one that met a connection closed by a server restart (the documented fault model: the
/// call failed, the next reconnects; sending it again is safe).
pub fn offer(f: &mut RedisBloomFilter, keys: &[String]) -> (Vec<bool>, usize) {
    let (mut out, mut lost, mut io) = (Vec::new(), 0, 0);
    for chunk in keys.chunks(1000) {
        loop {
            match f.insert_if_absent_many(chunk) {
                Ok(v) => {
                    out.extend(v);
                    break;
                }
                Err(Error::StateLost { .. }) => lost += 1,
                Err(Error::Redis(e)) if io == 0 && e.is_io_error() => io += 1,
                Err(e) => panic!("{e}"),
            }
        }
    }
    (out, lost)
}
pub mod stamps;
