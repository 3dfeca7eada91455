//! w3lib's URL splitter (`_urlsplit`, `_safe_url_split`): the five parts of a URL, each
//! made safe (percent-encoded), the authority rebuilt from its user, host and port.

use std::borrow::Cow;

use super::host::{check_domain, domain, idna_host, ip_kind, ipv4_host, opaque_host};
use super::quote::{quote_into, unquote, PATH_IN, SPECIAL_QUERY_IN, USERINFO};
use super::{InvalidUrl, W3libVersion};

/// Schemes with a default port in the URL Standard: `\` ends their authority as `/` does.
const SPECIAL: [&str; 6] = ["ftp", "file", "http", "https", "ws", "wss"];

pub(super) fn is_special(scheme: &str) -> bool {
    SPECIAL.contains(&scheme)
}

/// A URL's parts, made safe: `scheme://netloc/path?query#fragment`.
pub(super) struct SafeParts {
    pub scheme: String,
    pub netloc: String,
    pub path: String,
    pub query: String,
    pub fragment: String,
}

/// The input as w3lib reads it: bytes that are not UTF-8 become `%XX`, then C0 controls
/// and spaces are stripped from both ends and tabs and newlines removed everywhere.
pub(super) fn prepare(url: &[u8]) -> String {
    let mut text = String::with_capacity(url.len());
    for chunk in url.utf8_chunks() {
        text.push_str(chunk.valid());
        super::quote::quote_into(chunk.invalid(), &super::quote::UNRESERVED, false, &mut text);
    }
    if !text.chars().any(|c| c <= ' ') {
        return text;
    }
    text.trim_matches(|c: char| c <= ' ')
        .replace(['\t', '\n', '\r'], "")
}

