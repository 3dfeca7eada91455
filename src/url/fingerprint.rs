//! Scrapy's request fingerprint (`scrapy.utils.request.fingerprint`, Scrapy ≥ 2.7): SHA-1
//! over a JSON object of the canonical URL, the method and the body.

use core::fmt::Write;

use super::{canonicalize_url, safe_url_string, InvalidUrl};

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
    let safe = safe_url_string(url)?;
    if !safe.contains("://") && !safe.starts_with("about:") && !safe.starts_with("data:") {
        return Err(InvalidUrl(
            "no scheme:// (Scrapy's \"Missing scheme in request url\")",
        ));
    }
    let canonical = canonicalize_url(&safe)?;
    // json.dumps({...}, sort_keys=True): keys in order, ", " and ": " between, ASCII only.
    let mut json = String::with_capacity(canonical.len() + 2 * body.len() + 64);
    json.push_str("{\"body\": \"");
    for b in body {
        let _ = write!(json, "{b:02x}");
    }
    json.push_str("\", \"headers\": {}, \"method\": ");
    push_json_string(&method.to_uppercase(), &mut json);
    json.push_str(", \"url\": ");
    push_json_string(&canonical, &mut json);
    json.push('}');
    Ok(sha1_smol::Sha1::from(json.as_bytes()).digest().bytes())
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
