//! Bad input gets a clear error, never a panic: truncated and corrupted parameter files, points
//! off the curve, outside the subgroup or at infinity, trailing bytes, verifying-key files and
//! proofs of the wrong size, and public inputs that are not field elements. Each test checks the
//! error kind and that the message names the problem.

use std::sync::Arc;

use crate::common::{
    points::{g1_outside_subgroup, g2_outside_subgroup},
    Squarings,
};

use bellows_core::groth16::{
    io::{self, PointCheck},
    setup::{generate_parameters, ToxicWaste},
    Parameters,
};
use bellows_core::Error;
use blstrs::Scalar;
use ff::Field;
use group::{Curve, Group};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fn params() -> Parameters {
    let waste = ToxicWaste::random(&mut ChaCha20Rng::seed_from_u64(77));
    generate_parameters(Squarings(6), &waste).unwrap()
}

fn file_of(p: &Parameters) -> Vec<u8> {
    let mut v = Vec::new();
    io::write_parameters(p, &mut v).unwrap();
    v
}

/// Where a section lies in a parameters file, found by walking the length fields here in the
/// test (independently of the reader under test).
#[derive(Clone, Copy, Debug)]
struct Sec {
    len_at: usize,
    first: usize,
    count: usize,
    size: usize,
}

impl Sec {
    fn point(&self, i: usize) -> std::ops::Range<usize> {
        let s = self.first + i * self.size;
        s..s + self.size
    }
}

fn sections(file: &[u8]) -> [Sec; 6] {
    let mut at = 3 * 96 + 3 * 192;
    let sizes = [96, 96, 96, 96, 96, 192]; // ic, h, l, a, b_g1, b_g2
    sizes.map(|size| {
        let count = u32::from_be_bytes(file[at..at + 4].try_into().unwrap()) as usize;
        let s = Sec {
            len_at: at,
            first: at + 4,
            count,
            size,
        };
        at = s.first + count * size;
        s
    })
}
const IC: usize = 0;
const H: usize = 1;
const L: usize = 2;
const A: usize = 3;
const B_G1: usize = 4;
const B_G2: usize = 5;

fn read_err(bytes: &[u8], check: PointCheck) -> (Error, String) {
    match io::parameters_from_bytes(bytes, check) {
        Ok(_) => panic!("corrupted parameters were accepted"),
        Err(e) => {
            let m = e.to_string();
            (e, m)
        }
    }
}

fn assert_msg(m: &str, parts: &[&str]) {
    for p in parts {
        assert!(m.contains(p), "message {m:?} should mention {p:?}");
    }
}

#[test]
fn truncated_parameters_are_reported_with_offsets() {
    let params = params();
    let file = file_of(&params);
    let s = sections(&file);
    // The test's own walk agrees with the parameters (and the file ends after b_g2).
    assert_eq!(
        s.map(|x| x.count),
        [
            params.vk.ic.len(),
            params.h.len(),
            params.l.len(),
            params.a.len(),
            params.b_g1.len(),
            params.b_g2.len()
        ]
    );
    assert_eq!(s[B_G2].first + s[B_G2].count * 192, file.len());
    let cases: Vec<(usize, Vec<&str>)> = vec![
        (
            0,
            vec!["alpha_g1", "truncated", "needs 96 bytes at byte offset 0"],
        ),
        (100, vec!["beta_g1", "truncated", "only 4 available"]),
        (
            s[IC].len_at + 2,
            vec!["section ic, length field", "truncated"],
        ),
        (s[IC].first + 50, vec!["section ic", "truncated"]),
        (s[H].point(2).start + 10, vec!["section h", "truncated"]),
        (
            s[B_G2].len_at + 3,
            vec!["section b_g2, length field", "truncated"],
        ),
        (file.len() - 1, vec!["section b_g2", "truncated"]),
    ];
    for (cut, parts) in cases {
        let (e, m) = read_err(&file[..cut], PointCheck::Full);
        assert!(matches!(e, Error::Malformed { .. }), "cut {cut}: {m}");
        assert_msg(&m, &parts);
    }
}

