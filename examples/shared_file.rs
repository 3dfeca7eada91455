//! The file-backed filter in figures: opening a 1 GiB filter file against loading it as a
//! snapshot, and the throughput of one and of two processes inserting through one file.
//!
//! ```sh
//! cargo run --release --example shared_file            # in a temporary directory
//! cargo run --release --example shared_file -- DIR     # files in DIR
//! ```

use std::process::Command;
use std::time::Instant;

use blockbloom::{BloomFilter, Verification};
use blockbloom_workload::{dup_stream, url};

const CAPACITY: u64 = 865_000_000; // 1.07 GB at 1%
const LINKS: usize = 2_000_000;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some("--worker") {
        let path = args.next().expect("path");
        let seed: u64 = args.next().expect("seed").parse()?;
        return worker(&path, seed);
    }
    let dir = args
        .next()
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::env::temp_dir().join(format!("bb-shared-file-{}", std::process::id()))
        });
    std::fs::create_dir_all(&dir)?;
    let big = dir.join("big.bloom");
    let _ = std::fs::remove_file(&big);

    let t = Instant::now();
    let f = BloomFilter::open_file(&big, CAPACITY, 0.01)?;
    println!(
        "create a {:.2} GB filter file: {:.1} ms",
        f.memory_bytes() as f64 / 1e9,
        ms(t)
    );
    for i in 0..1_000_000u64 {
        f.insert(&url(i));
    }
    let t = Instant::now();
    f.close()?;
    println!(
        "insert 10^6 URLs, close (flush + checksum): {:.0} ms",
        ms(t)
    );
    let t = Instant::now();
    let f = BloomFilter::open_file_existing_with(&big, Verification::HeaderOnly)?;
    let opened = ms(t);
    assert!(f.contains(&url(7)));
    drop(f);
    let t = Instant::now();
    let g = BloomFilter::load(&big)?;
    let loaded = ms(t);
    assert!(g.contains(&url(7)));
    drop(g);
    println!(
        "open_file_existing (header only): {opened:.2} ms; load (read and verify): {loaded:.0} ms"
    );
    std::fs::remove_file(&big)?;

    // Throughput: the same calls on a filter in memory, then through one file from one
    // process and from two at once (started together once their keys are built).
    let (ids, _) = dup_stream(LINKS, 0.5, 11);
    let keys: Vec<String> = ids.iter().map(|&i| url(i)).collect();
    let mem = BloomFilter::with_capacity(2 * LINKS as u64, 0.01)?;
    let t = Instant::now();
    let new = keys
        .iter()
        .filter(|k| mem.insert_if_absent(k.as_str()))
        .count();
    println!(
        "in memory, 1 thread: {new} new of {LINKS}, {:.1} ns per call",
        t.elapsed().as_secs_f64() * 1e9 / LINKS as f64
    );
    drop((mem, keys));
    for procs in [1, 2] {
        let path = dir.join(format!("shared{procs}.bloom"));
        let _ = std::fs::remove_file(&path);
        let go = dir.join("go");
        let _ = std::fs::remove_file(&go);
        BloomFilter::open_file(&path, 2 * LINKS as u64, 0.01)?.close()?;
        let children: Vec<_> = (0..procs)
            .map(|p| {
                Command::new(std::env::current_exe().unwrap())
                    .args(["--worker", path.to_str().unwrap(), &p.to_string()])
                    .spawn()
            })
            .collect::<Result<_, _>>()?;
        while (0..procs).any(|p| !dir.join(format!("ready.{p}")).exists()) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let t = Instant::now();
        std::fs::write(&go, b"")?;
        for mut c in children {
            assert!(c.wait()?.success());
        }
        let secs = t.elapsed().as_secs_f64();
        println!(
            "{procs} process(es) through one file, {LINKS} links each: {:.2} s, {:.1} M calls/s in all",
            secs,
            (procs * LINKS) as f64 / secs / 1e6
        );
        for p in 0..procs {
            std::fs::remove_file(dir.join(format!("ready.{p}")))?;
        }
        std::fs::remove_file(&path)?;
    }
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

/// One process: `insert_if_absent` of a 50%-repeat link stream, the same for every worker
/// (so their new URLs race), started when the parent says go.
fn worker(path: &str, seed: u64) -> Result<(), Box<dyn std::error::Error>> {
    let (ids, _) = dup_stream(LINKS, 0.5, 11);
    let keys: Vec<String> = ids.iter().map(|&i| url(i)).collect();
    let f = BloomFilter::open_file_existing(path)?;
    let dir = std::path::Path::new(path).parent().expect("a directory");
    std::fs::write(dir.join(format!("ready.{seed}")), b"")?;
    while !dir.join("go").exists() {
        std::thread::yield_now();
    }
    let t = Instant::now();
    let new = keys
        .iter()
        .filter(|k| f.insert_if_absent(k.as_str()))
        .count();
    let line = format!(
        "  worker {seed}: {new} new of {LINKS}, {:.1} ns per call\n",
        t.elapsed().as_secs_f64() * 1e9 / LINKS as f64
    );
    std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes())?;
    f.close()?;
    Ok(())
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}
