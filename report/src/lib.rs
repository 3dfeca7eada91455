//! The benchmark harness shared by the report (`src/main.rs`) and the criterion benchmarks
//! (`benches/filters.rs`): every structure under test behind one [`peers::Peer`] trait, and
//! the timing loops of [`measure`], and [`apbf`], the Age-Partitioned Bloom Filter the
//! expiring filter is compared with.

#![allow(missing_docs)] // a benchmark harness of this workspace (publish = false), not an API

pub mod apbf;
pub mod measure;
pub mod peers;
