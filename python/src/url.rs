//! `canonicalize_url` and `request_fingerprint`: `blockbloom::url` for Python, the same
//! bytes as w3lib and Scrapy, with the arguments their users pass.

use std::borrow::Cow;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString, PyTuple};

/// A URL given as w3lib takes it: a `str` (a lone surrogate raises `UnicodeEncodeError`, as
/// w3lib does), `bytes` (in any encoding), or a parsed URL (`urllib.parse.urlparse`'s or
/// `w3lib.url.parse_url`'s `ParseResult`), joined back as w3lib joins it.
enum UrlArg {
    Str(String),
    Bytes(Vec<u8>),
}

impl UrlArg {
    fn extract(url: &Bound<'_, PyAny>) -> PyResult<UrlArg> {
        if let Ok(s) = url.cast::<PyString>() {
            return Ok(UrlArg::Str(s.to_str()?.to_owned()));
        }
        if let Ok(b) = url.cast::<PyBytes>() {
            return Ok(UrlArg::Bytes(b.as_bytes().to_vec()));
        }
        let parse_result = url.py().import("urllib.parse")?.getattr("ParseResult")?;
        if url.is_instance(&parse_result)? {
            let parts: Vec<String> = url.cast::<PyTuple>()?.extract()?;
            if let [scheme, netloc, path, params, query, fragment] = &parts[..] {
                return Ok(UrlArg::Str(blockbloom::url::urlunparse([
                    scheme, netloc, path, params, query, fragment,
                ])));
            }
        }
        Err(PyTypeError::new_err(format!(
            "url must be a str, bytes or urllib.parse.ParseResult, not {}",
            url.get_type().name()?
        )))
    }

    fn bytes(&self) -> &[u8] {
        match self {
            UrlArg::Str(s) => s.as_bytes(),
            UrlArg::Bytes(b) => b,
        }
    }
}

