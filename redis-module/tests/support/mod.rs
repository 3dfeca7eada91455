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
