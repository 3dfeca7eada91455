//! The report's sections, one file each, in the order they are written.

pub(crate) mod accuracy;
pub(crate) mod block_size;
pub(crate) mod contention;
pub(crate) mod family;
pub(crate) mod latency;
pub(crate) mod memory;
pub(crate) mod physical;
pub(crate) mod real_urls;
pub(crate) mod redis;
pub(crate) mod redis_servers;
pub(crate) mod scale;
pub(crate) mod targets;
pub(crate) mod throughput;