/// The URL as the canonicalizer (which works in UTF-8) must see it for w3lib's `encoding`:
/// `bytes` decoded with it (undecodable bytes as `%XX`), and the query and fragment
/// encoded with it and percent-encoded, so that their bytes are those w3lib quotes. `None`
/// where the encoding is UTF-8, or cannot encode the URL (w3lib then falls back to UTF-8).
fn in_encoding(py: Python<'_>, url: &UrlArg, encoding: &str) -> PyResult<Option<String>> {
    let codecs = py.import("codecs")?;
    let name: String = codecs
        .call_method1("lookup", (encoding,))?
        .getattr("name")?
        .extract()?;
    if name == "utf-8" {
        return Ok(None);
    }
    let text = match url {
        UrlArg::Str(s) => s.clone(),
        UrlArg::Bytes(b) => PyBytes::new(py, b)
            .call_method1("decode", (encoding, PERCENT_ENCODE))?
            .extract()?,
    };
    // As w3lib reads a URL before it splits it: C0 controls and spaces stripped from the
    // ends, tabs and newlines removed.
    let text: String = text
        .trim_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect();
    let hash = text.find('#').unwrap_or(text.len());
    let question = text[..hash].find('?').unwrap_or(hash);
    let mut out = text[..question].to_owned();
    // w3lib encodes the query even when there is none (UTF-16's empty query is its byte
    // order mark), the fragment only when there is one.
    let query = text.get(question + 1..hash).unwrap_or("");
    let fragment = text.get(hash + 1..).unwrap_or("");
    for (mark, part) in [('?', query), ('#', fragment)] {
        if mark == '#' && part.is_empty() {
            continue;
        }
        let encoded = match PyString::new(py, part).call_method1("encode", (encoding,)) {
            Ok(b) => b.extract::<Vec<u8>>()?,
            Err(e) if e.is_instance_of::<pyo3::exceptions::PyUnicodeEncodeError>(py) => {
                return Ok(None)
            }
            Err(e) => return Err(e),
        };
        if encoded.is_empty() {
            continue;
        }
        out.push(mark);
        for b in encoded {
            if (0x21..=0x7e).contains(&b) {
                out.push(b as char);
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    Ok(Some(out))
}

/// The codec error handler that writes each byte a decoder cannot read as `%XX`, as
/// w3lib's "percentencode" does (registered by the module under [`PERCENT_ENCODE`]).
#[pyfunction]
pub(crate) fn percent_encode_errors(exc: &Bound<'_, PyAny>) -> PyResult<(String, usize)> {
    let object: Vec<u8> = exc.getattr("object")?.extract()?;
    let (start, end): (usize, usize) = (
        exc.getattr("start")?.extract()?,
        exc.getattr("end")?.extract()?,
    );
    let escaped = object
        .get(start..end)
        .unwrap_or_default()
        .iter()
        .map(|b| format!("%{b:02X}"))
        .collect();
    Ok((escaped, end))
}

/// The name [`percent_encode_errors`] is registered under (`codecs.register_error`).
pub(crate) const PERCENT_ENCODE: &str = "blockbloom.percentencode";

/// The canonical form of `url` (`str`, `bytes` in any encoding, or a parsed URL):
/// `w3lib.url.canonicalize_url(url, keep_blank_values, keep_fragments, encoding,
/// query_separator=...)`, which Scrapy's request fingerprint uses, with the same arguments
/// and errors (`ValueError` for an invalid IPv6 address or port, `UnicodeEncodeError` for a
/// lone surrogate, `LookupError` for an unknown encoding).
///
/// Lossy options, off by default (with any, the form is no longer Scrapy's):
/// `strip_tracking_params` drops `utm_*`, `gclid`, `fbclid`, ... (`TRACKING_PARAMS`),
/// `strip_params` the arguments named (a `*` at the end: a prefix), `strip_default_port`
/// a scheme's default port, `strip_trailing_slash` the `/` ending a path other than `/`.
///
/// `w3lib` is the w3lib release to follow, `"2.6"` (the default) or `"2.5"` (or a full
/// version, as `importlib.metadata.version("w3lib")` gives it): the one installed beside
/// the Scrapy spiders whose fingerprints must match.
#[pyfunction]
#[pyo3(signature = (url, keep_blank_values = true, keep_fragments = false, encoding = None, *, query_separator = "&", strip_tracking_params = false, strip_params = Vec::new(), strip_default_port = false, strip_trailing_slash = false, w3lib = "2.6"), text_signature = "(url, keep_blank_values=True, keep_fragments=False, encoding=None, *, query_separator='&', strip_tracking_params=False, strip_params=(), strip_default_port=False, strip_trailing_slash=False, w3lib='2.6')")]
#[allow(clippy::too_many_arguments)] // w3lib's signature, and ours
pub(crate) fn canonicalize_url(
    py: Python<'_>,
    url: &Bound<'_, PyAny>,
    keep_blank_values: bool,
    keep_fragments: bool,
    encoding: Option<&str>,
    query_separator: &str,
    strip_tracking_params: bool,
    strip_params: Vec<String>,
    strip_default_port: bool,
    strip_trailing_slash: bool,
    w3lib: &str,
) -> PyResult<String> {
    let url = UrlArg::extract(url)?;
    let mut pages = blockbloom::url::UrlCanonicalizer::new()
        .query_separator(query_separator)
        .w3lib(w3lib_version(w3lib)?);
    if !keep_blank_values {
        pages = pages.drop_blank_values();
    }
    if keep_fragments {
        pages = pages.keep_fragments();
    }
    if strip_tracking_params {
        pages = pages.strip_tracking_params();
    }
    for name in &strip_params {
        pages = pages.strip_param(name);
    }
    if strip_default_port {
        pages = pages.strip_default_port();
    }
    if strip_trailing_slash {
        pages = pages.strip_trailing_slash();
    }
    let encoded = match encoding {
        Some(e) => in_encoding(py, &url, e)?,
        None => None,
    };
    let bytes: Cow<'_, [u8]> = match &encoded {
        Some(s) => Cow::Borrowed(s.as_bytes()),
        None => Cow::Borrowed(url.bytes()),
    };
    py.detach(|| pages.canonicalize(&*bytes))
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// A `w3lib=` argument: `"2.5"` or `"2.6"`, with or without a patch number.
fn w3lib_version(version: &str) -> PyResult<blockbloom::url::W3libVersion> {
    version.parse().map_err(PyValueError::new_err)
}

/// A header value, or several, as Scrapy's `Headers` takes them (`str` as UTF-8).
fn header_values(value: &Bound<'_, PyAny>) -> PyResult<Vec<Vec<u8>>> {
    let one = |v: &Bound<'_, PyAny>| -> PyResult<Vec<u8>> {
        if let Ok(s) = v.cast::<PyString>() {
            return Ok(s.to_str()?.as_bytes().to_vec());
        }
        if let Ok(b) = v.cast::<PyBytes>() {
            return Ok(b.as_bytes().to_vec());
        }
        Ok(v.str()?.to_str()?.as_bytes().to_vec())
    };
    if value.is_instance_of::<PyString>() || value.is_instance_of::<PyBytes>() {
        return Ok(vec![one(value)?]);
    }
    value.try_iter()?.map(|v| one(&v?)).collect()
}

/// A header name as bytes (`str` as UTF-8).
fn header_name(name: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(s) = name.cast::<PyString>() {
        return Ok(s.to_str()?.as_bytes().to_vec());
    }
    Ok(name.cast::<PyBytes>()?.as_bytes().to_vec())
}

/// Scrapy's default request fingerprint (20 bytes, `scrapy.utils.request.fingerprint`) of
/// `Request(url, method=method, body=body, headers=headers)`, computed without Scrapy: the
/// key `RedisBloomDupeFilter` stores, for processes that share its filter. A `str` body is
/// encoded as UTF-8. As Scrapy's `fingerprint(request, include_headers=...,
/// keep_fragments=...)`: the values of the headers named in `include_headers` (names
/// compared without case; a header's value a `str`, `bytes` or a list of them), and the
/// URL's fragment with `keep_fragments`. Raises `ValueError` where Scrapy's `Request` does.
/// `w3lib` as in `canonicalize_url`: the w3lib release beside the Scrapy to agree with.
#[pyfunction]
#[pyo3(signature = (url, method = "GET", body = None, *, headers = None, include_headers = None, keep_fragments = false, w3lib = "2.6"), text_signature = "(url, method='GET', body=b'', *, headers=None, include_headers=None, keep_fragments=False, w3lib='2.6')")]
#[allow(clippy::too_many_arguments)] // Scrapy's arguments, and w3lib's release
pub(crate) fn request_fingerprint<'py>(
    py: Python<'py>,
    url: &str,
    method: &str,
    body: Option<&Bound<'py, PyAny>>,
    headers: Option<&Bound<'py, PyDict>>,
    include_headers: Option<&Bound<'py, PyAny>>,
    keep_fragments: bool,
    w3lib: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut urls = blockbloom::url::UrlCanonicalizer::new().w3lib(w3lib_version(w3lib)?);
    if keep_fragments {
        urls = urls.keep_fragments();
    }
    let body = body_bytes(body)?;
    let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    if let Some(h) = headers {
        for (name, value) in h.iter() {
            let name = header_name(&name)?;
            for v in header_values(&value)? {
                pairs.push((name.clone(), v));
            }
        }
    }
    let include: Vec<Vec<u8>> = match include_headers {
        None => Vec::new(),
        Some(names) => names
            .try_iter()?
            .map(|n| header_name(&n?))
            .collect::<PyResult<_>>()?,
    };
    let pairs: Vec<(&[u8], &[u8])> = pairs.iter().map(|(n, v)| (&n[..], &v[..])).collect();
    let include: Vec<&[u8]> = include.iter().map(|n| &n[..]).collect();
    let fp = blockbloom::url::request_fingerprint_with(method, url, &body, &pairs, &include, &urls)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(PyBytes::new(py, &fp))
}

/// A request's body as bytes: none, `bytes`, or a `str` encoded as UTF-8.
fn body_bytes(body: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<u8>> {
    match body {
        None => Ok(Vec::new()),
        Some(b) if b.is_instance_of::<PyString>() || b.is_instance_of::<PyBytes>() => {
            Ok(header_values(b)?.concat())
        }
        Some(b) => Err(PyTypeError::new_err(format!(
            "body must be a str or bytes, not {}",
            b.get_type().name()?
        ))),
    }
}

/// scrapy-redis' request fingerprint (20 bytes, `RFPDupeFilter.request_fingerprint`, whose
/// set holds their hexadecimal digits) of `Request(url, method=method, body=body)`:
/// Scrapy's without the headers' field, the key of `RedisBloomDupeFilter` with
/// `BLOCKBLOOM_FINGERPRINT = "scrapy-redis"`. Raises `ValueError` where Scrapy's `Request`
/// does; `w3lib` as in `canonicalize_url`.
#[pyfunction]
#[pyo3(signature = (url, method = "GET", body = None, *, w3lib = "2.6"), text_signature = "(url, method='GET', body=b'', *, w3lib='2.6')")]
pub(crate) fn scrapy_redis_request_fingerprint<'py>(
    py: Python<'py>,
    url: &str,
    method: &str,
    body: Option<&Bound<'py, PyAny>>,
    w3lib: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let urls = blockbloom::url::UrlCanonicalizer::new().w3lib(w3lib_version(w3lib)?);
    let fp =
        blockbloom::url::scrapy_redis_request_fingerprint(method, url, &body_bytes(body)?, &urls)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(PyBytes::new(py, &fp))
}
