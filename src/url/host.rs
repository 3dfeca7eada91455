//! Hosts as w3lib and Python's standard library write them: IDNA 2003 (Python's `idna`
//! codec: nameprep, then punycode) for non-ASCII names, but for w3lib 2.6's deviations
//! (`ß`, `ς` kept), IPv4 numbers as 2.6 reads them, opaque hosts of other schemes
//! percent-encoded, and IPv6 addresses as `ipaddress.IPv6Address` prints them.

use std::borrow::Cow;
use std::net::{Ipv4Addr, Ipv6Addr};

use super::quote::{quote_into, unquote, Safe};
use super::{InvalidUrl, W3libVersion};

use stringprep::tables;
use unicode_normalization::UnicodeNormalization;

/// The ASCII form of a host name: as it is when ASCII, else NFKC-normalized and encoded
/// label by label (Python's `"idna"` codec); `None` where the codec fails (a label empty or
/// over 63 bytes, a prohibited character), and w3lib keeps the name as it is. w3lib 2.6
/// keeps `ß` and `ς` ([`deviation_label`]).
pub(super) fn idna_host(host: &str, w3lib: W3libVersion) -> Option<String> {
    if host.is_ascii() {
        return Some(host.to_owned());
    }
    // w3lib drops these before NFKC (`_nfkc_netloc`); a host has them only percent-decoded.
    let cleaned: String = host.chars().filter(|c| !"@:#?".contains(*c)).collect();
    let normalized: String = cleaned.nfkc().collect();
    if w3lib == W3libVersion::V2_6 && normalized.contains(['ß', 'ς']) {
        let mut labels: Vec<&str> = normalized.split(DOTS).collect();
        let trailing_dot = labels.len() > 1 && labels.last() == Some(&"");
        if trailing_dot {
            labels.pop();
        }
        let encoded: Option<Vec<String>> = labels.into_iter().map(deviation_label).collect();
        let mut out = encoded?.join(".");
        if trailing_dot {
            out.push('.');
        }
        return Some(out);
    }
    if normalized.is_ascii() {
        // The codec's ASCII path: every label but the last must be 1..=63 bytes.
        let labels: Vec<&str> = normalized.split('.').collect();
        let (last, rest) = labels.split_last()?;
        let ok = rest.iter().all(|l| (1..64).contains(&l.len())) && last.len() < 64;
        return ok.then_some(normalized);
    }
    let mut labels: Vec<&str> = normalized.split(DOTS).collect();
    let trailing_dot = labels.last() == Some(&"");
    if trailing_dot {
        labels.pop();
    }
    let mut out = String::with_capacity(normalized.len() + 8);
    for label in labels {
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(&to_ascii(label)?);
    }
    if trailing_dot {
        out.push('.');
    }
    Some(out)
}

/// The label separators of IDNA (`encodings.idna.dots`).
const DOTS: [char; 4] = ['.', '\u{3002}', '\u{FF0E}', '\u{FF61}'];

/// w3lib 2.6's `_idna_label`: a label with `ß` or `ς` keeps them (UTS 46's deviations,
/// which IDNA 2003 maps to `ss` and `σ`) and has the rest nameprepped around them.
fn deviation_label(label: &str) -> Option<String> {
    if !label.contains(['ß', 'ς']) {
        return to_ascii(label);
    }
    let mut prepared = String::with_capacity(label.len());
    let mut rest = label;
    while let Some(at) = rest.find(['ß', 'ς']) {
        prepared.push_str(&nameprep(&rest[..at])?);
        let deviation = rest[at..].chars().next()?;
        prepared.push(deviation);
        rest = &rest[at + deviation.len_utf8()..];
    }
    prepared.push_str(&nameprep(rest)?);
    let encoded = format!("xn--{}", idna::punycode::encode_str(&prepared)?);
    (encoded.len() < 64).then_some(encoded)
}

/// w3lib 2.6's `_domain`: a special scheme's host percent-decoded (UTF-8, U+FFFD for
/// what is not) and lower-cased, with `Σ` as `σ` where lower-casing would end a word in
/// `ς`.
pub(super) fn domain(host: &str) -> Cow<'_, str> {
    let decoded = if host.contains('%') {
        Cow::Owned(String::from_utf8_lossy(&unquote(host.as_bytes(), false)).into_owned())
    } else {
        Cow::Borrowed(host)
    };
    if !decoded.is_ascii() {
        Cow::Owned(decoded.replace('Σ', "σ").to_lowercase())
    } else if decoded.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(decoded.to_ascii_lowercase())
    } else {
        decoded
    }
}

/// The URL Standard's forbidden host code points: `_FORBIDDEN_HOST_CODE_POINT_RE`.
fn forbidden_host_code_point(c: char) -> bool {
    "\0\t\n\r #/:<>?@[\\]^|".contains(c)
}

