//! Deterministic synthetic workloads for blockbloom's tests, examples and benchmarks.
//!
//! Everything here is a pure function of its seed, so a failing test or a benchmark
//! figure can be reproduced exactly on any machine.
//!
//! * [`SplitMix64`]: a tiny, fast, well-mixed PRNG (Steele, Lea, Flood 2014).
//! * [`url`] / [`write_url`]: the `i`-th synthetic crawler URL, ~70 bytes, distinct for
//!   distinct `i` (the id is embedded in the path).
//! * [`dup_stream`]: a crawl-order stream of ids in which a chosen fraction are repeats.

use std::fmt::Write as _;

pub mod procs;

/// The false-positive measurement of the rate tests: `insert` URLs `0..n`, then return the
/// share of URLs `n..n + queries` (never inserted) that `contains` reports present.
pub fn measure_fpr(
    n: u64,
    queries: u64,
    mut insert: impl FnMut(&str),
    contains: impl Fn(&str) -> bool,
) -> f64 {
    let mut buf = String::new();
    for i in 0..n {
        buf.clear();
        write_url(i, &mut buf);
        insert(buf.as_str());
    }
    let mut positives = 0u64;
    for i in n..n + queries {
        buf.clear();
        write_url(i, &mut buf);
        positives += contains(buf.as_str()) as u64;
    }
    positives as f64 / queries as f64
}

/// Races for the concurrency tests: `threads` threads, started on a barrier, each call
/// `claim(id)` for every id in `0..ids`, in an order of their own (shuffled with
/// `seed + thread`). Returns how many threads got `true` for each id: at most 1 everywhere
/// is the "at most one winner" contract.
pub fn shuffled_claims(
    threads: usize,
    ids: u64,
    seed: u64,
    claim: impl Fn(u64) -> bool + Sync,
) -> Vec<u8> {
    let order = |t: usize| {
        let mut mine: Vec<u64> = (0..ids).collect();
        SplitMix64::new(seed + t as u64).shuffle(&mut mine);
        mine
    };
    stream_claims(threads, ids, order, 1, |batch, out| {
        out[0] = claim(batch[0])
    })
}

/// The general race: thread `t` offers the ids of `order(t)` (any subset of `0..ids`, with
/// repeats if wanted) in batches of `batch`, `claim(ids, answers)` answering each; the
/// threads start together on a barrier. Returns how many `true`s each id got in all.
pub fn stream_claims(
    threads: usize,
    ids: u64,
    order: impl Fn(usize) -> Vec<u64> + Sync,
    batch: usize,
    claim: impl Fn(&[u64], &mut [bool]) + Sync,
) -> Vec<u8> {
    let orders: Vec<Vec<u64>> = (0..threads).map(&order).collect();
    claims(threads, ids, |t, wins| {
        let mut out = vec![false; batch];
        for chunk in orders[t].chunks(batch) {
            let out = &mut out[..chunk.len()];
            claim(chunk, out);
            for (&i, &won) in chunk.iter().zip(out.iter()) {
                if won {
                    wins[i as usize].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            }
        }
    })
}

/// The same-key race: `threads` threads call `claim(id)` for ids `0..ids` in the same order,
/// meeting at a barrier before every id, so that each id is really raced.
pub fn same_key_claims(threads: usize, ids: u64, claim: impl Fn(u64) -> bool + Sync) -> Vec<u8> {
    let barrier = std::sync::Barrier::new(threads);
    claims(threads, ids, |_, wins| {
        for i in 0..ids {
            barrier.wait();
            if claim(i) {
                wins[i as usize].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    })
}

fn claims(
    threads: usize,
    ids: u64,
    run: impl Fn(usize, &[std::sync::atomic::AtomicU8]) + Sync,
) -> Vec<u8> {
    let wins: Vec<std::sync::atomic::AtomicU8> = (0..ids)
        .map(|_| std::sync::atomic::AtomicU8::new(0))
        .collect();
    let start = std::sync::Barrier::new(threads);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (run, wins, start) = (&run, &wins, &start);
            s.spawn(move || {
                start.wait();
                run(t, wins)
            });
        }
    });
    wins.into_iter().map(|w| w.into_inner()).collect()
}

