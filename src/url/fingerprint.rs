//! Scrapy's request fingerprint (`scrapy.utils.request.fingerprint`, Scrapy ≥ 2.7): SHA-1
//! over a JSON object of the canonical URL, the method and the body (and the headers asked
//! for); and scrapy-redis' (its `RFPDupeFilter.request_fingerprint`), the same object
//! without the headers' field.

use core::fmt::Write;

use super::{safe_url_string, InvalidUrl, UrlCanonicalizer};

/// The 20 bytes Scrapy's default request fingerprinter gives a `Request(url, method,
/// body=body)`: the key `RedisBloomDupeFilter` and Scrapy's own dupefilter use, so that a
/// Rust crawler and Scrapy spiders share one filter.
///
/// As Scrapy does: the method is upper-cased, the URL made safe as a `Request` stores it,
/// then [canonicalized](super::canonicalize_url) (fragment dropped), and the body taken as
/// bytes; no header is included. An error where Scrapy's `Request` raises `ValueError`: a
/// URL without `scheme://` (but `about:` and `data:` ones) or without a canonical form.
///
/// ```
/// use blockbloom::url::request_fingerprint;
///
/// let fp = request_fingerprint("GET", "http://example.com/a?y=2&x=1#top", b"")?;
/// assert_eq!(fp, request_fingerprint("get", "http://EXAMPLE.com/a?x=1&y=2", b"")?);
/// assert_ne!(fp, request_fingerprint("POST", "http://example.com/a?x=1&y=2", b"")?);
/// # Ok::<(), blockbloom::url::InvalidUrl>(())
/// ```
pub fn request_fingerprint(method: &str, url: &str, body: &[u8]) -> Result<[u8; 20], InvalidUrl> {
    request_fingerprint_with(method, url, body, &[], &[], &UrlCanonicalizer::new())
}

/// Scrapy's `fingerprint(request, include_headers=…, keep_fragments=…)`:
/// [`request_fingerprint`] with the request's `headers` (name, value; a name may repeat,
/// for several values) whose names are in `include_headers` (compared without case, as
/// Scrapy's `Headers` does), and the URL made canonical by `urls`: its
/// [`keep_fragments`](UrlCanonicalizer::keep_fragments) is Scrapy's `keep_fragments`, its
/// [`w3lib`](UrlCanonicalizer::w3lib) the w3lib beside the Scrapy to agree with. Its lossy
/// options make fingerprints that are no longer Scrapy's.
///
/// ```
/// use blockbloom::url::{request_fingerprint, request_fingerprint_with, UrlCanonicalizer, W3libVersion};
///
/// let url = "http://example.com/a#b";
/// let scrapy = UrlCanonicalizer::new();
/// let headers: [(&[u8], &[u8]); 2] = [(b"Accept-Language", b"en"), (b"Cookie", b"id=1")];
/// // Without `include_headers` and options, as `request_fingerprint`:
/// assert_eq!(
///     request_fingerprint_with("GET", url, b"", &headers, &[], &scrapy)?,
///     request_fingerprint("GET", url, b"")?
/// );
/// let by_language = request_fingerprint_with("GET", url, b"", &headers, &[b"accept-language"], &scrapy)?;
/// assert_ne!(by_language, request_fingerprint("GET", url, b"")?);
/// let by_fragment = request_fingerprint_with("GET", url, b"", &[], &[], &scrapy.clone().keep_fragments())?;
/// assert_ne!(by_fragment, request_fingerprint("GET", "http://example.com/a#c", b"")?);
/// // A spider whose w3lib is 2.5:
/// let w3lib_2_5 = UrlCanonicalizer::new().w3lib(W3libVersion::V2_5);
/// assert_ne!(
///     request_fingerprint_with("GET", "http://faß.de/", b"", &[], &[], &w3lib_2_5)?,
///     request_fingerprint("GET", "http://faß.de/", b"")?
/// );
/// # Ok::<(), blockbloom::url::InvalidUrl>(())
/// ```
///
/// # Errors
/// As [`request_fingerprint`].
pub fn request_fingerprint_with(
    method: &str,
    url: &str,
    body: &[u8],
    headers: &[(&[u8], &[u8])],
    include_headers: &[&[u8]],
    urls: &UrlCanonicalizer,
) -> Result<[u8; 20], InvalidUrl> {
    fingerprint(method, url, body, Some((headers, include_headers)), urls)
}

