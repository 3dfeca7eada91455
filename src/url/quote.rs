//! Percent-encoding as w3lib does it: byte sets, `%XX` in upper case, decoding of valid
//! `%XX` only, and the `application/x-www-form-urlencoded` query of `canonicalize_url`.

/// A set of bytes left as they are by [`quote_into`]; every other byte becomes `%XX`.
pub(super) struct Safe([bool; 256]);

impl Safe {
    /// RFC 3986's unreserved characters (always safe) plus `extra`.
    pub(super) const fn with(extra: &[u8]) -> Safe {
        let mut set = [false; 256];
        let mut b = 0;
        while b < 256 {
            set[b] =
                (b as u8).is_ascii_alphanumeric() || matches!(b as u8, b'-' | b'.' | b'_' | b'~');
            b += 1;
        }
        let mut i = 0;
        while i < extra.len() {
            set[extra[i] as usize] = true;
            i += 1;
        }
        Safe(set)
    }
}

/// Unreserved only: query keys and values (w3lib's `_urlencode`).
pub(super) const UNRESERVED: Safe = Safe::with(b"");
/// User names and passwords in the authority.
pub(super) const USERINFO: Safe = Safe::with(b"!$&'()*+,");
/// A path on its way in (`_PATH_SAFEST_CHARS`): reserved characters but `#[]`, and `%`.
pub(super) const PATH_IN: Safe = Safe::with(b":/?@!$&'()*+,;=%");
/// A query on its way in, for a special scheme (`http`, `https`, `ws`, ...): as a path but `'`.
pub(super) const SPECIAL_QUERY_IN: Safe = Safe::with(b":/?@!$&()*+,;=%");
/// The canonical path (`_PATH_SAFE_CHARS`): reserved characters but `#`, `|` and `%`.
pub(super) const PATH_OUT: Safe = Safe::with(b":/?[]@!$&'()*+,;=|%");

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// Appends `data` to `out`, each byte outside `safe` as `%XX` (and a space as `+` when
/// `plus`).
pub(super) fn quote_into(data: &[u8], safe: &Safe, plus: bool, out: &mut String) {
    for &b in data {
        if safe.0[b as usize] {
            out.push(b as char);
        } else if plus && b == b' ' {
            out.push('+');
        } else {
            out.push('%');
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 15) as usize] as char);
        }
    }
}

fn hex_value(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Decodes each `%XX` with two hex digits (others stay as they are), and `+` as a space
/// when `plus`.
pub(super) fn unquote(data: &[u8], plus: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    let mut i = 0;
    while i < data.len() {
        let b = data[i];
        if b == b'%' && i + 2 < data.len() {
            if let (Some(hi), Some(lo)) = (hex_value(data[i + 1]), hex_value(data[i + 2])) {
                out.push(hi << 4 | lo);
                i += 3;
                continue;
            }
        }
        out.push(if plus && b == b'+' { b' ' } else { b });
        i += 1;
    }
    out
}

/// w3lib's `_unquotepath`: decodes the path but for the escapes of `%`, `/`, `;` and `?`,
/// which would change its meaning (each replaced in this order, as `str.replace` does).
pub(super) fn unquote_path(path: &str) -> Vec<u8> {
    if !path.contains('%') {
        return path.as_bytes().to_vec();
    }
    let mut p = path.replace("%25", "%2525");
    for (from, to) in [
        ("%2f", "%252F"),
        ("%2F", "%252F"),
        ("%3b", "%253B"),
        ("%3B", "%253B"),
        ("%3f", "%253F"),
        ("%3F", "%253F"),
    ] {
        p = p.replace(from, to);
    }
    unquote(p.as_bytes(), false)
}

/// The query of a canonical URL: `&`-separated fields (empty ones dropped), each split at
/// its first `=` and decoded (`+` is a space), sorted by key then value as bytes, and
/// encoded again with only unreserved characters left as they are.
/// The fields of `query` between each `separator` (Python's `bytes.split(separator)`: a
/// separator of several characters, or the whole query when it is empty).
pub(super) fn split_fields<'q>(
    query: &'q str,
    separator: &'q str,
) -> Box<dyn Iterator<Item = &'q str> + 'q> {
    if separator.is_empty() {
        Box::new(std::iter::once(query))
    } else {
        Box::new(query.split(separator))
    }
}

pub(super) fn canonical_query(query: &str, rules: &super::QueryRules<'_>) -> String {
    let mut fields: Vec<(Vec<u8>, Vec<u8>)> = split_fields(query, rules.separator)
        .filter(|field| !field.is_empty())
        .filter_map(|field| match field.find('=') {
            Some(eq) if rules.keep_blank_values || eq + 1 < field.len() => Some((
                unquote(&field.as_bytes()[..eq], true),
                unquote(&field.as_bytes()[eq + 1..], true),
            )),
            None if rules.keep_blank_values => Some((unquote(field.as_bytes(), true), Vec::new())),
            _ => None, // a blank value, dropped as w3lib does with keep_blank_values=False
        })
        .collect();
    fields.sort();
    let mut out = String::with_capacity(query.len());
    for (i, (key, value)) in fields.iter().enumerate() {
        if i > 0 {
            out.push_str(rules.separator);
        }
        quote_into(key, &UNRESERVED, true, &mut out);
        out.push('=');
        quote_into(value, &UNRESERVED, true, &mut out);
    }
    out
}