fn scheme_len(url: &str) -> Option<usize> {
    let bytes = url.as_bytes();
    if !bytes.first()?.is_ascii_alphabetic() {
        return None;
    }
    let end = bytes
        .iter()
        .position(|&b| !(b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.')))?;
    (bytes[end] == b':').then_some(end)
}

/// w3lib 2.6's `_skip_special_authority_slashes`: a special scheme but `file` takes any
/// run of `/` and `\\` (or none) before its host, so `https:example.com` and
/// `https:///example.com` are `https://example.com`.
fn skip_special_authority_slashes(url: &str) -> Cow<'_, str> {
    let Some(colon) = url.find(':').filter(|&c| c > 0) else {
        return Cow::Borrowed(url);
    };
    let after = &url[colon + 1..];
    if after.starts_with("//") && !after[2..].starts_with(['/', '\\']) {
        return Cow::Borrowed(url);
    }
    let scheme = match scheme_len(url) {
        Some(len) => url[..len].to_ascii_lowercase(),
        None => return Cow::Borrowed(url),
    };
    let authority = after.trim_start_matches(['/', '\\']);
    if !is_special(&scheme)
        || scheme == "file"
        || authority.is_empty()
        || authority.starts_with(['?', '#'])
    {
        return Cow::Borrowed(url);
    }
    Cow::Owned(format!("{scheme}://{authority}"))
}

/// Splits and makes safe, as `w3lib.url._safe_url_split` (UTF-8 throughout).
pub(super) fn safe_split(url: &str, w3lib: W3libVersion) -> Result<SafeParts, InvalidUrl> {
    let v2_6 = w3lib == W3libVersion::V2_6;
    let url = if v2_6 {
        skip_special_authority_slashes(url)
    } else {
        Cow::Borrowed(url)
    };
    let mut url = url.trim_start_matches(|c: char| c <= ' ').to_owned();
    let mut scheme = String::new();
    if let Some(len) = scheme_len(&url) {
        scheme = url[..len].to_ascii_lowercase();
        url.drain(..=len);
    }
    if is_special(&scheme) && url.contains('\\') {
        let cut = [url.find('?'), url.find('#')].into_iter().flatten().min();
        let cut = cut.unwrap_or(url.len());
        url = url[..cut].replace('\\', "/") + &url[cut..];
    }
    let has_authority = url.starts_with("//");
    let start = if has_authority { 2 } else { 0 };
    let find = |c: char| url[start..].find(c).map(|i| i + start);
    let (mut question, mut hash) = (find('?'), find('#'));
    let mut netloc = "";
    let mut rest = url.as_str();
    if has_authority {
        let delim = [find('/'), question, hash].into_iter().flatten().min();
        let delim = delim.unwrap_or(url.len());
        let open = find('[').filter(|&i| i < delim);
        let close = find(']').filter(|&i| i < delim);
        if open.is_some() != close.is_some() {
            return Err(InvalidUrl("an unmatched bracket in the authority"));
        }
        netloc = &url[2..delim];
        if open.is_some() {
            check_bracketed_netloc(netloc, w3lib)?;
        }
        rest = &url[delim..];
        question = question.map(|q| q - delim);
        hash = hash.map(|h| h - delim);
    }
    check_netloc(netloc)?;
    let mut path = rest;
    let mut fragment = "";
    let mut query = "";
    if let Some(h) = hash {
        (path, fragment) = (&rest[..h], &rest[h + 1..]);
    }
    if let Some(q) = question.filter(|&q| q < path.len()) {
        (path, query) = (&path[..q], &path[q + 1..]);
    }

    let mut out = String::with_capacity(netloc.len() + 8);
    let (userinfo, hostinfo) = match netloc.rfind('@') {
        Some(at) => (Some(&netloc[..at]), &netloc[at + 1..]),
        None => (None, netloc),
    };
    if let Some(userinfo) = userinfo {
        let (user, password) = match userinfo.split_once(':') {
            Some((user, password)) => (user, Some(password)),
            None => (userinfo, None),
        };
        quote_into(&unquote(user.as_bytes(), false), &USERINFO, false, &mut out);
        if let Some(password) = password {
            out.push(':');
            quote_into(
                &unquote(password.as_bytes(), false),
                &USERINFO,
                false,
                &mut out,
            );
        }
        out.push('@');
    }
    // w3lib 2.5 takes the host from between brackets anywhere in the authority: `[@v0.]h`
    // (an IPvFuture `v0.]h` to `check_bracketed_netloc`) has the host `` there.
    let bracketed = match w3lib {
        W3libVersion::V2_5 => netloc.contains('['),
        W3libVersion::V2_6 => hostinfo.contains('['),
    };
    let (host, port) = if bracketed {
        let inside = hostinfo.split_once('[').map_or("", |(_, after)| after);
        let (host, after) = inside.split_once(']').unwrap_or((inside, ""));
        (host, after.split_once(':').map_or("", |(_, port)| port))
    } else {
        hostinfo.split_once(':').unwrap_or((hostinfo, ""))
    };
    let host = match host.split_once('%') {
        Some((name, zone)) => format!("{}%{zone}", name.to_lowercase()),
        None => host.to_lowercase(),
    };
    let port = python_port(port)?;
    if host.contains(':') {
        if !host.is_ascii() {
            return Err(InvalidUrl("a non-ASCII IPv6 zone"));
        }
        out.push('[');
        out.push_str(&host);
        out.push(']');
    } else if !v2_6 {
        out.push_str(&idna_host(&host, w3lib).unwrap_or(host));
    } else if !is_special(&scheme) {
        let opaque = hostinfo.split_once(':').map_or(hostinfo, |(h, _)| h);
        if opaque.is_empty() && !netloc.is_empty() {
            return Err(InvalidUrl("a user or port but no host"));
        }
        opaque_host(opaque, &mut out)?;
    } else {
        let written = if bracketed {
            &host
        } else {
            hostinfo.split_once(':').map_or(hostinfo, |(h, _)| h)
        };
        let name = idna_host(&domain(written), w3lib).unwrap_or(host);
        check_domain(&name)?;
        out.push_str(&ipv4_host(&name)?);
    }
    if let Some(port) = port {
        out.push(':');
        out.push_str(&port.to_string());
    }

    let mut safe_path = String::with_capacity(path.len());
    quote_into(path.as_bytes(), &PATH_IN, false, &mut safe_path);
    if v2_6 && safe_path.starts_with('/') {
        if let Cow::Owned(resolved) = super::remove_dot_segments(&safe_path, w3lib) {
            safe_path = resolved;
        }
        // Not to be read as an authority when joined again.
        if safe_path.starts_with("//") && out.is_empty() && !is_special(&scheme) && !has_authority {
            safe_path.insert_str(0, "/.");
        }
    }
    let mut safe_query = String::with_capacity(query.len());
    let query_safe = if is_special(&scheme) {
        &SPECIAL_QUERY_IN
    } else {
        &PATH_IN
    };
    quote_into(query.as_bytes(), query_safe, false, &mut safe_query);
    let mut safe_fragment = String::with_capacity(fragment.len());
    quote_into(fragment.as_bytes(), &PATH_IN, false, &mut safe_fragment);
    if safe_path.is_empty() && (v2_6 || !safe_query.is_empty()) && is_special(&scheme) {
        safe_path.push('/');
    }
    Ok(SafeParts {
        scheme,
        netloc: out,
        path: safe_path,
        query: safe_query,
        fragment: safe_fragment,
    })
}

/// A port as Python reads it: ASCII digits, at most 65535; leading zeros dropped.
fn python_port(port: &str) -> Result<Option<u32>, InvalidUrl> {
    if port.is_empty() {
        return Ok(None);
    }
    if !port.bytes().all(|b| b.is_ascii_digit()) {
        return Err(InvalidUrl("a port that is not a number"));
    }
    let digits = port.trim_start_matches('0');
    match digits.parse::<u32>() {
        _ if digits.is_empty() => Ok(Some(0)),
        Ok(n) if n <= 65_535 && digits.len() <= 5 => Ok(Some(n)),
        _ => Err(InvalidUrl("a port out of the range 0-65535")),
    }
}

/// Brackets must hold a whole IPv6 address (or an IPvFuture one), followed at most by a
/// port: `_check_bracketed_netloc`. w3lib 2.6 lets brackets in the user name be.
fn check_bracketed_netloc(netloc: &str, w3lib: W3libVersion) -> Result<(), InvalidUrl> {
    let host_and_port = netloc.rsplit_once('@').map_or(netloc, |(_, h)| h);
    let host = match host_and_port.split_once('[') {
        Some(("", bracketed)) => {
            let (host, port) = bracketed.split_once(']').unwrap_or((bracketed, ""));
            if !port.is_empty() && !port.starts_with(':') {
                return Err(InvalidUrl("text after an IPv6 address"));
            }
            host
        }
        Some(_) => return Err(InvalidUrl("text before an IPv6 address")),
        None if w3lib == W3libVersion::V2_6 => {
            return match host_and_port.contains(']') {
                true => Err(InvalidUrl("an unmatched bracket in the host")),
                false => Ok(()),
            };
        }
        None => host_and_port
            .split_once(':')
            .map_or(host_and_port, |(h, _)| h),
    };
    if host.starts_with(['v', 'V']) {
        let future = host.strip_prefix('v').and_then(|rest| rest.split_once('.'));
        return match future {
            Some((hex, address))
                if !hex.is_empty()
                    && hex.bytes().all(|b| b.is_ascii_hexdigit())
                    && !address.is_empty() =>
            {
                Ok(())
            }
            _ => Err(InvalidUrl("an invalid IPvFuture address")),
        };
    }
    match ip_kind(host) {
        Some(true) => Ok(()),
        Some(false) => Err(InvalidUrl("an IPv4 address in brackets")),
        None => Err(InvalidUrl("an invalid IPv6 address")),
    }
}

/// A non-ASCII authority whose NFKC form has a delimiter it did not have (`_checknetloc`).
fn check_netloc(netloc: &str) -> Result<(), InvalidUrl> {
    use unicode_normalization::UnicodeNormalization;
    if netloc.is_ascii() {
        return Ok(());
    }
    let cleaned: String = netloc.chars().filter(|c| !"@:#?".contains(*c)).collect();
    let normalized: String = cleaned.nfkc().collect();
    if cleaned != normalized && normalized.contains(['/', '?', '#', '@', ':', '\\']) {
        return Err(InvalidUrl("an authority whose NFKC form has a delimiter"));
    }
    Ok(())
}
