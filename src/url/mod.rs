//! Pages, not strings: the canonical form of a URL, byte for byte as Scrapy's
//! (`w3lib.url.canonicalize_url`), and Scrapy's request fingerprint, so that two spellings
//! of one page are one key, and a Rust process and Scrapy spiders can share one filter.
//!
//! ```
//! use blockbloom::url::canonicalize_url;
//!
//! assert_eq!(
//!     canonicalize_url("HTTP://Example.COM/a b/?z=1&a=2#top")?,
//!     "http://example.com/a%20b/?a=2&z=1"
//! );
//! // Dedup pages, not spellings:
//! let seen = blockbloom::BloomFilter::with_capacity(1_000, 0.01)?;
//! assert!(seen.insert_if_absent(&canonicalize_url("http://example.com/a?x=1&y=2")?));
//! assert!(!seen.insert_if_absent(&canonicalize_url("http://EXAMPLE.com/a?y=2&x=1#part")?));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What the canonical form changes
//! As w3lib 2.6 (the newest release followed; [`W3libVersion`] says what 2.5, also
//! followed, does otherwise), in this order:
//! - Bytes that are not UTF-8 become `%XX`; spaces and control characters at the ends are
//!   dropped, tabs and newlines everywhere.
//! - The scheme and host are lower-cased. A special scheme's host (`http`, `https`, `ws`,
//!   `wss`, `ftp`, `file`) is percent-decoded, then a non-ASCII one written in IDNA 2003
//!   but for `ß` and `ς` (`bücher.de` → `xn--bcher-kva.de`, `faß.de` → `xn--fa-hia.de`),
//!   and one that ends in a number read as an IPv4 address (`0x7f.1` → `127.0.0.1`);
//!   another scheme's host is percent-encoded. An IPv6 address is written as Python writes
//!   it (`[::FFFF:1.2.3.4]` → `[::ffff:102:304]`); a port loses its leading zeros but is
//!   kept, also a default one (`:80`).
//! - The path is decoded and encoded again (`%7e` → `~`, `%2f` → `%2F`, `é` → `%C3%A9`),
//!   keeping the escapes of `/`, `;`, `?` and `%`; `.` and `..` segments are resolved; an
//!   empty path is `/`.
//! - Query arguments are decoded (`+` is a space), sorted by name then value, and encoded
//!   again (a space as `+`); empty arguments (`&&`) are dropped, blank values kept (`a=`).
//! - The fragment (`#...`) is dropped.
//!
//! [`UrlCanonicalizer`] adds lossy options, off by default: tracking arguments, default
//! ports and trailing slashes stripped.
//!
//! # Where it differs from the `url` crate
//! [`canonicalize_url`] splits a URL as w3lib does, not by the URL Standard's parser that
//! the `url` crate implements, because Scrapy's fingerprints come from w3lib's split. The
//! two disagree on: default ports (`url` drops `:80`), IDNA (`url` uses UTS 46 throughout,
//! w3lib IDNA 2003 but for `ß` and `ς`; 2.5 also maps those: `faß.de` → `fass.de`),
//! numeric hosts in 2.5 (`url` and 2.6 read `http://0x7f.1/` as `127.0.0.1`), backslashes
//! in the query, the percent-encoding sets, and query order (`url` keeps it). The test
//! `url_crate_differences` shows each case.
//!
//! Python, the CLI (`dedup --canonical-urls`) and Redis get the same bytes: the Python
//! package calls this module.

mod fingerprint;
mod host;
mod quote;
mod split;
mod strip;

use core::fmt;
use core::str::FromStr;
use std::borrow::Cow;

pub use fingerprint::{
    request_fingerprint, request_fingerprint_with, scrapy_redis_request_fingerprint,
};
pub use strip::{UrlCanonicalizer, TRACKING_PARAMS};

/// Why a URL has no canonical form (w3lib raises `ValueError` for the same inputs): an
/// invalid IPv6 address or port, an unmatched bracket, ...
///
/// ```
/// let err = blockbloom::url::canonicalize_url("http://[::1/").unwrap_err();
/// assert_eq!(err.to_string(), "invalid URL: an unmatched bracket in the authority");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidUrl(&'static str);

impl fmt::Display for InvalidUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid URL: {}", self.0)
    }
}

impl std::error::Error for InvalidUrl {}

