//! `canonicalize_url` against w3lib 2.5's and 2.6's answers for hostile spellings (recorded
//! from `w3lib.url.canonicalize_url`; CI also compares both live on thousands of URLs:
//! `python/tests/test_url.py`), and the request fingerprint against Scrapy 2.19's.

use super::{canonicalize_url, has_authority, request_fingerprint, UrlCanonicalizer, W3libVersion};

/// (input, w3lib's canonical form or "ERR" where w3lib raises `ValueError`), the same in
/// w3lib 2.5 and 2.6 but where [`W3LIB_2_6`] says.
const W3LIB: &[(&str, &str)] = &[
    ("http://Example.com/a#top", "http://example.com/a"),
    ("HTTP://WWW.EXAMPLE.COM/", "http://www.example.com/"),
    ("http://example.com", "http://example.com/"),
    ("http://example.com?a=1", "http://example.com/?a=1"),
    ("https://example.com:443/", "https://example.com:443/"),
    ("http://example.com:80/a", "http://example.com:80/a"),
    ("http://example.com:0080/", "http://example.com:80/"),
    ("http://example.com:/a", "http://example.com/a"),
    ("http://u:p@Example.com/a", "http://u:p@example.com/a"),
    ("http://U%41:p%3Aw@Ex.com/", "http://UA:p%3Aw@ex.com/"),
    ("http://@ex.com/", "http://@ex.com/"),
    ("http://a@b@ex.com/", "http://a%40b@ex.com/"),
    (
        "http://www.example.com/do?c=3&b=5&b=2&a=50",
        "http://www.example.com/do?a=50&b=2&b=5&c=3",
    ),
    (
        "http://ex.com/?a=&b&c=1&&d==2",
        "http://ex.com/?a=&b=&c=1&d=%3D2",
    ),
    (
        "http://ex.com/?q=a+b&q=a%20b&q=a b",
        "http://ex.com/?q=a+b&q=a+b&q=a+b",
    ),
    ("http://ex.com/?%61=%62", "http://ex.com/?a=b"),
    ("http://ex.com/?a=%zz&b=%4", "http://ex.com/?a=%25zz&b=%254"),
    ("http://ex.com/?&&&", "http://ex.com/"),
    ("http://ex.com/?", "http://ex.com/"),
    ("http://ex.com/#", "http://ex.com/"),
    ("http://ex.com/?a=1#f?g", "http://ex.com/?a=1"),
    ("http://ex.com/a%2fb%2Fc", "http://ex.com/a%2Fb%2Fc"),
    ("http://ex.com/%7euser", "http://ex.com/~user"),
    ("http://ex.com/%41%42%c3%a9", "http://ex.com/AB%C3%A9"),
    ("http://ex.com/a%3bb%3Fc%25d", "http://ex.com/a%3Bb%3Fc%25d"),
    ("http://ex.com/a%252f", "http://ex.com/a%252f"),
    ("http://ex.com/%e9", "http://ex.com/%E9"),
    (
        "http://ex.com/r\u{e9}sum\u{e9}",
        "http://ex.com/r%C3%A9sum%C3%A9",
    ),
    (
        "http://ex.com/a b\"c<d>e`f{g}h|i^j\\k",
        "http://ex.com/a%20b%22c%3Cd%3Ee%60f%7Bg%7Dh|i%5Ej/k",
    ),
    ("http://ex.com/a/./b/../../c/./d/..", "http://ex.com/c/"),
    ("http://ex.com/../a", "http://ex.com/a"),
    ("http://ex.com/a/%2e%2e/b", "http://ex.com/b"),
    ("http://ex.com/.", "http://ex.com/"),
    ("http://ex.com/a;p", "http://ex.com/a;p"),
    ("http://ex.com/a;p/b;q?x=1", "http://ex.com/a;p/b;q?x=1"),
    ("http://ex.com/a;", "http://ex.com/a"),
    ("http://b\u{fc}cher.de/", "http://xn--bcher-kva.de/"),
    ("http://fa\u{df}.de/", "http://fass.de/"),
    (
        "http://\u{440}\u{444}.\u{440}\u{444}/",
        "http://xn--p1ai.xn--p1ai/",
    ),
    ("http://\u{2603}.net/", "http://xn--n3h.net/"),
    ("http://\u{1f355}.ws/", "http://xn--vi8h.ws/"),
    ("http://EX\u{c4}MPLE.com/", "http://xn--exmple-cua.com/"),
    ("http://xn--bcher-kva.de/", "http://xn--bcher-kva.de/"),
    (
        "http://\u{627}\u{644}\u{639}\u{631}\u{628}\u{64a}\u{629}.com/",
        "http://xn--mgbcd4a2b0d2b.com/",
    ),
    ("http://a\u{3002}b\u{ff0e}c\u{ff61}d/", "http://a.b.c.d/"),
    ("http://ex.com\u{ff0f}/", "ERR"),
    ("http://a..\u{fc}.com/", "http://a..\u{fc}.com/"),
    ("http://[::1]/", "http://[::1]/"),
    (
        "http://[::FFFF:1.2.3.4]:8080/a",
        "http://[::ffff:102:304]:8080/a",
    ),
    (
        "http://[2001:DB8:0:0:1:0:0:1]/",
        "http://[2001:db8::1:0:0:1]/",
    ),
    ("http://[fe80::1%25Eth0]/", "http://[fe80::1%25eth0]/"),
    ("http://[v1.abc]/", "http://v1.abc/"),
    ("http://[::1/", "ERR"),
    ("http://[1.2.3.4]/", "ERR"),
    ("http://ex.com:99999/", "ERR"),
    ("http://ex.com:8a/", "ERR"),
    ("http://ex.com\\a\\b?c\\d#e\\f", "http://ex.com/a/b?c%5Cd="),
    ("  \u{9}http://ex.com/a\u{a}b\u{d}  ", "http://ex.com/ab"),
    ("http://ex.com/a\u{0}b\u{1f}", "http://ex.com/a%00b"),
    ("mailto:a@Example.com", "mailto:a@Example.com"),
    ("foo:/a/../b", "foo:/b"),
    ("//ex.com/a", "//ex.com/a"),
    ("/a/b?c=1", "/a/b?c=1"),
    ("a?b=1", "a?b=1"),
    ("file:///tmp/a b", "file:///tmp/a%20b"),
    ("ftp://ex.com/a;type=i", "ftp://ex.com/a;type=i"),
    ("ws://ex.com?x", "ws://ex.com/?x="),
    ("https://ex.com/?q='a'", "https://ex.com/?q=%27a%27"),
    ("custom://ex.com/?q='a'", "custom://ex.com/?q=%27a%27"),
    (
        "http://ex.com/?a=1&A=2&a=0&%C3%A9=1&\u{e9}=2",
        "http://ex.com/?A=2&a=0&a=1&%C3%A9=1&%C3%A9=2",
    ),
    (
        "http://ex.com/\u{e9}?\u{e9}=\u{e9}#\u{e9}",
        "http://ex.com/%C3%A9?%C3%A9=%C3%A9",
    ),
    ("http://ex.com/?x=%2B+%20%2b", "http://ex.com/?x=%2B++%2B"),
    ("http://ex.com/a%", "http://ex.com/a%"),
    ("http://ex.com/a%2", "http://ex.com/a%2"),
    ("http://ex.com/%%41", "http://ex.com/%A"),
    ("HtTpS://ex.com/", "https://ex.com/"),
    ("http://ex.com:443/", "http://ex.com:443/"),
    ("http://EX.COM./a", "http://ex.com./a"),
    ("http://ex.com/a/b/", "http://ex.com/a/b/"),
];

