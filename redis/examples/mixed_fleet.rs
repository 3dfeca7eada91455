//! A Rust crawler in a Scrapy-Redis fleet: it keys each request by Scrapy's request
//! fingerprint (`blockbloom::url::request_fingerprint`), as `RedisBloomDupeFilter` does, so
//! that it and the spiders share one filter and no page is fetched by both.
//!
//! ```text
//! redis-server --port 6390 --save "" &
//! python3 -m http.server 8000 --directory /usr/share/doc/python3-doc/html &
//! # a Scrapy-Redis spider with DUPEFILTER_CLASS = "blockbloom.scrapy.RedisBloomDupeFilter",
//! # REDIS_URL = "redis://127.0.0.1:6390/", BLOCKBLOOM_CAPACITY = 100000, BLOCKBLOOM_FPR = 1e-5,
//! # SCHEDULER_DUPEFILTER_KEY = "docs:dupefilter", started at http://127.0.0.1:8000/index.html;
//! # beside it:
//! cargo run --release -p blockbloom-redis --example mixed_fleet -- redis://127.0.0.1:6390/ \
//!     docs:dupefilter 100000 1e-5 fetched.txt http://127.0.0.1:8000/library/index.html
//! ```
//!
//! It crawls breadth-first from the start pages no process has claimed, over plain
//! HTTP/1.0, following `<a href>` links on the same host, and writes each URL it fetched
//! to FETCHED_FILE; `--delay-ms=N` waits N ms before each request. `python/tests/test_scrapy.py::test_a_rust_crawler_and_a_scrapy_redis_spider_share_one_filter`
//! runs both and checks that no page was fetched by both.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::TcpStream;

use blockbloom::url::request_fingerprint;
use blockbloom::StrBytes;
use blockbloom_redis::RedisBloomFilter;

type Failure = Box<dyn std::error::Error>;

/// [`get`], tried again up to three times after a network error (a server whose queue
/// of connections is full resets them, as Scrapy's retries also meet).
fn get_retrying(url: &url::Url) -> Result<(u16, String, Vec<u8>), Failure> {
    let mut tries = 0;
    loop {
        match get(url) {
            Err(e) if tries < 3 && e.downcast_ref::<std::io::Error>().is_some() => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(50 * tries));
            }
            r => return r,
        }
    }
}

/// Status, `Content-Type` and body of `GET url` (HTTP/1.0, so the body ends with the
/// connection).
fn get(url: &url::Url) -> Result<(u16, String, Vec<u8>), Failure> {
    let host = url.host_str().ok_or("no host")?;
    let port = url.port_or_known_default().ok_or("no port")?;
    let mut stream = TcpStream::connect((host, port))?;
    let target = &url[url::Position::BeforePath..url::Position::AfterQuery];
    write!(
        stream,
        "GET {target} HTTP/1.0\r\nHost: {host}:{port}\r\n\r\n"
    )?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("no end of headers")?;
    let head = String::from_utf8_lossy(&response[..split]).into_owned();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or("no status")?;
    let content_type = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-type:")
                .map(|v| v.trim().to_owned())
        })
        .unwrap_or_default();
    Ok((status, content_type, response[split + 4..].to_vec()))
}

/// The `href` of every `<a>` tag of `html`, resolved against `base`, on `base`'s host.
fn links(base: &url::Url, html: &str) -> Vec<url::Url> {
    let mut found = Vec::new();
    for tag in html.split("<a ").skip(1) {
        let tag = &tag[..tag.find('>').unwrap_or(tag.len())];
        let Some(start) = tag.find("href=\"").map(|i| i + 6) else {
            continue;
        };
        let Some(len) = tag[start..].find('"') else {
            continue;
        };
        let href = tag[start..start + len].replace("&amp;", "&");
        if let Ok(mut link) = base.join(&href) {
            link.set_fragment(None);
            if link.scheme() == "http"
                && link.host_str() == base.host_str()
                && link.port() == base.port()
            {
                found.push(link);
            }
        }
    }
    found
}

/// Queues the `urls` no process has claimed yet, claiming them: the spiders' key for each,
/// checked and set in one round trip.
fn claim(
    seen: &mut RedisBloomFilter,
    urls: Vec<url::Url>,
    frontier: &mut VecDeque<url::Url>,
) -> Result<(), Failure> {
    let fps: Vec<[u8; 20]> = urls
        .iter()
        .map(|u| request_fingerprint("GET", u.as_str(), b""))
        .collect::<Result<_, _>>()?;
    let keys: Vec<StrBytes<'_>> = fps.iter().map(|fp| StrBytes(fp)).collect();
    for (url, new) in urls.into_iter().zip(seen.insert_if_absent_many(&keys)?) {
        if new {
            frontier.push_back(url);
        }
    }
    Ok(())
}

fn main() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (delay, args) = match args.split_first() {
        Some((flag, rest)) if flag.starts_with("--delay-ms=") => (flag[11..].parse()?, rest),
        _ => (0, &args[..]),
    };
    let [redis, name, capacity, fpr, out, starts @ ..] = args else {
        return Err("usage: mixed_fleet [--delay-ms=N] REDIS_URL FILTER CAPACITY FPR FETCHED_FILE START_URL...".into());
    };
    let mut seen = RedisBloomFilter::open_or_create(redis, name, capacity.parse()?, fpr.parse()?)?;
    let mut fetched = std::fs::File::create(out)?;
    let starts: Vec<url::Url> = starts
        .iter()
        .map(|s| url::Url::parse(s))
        .collect::<Result<_, _>>()?;
    let mut frontier = VecDeque::new();
    claim(&mut seen, starts, &mut frontier)?;
    let (mut pages, mut offered) = (0u64, 0u64);
    while let Some(page) = frontier.pop_front() {
        std::thread::sleep(std::time::Duration::from_millis(delay)); // politeness
        let (status, content_type, body) = get_retrying(&page)?;
        writeln!(fetched, "{page}")?;
        pages += 1;
        if status != 200 || !content_type.starts_with("text/html") {
            continue;
        }
        let found = links(&page, &String::from_utf8_lossy(&body));
        offered += found.len() as u64;
        claim(&mut seen, found, &mut frontier)?;
    }
    println!("fetched {pages} pages; {offered} links offered to the shared filter");
    Ok(())
}
