//! Every bad parameter is an `Err` with a readable message, never a panic or an abort.

use blockbloom::{BloomFilter, Error};

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