/// w3lib 2.6's `_check_domain`: a special scheme's host, made ASCII, holds no forbidden
/// domain code point (those of a host, C0 controls, `%` and DEL), which a percent-decoded
/// host could (`%2F`), moving where the authority ends.
pub(super) fn check_domain(name: &str) -> Result<(), InvalidUrl> {
    let forbidden = |c: char| forbidden_host_code_point(c) || c < ' ' || c == '%' || c == '\x7f';
    match name.contains(forbidden) {
        true => Err(InvalidUrl("a host with a forbidden character")),
        false => Ok(()),
    }
}

/// The host of a non-special URL as w3lib 2.6 writes it (`_opaque_host`): as written,
/// percent-encoded but for RFC 3986's unreserved and sub-delimiter characters and `%`; an
/// error for a forbidden host code point.
pub(super) fn opaque_host(host: &str, out: &mut String) -> Result<(), InvalidUrl> {
    const OPAQUE: Safe = Safe::with(b"!$&'()*+,;=%");
    if host.contains(forbidden_host_code_point) {
        return Err(InvalidUrl("a host with a forbidden character"));
    }
    quote_into(host.as_bytes(), &OPAQUE, false, out);
    Ok(())
}

/// w3lib 2.6's `_ipv4_host`: a host that ends in a number (decimal, or hex after `0x`) is
/// an IPv4 address of one to four numbers, each decimal, octal after `0` or hex after
/// `0x`, written as four decimal bytes (`0x7f.1` is `127.0.0.1`); an error when it is not
/// a valid one.
pub(super) fn ipv4_host(host: &str) -> Result<Cow<'_, str>, InvalidUrl> {
    const INVALID: InvalidUrl = InvalidUrl("a host that ends in a number but is no IPv4 address");
    let hex_number = |p: &str| {
        p.len() >= 2
            && p.as_bytes()[..2].eq_ignore_ascii_case(b"0x")
            && p.bytes().skip(2).all(|b| b.is_ascii_hexdigit())
    };
    let Some(last_char) = host.chars().last() else {
        return Ok(Cow::Borrowed(host));
    };
    if !"0123456789abcdefxABCDEFX.".contains(last_char) {
        return Ok(Cow::Borrowed(host));
    }
    let trimmed = match host.strip_suffix('.') {
        Some(t) if !t.is_empty() => t,
        _ => host,
    };
    let last = trimmed.rsplit('.').next().unwrap_or(trimmed);
    let decimal = !last.is_empty() && last.bytes().all(|b| b.is_ascii_digit());
    if !decimal && !hex_number(last) {
        return Ok(Cow::Borrowed(host));
    }
    let mut numbers = [0u64; 4];
    let mut count = 0;
    // Already four decimal bytes as an address is written: nothing to write again.
    let mut written_as_is = trimmed.len() == host.len();
    for part in trimmed.split('.') {
        if count == 4 {
            return Err(INVALID);
        }
        let (digits, radix) = if hex_number(part) {
            (&part[2..], 16)
        } else if let Some(octal) = part.strip_prefix('0') {
            (octal, 8)
        } else if part.is_empty() {
            return Err(INVALID);
        } else {
            (part, 10)
        };
        let mut n: u64 = 0;
        for b in digits.bytes() {
            let d = u64::from((b as char).to_digit(radix).ok_or(INVALID)?);
            n = n.saturating_mul(u64::from(radix)).saturating_add(d);
        }
        written_as_is &= radix == 10 || part == "0";
        numbers[count] = n;
        count += 1;
    }
    let (last, rest) = numbers[..count].split_last().expect("one number at least");
    if rest.iter().any(|&n| n > 255) || *last >= 1 << (8 * (5 - count)) {
        return Err(INVALID);
    }
    let address = rest
        .iter()
        .enumerate()
        .fold(*last, |a, (i, &n)| a + (n << (8 * (3 - i))));
    if written_as_is && count == 4 {
        return Ok(Cow::Borrowed(host));
    }
    let written = Ipv4Addr::from(address as u32).to_string();
    Ok(match written == host {
        true => Cow::Borrowed(host),
        false => Cow::Owned(written),
    })
}

/// RFC 3490's ToASCII with AllowUnassigned and without STD3 rules, as Python does it.
fn to_ascii(label: &str) -> Option<String> {
    let fits = |l: &str| (1..64).contains(&l.len());
    if label.is_ascii() {
        return fits(label).then(|| label.to_owned());
    }
    let prepared = nameprep(label)?;
    if prepared.is_ascii() {
        return fits(&prepared).then_some(prepared);
    }
    if prepared.starts_with("xn--") {
        return None;
    }
    let encoded = format!("xn--{}", idna::punycode::encode_str(&prepared)?);
    fits(&encoded).then_some(encoded)
}