/// Which w3lib release's `canonicalize_url` to follow: Scrapy's fingerprints are made by
/// the w3lib installed beside it, and releases differ on some hosts and paths. The default
/// is the newest, 2.6, which `pip install scrapy` installs today; choose 2.5 to share a
/// filter with spiders that still have it, or to keep using keys made before 2.6. Releases
/// before 2.5 are not followed.
///
/// What 2.6 changed (each case is in this module's tests):
/// - `ß` and `ς` are kept in hosts (UTS 46's deviations): `faß.de` is `xn--fa-hia.de`,
///   not `fass.de`;
/// - a special scheme's host (`http`, `https`, `ws`, `wss`, `ftp`, `file`) is
///   percent-decoded (`%41.com` is `a.com`) and, where it ends in a number, read as an
///   IPv4 address (`0x7f.1` is `127.0.0.1`); one that is not a valid host (a space, a
///   `%`, `1.2.3.256`) is an error;
/// - any other scheme's host, and that of a URL without a scheme (`//host`), is kept
///   opaque: percent-encoded (`//рф` is `//%d1%80%d1%84`), an error with `<`, `>`, `^`,
///   `|` or a space;
/// - `https:example.com` and `https:///example.com` are `https://example.com/`;
/// - `.` and `..` segments are resolved before `;params` are split off, also when
///   percent-encoded (`/a/%2E%2e/b` is `/b`).
///
/// ```
/// use blockbloom::url::{UrlCanonicalizer, W3libVersion};
///
/// assert_eq!("2.5.0".parse::<W3libVersion>()?, W3libVersion::V2_5);
/// let v2_5 = UrlCanonicalizer::new().w3lib(W3libVersion::V2_5);
/// assert_eq!(v2_5.canonicalize("http://faß.de/")?, "http://fass.de/");
/// let v2_6 = UrlCanonicalizer::new(); // the default
/// assert_eq!(v2_6.canonicalize("http://faß.de/")?, "http://xn--fa-hia.de/");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum W3libVersion {
    /// w3lib 2.5.
    V2_5,
    /// w3lib 2.6, the default.
    #[default]
    V2_6,
}

impl fmt::Display for W3libVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            W3libVersion::V2_5 => "2.5",
            W3libVersion::V2_6 => "2.6",
        })
    }
}

/// `"2.5"` or `"2.6"`, with or without a patch number (`"2.6.0"`, as
/// `importlib.metadata.version("w3lib")` gives it).
impl FromStr for W3libVersion {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let minor = s.split('.').take(2).collect::<Vec<_>>().join(".");
        let patch_ok = s
            .splitn(3, '.')
            .nth(2)
            .is_none_or(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
        match minor.as_str() {
            "2.5" if patch_ok => Ok(W3libVersion::V2_5),
            "2.6" if patch_ok => Ok(W3libVersion::V2_6),
            _ => Err(format!(
                "w3lib {s:?} is not followed: blockbloom follows w3lib 2.5 and 2.6"
            )),
        }
    }
}

/// Schemes whose path may end in `;params` (Python 3.11's `urllib.parse.uses_params`).
const USES_PARAMS: [&str; 16] = [
    "", "ftp", "hdl", "prospero", "http", "imap", "https", "shttp", "rtsp", "rtsps", "rtspu",
    "sip", "sips", "mms", "sftp", "tel",
];
/// Schemes written with `//` before an empty authority (`urllib.parse.uses_netloc`).
const USES_NETLOC: [&str; 26] = [
    "", "ftp", "http", "gopher", "nntp", "telnet", "imap", "wais", "file", "mms", "https", "shttp",
    "snews", "prospero", "rtsp", "rtsps", "rtspu", "rsync", "svn", "svn+ssh", "sftp", "nfs", "git",
    "git+ssh", "ws", "wss",
];

/// The canonical form of `url` (a `&str`, or bytes, which need not be UTF-8): equal to
/// `w3lib.url.canonicalize_url(url)`, which Scrapy's request fingerprint and dupefilter
/// use. The rules are at the [module](self) documentation.
///
/// ```
/// use blockbloom::url::canonicalize_url;
///
/// let page = "http://www.example.com/do?c=3&b=5&b=2&a=50";
/// assert_eq!(canonicalize_url(page)?, "http://www.example.com/do?a=50&b=2&b=5&c=3");
/// assert_eq!(canonicalize_url("http://bücher.de/ß")?, "http://xn--bcher-kva.de/%C3%9F");
/// assert_eq!(canonicalize_url(b"http://a.com/caf\xe9")?, "http://a.com/caf%E9"); // Latin-1
/// # Ok::<(), blockbloom::url::InvalidUrl>(())
/// ```
pub fn canonicalize_url<U: AsRef<[u8]> + ?Sized>(url: &U) -> Result<String, InvalidUrl> {
    canonicalize_with(url.as_ref(), &QueryRules::default())
}

