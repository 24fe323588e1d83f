//! `PointCheck::Batched` on whole parameter files large enough for the bucket test: a good file
//! reads exactly as with `Full`, and a point outside the subgroup anywhere is refused with the
//! same message `Full` gives (section, index, byte offset).

use bellows_core::circuits::synthetic::SyntheticCircuit;
use bellows_core::groth16::{
    io::{self, PointCheck},
    setup::generate_benchmark_parameters,
    subgroup::{plan, Plan},
};

use crate::common::points::{g1_outside_subgroup, g2_outside_subgroup};

fn file() -> (Vec<u8>, bellows_core::groth16::Parameters) {
    // 2^13 domain: h has 8191 points, enough for the bucket test (see the plan assertions).
    let p = generate_benchmark_parameters(SyntheticCircuit::new(13, 50).unwrap(), 5).unwrap();
    let mut v = Vec::new();
    io::write_parameters(&p, &mut v).unwrap();
    (v, p)
}

/// Byte offset of point `i` of section `k` (0 ic, 1 h, 2 l, 3 a, 4 b_g1, 5 b_g2).
fn offset(file: &[u8], k: usize, i: usize) -> usize {
    let mut at = 3 * 96 + 3 * 192;
    for s in 0..=k {
        let count = u32::from_be_bytes(file[at..at + 4].try_into().unwrap()) as usize;
        let size = if s == 5 { 192 } else { 96 };
        if s == k {
            assert!(i < count);
            return at + 4 + i * size;
        }
        at += 4 + count * size;
    }
    unreachable!()
}

#[test]
fn good_files_read_the_same_as_with_full_checks() {
    let (bytes, p) = file();
    assert!(matches!(plan(p.h.len(), 140), Plan::Buckets { .. }));
    assert!(matches!(plan(p.b_g2.len(), 70), Plan::Buckets { .. }));
    let batched = io::parameters_from_bytes(&bytes, PointCheck::Batched).unwrap();
    let full = io::parameters_from_bytes(&bytes, PointCheck::Full).unwrap();
    crate::common::assert_same_params(&batched, &full);
}

#[test]
fn a_bad_point_anywhere_gets_full_checks_message() {
    let (bytes, p) = file();
    let g1 = g1_outside_subgroup().to_uncompressed();
    let g2 = g2_outside_subgroup().to_uncompressed();
    let cases = [
        (1usize, 0usize, "section h, point 0"),
        (1, p.h.len() - 1, "section h, point"),
        (4, 3, "section b_g1, point 3"),
        (5, p.b_g2.len() - 2, "section b_g2, point"),
    ];
    for (k, i, name) in cases {
        let mut bad = bytes.clone();
        let at = offset(&bad, k, i);
        if k == 5 {
            bad[at..at + 192].copy_from_slice(&g2);
        } else {
            bad[at..at + 96].copy_from_slice(&g1);
        }
        let full = io::parameters_from_bytes(&bad, PointCheck::Full)
            .unwrap_err()
            .to_string();
        let batched = io::parameters_from_bytes(&bad, PointCheck::Batched)
            .unwrap_err()
            .to_string();
        assert_eq!(batched, full);
        assert!(
            batched.contains(name) && batched.contains("not in the subgroup"),
            "{batched}"
        );
        assert!(
            batched.contains(&format!("point {i} (byte offset {at})")),
            "{batched}"
        );
    }
}
