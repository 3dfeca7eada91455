//! Every structure under test behind one trait, so that one loop drives all of them.
//!
//! Structures that need `&mut self` (`HashSet`, `AHashSet`, sbbf-rs-safe, bloomfilter) sit in
//! a `RefCell`: they are measured on one thread only (the type system keeps them off the
//! threaded harness, which requires `Sync`), and the borrow flag costs about a nanosecond.

use blockbloom::BloomFilter;
use dashmap::DashSet;
use std::cell::RefCell;
use std::collections::HashSet;
use std::hash::BuildHasher;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Mutex;
use xxhash_rust::xxh3::{xxh3_64, Xxh3Builder};

/// An operation of the benchmark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Insert,
    InsertIfAbsent,
    ContainsMember,
    ContainsNonMember,
}

impl Op {
    pub const ALL: [Op; 4] = [
        Op::Insert,
        Op::InsertIfAbsent,
        Op::ContainsMember,
        Op::ContainsNonMember,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Op::Insert => "insert",
            Op::InsertIfAbsent => "insert_if_absent",
            Op::ContainsMember => "contains (member)",
            Op::ContainsNonMember => "contains (non-member)",
        }
    }
    pub fn writes(self) -> bool {
        matches!(self, Op::Insert | Op::InsertIfAbsent)
    }
}

/// A set of strings under test.
pub trait Peer {
    /// Name in the report.
    fn name(&self) -> String;
    fn insert(&self, k: &str);
    fn insert_if_absent(&self, k: &str) -> bool;
    fn contains(&self, k: &str) -> bool;
    /// Returns the structure to the state right after it was filled (untimed): `added` are
    /// the keys a timed run may have added (never keys inserted while filling).
    fn reset(&mut self, added: &[&str]);
    /// Bytes of the structure, when it is not a heap allocation the counting allocator sees
    /// (blockbloom maps large filters straight from the OS).
    fn own_memory(&self) -> Option<usize> {
        None
    }

    /// The timed loop: `op` on every key, returning how many answered `true` (so nothing
    /// is optimised away, and the non-member count is the false-positive count).
    #[inline]
    fn run(&self, op: Op, keys: &[&str]) -> usize {
        match op {
            Op::Insert => {
                keys.iter().for_each(|k| self.insert(k));
                0
            }
            Op::InsertIfAbsent => keys.iter().filter(|k| self.insert_if_absent(k)).count(),
            Op::ContainsMember | Op::ContainsNonMember => {
                keys.iter().filter(|k| self.contains(k)).count()
            }
        }
    }
}

/// blockbloom, one call per key, or through the batched (prefetching) API.
pub struct Bloom {
    pub f: BloomFilter,
    prototype: Option<BloomFilter>,
    pub batched: bool,
    huge_pages: bool,
}

impl Bloom {
    pub fn new(n: u64, fpr: f64, batched: bool, huge_pages: bool) -> Self {
        Self::with_block_bits(n, fpr, 512, batched, huge_pages)
    }

    /// A filter of `block_bits`-bit blocks (named so when not the default 512).
    pub fn with_block_bits(
        n: u64,
        fpr: f64,
        block_bits: u32,
        batched: bool,
        huge_pages: bool,
    ) -> Self {
        let f = BloomFilter::builder()
            .capacity(n)
            .fpr(fpr)
            .seed(0xBE7C)
            .block_bits(block_bits)
            .huge_pages(huge_pages)
            .build()
            .expect("filter");
        Bloom {
            f,
            prototype: None,
            batched,
            huge_pages,
        }
    }
}

/// Keys per call of the batched API in the report (a crawler's page of links, or a chunk).
const BATCH: usize = 1024;