/// The 20 bytes scrapy-redis' `RFPDupeFilter` keys a `Request(url, method, body=body)` by
/// (their hexadecimal digits are the members of its set): the key of
/// `RedisBloomDupeFilter` with `BLOCKBLOOM_FINGERPRINT = "scrapy-redis"`, for a Rust
/// crawler sharing such a filter. SHA-1 over the JSON object of
/// [`request_fingerprint`] without its `headers` field (so never equal to Scrapy's): the
/// URL made canonical by `urls` (a fragment dropped, unless
/// [`keep_fragments`](UrlCanonicalizer::keep_fragments), which scrapy-redis never asks for;
/// [`w3lib`](UrlCanonicalizer::w3lib) the w3lib beside the spiders).
///
/// ```
/// use blockbloom::url::{request_fingerprint, scrapy_redis_request_fingerprint, UrlCanonicalizer};
///
/// let urls = UrlCanonicalizer::new();
/// let fp = scrapy_redis_request_fingerprint("GET", "http://example.com/a?y=2&x=1#top", b"", &urls)?;
/// // scrapy-redis' set holds it as hexadecimal digits (scrapy-redis 0.9.1 gives these):
/// let member = fp.iter().map(|b| format!("{b:02x}")).collect::<String>();
/// assert_eq!(member, "e4207724894a004b843782174d422a1a795c1cb3");
/// assert_eq!(fp, scrapy_redis_request_fingerprint("get", "http://EXAMPLE.com/a?x=1&y=2", b"", &urls)?);
/// assert_ne!(fp, request_fingerprint("GET", "http://example.com/a?x=1&y=2", b"")?);
/// # Ok::<(), blockbloom::url::InvalidUrl>(())
/// ```
///
/// # Errors
/// As [`request_fingerprint`].
pub fn scrapy_redis_request_fingerprint(
    method: &str,
    url: &str,
    body: &[u8],
    urls: &UrlCanonicalizer,
) -> Result<[u8; 20], InvalidUrl> {
    fingerprint(method, url, body, None, urls)
}

/// A request's headers (name, value) and the names whose values a fingerprint includes.
type HeadersIncluded<'a> = (&'a [(&'a [u8], &'a [u8])], &'a [&'a [u8]]);

/// The fingerprints' JSON object and its SHA-1: with a `headers` field (Scrapy's, of the
/// headers given and the names to include) or without one (scrapy-redis').
fn fingerprint(
    method: &str,
    url: &str,
    body: &[u8],
    headers: Option<HeadersIncluded<'_>>,
    urls: &UrlCanonicalizer,
) -> Result<[u8; 20], InvalidUrl> {
    let safe = safe_url_string(url, urls.w3lib_version())?;
    if !safe.contains("://") && !safe.starts_with("about:") && !safe.starts_with("data:") {
        return Err(InvalidUrl(
            "no scheme:// (Scrapy's \"Missing scheme in request url\")",
        ));
    }
    let canonical = urls.canonicalize(safe.as_bytes())?;
    // json.dumps({...}, sort_keys=True): keys in order, ", " and ": " between, ASCII only.
    let mut json = String::with_capacity(canonical.len() + 2 * body.len() + 64);
    json.push_str("{\"body\": \"");
    push_hex(body, &mut json);
    json.push('"');
    if let Some((headers, include_headers)) = headers {
        json.push_str(", \"headers\": {");
        push_headers(headers, include_headers, &mut json);
        json.push('}');
    }
    json.push_str(", \"method\": ");
    push_json_string(&method.to_uppercase(), &mut json);
    json.push_str(", \"url\": ");
    push_json_string(&canonical, &mut json);
    json.push('}');
    Ok(sha1_smol::Sha1::from(json.as_bytes()).digest().bytes())
}

/// Scrapy's `headers` field's contents: {hex(lower-cased name): [hex(value), ...]} for each
/// included name the request has, by key.
fn push_headers(headers: &[(&[u8], &[u8])], include_headers: &[&[u8]], json: &mut String) {
    let mut included: Vec<(String, Vec<&[u8]>)> = Vec::new();
    for name in include_headers {
        let key = hex(&name.to_ascii_lowercase());
        if included.iter().any(|(k, _)| *k == key) {
            continue;
        }
        let values: Vec<&[u8]> = headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|&(_, v)| v)
            .collect();
        if !values.is_empty() {
            included.push((key, values));
        }
    }
    included.sort();
    for (i, (key, values)) in included.iter().enumerate() {
        if i > 0 {
            json.push_str(", ");
        }
        let _ = write!(json, "\"{key}\": [");
        for (j, v) in values.iter().enumerate() {
            if j > 0 {
                json.push_str(", ");
            }
            json.push('"');
            push_hex(v, json);
            json.push('"');
        }
        json.push(']');
    }
}

/// `bytes.hex()`.
fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(2 * bytes.len());
    push_hex(bytes, &mut out);
    out
}

fn push_hex(bytes: &[u8], out: &mut String) {
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
}

/// A JSON string as Python's `json.dumps` writes it with `ensure_ascii=True`.
fn push_json_string(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
}