#[test]
fn huge_length_fields_are_rejected_before_allocating() {
    let file = file_of(&params());
    let s = sections(&file);
    for (sec, name) in [
        (IC, "section ic"),
        (H, "section h"),
        (L, "section l"),
        (B_G2, "section b_g2"),
    ] {
        let mut bad = file.clone();
        bad[s[sec].len_at..s[sec].len_at + 4].copy_from_slice(&u32::MAX.to_be_bytes());
        let (e, m) = read_err(&bad, PointCheck::Full);
        assert!(matches!(e, Error::Malformed { .. }), "{m}");
        assert_msg(
            &m,
            &[
                name,
                "announces 4294967295 points",
                &format!("byte offset {}", s[sec].len_at),
            ],
        );
    }
}

#[test]
fn point_off_the_curve_is_rejected_in_both_modes() {
    let file = file_of(&params());
    let s = sections(&file);
    let mut bad = file.clone();
    let p = s[L].point(1);
    bad[p.end - 1] ^= 1; // change y: the point leaves the curve
    for check in [PointCheck::Full, PointCheck::CurveOnly] {
        let (e, m) = read_err(&bad, check);
        assert!(matches!(e, Error::InvalidPoint { .. }), "{m}");
        assert_msg(
            &m,
            &[
                "section l, point 1",
                &format!("byte offset {}", p.start),
                "not on the curve",
            ],
        );
    }
    // The same in G2, and in a fixed verifying-key point.
    let mut bad = file.clone();
    let p = s[B_G2].point(0);
    bad[p.end - 1] ^= 1;
    let (_, m) = read_err(&bad, PointCheck::CurveOnly);
    assert_msg(&m, &["section b_g2, point 0", "not on the curve"]);
    let mut bad = file.clone();
    bad[96 + 95] ^= 1; // beta_g1
    let (e, m) = read_err(&bad, PointCheck::CurveOnly);
    assert!(matches!(e, Error::InvalidPoint { .. }), "{m}");
    assert_msg(
        &m,
        &[
            "verifying key, beta_g1",
            "byte offset 96",
            "not on the curve",
        ],
    );
}

#[test]
fn point_outside_the_subgroup_is_rejected_when_checked_and_accepted_curve_only() {
    let params = params();
    let file = file_of(&params);
    let s = sections(&file);
    let g1 = g1_outside_subgroup();
    let mut bad = file.clone();
    bad[s[A].point(2)].copy_from_slice(&g1.to_uncompressed());
    let (e, m) = read_err(&bad, PointCheck::Full);
    assert!(matches!(e, Error::InvalidPoint { .. }), "{m}");
    assert_msg(&m, &["section a, point 2", "not in the subgroup"]);
    // CurveOnly is the fast mode: it does not run the subgroup check (documented).
    let read = io::parameters_from_bytes(&bad, PointCheck::CurveOnly).unwrap();
    assert_eq!(read.a[2], g1);
    assert_eq!(read.a[1], params.a[1]);

    let g2 = g2_outside_subgroup();
    let mut bad = file.clone();
    bad[s[B_G2].point(1)].copy_from_slice(&g2.to_uncompressed());
    let (_, m) = read_err(&bad, PointCheck::Full);
    assert_msg(&m, &["section b_g2, point 1", "not in the subgroup"]);
    assert_eq!(
        io::parameters_from_bytes(&bad, PointCheck::CurveOnly)
            .unwrap()
            .b_g2[1],
        g2
    );

    // The six fixed verifying-key points are always fully checked.
    let mut bad = file.clone();
    bad[2 * 96 + 2 * 192..3 * 96 + 2 * 192].copy_from_slice(&g1.to_uncompressed()); // delta_g1
    let (_, m) = read_err(&bad, PointCheck::CurveOnly);
    assert_msg(&m, &["verifying key, delta_g1", "not in the subgroup"]);
}

#[test]
fn points_at_infinity_and_bad_encodings_are_rejected() {
    let file = file_of(&params());
    let s = sections(&file);
    let mut infinity = [0u8; 96];
    infinity[0] = 0x40;
    for (sec, name) in [(IC, "section ic, point 0"), (B_G1, "section b_g1, point 0")] {
        let mut bad = file.clone();
        bad[s[sec].point(0)].copy_from_slice(&infinity);
        let (e, m) = read_err(&bad, PointCheck::CurveOnly);
        assert!(matches!(e, Error::InvalidPoint { .. }), "{m}");
        assert_msg(&m, &[name, "point at infinity"]);
    }
    // The compression flag in an uncompressed section, and a coordinate ≥ p.
    let mut bad = file.clone();
    bad[s[H].point(3).start] |= 0x80;
    let (_, m) = read_err(&bad, PointCheck::Full);
    assert_msg(
        &m,
        &["section h, point 3", "not a valid uncompressed encoding"],
    );
    let mut bad = file.clone();
    let p = s[H].point(0);
    bad[p.start] = 0x1f;
    bad[p.start + 1..p.start + 48].fill(0xff);
    let (_, m) = read_err(&bad, PointCheck::Full);
    assert_msg(
        &m,
        &["section h, point 0", "not a valid uncompressed encoding"],
    );
}