/// (input, w3lib 2.5's form, w3lib 2.6's): where the two differ (`W3libVersion`'s list).
const W3LIB_2_6: &[(&str, &str, &str)] = &[
    (
        "http://fa\u{df}.de/",
        "http://fass.de/",
        "http://xn--fa-hia.de/",
    ),
    ("http://0x7f.1/", "http://0x7f.1/", "http://127.0.0.1/"),
    ("http://%41.com/", "http://%41.com/", "http://a.com/"),
    ("http://1.2.3.256/", "http://1.2.3.256/", "ERR"),
    ("http://127.1/", "http://127.1/", "http://127.0.0.1/"),
    ("http://1.2.3.4./", "http://1.2.3.4./", "http://1.2.3.4/"),
    ("http://0x100000000/", "http://0x100000000/", "ERR"),
    (
        "http://4294967295/",
        "http://4294967295/",
        "http://255.255.255.255/",
    ),
    ("http://09.1/", "http://09.1/", "ERR"),
    ("http://a.1/", "http://a.1/", "ERR"),
    ("http://%zz.com/", "http://%zz.com/", "ERR"),
    ("http://a%20b.com/", "http://a%20b.com/", "ERR"),
    ("//\u{440}\u{444}/", "//xn--p1ai/", "//%d1%80%d1%84/"),
    ("x://a<b/", "x://a<b/", "ERR"),
    ("x://u@:80/", "x://u@:80/", "ERR"),
    (
        "https:example.com",
        "https:example.com",
        "https://example.com/",
    ),
    (
        "https:///example.com/a",
        "https:///example.com/a",
        "https://example.com/a",
    ),
    (
        "http://ex.com/a/..;p",
        "http://ex.com/;p",
        "http://ex.com/a/..;p",
    ),
    ("foo:/.//a", "foo:////a", "foo:/.//a"),
    ("http://[a]@ex.com/", "ERR", "http://%5Ba%5D@ex.com/"),
    (
        "http://Fa\u{df}.de./",
        "http://fass.de./",
        "http://xn--fa-hia.de./",
    ),
    (
        "http://\u{fc}%40x.com/",
        "http://xn--%40x-zra.com/",
        "http://xn--x-dha.com/",
    ),
    (
        "http://\u{e4}.\u{3c2}/",
        "http://xn--4ca.xn--4xa/",
        "http://xn--4ca.xn--3xa/",
    ),
    ("ws://\u{1e9e}.de", "ws://ss.de/", "ws://xn--zca.de/"),
    ("http://a.b.c.d.1/", "http://a.b.c.d.1/", "ERR"),
    ("http://0x/", "http://0x/", "http://0.0.0.0/"),
    ("http://.1/", "http://.1/", "ERR"),
    ("http://[@v0.]h", "http://%5B@/", "ERR"),
    ("HTTPS:\\\\/ex.com", "https:///ex.com", "https://ex.com/"),
];

