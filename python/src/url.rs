//! `canonicalize_url` and `request_fingerprint`: `blockbloom::url` for Python, the same
//! bytes as w3lib and Scrapy.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// A `str`, or `bytes` (not necessarily UTF-8), as bytes.
#[derive(FromPyObject)]
pub(crate) enum Text {
    Str(String),
    Bytes(Vec<u8>),
}

impl AsRef<[u8]> for Text {
    fn as_ref(&self) -> &[u8] {
        match self {
            Text::Str(s) => s.as_bytes(),
            Text::Bytes(b) => b,
        }
    }
}

/// The canonical form of `url` (`str`, or `bytes` in any encoding): equal to
/// `w3lib.url.canonicalize_url(url)`, which Scrapy's request fingerprint uses. Raises
/// `ValueError` where w3lib does (an invalid IPv6 address or port, ...).
///
/// Lossy options, off by default (with any, the form is no longer Scrapy's):
/// `strip_tracking_params` drops `utm_*`, `gclid`, `fbclid`, ... (`TRACKING_PARAMS`),
/// `strip_params` the arguments named (a `*` at the end: a prefix), `strip_default_port`
/// a scheme's default port, `strip_trailing_slash` the `/` ending a path other than `/`.
#[pyfunction]
#[pyo3(signature = (url, *, strip_tracking_params = false, strip_params = Vec::new(), strip_default_port = false, strip_trailing_slash = false), text_signature = "(url, *, strip_tracking_params=False, strip_params=(), strip_default_port=False, strip_trailing_slash=False)")]
pub(crate) fn canonicalize_url(
    py: Python<'_>,
    url: Text,
    strip_tracking_params: bool,
    strip_params: Vec<String>,
    strip_default_port: bool,
    strip_trailing_slash: bool,
) -> PyResult<String> {
    let mut pages = blockbloom::url::UrlCanonicalizer::new();
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
    py.detach(|| pages.canonicalize(&url))
        .map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Scrapy's default request fingerprint (20 bytes, `scrapy.utils.request.fingerprint`) of
/// `Request(url, method=method, body=body)`, computed without Scrapy: the key
/// `RedisBloomDupeFilter` stores, for processes that share its filter. A `str` body is
/// encoded as UTF-8. Raises `ValueError` where Scrapy's `Request` does.
#[pyfunction]
#[pyo3(signature = (url, method = "GET", body = Text::Bytes(Vec::new())), text_signature = "(url, method='GET', body=b'')")]
pub(crate) fn request_fingerprint<'py>(
    py: Python<'py>,
    url: &str,
    method: &str,
    body: Text,
) -> PyResult<Bound<'py, PyBytes>> {
    let fp = blockbloom::url::request_fingerprint(method, url, body.as_ref())
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok(PyBytes::new(py, &fp))
}