#[test]
fn the_lowest_bad_index_is_reported() {
    let file = file_of(&params());
    let s = sections(&file);
    let mut bad = file.clone();
    for i in [4, 1, 6] {
        let p = s[H].point(i);
        bad[p.end - 1] ^= 1;
    }
    let (_, m) = read_err(&bad, PointCheck::Full);
    assert_msg(&m, &["section h, point 1 "]);
}

#[test]
fn trailing_bytes_and_inconsistent_shapes_are_rejected() {
    let params = params();
    let mut file = file_of(&params);
    let end = file.len();
    file.push(0);
    let (e, m) = read_err(&file, PointCheck::Full);
    assert!(matches!(e, Error::Malformed { .. }), "{m}");
    assert_msg(
        &m,
        &[
            "1 trailing byte after section b_g2",
            &format!("byte offset {end}"),
        ],
    );

    let mut short_h = params.clone();
    short_h.h = Arc::new(params.h[1..].to_vec());
    let (_, m) = read_err(&file_of(&short_h), PointCheck::Full);
    assert_msg(&m, &["section h", "power-of-two"]);

    let mut uneven_b = params.clone();
    uneven_b.b_g2 = Arc::new(params.b_g2[1..].to_vec());
    let (_, m) = read_err(&file_of(&uneven_b), PointCheck::Full);
    assert_msg(&m, &["b_g1 and b_g2"]);

    let mut no_ic = params.clone();
    no_ic.vk.ic.clear();
    let (_, m) = read_err(&file_of(&no_ic), PointCheck::Full);
    assert_msg(&m, &["section ic", "no IC points"]);
}

struct TempFile(std::path::PathBuf);
impl TempFile {
    fn new(name: &str, bytes: &[u8]) -> Self {
        let p =
            std::env::temp_dir().join(format!("bellows-bad-input-{}-{name}", std::process::id()));
        std::fs::write(&p, bytes).unwrap();
        TempFile(p)
    }
}
impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn verifying_key_files_of_the_wrong_size() {
    let params = params();
    let mut vk = Vec::new();
    io::write_verifying_key(&params.vk, &mut vk).unwrap();
    let full = vk.len();

    let mut long = vk.clone();
    long.extend_from_slice(&[7; 5]);
    let e = io::verifying_key_from_bytes(&long, PointCheck::Full).unwrap_err();
    assert!(matches!(e, Error::Malformed { .. }), "{e}");
    assert_msg(
        &e.to_string(),
        &[
            "wrong size",
            &format!("is {full} bytes"),
            &format!("{} bytes", full + 5),
        ],
    );

    let e = io::verifying_key_from_bytes(&vk[..full - 10], PointCheck::Full).unwrap_err();
    assert_msg(&e.to_string(), &["section ic", "truncated"]);

    // Neither a key nor a parameters file: both readings are named.
    let f = TempFile::new("vk-garbage", &long);
    let e = io::read_verifying_key_or_params(&f.0, PointCheck::Full).unwrap_err();
    assert!(matches!(e, Error::Malformed { .. }), "{e}");
    assert_msg(
        &e.to_string(),
        &[
            "neither a verifying key file",
            "nor a parameters file",
            "section h",
        ],
    );

    let empty = TempFile::new("vk-empty", b"");
    let e = io::read_verifying_key_or_params(&empty.0, PointCheck::Full).unwrap_err();
    assert_msg(&e.to_string(), &["empty"]);
    let e = io::read_parameters(&empty.0, PointCheck::Full).unwrap_err();
    assert_msg(&e.to_string(), &["parameters file", "empty"]);

    let missing = std::env::temp_dir().join("bellows-bad-input-does-not-exist.params");
    let e = io::read_parameters(&missing, PointCheck::Full).unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e}");
    assert_msg(&e.to_string(), &["does-not-exist.params"]);
}