#[test]
fn canonical_forms_are_w3libs() {
    let mut wrong = Vec::new();
    let mut cases: Vec<(&str, &str, &str)> = W3LIB_2_6.to_vec();
    for &(input, both) in W3LIB {
        if !W3LIB_2_6.iter().any(|&(i, _, _)| i == input) {
            cases.push((input, both, both));
        }
    }
    for (input, v2_5, v2_6) in cases {
        for (version, expected) in [(W3libVersion::V2_5, v2_5), (W3libVersion::V2_6, v2_6)] {
            let got = UrlCanonicalizer::new().w3lib(version).canonicalize(input);
            let ok = match &got {
                Ok(canonical) => canonical == expected,
                Err(_) => expected == "ERR",
            };
            if !ok {
                wrong.push(format!(
                    "{input:?}: got {got:?}, w3lib {version} {expected:?}"
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {}:\n{}",
        wrong.len(),
        2 * (W3LIB.len() + W3LIB_2_6.len()),
        wrong.join("\n")
    );
    // The default is the newest.
    assert_eq!(
        canonicalize_url("http://0x7f.1/").unwrap(),
        "http://127.0.0.1/"
    );
}

#[test]
fn w3lib_versions_are_read_as_python_writes_them() {
    for (text, version) in [
        ("2.5", W3libVersion::V2_5),
        ("2.5.0", W3libVersion::V2_5),
        ("2.6", W3libVersion::V2_6),
        ("2.6.13", W3libVersion::V2_6),
    ] {
        assert_eq!(text.parse::<W3libVersion>(), Ok(version), "{text}");
    }
    for text in ["2.4", "2", "", "2.6.", "2.6.x", "2.60", "v2.6", "3.0"] {
        let err = text.parse::<W3libVersion>().unwrap_err();
        assert!(err.contains("2.5 and 2.6"), "{text}: {err}");
    }
    assert_eq!(W3libVersion::V2_5.to_string(), "2.5");
}

#[test]
fn bytes_that_are_not_utf8_are_escaped() {
    assert_eq!(
        canonicalize_url(b"http://ex.com/caf\xe9").unwrap(),
        "http://ex.com/caf%E9"
    );
    assert_eq!(
        canonicalize_url(b"http://ex.com/?q=\xff\xfe").unwrap(),
        "http://ex.com/?q=%FF%FE"
    );
    assert_eq!(
        canonicalize_url(b"http://ex.com/\xe2\x82").unwrap(),
        "http://ex.com/%E2%82"
    );
}

#[test]
fn long_urls_keep_every_argument_sorted() {
    let args: Vec<String> = (1..=300).rev().map(|i| format!("k{i}=v{i}")).collect();
    let url = format!("http://ex.com/{}?{}", "x".repeat(5000), args.join("&"));
    let canonical = canonicalize_url(&url).unwrap();
    // By name, then value: `k1` before `k10` (as tuples, not as `k1=v1` strings).
    let mut sorted = args.clone();
    sorted.sort_by(|a, b| a.split_once('=').cmp(&b.split_once('=')));
    assert_eq!(sorted[..2], ["k1=v1", "k10=v10"]);
    assert_eq!(
        canonical,
        format!("http://ex.com/{}?{}", "x".repeat(5000), sorted.join("&"))
    );
}

#[test]
fn canonical_forms_are_fixed_points() {
    let v2_5 = UrlCanonicalizer::new().w3lib(W3libVersion::V2_5);
    let v2_6 = UrlCanonicalizer::new();
    let forms = W3LIB.iter().map(|&(i, e)| (i, e, e));
    for (input, e2_5, e2_6) in forms.chain(W3LIB_2_6.iter().copied()) {
        for (pages, expected) in [(&v2_5, e2_5), (&v2_6, e2_6)] {
            if expected != "ERR" && has_authority(input.as_bytes()) {
                assert_eq!(pages.canonicalize(expected).unwrap(), expected, "{input:?}");
            }
        }
    }
}

#[test]
fn lines_with_an_authority_are_urls() {
    assert!(has_authority(b"http://ex.com/"));
    assert!(has_authority(b"  HTTPS://ex.com"));
    assert!(!has_authority(b"mailto:a@ex.com"));
    assert!(!has_authority(b"just a line"));
    assert!(!has_authority(b"://ex.com"));
}

#[test]
fn fingerprints_are_scrapys() {
    let cases: [(&str, &str, &[u8], &str); 3] = [
        (
            "GET",
            "http://example.com/a?y=2&x=1#top",
            b"",
            "f9254c3df8e6bb7994942f9cd30c36061d8315d9",
        ),
        (
            "post",
            "http://Example.com/r\u{e9}sum\u{e9}",
            b"a=1&b=\xff",
            "269eb35e9fedf91646129ed27e9f03c9ff160eef",
        ),
        (
            "GET",
            "http://b\u{fc}cher.de/?q=\"x\"",
            b"",
            "942aaf5da2e9ef5efd4c62d9510f1601f397a0a7",
        ),
    ];
    for (method, url, body, scrapy) in cases {
        let fp = request_fingerprint(method, url, body).unwrap();
        let hex: String = fp.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, scrapy, "{method} {url}");
    }
    assert!(request_fingerprint("GET", "example.com/a", b"").is_err());
}

/// Where the `url` crate (the URL Standard) and w3lib disagree; the module documentation
/// lists these cases, and `canonicalize_url` follows w3lib in each. w3lib 2.6 agrees with
/// the URL Standard on hosts where 2.5 did not.
#[test]
fn url_crate_differences() {
    let cases = [
        (
            "http://ex.com:80/a",
            "http://ex.com/a",
            "http://ex.com:80/a",
        ),
        (
            "http://ex.com/?b=1&a=2",
            "http://ex.com/?b=1&a=2",
            "http://ex.com/?a=2&b=1",
        ),
        (
            "http://ex.com/a%7e",
            "http://ex.com/a%7e",
            "http://ex.com/a~",
        ),
    ];
    for (input, url_crate, w3lib) in cases {
        assert_eq!(
            url::Url::parse(input).unwrap().as_str(),
            url_crate,
            "{input}"
        );
        assert_eq!(canonicalize_url(input).unwrap(), w3lib, "{input}");
    }
    let v2_5 = UrlCanonicalizer::new().w3lib(W3libVersion::V2_5);
    for (input, url_crate, w3lib_2_5) in [
        (
            "http://fa\u{df}.de/",
            "http://xn--fa-hia.de/",
            "http://fass.de/",
        ),
        ("http://0x7f.1/", "http://127.0.0.1/", "http://0x7f.1/"),
    ] {
        let standard = url::Url::parse(input).unwrap();
        assert_eq!(standard.as_str(), url_crate, "{input}");
        assert_eq!(canonicalize_url(input).unwrap(), url_crate, "{input}");
        assert_eq!(v2_5.canonicalize(input).unwrap(), w3lib_2_5, "{input}");
    }
}

#[test]
fn lossy_options_strip_only_what_they_name() {
    use super::UrlCanonicalizer;
    let all = UrlCanonicalizer::new()
        .strip_tracking_params()
        .strip_param("session id")
        .strip_param("x_*")
        .strip_default_port()
        .strip_trailing_slash();
    let cases = [
        (
            "http://ex.com:80/a/?utm_source=1&utm_medium=2&b=1",
            "http://ex.com/a?b=1",
        ),
        ("https://ex.com:443/?gclid=1&fbclid=2", "https://ex.com/"),
        ("https://ex.com:80/a/", "https://ex.com:80/a"),
        (
            "http://[::1]:80/x/?session+id=4&session=5",
            "http://[::1]/x?session=5",
        ),
        (
            "http://ex.com/a/;p?x_a=1&x=2&xa=3",
            "http://ex.com/a/;p?x=2&xa=3",
        ),
        (
            "http://ex.com/?utm=1&autm_source=2",
            "http://ex.com/?autm_source=2&utm=1",
        ),
        ("mailto:a@ex.com?utm_source=1", "mailto:a@ex.com"),
        ("ftp://ex.com:21//", "ftp://ex.com/"),
    ];
    for (input, expected) in cases {
        assert_eq!(all.canonicalize(input).unwrap(), expected, "{input}");
    }
    for (input, _) in cases {
        assert_eq!(
            UrlCanonicalizer::new().canonicalize(input).unwrap(),
            canonicalize_url(input).unwrap(),
            "no option: w3lib's form"
        );
    }
    assert!(all.canonicalize("http://[::1/").is_err());
}

proptest::proptest! {
    /// Any bytes: an answer or an `InvalidUrl`, never a panic; in w3lib 2.5 an answer is
    /// its own canonical form, or an error, when the input had an authority (w3lib 2.5
    /// gives `https://v2.[/` for `https://[v2.[]:`, and refuses that). Not in 2.6, which we
    /// follow: there `http://:/v` is `http:///v`, which is `http://v/`.
    #[test]
    fn any_bytes_get_an_answer_or_an_error(
        bytes in proptest::collection::vec(proptest::sample::select(
            b"hH:/?#[]@%2fFeE.;=&+ \\\t\x80\xc3\xa9\x9fvV01x-u".to_vec()), 0..40),
        prefix in proptest::sample::select(vec!["", "http://", "https://[", "HTTP://a.b:", "ftp://u@"]),
    ) {
        let mut url = prefix.as_bytes().to_vec();
        url.extend(bytes);
        for version in [W3libVersion::V2_5, W3libVersion::V2_6] {
            let pages = UrlCanonicalizer::new().w3lib(version);
            if let Ok(canonical) = pages.canonicalize(&url) {
                let fixed = version == W3libVersion::V2_5 && has_authority(&url);
                if fixed && has_authority(canonical.as_bytes()) {
                    if let Ok(again) = pages.canonicalize(&canonical) {
                        proptest::prop_assert_eq!(again, canonical.clone());
                    }
                }
            }
        }
        let _ = super::UrlCanonicalizer::new().strip_default_port().strip_trailing_slash().canonicalize(&url);
        let _ = request_fingerprint("GET", &String::from_utf8_lossy(&url), &url);
    }
}

/// w3lib's other arguments (`keep_blank_values=False`, `keep_fragments=True`,
/// `query_separator`), as `UrlCanonicalizer` options, give w3lib 2.5's answers (taken
/// from it), with the lossy options too.
#[test]
fn w3lib_s_arguments_as_options() {
    use super::UrlCanonicalizer as C;
    let url = "http://Ex.com/a?b=&a=1&c#Frag x";
    assert_eq!(
        C::new().drop_blank_values().canonicalize(url).unwrap(),
        "http://ex.com/a?a=1"
    );
    assert_eq!(
        C::new().keep_fragments().canonicalize(url).unwrap(),
        "http://ex.com/a?a=1&b=&c=#Frag%20x"
    );
    assert_eq!(
        C::new()
            .query_separator(";")
            .drop_blank_values()
            .canonicalize("http://ex.com/do?c=3;a=50;b=")
            .unwrap(),
        "http://ex.com/do?a=50;c=3"
    );
    assert_eq!(
        C::new()
            .query_separator("&amp;")
            .canonicalize("http://ex.com/do?c=3&amp;a=50")
            .unwrap(),
        "http://ex.com/do?a=50&amp;c=3"
    );
    // A lossy option keeps the fragment it is asked to keep, and the separator.
    let pages = C::new().keep_fragments().strip_tracking_params();
    assert_eq!(
        pages
            .canonicalize("http://ex.com/?x=1&utm_source=a#top")
            .unwrap(),
        "http://ex.com/?x=1#top"
    );
    let semi = C::new().query_separator(";").strip_param("b");
    assert_eq!(
        semi.canonicalize("http://ex.com/?c=1;b=2;a=3").unwrap(),
        "http://ex.com/?a=3;c=1"
    );
    // Each option makes keys another way: a key format of its own.
    let formats: Vec<u64> = [
        C::new(),
        C::new().keep_fragments(),
        C::new().drop_blank_values(),
        C::new().query_separator(";"),
        C::new().query_separator("&"),
    ]
    .iter()
    .map(C::key_format)
    .collect();
    assert_eq!(formats[0], formats[4]);
    assert_eq!(
        formats[..4]
            .iter()
            .collect::<std::collections::HashSet<_>>()
            .len(),
        4
    );
}

/// Scrapy 2.19's `fingerprint(request, include_headers=..., keep_fragments=...)` of
/// `Request("http://ex.com/a?y=1&x=2#f", headers={"Accept-Language": "en", "Cookie":
/// ["a", "b"]})` (taken from it).
#[test]
fn scrapy_s_fingerprint_arguments() {
    use super::request_fingerprint_with as fp;
    let url = "http://ex.com/a?y=1&x=2#f";
    let headers: [(&[u8], &[u8]); 3] = [
        (b"Accept-Language", b"en"),
        (b"Cookie", b"a"),
        (b"Cookie", b"b"),
    ];
    let hex = |b: [u8; 20]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    assert_eq!(
        hex(fp(
            "GET",
            url,
            b"",
            &headers,
            &[b"accept-language", b"COOKIE", b"X-None"],
            &UrlCanonicalizer::new()
        )
        .unwrap()),
        "b6206bd445a5c6447f79eab9f080d7fcb8173d95"
    );
    assert_eq!(
        hex(fp(
            "GET",
            url,
            b"",
            &headers,
            &[],
            &UrlCanonicalizer::new().keep_fragments()
        )
        .unwrap()),
        "96efa6a42c682134ca605d39a884ca1fcac6f121"
    );
    assert_eq!(
        hex(fp("GET", url, b"", &headers, &[], &UrlCanonicalizer::new()).unwrap()),
        "f202bc6835cf26cc4a68c3b5f31f7212a824254c"
    );
}
