//! What checking a cleanly closed filter file costs when it is opened: for files of the
//! given sizes (GiB), the open that checks the lines against the checksum
//! (`Verification::Full`, the default) against the one that checks the header only
//! (`Verification::HeaderOnly`), with the file in the page cache and, where this process
//! may drop the page cache (root on Linux), read from the disk.
//!
//! ```sh
//! cargo run --release --example verify_on_open -- 1 10          # in a temporary directory
//! cargo run --release --example verify_on_open -- 1 10 -- DIR   # files in DIR
//! ```

use std::time::Instant;

use blockbloom::{BloomFilter, Verification};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (sizes, dir) = match args.iter().position(|a| a == "--") {
        Some(i) => (&args[..i], Some(args[i + 1].clone())),
        None => (&args[..], None),
    };
    let dir = dir
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join(format!("bb-verify-{}", std::process::id())));
    std::fs::create_dir_all(&dir)?;
    println!("| file | seal (close: flush + checksum) | open, lines checked (cached) | open, lines checked (from disk) | open, header only |");
    println!("|---:|---:|---:|---:|---:|");
    for gib in sizes {
        let gib: f64 = gib.parse()?;
        let path = dir.join("verify.bloom");
        let _ = std::fs::remove_file(&path);
        // 9.9 bits per key at 1%: capacity for `gib` GiB.
        let capacity = (gib * (1u64 << 30) as f64 * 8.0 / 9.9) as u64;
        let f = BloomFilter::open_file(&path, capacity, 0.01)?;
        let bytes = f.memory_bytes();
        // Keys over the whole file, so that its pages are data, not holes.
        for i in 0..(bytes as u64 / 4096) {
            f.insert(&i);
        }
        let t = Instant::now();
        f.close()?;
        let seal = t.elapsed().as_secs_f64();
        let open = |v| -> Result<f64, blockbloom::Error> {
            let t = Instant::now();
            let g = BloomFilter::open_file_existing_with(&path, v)?;
            let s = t.elapsed().as_secs_f64();
            drop(g);
            Ok(s)
        };
        let cached = open(Verification::Full)?;
        let header = open(Verification::HeaderOnly)?;
        let cold = if drop_page_cache() {
            format!("{:.2} s", open(Verification::Full)?)
        } else {
            "(not root)".into()
        };
        println!(
            "| {:.2} GB | {seal:.2} s | {cached:.2} s ({:.1} GB/s) | {cold} | {:.3} ms |",
            bytes as f64 / 1e9,
            bytes as f64 / 1e9 / cached,
            header * 1e3
        );
        std::fs::remove_file(&path)?;
    }
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

/// Writes back and drops the page cache (Linux, root), so that the next open reads the
/// disk; `false` where it may not.
fn drop_page_cache() -> bool {
    let _ = std::process::Command::new("sync").status();
    std::fs::write("/proc/sys/vm/drop_caches", "3").is_ok()
}
