//! Hosts as w3lib and Python's standard library write them: IDNA 2003 (Python's `idna`
//! codec: nameprep, then punycode) for non-ASCII names, and IPv6 addresses as
//! `ipaddress.IPv6Address` prints them.

use std::net::{Ipv4Addr, Ipv6Addr};

use stringprep::tables;
use unicode_normalization::UnicodeNormalization;

/// The ASCII form of a host name: as it is when ASCII, else NFKC-normalized and encoded
/// label by label (Python's `"idna"` codec); `None` where the codec fails (a label empty or
/// over 63 bytes, a prohibited character), and w3lib keeps the name as it is.
pub(super) fn idna_host(host: &str) -> Option<String> {
    if host.is_ascii() {
        return Some(host.to_owned());
    }
    let normalized: String = host.nfkc().collect();
    if normalized.is_ascii() {
        // The codec's ASCII path: every label but the last must be 1..=63 bytes.
        let labels: Vec<&str> = normalized.split('.').collect();
        let (last, rest) = labels.split_last()?;
        let ok = rest.iter().all(|l| (1..64).contains(&l.len())) && last.len() < 64;
        return ok.then_some(normalized);
    }
    let mut labels: Vec<&str> = normalized
        .split(['.', '\u{3002}', '\u{FF0E}', '\u{FF61}'])
        .collect();
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