impl Peer for Bloom {
    fn name(&self) -> String {
        let mut s = String::from("blockbloom");
        if self.f.block_bits() != 512 {
            s.push_str(&format!(" {}-bit blocks", self.f.block_bits()));
        }
        if self.batched {
            s.push_str(" batched");
        }
        if self.huge_pages {
            s.push_str(" +huge pages");
        }
        s
    }
    fn insert(&self, k: &str) {
        self.f.insert(k)
    }
    fn insert_if_absent(&self, k: &str) -> bool {
        self.f.insert_if_absent(k)
    }
    fn contains(&self, k: &str) -> bool {
        self.f.contains(k)
    }
    fn reset(&mut self, _: &[&str]) {
        if let Some(p) = &self.prototype {
            self.f.clear();
            self.f.union(p).expect("same parameters");
        }
    }
    fn own_memory(&self) -> Option<usize> {
        Some(self.f.memory_bytes())
    }
    #[inline]
    fn run(&self, op: Op, keys: &[&str]) -> usize {
        if !self.batched {
            return match op {
                Op::Insert => {
                    keys.iter().for_each(|k| self.f.insert(k));
                    0
                }
                Op::InsertIfAbsent => keys.iter().filter(|k| self.f.insert_if_absent(k)).count(),
                _ => keys.iter().filter(|k| self.f.contains(k)).count(),
            };
        }
        let mut out = [false; BATCH];
        let mut found = 0;
        for chunk in keys.chunks(BATCH) {
            let out = &mut out[..chunk.len()];
            match op {
                Op::Insert => {
                    self.f.insert_many(chunk);
                    continue;
                }
                Op::InsertIfAbsent => self.f.insert_if_absent_many(chunk, out),
                _ => self.f.contains_many(chunk, out),
            }
            found += out.iter().filter(|&&b| b).count();
        }
        found
    }
}

impl Bloom {
    /// Records the filled state so that `reset` can restore it (a snapshot round trip is the
    /// public way to copy a filter).
    pub fn snapshot_prototype(&mut self) {
        let mut buf = Vec::new();
        self.f.write_to(&mut buf).expect("snapshot");
        self.prototype = Some(BloomFilter::read_from(&mut buf.as_slice()).expect("reload"));
    }
}