/// RFC 3491's nameprep as Python's `encodings.idna.nameprep`: map (B.1, B.2), NFKC, the
/// prohibited tables (C.1.2 to C.9) and the bidi rule; unassigned code points are allowed.
fn nameprep(label: &str) -> Option<String> {
    let mapped: String = label
        .chars()
        .filter(|&c| !tables::commonly_mapped_to_nothing(c))
        .flat_map(tables::case_fold_for_nfkc)
        .collect();
    let normalized: String = mapped.nfkc().collect();
    let prohibited = |c: char| {
        tables::non_ascii_space_character(c)
            || tables::non_ascii_control_character(c)
            || tables::private_use(c)
            || tables::non_character_code_point(c)
            || tables::surrogate_code(c)
            || tables::inappropriate_for_plain_text(c)
            || tables::inappropriate_for_canonical_representation(c)
            || changes_display_properties(c)
            || tables::tagging_character(c)
    };
    if normalized.chars().any(prohibited) {
        return None;
    }
    if normalized.chars().any(tables::bidi_r_or_al) {
        let first = normalized.chars().next().is_some_and(tables::bidi_r_or_al);
        let last = normalized.chars().last().is_some_and(tables::bidi_r_or_al);
        if normalized.chars().any(tables::bidi_l) || !first || !last {
            return None;
        }
    }
    Some(normalized)
}

/// RFC 3454's table C.8, the characters that change display properties (fifteen code
/// points; its test holds it to the RFC's list).
fn changes_display_properties(c: char) -> bool {
    matches!(
        c,
        '\u{0340}'
            | '\u{0341}'
            | '\u{200E}'
            | '\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{206A}'..='\u{206F}'
    )
}

/// Python's `ipaddress.ip_address` on the inside of brackets: `Some(true)` for IPv6 (an
/// optional `%zone` after it), `Some(false)` for IPv4, `None` for neither.
pub(super) fn ip_kind(text: &str) -> Option<bool> {
    if text.parse::<Ipv4Addr>().is_ok() {
        return Some(false);
    }
    parse_ipv6(text).map(|_| true)
}

fn parse_ipv6(text: &str) -> Option<(Ipv6Addr, Option<&str>)> {
    let (address, zone) = match text.split_once('%') {
        Some((_, zone)) if zone.is_empty() || zone.contains('%') => return None,
        Some((address, zone)) => (address, Some(zone)),
        None => (text, None),
    };
    Some((address.parse().ok()?, zone))
}

/// An IPv6 address as Python 3.11's `str(IPv6Address)` writes it: hex groups without
/// leading zeros, the first longest run of two or more zero groups as `::`, the zone
/// after `%`. `None` when `text` is not an IPv6 address.
pub(super) fn python_ipv6(text: &str) -> Option<String> {
    let (address, zone) = parse_ipv6(text)?;
    let groups = address.segments();
    let (mut best, mut best_len, mut run, mut run_len) = (0, 0, 0, 0);
    for (i, &g) in groups.iter().enumerate() {
        if g == 0 {
            if run_len == 0 {
                run = i;
            }
            run_len += 1;
            if run_len > best_len {
                (best, best_len) = (run, run_len);
            }
        } else {
            run_len = 0;
        }
    }
    let hex = |gs: &[u16]| {
        gs.iter()
            .map(|g| format!("{g:x}"))
            .collect::<Vec<_>>()
            .join(":")
    };
    let mut out = if best_len > 1 {
        format!(
            "{}::{}",
            hex(&groups[..best]),
            hex(&groups[best + best_len..])
        )
    } else {
        hex(&groups)
    };
    if let Some(zone) = zone {
        out.push('%');
        out.push_str(zone);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    /// RFC 3454's table C.8 as the RFC prints it (section C.8, "Change display properties").
    const RFC_3454_C8: &str = "\
0340; COMBINING GRAVE TONE MARK
0341; COMBINING ACUTE TONE MARK
200E; LEFT-TO-RIGHT MARK
200F; RIGHT-TO-LEFT MARK
202A; LEFT-TO-RIGHT EMBEDDING
202B; RIGHT-TO-LEFT EMBEDDING
202C; POP DIRECTIONAL FORMATTING
202D; LEFT-TO-RIGHT OVERRIDE
202E; RIGHT-TO-LEFT OVERRIDE
206A; INHIBIT SYMMETRIC SWAPPING
206B; ACTIVATE SYMMETRIC SWAPPING
206C; INHIBIT ARABIC FORM SHAPING
206D; ACTIVATE ARABIC FORM SHAPING
206E; NATIONAL DIGIT SHAPES
206F; NOMINAL DIGIT SHAPES";

    #[test]
    fn table_c8_is_the_rfc_s() {
        let listed: Vec<u32> = RFC_3454_C8
            .lines()
            .map(|l| u32::from_str_radix(&l[..4], 16).unwrap())
            .collect();
        for c in (0..=0x10FFFF).filter_map(char::from_u32) {
            let want = listed.contains(&(c as u32));
            assert_eq!(
                super::changes_display_properties(c),
                want,
                "U+{:04X}",
                c as u32
            );
        }
        // And nameprep refuses a label holding one.
        assert_eq!(super::nameprep("a\u{200E}b"), None);
        assert!(super::nameprep("ab").is_some());
    }
}
