//! A filter over TLS (`rediss://`) on a real redis-server with a TLS port, its certificate
//! signed by a CA made here with `openssl`: the server is verified (refused until the CA is
//! trusted through `SSL_CERT_FILE`), then the filter answers as over plain TCP, through a
//! restart of the server. One test in this binary: it sets `SSL_CERT_FILE` for the process,
//! which no other test's thread may be reading meanwhile.

#![cfg(feature = "tls")]

mod common;

use blockbloom_redis::RedisBloomFilter;
use blockbloom_workload::url;
use common::Server;
use std::path::Path;
use std::process::{Command, Stdio};

fn openssl(dir: &Path, args: &[&str]) {
    let ok = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "openssl {args:?} failed");
}

/// A CA (`ca.crt`) and a certificate for `localhost` and 127.0.0.1 signed by it
/// (`server.crt`, `server.key`) in `dir`; `false` if `openssl` cannot be run here.
fn make_certificates(dir: &Path) -> bool {
    if Command::new("openssl").arg("version").output().is_err() {
        assert!(
            std::env::var_os("BLOCKBLOOM_REQUIRE_REDIS").is_none(),
            "openssl is required (BLOCKBLOOM_REQUIRE_REDIS is set) but cannot be run"
        );
        eprintln!("SKIPPED: openssl not found");
        return false;
    }
    std::fs::create_dir_all(dir).unwrap();
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    openssl(
        dir,
        &[
            &["req", "-x509"],
            &ec[..],
            &[
                "-keyout",
                "ca.key",
                "-out",
                "ca.crt",
                "-days",
                "2",
                "-subj",
                "/CN=blockbloom test CA",
            ],
        ]
        .concat(),
    );
    openssl(
        dir,
        &[
            &["req"],
            &ec[..],
            &[
                "-keyout",
                "server.key",
                "-out",
                "server.csr",
                "-subj",
                "/CN=localhost",
            ],
        ]
        .concat(),
    );
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.crt",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
        ],
    );
    true
}

#[test]
fn a_filter_over_tls_verifies_the_server_and_survives_a_restart() {
    if !common::available() {
        return;
    }
    let certs = std::env::temp_dir().join(format!("blockbloom-tls-{}", std::process::id()));
    if !make_certificates(&certs) {
        return;
    }
    let file = |name: &str| certs.join(name).to_str().unwrap().to_string();
    let tls_port = common::free_port().to_string();
    let (crt, key, ca) = (file("server.crt"), file("server.key"), file("ca.crt"));
    let mut server = Server::persistent(&[
        "--tls-port",
        &tls_port,
        "--tls-cert-file",
        &crt,
        "--tls-key-file",
        &key,
        "--tls-ca-cert-file",
        &ca,
        "--tls-auth-clients",
        "no",
    ]);
    let tls_url = format!("rediss://localhost:{tls_port}/");
    let open = || RedisBloomFilter::open_or_create(&tls_url, "tls", 100_000, 0.01);

    // The server's certificate is verified: its CA is not trusted yet.
    std::env::set_var("SSL_CERT_FILE", file("server.key")); // a file with no certificate
    let Err(refused) = open() else {
        panic!("a server signed by an unknown CA is refused")
    };
    assert!(refused.to_string().contains("certificate"), "{refused}");
    std::env::set_var("SSL_CERT_FILE", &ca);

    let mut f = open().unwrap();
    let keys: Vec<String> = (0..2000).map(url).collect();
    assert!(
        f.insert_if_absent_many(&keys)
            .unwrap()
            .iter()
            .filter(|&&x| x)
            .count()
            > 1990
    );
    assert!(f.contains_many(&keys).unwrap().iter().all(|&x| x));
    // The same filter over plain TCP and over TLS by address (the certificate names
    // 127.0.0.1 too).
    let mut plain = RedisBloomFilter::open(&server.url(), "tls").unwrap();
    assert!(plain.contains(&keys[7]).unwrap());
    let mut by_ip =
        RedisBloomFilter::open(&format!("rediss://127.0.0.1:{tls_port}/"), "tls").unwrap();
    assert!(!by_ip.insert_if_absent(&keys[9]).unwrap());

    // A restart between calls (the append-only file keeps the bits): the next call opens a
    // new TLS connection, as over TCP.
    server.restart();
    assert!(f.contains_many(&keys).unwrap().iter().all(|&x| x));
    assert!(f.insert_if_absent("after the restart").unwrap());
    assert!(plain.contains("after the restart").unwrap());
    drop(server);
    let _ = std::fs::remove_dir_all(&certs);
}
