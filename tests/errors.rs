//! Every bad parameter is an `Err` with a readable message, never a panic or an abort.

use blockbloom::{BloomFilter, Error, ExpiringBloomFilter, GrowableBloomFilter};

fn msg(e: &Error) -> String {
    let s = e.to_string();
    assert!(!s.is_empty());
    s
}

#[test]
fn bad_fpr() {
    for p in [
        0.0,
        1.0,
        -0.01,
        1.5,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ] {
        let e = BloomFilter::with_capacity(1000, p).unwrap_err();
        assert!(matches!(e, Error::InvalidFpr(_)), "{p}: {e:?}");
        assert!(msg(&e).contains("between 0 and 1"));
    }
    let e = BloomFilter::with_capacity(1000, 1e-300).unwrap_err();
    assert!(matches!(e, Error::UnreachableFpr(_)), "{e:?}");
    let e = BloomFilter::builder()
        .capacity(10)
        .num_hashes(1)
        .fpr(1e-30)
        .build()
        .unwrap_err();
    assert!(matches!(e, Error::UnreachableFpr(_)), "{e:?}");
    msg(&e);
}

/// A filter sized for a share of the rate asked for (a growable filter's first layer, in
/// memory or a file; the expiring filter's planes) reports the rate asked for, not its share
/// (the growable's said 5e-301 for 1e-300).
#[test]
fn an_unreachable_rate_is_the_one_asked_for() {
    let dir = std::env::temp_dir().join(format!("blockbloom-unreachable-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let asked = Error::UnreachableFpr(1e-300);
    let growable = GrowableBloomFilter::new(1000, 1e-300).unwrap_err();
    let file = GrowableBloomFilter::open_file(dir.join("g.bloom"), 1000, 1e-300).unwrap_err();
    let expiring = ExpiringBloomFilter::builder()
        .expire_after(std::time::Duration::from_secs(3600))
        .capacity(1000)
        .fpr(1e-300)
        .build()
        .unwrap_err();
    for e in [growable, file, expiring] {
        assert_eq!(e, asked);
        assert!(msg(&e).contains("rate 1e-300 is below"), "{e}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_capacity() {
    let e = BloomFilter::with_capacity(0, 0.01).unwrap_err();
    assert_eq!(e, Error::ZeroCapacity);
    msg(&e);
    let e = BloomFilter::builder().fpr(0.01).build().unwrap_err();
    assert_eq!(e, Error::MissingCapacity);
    assert!(msg(&e).contains("capacity"));
}

#[test]
fn bad_hashes_and_bits() {
    for k in [0, blockbloom::MAX_HASHES + 1, u32::MAX] {
        let e = BloomFilter::builder()
            .capacity(10)
            .num_hashes(k)
            .build()
            .unwrap_err();
        assert_eq!(e, Error::InvalidHashes(k));
        msg(&e);
    }
    let e = BloomFilter::builder()
        .capacity(10)
        .bits(0)
        .build()
        .unwrap_err();
    assert_eq!(e, Error::InvalidBits(0));
    msg(&e);
}

#[test]
fn sizes_that_cannot_be_allocated_are_errors_not_aborts() {
    // 10^15 keys at 1% = 1.2 PB: more than any address space.
    let e = BloomFilter::with_capacity(1_000_000_000_000_000, 0.01).unwrap_err();
    assert!(
        matches!(e, Error::TooLarge { .. } | Error::AllocationFailed { .. }),
        "{e:?}"
    );
    msg(&e);
    // u64::MAX keys: the byte count itself overflows.
    let e = BloomFilter::with_capacity(u64::MAX, 0.01).unwrap_err();
    assert!(matches!(e, Error::TooLarge { .. }), "{e:?}");
    // u64::MAX bits: fits the arithmetic, not the machine.
    let e = BloomFilter::builder()
        .capacity(1)
        .bits(u64::MAX)
        .build()
        .unwrap_err();
    assert!(
        matches!(e, Error::TooLarge { .. } | Error::AllocationFailed { .. }),
        "{e:?}"
    );
    msg(&e);
}

#[test]
fn errors_are_std_errors() {
    fn takes(_: &dyn std::error::Error) {}
    takes(&Error::ZeroCapacity);
    let r: Result<BloomFilter, Box<dyn std::error::Error + Send + Sync>> =
        BloomFilter::with_capacity(0, 0.1).map_err(Into::into);
    assert!(r.is_err());
}