/// w3lib's `canonicalize_url` arguments other than the URL and its encoding:
/// `keep_blank_values`, `keep_fragments`, `query_separator` (set through
/// [`UrlCanonicalizer`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct QueryRules<'s> {
    pub(crate) w3lib: W3libVersion,
    pub(crate) keep_blank_values: bool,
    pub(crate) keep_fragments: bool,
    pub(crate) separator: &'s str,
}

impl Default for QueryRules<'_> {
    fn default() -> Self {
        QueryRules {
            w3lib: W3libVersion::default(),
            keep_blank_values: true,
            keep_fragments: false,
            separator: "&",
        }
    }
}

/// [`canonicalize_url`] with w3lib's other arguments.
pub(crate) fn canonicalize_with(url: &[u8], rules: &QueryRules<'_>) -> Result<String, InvalidUrl> {
    let parts = split::safe_split(&split::prepare(url), rules.w3lib)?;
    Ok(canonicalize_parts(parts, rules))
}

/// `w3lib.url.safe_url_string`: the URL with its parts made safe, as a Scrapy `Request`
/// stores it.
pub(crate) fn safe_url_string(url: &str, w3lib: W3libVersion) -> Result<String, InvalidUrl> {
    let parts = split::safe_split(&split::prepare(url.as_bytes()), w3lib)?;
    let mut out = unsplit(&parts.scheme, &parts.netloc, parts.path, &parts.query);
    if !parts.fragment.is_empty() {
        out.push('#');
        out.push_str(&parts.fragment);
    }
    Ok(out)
}

