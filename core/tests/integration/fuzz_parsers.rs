//! Property-based fuzzing of every file parser (issue 9, item 6), on the stable toolchain.
//!
//! Each parser gets arbitrary bytes and mutations of a valid input (bytes flipped, length fields
//! rewritten, truncated, extended). The properties: it never panics, it never allocates blindly
//! (a bad length is an error before allocation: these tests would abort otherwise), and whatever
//! it accepts re-encodes to exactly the bytes it read.
//!
//! CI runs 64 cases per target (the default here); `PROPTEST_CASES=N` runs more. docs/fuzzing.md
//! records a long run and what it found.

use std::sync::OnceLock;

use crate::common::Squarings;

use bellows_core::groth16::{
    io::{self, PointCheck},
    setup::{generate_parameters, ToxicWaste},
    Parameters,
};
use proptest::prelude::*;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

fn params() -> &'static (Parameters, Vec<u8>, Vec<u8>) {
    static P: OnceLock<(Parameters, Vec<u8>, Vec<u8>)> = OnceLock::new();
    P.get_or_init(|| {
        let waste = ToxicWaste::random(&mut ChaCha20Rng::seed_from_u64(4));
        let p = generate_parameters(Squarings(3), &waste).unwrap();
        let mut file = Vec::new();
        io::write_parameters(&p, &mut file).unwrap();
        let mut vk = Vec::new();
        io::write_verifying_key(&p.vk, &mut vk).unwrap();
        (p, file, vk)
    })
}

/// A mutation of `base`: some bytes replaced, a u32 written somewhere (a length field, likely),
/// then cut or extended.
#[derive(Clone, Debug)]
struct Mutation {
    flips: Vec<(usize, u8)>,
    word: Option<(usize, u32)>,
    resize: Option<usize>,
}

fn mutation() -> impl Strategy<Value = Mutation> {
    (
        proptest::collection::vec((any::<usize>(), any::<u8>()), 0..4),
        proptest::option::of((
            any::<usize>(),
            prop_oneof![any::<u32>(), 0u32..64, Just(u32::MAX)],
        )),
        proptest::option::of(any::<usize>()),
    )
        .prop_map(|(flips, word, resize)| Mutation {
            flips,
            word,
            resize,
        })
}

fn apply(base: &[u8], m: &Mutation) -> Vec<u8> {
    let mut v = base.to_vec();
    for &(at, b) in &m.flips {
        let i = at % v.len();
        v[i] = b;
    }
    if let Some((at, w)) = m.word {
        let i = at % (v.len() - 3);
        v[i..i + 4].copy_from_slice(&w.to_be_bytes());
    }
    if let Some(r) = m.resize {
        let new_len = r % (2 * base.len() + 1);
        v.resize(new_len, 0x5a);
    }
    v
}

fn reencode_params(p: &Parameters) -> Vec<u8> {
    let mut v = Vec::new();
    io::write_parameters(p, &mut v).unwrap();
    v
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn params_parser_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        if let Ok(p) = io::parameters_from_bytes(&bytes, PointCheck::Full) {
            prop_assert_eq!(reencode_params(&p), bytes);
        }
    }

    #[test]
    fn params_parser_on_mutated_files(m in mutation(), check in prop_oneof![Just(PointCheck::Full), Just(PointCheck::CurveOnly)]) {
        let (_, file, _) = params();
        let bytes = apply(file, &m);
        if let Ok(p) = io::parameters_from_bytes(&bytes, check) {
            prop_assert_eq!(reencode_params(&p), bytes);
        }
    }

    #[test]
    fn vk_parser_on_mutated_keys(m in mutation()) {
        let (_, _, vk) = params();
        let bytes = apply(vk, &m);
        if let Ok(k) = io::verifying_key_from_bytes(&bytes, PointCheck::Full) {
            let mut again = Vec::new();
            io::write_verifying_key(&k, &mut again).unwrap();
            prop_assert_eq!(again, bytes);
            prop_assert!(k.check_sound().is_ok());
        }
    }

    #[test]
    fn proof_parser_on_arbitrary_and_mutated_bytes(
        bytes in proptest::collection::vec(any::<u8>(), 0..600),
        m in mutation(),
    ) {
        for data in [bytes.clone(), apply(&valid_proofs(), &m)] {
            if let Ok(proofs) = io::proofs_from_bytes(&data) {
                let again: Vec<u8> = proofs.iter().flat_map(|p| p.to_bytes()).collect();
                prop_assert_eq!(again, data);
            }
        }
    }

    #[test]
    fn inputs_parser_on_arbitrary_text(text in ".{0,200}") {
        if let Ok(v) = io::parse_public_inputs_json(&text) {
            let again = io::parse_public_inputs_json(&io::format_public_inputs_json(&v)).unwrap();
            prop_assert_eq!(again, v);
        }
    }

    #[test]
    fn inputs_parser_on_json_shaped_text(
        items in proptest::collection::vec(
            prop_oneof![
                "[0-9]{1,80}".prop_map(|d| format!("\"{d}\"")),
                "-?[0-9]{1,30}",
                Just("null".to_string()),
                "\"[0-9a-f ]{0,5}\"",
                Just("[]".to_string()),
            ],
            0..6,
        ),
        bom in any::<bool>(),
        space in " {0,3}",
    ) {
        let text = format!(
            "{}{space}[{}]{space}",
            if bom { "\u{feff}" } else { "" },
            items.join(",")
        );
        match io::parse_public_inputs_json(&text) {
            Ok(v) => prop_assert_eq!(v.len(), items.len()),
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }

    #[test]
    fn plugin_file_names(name in "[a-zA-Z0-9_./ -]{0,24}") {
        let file = bellows_core::plugin::loader::plugin_file_name(&name);
        let back = bellows_core::plugin::loader::plugin_name_of(std::path::Path::new(&file));
        if bellows_core::plugin::loader::is_plugin_name(&name) {
            prop_assert_eq!(back, Some(name));
        }
    }
}

/// Two valid proofs (any points in the subgroup do: the parser does not verify).
fn valid_proofs() -> Vec<u8> {
    let (p, _, _) = params();
    let proof = bellows_core::groth16::Proof {
        a: p.a[0],
        b: p.b_g2[0],
        c: p.h[0],
    };
    let mut v = proof.to_bytes().to_vec();
    v.extend_from_slice(&proof.to_bytes());
    v
}