/// SplitMix64 pseudo-random generator. Not cryptographic; deterministic and portable.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator started from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform value in `0..n` (multiply-shift; `n` must be non-zero).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// A uniform value in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Fisher–Yates shuffle.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

const HOSTS: &[&str] = &[
    "www.example.com",
    "news.example.org",
    "docs.python.org",
    "en.wikipedia.org",
    "blog.rust-lang.org",
    "shop.example.net",
    "forum.example.io",
    "static.cdn-example.com",
    "www.university.edu",
    "api.service.dev",
    "people.example.co.uk",
    "archive.example.org",
];

const WORDS: &[&str] = &[
    "library",
    "reference",
    "tutorial",
    "article",
    "products",
    "category",
    "archive",
    "search",
    "users",
    "profile",
    "release",
    "notes",
    "install",
    "guide",
    "index",
    "topics",
    "threads",
    "images",
    "download",
    "about",
    "contact",
    "events",
    "blog",
    "press",
    "careers",
    "help",
    "faq",
    "policy",
    "terms",
    "sitemap",
    "latest",
    "tags",
];

const EXTS: &[&str] = &[".html", ".htm", "", "/", ".php", ".aspx"];

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Appends the `i`-th synthetic URL to `out` (about 70 bytes on average).
///
/// Distinct `i` give distinct URLs: `i` itself is written, in hex, right after the last
/// `-` of the path.
pub fn write_url(i: u64, out: &mut String) {
    let h = mix(i ^ 0x005E_ED0F_0071);
    let host = HOSTS[(h % HOSTS.len() as u64) as usize];
    let w1 = WORDS[((h >> 8) % WORDS.len() as u64) as usize];
    let w2 = WORDS[((h >> 16) % WORDS.len() as u64) as usize];
    let w3 = WORDS[((h >> 24) % WORDS.len() as u64) as usize];
    let ext = EXTS[((h >> 32) % EXTS.len() as u64) as usize];
    let scheme = if (h >> 40) & 7 == 0 { "http" } else { "https" };
    let year = 2010 + (h >> 50) % 16;
    let month = 1 + (h >> 54) % 12;
    let _ = write!(
        out,
        "{scheme}://{host}/{w1}/{year}/{month:02}/{w2}/{w3}-{i:x}{ext}"
    );
    if (h >> 44) & 3 == 0 {
        let _ = write!(out, "?page={}&ref={w1}", (h >> 48) % 97);
    }
}

/// The `i`-th synthetic URL (see [`write_url`]).
pub fn url(i: u64) -> String {
    let mut s = String::with_capacity(96);
    write_url(i, &mut s);
    s
}

/// `n` consecutive URLs starting at id `start`.
pub fn urls(start: u64, n: usize) -> Vec<String> {
    (start..start + n as u64).map(url).collect()
}

/// A crawl-order stream of `len` ids in which about `dup_fraction` of the entries repeat an
/// earlier id (chosen uniformly among those already emitted) and the rest are new ids
/// `0, 1, 2, …` in order. Returns the stream and the number of distinct ids in it.
pub fn dup_stream(len: usize, dup_fraction: f64, seed: u64) -> (Vec<u64>, u64) {
    let mut rng = SplitMix64::new(seed);
    let mut out = Vec::with_capacity(len);
    let mut next = 0u64;
    for _ in 0..len {
        if next > 0 && rng.next_f64() < dup_fraction {
            out.push(rng.below(next));
        } else {
            out.push(next);
            next += 1;
        }
    }
    (out, next)
}