/// `HashSet<String>` and `AHashSet<String>` (the same type with another hasher), one thread.
pub struct Seq<S>(pub RefCell<HashSet<String, S>>, pub &'static str);

impl<S: BuildHasher> Peer for Seq<S> {
    fn name(&self) -> String {
        self.1.to_owned()
    }
    fn insert(&self, k: &str) {
        self.insert_if_absent(k);
    }
    fn insert_if_absent(&self, k: &str) -> bool {
        // One lookup for a duplicate, an allocation only for a new key: what a careful user
        // writes with std's API.
        let mut s = self.0.borrow_mut();
        !s.contains(k) && s.insert(k.to_owned())
    }
    fn contains(&self, k: &str) -> bool {
        self.0.borrow().contains(k)
    }
    fn reset(&mut self, written: &[&str]) {
        let s = self.0.get_mut();
        written.iter().for_each(|k| {
            s.remove(*k);
        });
    }
}

/// `Mutex<HashSet<String>>`, shared by threads.
pub struct Locked(pub Mutex<HashSet<String>>);

impl Peer for Locked {
    fn name(&self) -> String {
        "Mutex<HashSet<String>>".into()
    }
    fn insert(&self, k: &str) {
        self.insert_if_absent(k);
    }
    fn insert_if_absent(&self, k: &str) -> bool {
        let mut s = self.0.lock().unwrap();
        !s.contains(k) && s.insert(k.to_owned())
    }
    fn contains(&self, k: &str) -> bool {
        self.0.lock().unwrap().contains(k)
    }
    fn reset(&mut self, written: &[&str]) {
        let s = self.0.get_mut().unwrap();
        written.iter().for_each(|k| {
            s.remove(*k);
        });
    }
}

/// `dashmap::DashSet<String>` (sharded locks), shared by threads.
pub struct Dash(pub DashSet<String>);

impl Peer for Dash {
    fn name(&self) -> String {
        "DashSet<String>".into()
    }
    fn insert(&self, k: &str) {
        self.insert_if_absent(k);
    }
    fn insert_if_absent(&self, k: &str) -> bool {
        !self.0.contains(k) && self.0.insert(k.to_owned())
    }
    fn contains(&self, k: &str) -> bool {
        self.0.contains(k)
    }
    fn reset(&mut self, written: &[&str]) {
        written.iter().for_each(|k| {
            self.0.remove(*k);
        });
    }
}

/// fastbloom's `AtomicBloomFilter` (shared by threads) with XXH3 as its hasher, like ours.
pub struct Fast {
    pub f: fastbloom::AtomicBloomFilter<Xxh3Builder>,
    prototype: Option<Vec<u64>>,
}

impl Fast {
    pub fn new(n: u64, fpr: f64) -> Self {
        let f = fastbloom::AtomicBloomFilter::with_false_pos(fpr)
            .hasher(Xxh3Builder::new())
            .expected_items(n as usize);
        Fast { f, prototype: None }
    }
    pub fn snapshot_prototype(&mut self) {
        let words = self.f.as_slice().iter().map(|w| w.load(Relaxed)).collect();
        self.prototype = Some(words);
    }
}

impl Peer for Fast {
    fn name(&self) -> String {
        "fastbloom atomic (xxh3)".into()
    }
    fn insert(&self, k: &str) {
        self.f.insert(k);
    }
    fn insert_if_absent(&self, k: &str) -> bool {
        !self.f.insert(k) // fastbloom returns "was (maybe) present before"
    }
    fn contains(&self, k: &str) -> bool {
        self.f.contains(k)
    }
    fn reset(&mut self, _: &[&str]) {
        if let Some(p) = &self.prototype {
            self.f = fastbloom::AtomicBloomFilter::from_vec(p.clone())
                .hasher(Xxh3Builder::new())
                .hashes(self.f.num_hashes());
        }
    }
    fn own_memory(&self) -> Option<usize> {
        Some(self.f.num_bits() / 8)
    }
}

/// sbbf-rs-safe (split-block Bloom filter, SIMD, not atomic: one thread), fed XXH3-64 of the
/// key's bytes.
pub struct Sbbf {
    pub f: RefCell<sbbf_rs_safe::Filter>,
    prototype: Option<Vec<u8>>,
}

/// Bits per key given to sbbf-rs-safe: the report shows the false-positive rate it gets.
pub const SBBF_BITS_PER_KEY: usize = 12;

impl Sbbf {
    pub fn new(n: u64) -> Self {
        Sbbf {
            f: RefCell::new(sbbf_rs_safe::Filter::new(SBBF_BITS_PER_KEY, n as usize)),
            prototype: None,
        }
    }
    pub fn snapshot_prototype(&mut self) {
        self.prototype = Some(self.f.get_mut().as_bytes().to_vec());
    }
}

impl Peer for Sbbf {
    fn name(&self) -> String {
        "sbbf-rs-safe (not atomic)".into()
    }
    fn insert(&self, k: &str) {
        self.f.borrow_mut().insert_hash(xxh3_64(k.as_bytes()));
    }
    fn insert_if_absent(&self, k: &str) -> bool {
        !self.f.borrow_mut().insert_hash(xxh3_64(k.as_bytes()))
    }
    fn contains(&self, k: &str) -> bool {
        self.f.borrow().contains_hash(xxh3_64(k.as_bytes()))
    }
    fn reset(&mut self, _: &[&str]) {
        if let Some(p) = &self.prototype {
            self.f.get_mut().as_bytes_mut().copy_from_slice(p);
        }
    }
    fn own_memory(&self) -> Option<usize> {
        Some(self.f.borrow().as_bytes().len())
    }
}

/// bloomfilter 3 (a classic unblocked filter with SipHash; not atomic: one thread).
pub struct Classic {
    pub f: RefCell<bloomfilter::Bloom<str>>,
    prototype: Option<Vec<u8>>,
}

impl Classic {
    pub fn new(n: u64, fpr: f64) -> Self {
        let f = bloomfilter::Bloom::new_for_fp_rate_with_seed(n as usize, fpr, &[7; 32])
            .expect("bloomfilter");
        Classic {
            f: RefCell::new(f),
            prototype: None,
        }
    }
    pub fn snapshot_prototype(&mut self) {
        self.prototype = Some(self.f.get_mut().to_bytes());
    }
}

impl Peer for Classic {
    fn name(&self) -> String {
        "bloomfilter (not atomic)".into()
    }
    fn insert(&self, k: &str) {
        self.f.borrow_mut().set(k);
    }
    fn insert_if_absent(&self, k: &str) -> bool {
        !self.f.borrow_mut().check_and_set(k)
    }
    fn contains(&self, k: &str) -> bool {
        self.f.borrow().check(k)
    }
    fn reset(&mut self, _: &[&str]) {
        if let Some(p) = &self.prototype {
            *self.f.get_mut() = bloomfilter::Bloom::from_bytes(p.clone()).expect("own bytes");
        }
    }
    fn own_memory(&self) -> Option<usize> {
        Some(self.f.borrow().as_slice().len())
    }
}
