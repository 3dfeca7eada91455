//! [`UrlCanonicalizer`]: the canonical form, then the lossy options (off by default)
//! that make more spellings one page than Scrapy does.

use super::quote::{quote_into, UNRESERVED};
use super::{canonicalize_with, InvalidUrl, QueryRules, W3libVersion};

/// Query arguments that only say where a visitor came from (`strip_tracking_params`): a
/// name, or a prefix ending in `*`. More: [`UrlCanonicalizer::strip_param`].
///
/// ```
/// assert!(blockbloom::url::TRACKING_PARAMS.contains(&"utm_*"));
/// ```
pub const TRACKING_PARAMS: &[&str] = &[
    "utm_*",
    "gclid",
    "gclsrc",
    "dclid",
    "gbraid",
    "wbraid",
    "fbclid",
    "msclkid",
    "yclid",
    "twclid",
    "ttclid",
    "li_fat_id",
    "igshid",
    "mc_cid",
    "mc_eid",
    "_hsenc",
    "_hsmi",
    "mkt_tok",
    "_ga",
    "_gl",
    "s_cid",
    "vero_id",
    "oly_anon_id",
    "oly_enc_id",
    "rb_clickid",
];

/// The canonical form of [`canonicalize_url`](super::canonicalize_url) (w3lib's), plus
/// lossy options, each off by default because each can merge two pages a site serves
/// differently: tracking arguments (`?utm_source=…`), a scheme's default port (`:80`), a
/// trailing slash (`/a/` as `/a`). Keys made with options are no longer Scrapy's.
///
/// ```
/// use blockbloom::url::UrlCanonicalizer;
///
/// let pages = UrlCanonicalizer::new()
///     .strip_tracking_params()
///     .strip_param("sessionid")
///     .strip_default_port()
///     .strip_trailing_slash();
/// assert_eq!(
///     pages.canonicalize("HTTP://Example.com:80/a/?utm_source=x&b=1&sessionid=42&gclid=y")?,
///     "http://example.com/a?b=1"
/// );
/// // Without options it is `canonicalize_url`:
/// assert_eq!(
///     UrlCanonicalizer::new().canonicalize("http://example.com:80/a/?utm_source=x")?,
///     "http://example.com:80/a/?utm_source=x"
/// );
/// # Ok::<(), blockbloom::url::InvalidUrl>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct UrlCanonicalizer {
    /// Names as they are written in a canonical query (a `*` at the end: a prefix).
    params: Vec<String>,
    default_port: bool,
    trailing_slash: bool,
    /// w3lib's arguments: `keep_fragments`, `keep_blank_values=False`, `query_separator`.
    keep_fragments: bool,
    drop_blank_values: bool,
    separator: Option<String>,
    w3lib: W3libVersion,
}

impl UrlCanonicalizer {
    /// The canonical form alone (no option on): [`canonicalize_url`](super::canonicalize_url).
    ///
    /// Example at [`UrlCanonicalizer`].
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps the fragment (`#...`), as w3lib's `canonicalize_url(url, keep_fragments=True)`
    /// and Scrapy's `fingerprint(request, keep_fragments=True)` do (a page a headless
    /// browser renders per fragment). Not lossy: it tells more pages apart.
    ///
    /// ```
    /// use blockbloom::url::UrlCanonicalizer;
    /// let pages = UrlCanonicalizer::new().keep_fragments();
    /// assert_eq!(pages.canonicalize("http://a.com/#/b c")?, "http://a.com/#/b%20c");
    /// # Ok::<(), blockbloom::url::InvalidUrl>(())
    /// ```
    pub fn keep_fragments(mut self) -> Self {
        self.keep_fragments = true;
        self
    }

    /// Follows this w3lib release's `canonicalize_url` (default: the newest,
    /// [`W3libVersion::V2_6`]): the one installed beside the Scrapy spiders whose
    /// fingerprints these keys must equal.
    ///
    /// Example at [`W3libVersion`].
    pub fn w3lib(mut self, version: W3libVersion) -> Self {
        self.w3lib = version;
        self
    }

