//! The module tests' servers: `redis/tests/common`'s (a real `redis-server` on a free
//! loopback port) with the module just built loaded into them.
#![allow(dead_code)]

#[path = "../../../redis/tests/common/mod.rs"]
pub mod common;

pub use common::{available, Server};

/// The module this test binary was built with: `target/<profile>/deps/libblockbloom_redis_module.so`,
/// beside the test binary (cargo builds the crate's `cdylib` there before its tests; the
/// copy one level up is only refreshed by `cargo build`).
pub fn module_path() -> String {
    let exe = std::env::current_exe().unwrap();
    let so = exe.parent().unwrap().join("libblockbloom_redis_module.so");
    assert!(
        so.exists(),
        "{} is missing: cargo build -p blockbloom-redis-module",
        so.display()
    );
    so.to_str().unwrap().to_string()
}

/// A server without persistence, with the module loaded and `extra` arguments.
pub fn with_module(extra: &[&str]) -> Server {
    let so = module_path();
    let base = ["--save", "", "--appendonly", "no"];
    Server::with_args(&[&base[..], extra, &["--loadmodule", &so]].concat())
}

/// A primary and its replica, both with the module and `DEBUG` enabled.
pub fn primary_and_replica() -> (Server, Server) {
    let primary = with_module(&["--enable-debug-command", "yes"]);
    let port = primary.port.to_string();
    let replica = with_module(&[
        "--enable-debug-command",
        "yes",
        "--replicaof",
        "127.0.0.1",
        &port,
    ]);
    (primary, replica)
}

/// The server's `DEBUG DIGEST`: equal on two servers with the same data.
pub fn digest(s: &Server) -> String {
    redis::cmd("DEBUG")
        .arg("DIGEST")
        .query(&mut s.conn())
        .unwrap()
}

/// `CONFIG SET name value`.
pub fn config_set(s: &Server, name: &str, value: &str) {
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg(name)
        .arg(value)
        .query(&mut s.conn())
        .unwrap();
}