fn some_proof_bytes() -> Vec<u8> {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let p = bellows_core::groth16::Proof {
        a: blstrs::G1Projective::random(&mut rng).to_affine(),
        b: blstrs::G2Projective::random(&mut rng).to_affine(),
        c: blstrs::G1Projective::random(&mut rng).to_affine(),
    };
    p.to_bytes().to_vec()
}

#[test]
fn proofs_of_the_wrong_size_or_with_invalid_points() {
    let good = some_proof_bytes();
    for len in [0usize, 191, 193, 383] {
        let mut b = good.clone();
        b.resize(len, 0);
        let e = io::proofs_from_bytes(&b).unwrap_err();
        assert!(matches!(e, Error::Malformed { .. }), "{e}");
        assert_msg(&e.to_string(), &["wrong size", &format!("{len} bytes")]);
        let f = TempFile::new(&format!("proof-{len}"), &b);
        let e = io::read_proof(&f.0).unwrap_err();
        assert_msg(
            &e.to_string(),
            &["wrong size", "expected 192 bytes", &format!("got {len}")],
        );
    }
    // Off-subgroup A (compressed), garbage B, and C in the second of two proofs.
    let mut bad_a = good.clone();
    bad_a[..48].copy_from_slice(&g1_outside_subgroup().to_compressed());
    let e = io::proofs_from_bytes(&bad_a).unwrap_err();
    assert!(matches!(e, Error::InvalidPoint { .. }), "{e}");
    assert_msg(&e.to_string(), &["proof element A"]);
    let mut bad_b = good.clone();
    bad_b[48..144].fill(0xff);
    assert_msg(
        &io::proofs_from_bytes(&bad_b).unwrap_err().to_string(),
        &["proof element B"],
    );
    let mut two = good.clone();
    two.extend_from_slice(&good);
    two[192 + 144..].copy_from_slice(&g1_outside_subgroup().to_compressed());
    let f = TempFile::new("two-proofs", &two);
    let e = io::read_proofs(&f.0).unwrap_err();
    assert!(matches!(e, Error::InvalidPoint { .. }), "{e}");
    assert_msg(&e.to_string(), &["proof 1", "proof element C"]);
}

#[test]
fn public_inputs_that_are_not_field_elements() {
    let r = "52435875175126190479447740508185965837690552500527637822603658699938581184513";
    let cases: Vec<(String, Vec<&str>)> = vec![
        (
            format!("[\"1\", \"{r}\"]"),
            vec![
                "public input 1",
                r,
                "not less than the scalar field order r",
            ],
        ),
        (
            format!("[\"{}\"]", "9".repeat(90)),
            vec!["public input 0", "999", "not less than"],
        ),
        (
            "[\"5\", \"-1\"]".into(),
            vec!["public input 1", "\"-1\"", "'-' at position 0"],
        ),
        (
            "[\"abc\"]".into(),
            vec!["public input 0", "\"abc\"", "'a' at position 0"],
        ),
        (
            "[\"0x10\"]".into(),
            vec!["public input 0", "'x' at position 1"],
        ),
        (
            "[\" 7\"]".into(),
            vec!["public input 0", "' ' at position 0"],
        ),
        ("[\"\"]".into(), vec!["public input 0", "empty string"]),
        (
            "[\"1\", 5]".into(),
            vec!["public input 1", "the number 5", "must be quoted"],
        ),
        ("[null]".into(), vec!["public input 0", "null"]),
        ("[[\"1\"]]".into(), vec!["public input 0", "an array"]),
        (
            "{\"inputs\": [\"1\"]}".into(),
            vec!["expected an array", "an object"],
        ),
        (
            "\"1\"".into(),
            vec!["expected an array", "the string \"1\""],
        ),
        ("[\"1\",".into(), vec!["not valid JSON"]),
        ("".into(), vec!["not valid JSON"]),
    ];
    for (text, parts) in cases {
        let e = io::parse_public_inputs_json(&text).unwrap_err();
        assert!(matches!(e, Error::Malformed { .. }), "{text}: {e}");
        assert_msg(&e.to_string(), &parts);
    }
    // One below r is fine.
    let ok = "[\"52435875175126190479447740508185965837690552500527637822603658699938581184512\"]";
    assert_eq!(
        io::parse_public_inputs_json(ok).unwrap(),
        vec![-Scalar::ONE]
    );
}