    /// The w3lib release this canonicalizer follows ([`w3lib`](Self::w3lib)).
    ///
    /// ```
    /// use blockbloom::url::{UrlCanonicalizer, W3libVersion};
    /// assert_eq!(UrlCanonicalizer::new().w3lib_version(), W3libVersion::V2_6);
    /// ```
    pub fn w3lib_version(&self) -> W3libVersion {
        self.w3lib
    }

    /// Drops arguments without a value (`a=` and `a`), as w3lib's
    /// `canonicalize_url(url, keep_blank_values=False)`.
    ///
    /// ```
    /// use blockbloom::url::UrlCanonicalizer;
    /// let pages = UrlCanonicalizer::new().drop_blank_values();
    /// assert_eq!(pages.canonicalize("http://a.com/?b=&a=1&c")?, "http://a.com/?a=1");
    /// # Ok::<(), blockbloom::url::InvalidUrl>(())
    /// ```
    pub fn drop_blank_values(mut self) -> Self {
        self.drop_blank_values = true;
        self
    }

    /// Splits and joins the query's arguments at `separator` instead of `&`, as w3lib's
    /// `canonicalize_url(url, query_separator=";")`.
    ///
    /// ```
    /// use blockbloom::url::UrlCanonicalizer;
    /// let pages = UrlCanonicalizer::new().query_separator(";");
    /// assert_eq!(pages.canonicalize("http://a.com/do?c=3;a=50")?, "http://a.com/do?a=50;c=3");
    /// # Ok::<(), blockbloom::url::InvalidUrl>(())
    /// ```
    pub fn query_separator(mut self, separator: &str) -> Self {
        self.separator = (separator != "&").then(|| separator.to_owned());
        self
    }

    /// Drops the arguments of [`TRACKING_PARAMS`] (`utm_*`, `gclid`, `fbclid`, ...).
    ///
    /// Example at [`UrlCanonicalizer`].
    pub fn strip_tracking_params(mut self) -> Self {
        for &name in TRACKING_PARAMS {
            self = self.strip_param(name);
        }
        self
    }

    /// Drops the query arguments named `name` (decoded; a `*` at the end matches every name
    /// that starts with the rest): a session id, say.
    ///
    /// Example at [`UrlCanonicalizer`].
    pub fn strip_param(mut self, name: &str) -> Self {
        let (stem, prefix) = match name.strip_suffix('*') {
            Some(stem) => (stem, "*"),
            None => (name, ""),
        };
        let mut written = String::new();
        quote_into(stem.as_bytes(), &UNRESERVED, true, &mut written);
        self.params.push(written + prefix);
        self
    }

    /// Drops a port that is the scheme's default (`http` 80, `https` 443, `ws` 80, `wss`
    /// 443, `ftp` 21).
    ///
    /// Example at [`UrlCanonicalizer`].
    pub fn strip_default_port(mut self) -> Self {
        self.default_port = true;
        self
    }

    /// Drops the `/` at the end of a path other than `/` (`/a/` is `/a`).
    ///
    /// Example at [`UrlCanonicalizer`].
    pub fn strip_trailing_slash(mut self) -> Self {
        self.trailing_slash = true;
        self
    }

