//! Union and intersection of filters with identical parameters and seed.

use blockbloom::{BloomFilter, Error};
use blockbloom_workload::url;

fn node(seed: u128) -> BloomFilter {
    BloomFilter::builder()
        .capacity(100_000)
        .fpr(0.01)
        .seed(seed)
        .build()
        .unwrap()
}

#[test]
fn union_contains_every_key_of_both() {
    let (a, b) = (node(1), node(1));
    for i in 0..30_000 {
        a.insert(url(i).as_str());
        b.insert(url(i + 20_000).as_str());
    }
    a.union(&b).unwrap();
    assert!((0..50_000).all(|i| a.contains(url(i).as_str())));
}

/// Four crawler nodes each see a quarter of the links; merging their filters gives exactly
/// the filter one node fed all links would have (bit for bit).
#[test]
fn merging_four_nodes_equals_one_filter_fed_everything() {
    let nodes: Vec<BloomFilter> = (0..4).map(|_| node(7)).collect();
    let single = node(7);
    for i in 0..80_000u64 {
        let u = url(i);
        nodes[(i % 4) as usize].insert(u.as_str());
        single.insert(u.as_str());
    }
    let merged = node(7);
    for n in &nodes {
        merged.union(n).unwrap();
    }
    for i in 0..200_000u64 {
        let u = url(i);
        assert_eq!(
            merged.contains(u.as_str()),
            single.contains(u.as_str()),
            "{u}"
        );
    }
    assert_eq!(merged.count_ones(), single.count_ones());
}

#[test]
fn intersection_keeps_common_keys() {
    let (a, b) = (node(3), node(3));
    for i in 0..10_000 {
        a.insert(&i);
        b.insert(&(i + 5_000));
    }
    a.intersect(&b).unwrap();
    assert!((5_000..10_000).all(|i| a.contains(&i)));
    let stray = (0..5_000).filter(|i| a.contains(i)).count();
    assert!(stray < 500, "{stray} keys of a alone survived");
}

#[test]
fn incompatible_filters_are_refused() {
    let a = node(1);
    let other_seed = node(2);
    let other_size = BloomFilter::builder()
        .capacity(200_000)
        .seed(1)
        .build()
        .unwrap();
    let other_k = BloomFilter::builder()
        .capacity(100_000)
        .bits(a.num_bits())
        .num_hashes(a.num_hashes() + 1)
        .seed(1)
        .build()
        .unwrap();
    for (other, what) in [
        (&other_seed, "seed"),
        (&other_size, "size"),
        (&other_k, "number of hashes"),
    ] {
        assert_eq!(a.union(other), Err(Error::Incompatible { what }));
        assert_eq!(a.intersect(other), Err(Error::Incompatible { what }));
    }
}

#[test]
fn union_while_inserting_loses_nothing() {
    let (a, b) = (node(5), node(5));
    for i in 0..20_000u64 {
        b.insert(&i);
    }
    std::thread::scope(|s| {
        s.spawn(|| {
            for i in 20_000..40_000u64 {
                a.insert(&i);
            }
        });
        s.spawn(|| a.union(&b).unwrap());
    });
    assert!((0..40_000u64).all(|i| a.contains(&i)));
}