/// Whether `line` is a URL with an authority (`scheme://...`): the lines `dedup
/// --canonical-urls` compares by their canonical form; others are compared as they are.
///
/// ```
/// use blockbloom::url::has_authority;
///
/// assert!(has_authority(b"https://example.com/a"));
/// assert!(!has_authority(b"mailto:someone@example.com"));
/// assert!(!has_authority(b"a line of text"));
/// ```
pub fn has_authority(line: &[u8]) -> bool {
    let text = split::prepare(line);
    let bytes = text.as_bytes();
    let scheme = bytes
        .iter()
        .position(|&b| !(b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.')));
    matches!(scheme, Some(n) if n > 0 && bytes[0].is_ascii_alphabetic() && bytes[n..].starts_with(b"://"))
}

fn canonicalize_parts(parts: split::SafeParts, rules: &QueryRules<'_>) -> String {
    let split::SafeParts {
        scheme,
        netloc,
        path,
        query,
        fragment,
    } = parts;
    let (path, params) = match path.rfind('/').map_or(0, |i| i + 1) {
        last if USES_PARAMS.contains(&scheme.as_str()) => match path[last..].find(';') {
            Some(semi) => (&path[..last + semi], &path[last + semi + 1..]),
            None => (path.as_str(), ""),
        },
        _ => (path.as_str(), ""),
    };
    let query = if query.is_empty() {
        query
    } else {
        quote::canonical_query(&query, rules)
    };
    let mut canonical = if path.is_empty() {
        "/".to_owned()
    } else {
        let mut out = String::with_capacity(path.len());
        quote::quote_into(
            &quote::unquote_path(path),
            &quote::PATH_OUT,
            false,
            &mut out,
        );
        out
    };
    // w3lib 2.6 resolves them while splitting (`split::safe_split`), before the params.
    if rules.w3lib == W3libVersion::V2_5 && canonical.starts_with('/') {
        canonical = remove_dot_segments(&canonical, W3libVersion::V2_5).into_owned();
    }
    if !params.is_empty() {
        canonical.push(';');
        canonical.push_str(params);
    }
    let netloc = match netloc.rfind('@') {
        Some(at) => format!("{}{}", &netloc[..=at], lower_host(&netloc[at + 1..])),
        None => lower_host(&netloc),
    };
    let mut url = unsplit(&scheme, &normalize_ipv6(&netloc), canonical, &query);
    if rules.keep_fragments && !fragment.is_empty() {
        url.push('#');
        url.push_str(&fragment);
    }
    url
}

fn lower_host(host: &str) -> String {
    let host = host.to_lowercase();
    host.strip_suffix(':').map_or(host.clone(), str::to_owned)
}

/// `[address]` as Python prints the address (`_normalize_ipv6_host`).
fn normalize_ipv6(netloc: &str) -> String {
    let Some(open) = netloc.find('[') else {
        return netloc.to_owned();
    };
    let Some(close) = netloc[open..].find(']').map(|i| i + open) else {
        return netloc.to_owned();
    };
    match host::python_ipv6(&netloc[open + 1..close]) {
        Some(address) => format!("{}[{address}]{}", &netloc[..open], &netloc[close + 1..]),
        None => netloc.to_owned(),
    }
}

/// RFC 3986 section 5.2.4 on a path that starts with `/`, as w3lib does it; 2.6 also
/// takes `%2e` for `.`.
fn remove_dot_segments(path: &str, w3lib: W3libVersion) -> Cow<'_, str> {
    let percent = w3lib == W3libVersion::V2_6;
    if !(path.contains("/.") || percent && path.contains("/%2")) {
        return Cow::Borrowed(path);
    }
    #[derive(PartialEq)]
    enum Dots {
        One,
        Two,
        No,
    }
    let dots = |segment: &str| match segment {
        "." => Dots::One,
        ".." => Dots::Two,
        _ if !percent || segment.len() > 6 => Dots::No,
        _ => match segment.to_ascii_lowercase().as_str() {
            "%2e" => Dots::One,
            ".%2e" | "%2e." | "%2e%2e" => Dots::Two,
            _ => Dots::No,
        },
    };
    let segments: Vec<&str> = path[1..].split('/').collect();
    let (last, rest) = segments
        .split_last()
        .expect("split yields one segment at least");
    let mut output: Vec<&str> = Vec::with_capacity(segments.len());
    for &segment in rest {
        match dots(segment) {
            Dots::Two => {
                output.pop();
            }
            Dots::One => {}
            Dots::No => output.push(segment),
        }
    }
    match dots(last) {
        Dots::Two => {
            output.pop();
            output.push("");
        }
        Dots::One => output.push(""),
        Dots::No => output.push(last),
    }
    Cow::Owned(format!("/{}", output.join("/")))
}

/// The URL of a parsed URL's six parts (`urllib.parse.ParseResult`: scheme, netloc, path,
/// params, query, fragment), joined as w3lib joins them (`urlunparse`): what
/// `canonicalize_url` is given when it is given a parsed URL.
///
/// ```
/// use blockbloom::url::urlunparse;
/// assert_eq!(urlunparse(["http", "a.com", "/p", "x", "q=1", "f"]), "http://a.com/p;x?q=1#f");
/// assert_eq!(urlunparse(["http", "", "", "", "", ""]), "http://");
/// ```
pub fn urlunparse(parts: [&str; 6]) -> String {
    let [scheme, netloc, path, params, query, fragment] = parts;
    let path = if params.is_empty() {
        path.to_owned()
    } else {
        format!("{path};{params}")
    };
    let mut url = unsplit(scheme, netloc, path, query);
    if !fragment.is_empty() {
        url.push('#');
        url.push_str(fragment);
    }
    url
}

/// `urllib.parse.urlunsplit` without a fragment.
fn unsplit(scheme: &str, netloc: &str, mut path: String, query: &str) -> String {
    if !netloc.is_empty() {
        if !path.is_empty() && !path.starts_with('/') {
            path.insert(0, '/');
        }
        path = format!("//{netloc}{path}");
    } else if path.starts_with("//")
        || (!scheme.is_empty()
            && USES_NETLOC.contains(&scheme)
            && (path.is_empty() || path.starts_with('/')))
    {
        path = format!("//{path}");
    }
    let mut out = String::with_capacity(scheme.len() + path.len() + query.len() + 2);
    if !scheme.is_empty() {
        out.push_str(scheme);
        out.push(':');
    }
    out.push_str(&path);
    if !query.is_empty() {
        out.push('?');
        out.push_str(query);
    }
    out
}

#[cfg(test)]
mod tests;
