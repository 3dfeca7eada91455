//! Property tests: random operation sequences against an exact model never show a false
//! negative, and `insert_if_absent` follows the sequential contract.

use blockbloom::BloomFilter;
use proptest::prelude::*;
use std::collections::HashSet;

#[derive(Debug, Clone)]
enum Op {
    Insert(u16),
    InsertIfAbsent(u16),
    Contains(u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u16..300).prop_map(Op::Insert),
        (0u16..300).prop_map(Op::InsertIfAbsent),
        (0u16..300).prop_map(Op::Contains),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn no_false_negatives(
        ops in proptest::collection::vec(op(), 1..400),
        capacity in 1u64..200,
        fpr in prop_oneof![Just(0.5), Just(0.1), Just(0.01)],
        seed: u128,
        string_keys: bool,
    ) {
        let f = BloomFilter::builder().capacity(capacity).fpr(fpr).seed(seed).build().unwrap();
        let mut model = HashSet::new();
        let key = |k: u16| format!("https://example.com/page/{k}");
        for op in &ops {
            match *op {
                Op::Insert(k) => {
                    if string_keys { f.insert(&key(k)) } else { f.insert(&k) }
                    model.insert(k);
                }
                Op::InsertIfAbsent(k) => {
                    let new = if string_keys { f.insert_if_absent(&key(k)) } else { f.insert_if_absent(&k) };
                    // seen before => must say false (no false negative, guarantee 2)
                    if model.contains(&k) {
                        prop_assert!(!new, "key {} reported new twice", k);
                    }
                    model.insert(k);
                }
                Op::Contains(k) => {
                    let present = if string_keys { f.contains(&key(k)) } else { f.contains(&k) };
                    if model.contains(&k) {
                        prop_assert!(present, "false negative for {}", k);
                    }
                }
            }
        }
        for &k in &model {
            let present = if string_keys { f.contains(&key(k)) } else { f.contains(&k) };
            prop_assert!(present, "false negative for {} at the end", k);
        }
    }

    #[test]
    fn str_and_string_keys_agree(s in ".{0,200}", seed: u128) {
        let f = BloomFilter::builder().capacity(10).seed(seed).build().unwrap();
        prop_assert_eq!(f.probe(s.as_str()), f.probe(&s));
        prop_assert!(f.insert_if_absent(&s));
        prop_assert!(f.contains(s.as_str()));
        prop_assert!(!f.insert_if_absent(s.as_str()));
    }
}
