//! The rayon integration: a filter shared by a parallel iterator, and the bulk helpers.
#![cfg(feature = "rayon")]

use blockbloom::BloomFilter;
use blockbloom_workload::{dup_stream, url};
use rayon::prelude::*;
use std::collections::HashSet;

#[test]
fn par_iter_filter_keeps_each_distinct_url_at_most_once() {
    let (ids, distinct) = dup_stream(200_000, 0.5, 9);
    let links: Vec<String> = ids.iter().map(|&i| url(i)).collect();
    let seen = BloomFilter::with_capacity(distinct, 0.001).unwrap();
    let fresh: Vec<&String> = links
        .par_iter()
        .filter(|u| seen.insert_if_absent(u.as_str()))
        .collect();
    let unique: HashSet<&&String> = fresh.iter().collect();
    assert_eq!(unique.len(), fresh.len(), "a URL passed the filter twice");
    assert!(fresh.len() as u64 <= distinct);
    assert!(
        fresh.len() as f64 >= distinct as f64 * 0.998,
        "{} of {distinct}",
        fresh.len()
    );
    assert!(links.iter().all(|u| seen.contains(u.as_str())));
}

#[test]
fn par_insert_if_absent_matches_the_contract() {
    let keys: Vec<u64> = (0..50_000).chain(0..50_000).collect();
    let seen = BloomFilter::builder()
        .capacity(50_000)
        .fpr(0.001)
        .seed(3)
        .build()
        .unwrap();
    let mut answers = vec![false; keys.len()];
    seen.par_insert_if_absent_many(&keys, &mut answers);
    assert_eq!(answers.len(), keys.len());
    let mut claims = vec![0u8; 50_000];
    for (k, a) in keys.iter().zip(&answers) {
        claims[*k as usize] += *a as u8;
    }
    assert!(claims.iter().all(|&c| c <= 1));
    assert!(claims.iter().filter(|&&c| c == 1).count() >= 49_900);
    // a second pass finds everything
    seen.par_insert_if_absent_many(&keys, &mut answers);
    assert!(answers.iter().all(|&a| !a));

    let other = BloomFilter::builder()
        .capacity(50_000)
        .fpr(0.001)
        .seed(3)
        .build()
        .unwrap();
    other.par_insert_many(&keys);
    assert!(keys.iter().all(|k| other.contains(k)));
}