    /// A number that names how this canonicalizer makes keys, for recording in a filter
    /// ([`Builder::key_format`](crate::Builder::key_format)), so that a filter of keys
    /// made one way is not used with keys made another: bit 0 set (URLs are canonical),
    /// bit 1 [`strip_default_port`](Self::strip_default_port), bit 2
    /// [`strip_trailing_slash`](Self::strip_trailing_slash), bit 3
    /// [`keep_fragments`](Self::keep_fragments), bit 4
    /// [`drop_blank_values`](Self::drop_blank_values), bit 5 w3lib 2.6's forms (clear: 2.5's,
    /// which every key made before 2.6 was followed has), and from bit 8 on a hash of the
    /// stripped argument names and the query separator (0: none; their order and repeats
    /// do not count).
    ///
    /// ```
    /// use blockbloom::url::{UrlCanonicalizer, W3libVersion};
    /// assert_eq!(UrlCanonicalizer::new().key_format(), 0b10_0001);
    /// assert_eq!(UrlCanonicalizer::new().w3lib(W3libVersion::V2_5).key_format(), 1);
    /// assert_eq!(UrlCanonicalizer::new().strip_trailing_slash().key_format(), 0b10_0101);
    /// let a = UrlCanonicalizer::new().strip_param("a").strip_param("b");
    /// let b = UrlCanonicalizer::new().strip_param("b").strip_param("a").strip_param("a");
    /// assert_eq!(a.key_format(), b.key_format());
    /// assert_ne!(a.key_format(), UrlCanonicalizer::new().strip_param("a").key_format());
    /// ```
    pub fn key_format(&self) -> u64 {
        let mut names: Vec<&str> = self.params.iter().map(String::as_str).collect();
        names.sort_unstable();
        names.dedup();
        if let Some(sep) = &self.separator {
            names.push("\0query separator");
            names.push(sep);
        }
        let params = if names.is_empty() {
            0
        } else {
            // Never 0 once shifted: a list of names differs from none.
            (xxhash_rust::xxh3::xxh3_64(names.join("\n").as_bytes()) >> 8).max(1)
        };
        1 | u64::from(self.default_port) << 1
            | u64::from(self.trailing_slash) << 2
            | u64::from(self.keep_fragments) << 3
            | u64::from(self.drop_blank_values) << 4
            | u64::from(self.w3lib == W3libVersion::V2_6) << 5
            | params << 8
    }

    /// w3lib's arguments as this canonicalizer sets them.
    fn rules(&self) -> QueryRules<'_> {
        QueryRules {
            w3lib: self.w3lib,
            keep_blank_values: !self.drop_blank_values,
            keep_fragments: self.keep_fragments,
            separator: self.separator.as_deref().unwrap_or("&"),
        }
    }

    /// The canonical form of `url` with the options applied; the errors of
    /// [`canonicalize_url`](super::canonicalize_url).
    ///
    /// Example at [`UrlCanonicalizer`].
    pub fn canonicalize<U: AsRef<[u8]> + ?Sized>(&self, url: &U) -> Result<String, InvalidUrl> {
        let rules = self.rules();
        let canonical = canonicalize_with(url.as_ref(), &rules)?;
        if self.params.is_empty() && !self.default_port && !self.trailing_slash {
            return Ok(canonical);
        }
        // A `#` or `?` inside a part is escaped: the first of each is a delimiter.
        let (rest, fragment) = match canonical.split_once('#') {
            Some((rest, fragment)) => (rest, Some(fragment)),
            None => (canonical.as_str(), None),
        };
        let (head, query) = rest.split_once('?').unwrap_or((rest, ""));
        let mut out = self.head(head);
        let kept: Vec<&str> = super::quote::split_fields(query, rules.separator)
            .filter(|field| !field.is_empty() && !self.stripped(field))
            .collect();
        if !kept.is_empty() {
            out.push('?');
            out.push_str(&kept.join(rules.separator));
        }
        if let Some(fragment) = fragment {
            out.push('#');
            out.push_str(fragment);
        }
        Ok(out)
    }

    fn stripped(&self, field: &str) -> bool {
        let name = field.split_once('=').map_or(field, |(name, _)| name);
        self.params.iter().any(|p| match p.strip_suffix('*') {
            Some(stem) => name.starts_with(stem),
            None => name == p,
        })
    }

    /// `scheme://netloc/path` with the port and slash options applied.
    fn head(&self, head: &str) -> String {
        let Some((scheme, rest)) = head.split_once("://") else {
            return head.to_owned();
        };
        let (netloc, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let mut netloc = netloc;
        if self.default_port {
            let default = match scheme {
                "http" | "ws" => "80",
                "https" | "wss" => "443",
                "ftp" => "21",
                _ => "",
            };
            if let Some((host, port)) = netloc.rsplit_once(':') {
                if !default.is_empty() && port == default {
                    netloc = host;
                }
            }
        }
        let path = match path.strip_suffix('/') {
            Some(stripped) if self.trailing_slash && !stripped.is_empty() => stripped,
            _ => path,
        };
        format!("{scheme}://{netloc}{path}")
    }
}