/// The link stream of a crawl, in the order a crawler extracts links: `len` links, about
/// `new_fraction` of them never seen before (new ids `0, 1, 2, …` in order). Like a site's
/// pages, most links are repeats of a few navigation links (half of the repeats go to the
/// first 200 ids, skewed towards the very first), the rest of links to earlier pages
/// (uniform). Returns the stream and the number of distinct ids.
pub fn crawl_stream(len: usize, new_fraction: f64, seed: u64) -> (Vec<u64>, u64) {
    let mut rng = SplitMix64::new(seed);
    let mut out = Vec::with_capacity(len);
    let mut next = 0u64;
    for _ in 0..len {
        if next == 0 || rng.next_f64() < new_fraction {
            out.push(next);
            next += 1;
        } else if rng.next_f64() < 0.5 {
            let x = rng.next_f64();
            out.push(((x * x * 200.0) as u64).min(next - 1)); // navigation
        } else {
            out.push(rng.below(next)); // a link to an earlier page
        }
    }
    (out, next)
}

/// This process's resident set size in bytes (Linux: from `/proc/self/statm`).
#[cfg(target_os = "linux")]
pub fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .expect("statm's second field");
    pages * 4096
}

/// A global allocator that counts live heap bytes, for measuring (not estimating) the memory
/// of a `HashSet<String>` in examples and benchmarks:
///
/// ```ignore
/// #[global_allocator]
/// static ALLOC: blockbloom_workload::CountingAlloc = blockbloom_workload::CountingAlloc;
/// let before = blockbloom_workload::CountingAlloc::live_bytes();
/// ```
///
/// This is tooling, not library code: the `blockbloom` crate itself has no global allocator
/// and keeps its only `unsafe` in its allocation helper.
pub struct CountingAlloc;

static LIVE_BYTES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl CountingAlloc {
    /// Bytes currently allocated through this allocator (requested sizes, without the
    /// allocator's own per-allocation overhead).
    pub fn live_bytes() -> usize {
        LIVE_BYTES.load(std::sync::atomic::Ordering::Relaxed)
    }
}

#[allow(unsafe_code)]
// SAFETY: every method forwards to `System` with the caller's arguments unchanged and only
// adjusts a counter on the side, so `System`'s guarantees carry over.
unsafe impl std::alloc::GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size(), std::sync::atomic::Ordering::Relaxed);
        // SAFETY: our caller upholds `GlobalAlloc::alloc`'s contract, which we pass on.
        unsafe { std::alloc::System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size(), std::sync::atomic::Ordering::Relaxed);
        // SAFETY: as for `alloc`.
        unsafe { std::alloc::System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        LIVE_BYTES.fetch_sub(layout.size(), std::sync::atomic::Ordering::Relaxed);
        // SAFETY: `ptr` came from this allocator (hence from `System`) with `layout`.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new: usize) -> *mut u8 {
        // SAFETY: as for `dealloc`/`alloc`; the counter follows the size change.
        let p = unsafe { std::alloc::System.realloc(ptr, layout, new) };
        if !p.is_null() {
            LIVE_BYTES.fetch_add(new, std::sync::atomic::Ordering::Relaxed);
            LIVE_BYTES.fetch_sub(layout.size(), std::sync::atomic::Ordering::Relaxed);
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn urls_are_distinct_and_about_70_bytes() {
        let v = urls(0, 100_000);
        let set: HashSet<&String> = v.iter().collect();
        assert_eq!(set.len(), v.len());
        let mean = v.iter().map(|s| s.len()).sum::<usize>() as f64 / v.len() as f64;
        assert!((65.0..75.0).contains(&mean), "mean URL length {mean}");
    }

    #[test]
    fn dup_stream_has_requested_duplicate_share() {
        let (s, distinct) = dup_stream(200_000, 0.5, 7);
        let set: HashSet<u64> = s.iter().copied().collect();
        assert_eq!(set.len() as u64, distinct);
        let dup = 1.0 - distinct as f64 / s.len() as f64;
        assert!((dup - 0.5).abs() < 0.01, "duplicate share {dup}");
    }

    #[test]
    fn deterministic() {
        assert_eq!(url(12345), url(12345));
        assert_eq!(dup_stream(1000, 0.3, 1), dup_stream(1000, 0.3, 1));
        let mut a = SplitMix64::new(3);
        let mut v: Vec<u32> = (0..100).collect();
        a.shuffle(&mut v);
        let mut sorted = v.clone();
        sorted.sort();
        assert_eq!(sorted, (0..100).collect::<Vec<_>>());
        assert_ne!(v, sorted);
    }
}
