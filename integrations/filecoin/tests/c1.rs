//! C1 files from a real (2 KiB) sealed sector: both forms read, and every way a file can be
//! wrong gives a clear error before any proving.

mod common;

use base64::Engine;
use bellows_filecoin::filecoin_proofs_api::RegisteredSealProof;
use bellows_filecoin::testing::{c1_json, lotus_bench_json};
use bellows_filecoin::{parse_c1, porep};
use common::{sealed, PROOF, SECTOR};

fn err(bytes: &[u8]) -> String {
    parse_c1(bytes, "C1 output t.json").unwrap_err().to_string()
}

/// The JSON of the sealed sector's C1 output, as a value to edit.
fn json_value() -> serde_json::Value {
    serde_json::from_slice(&c1_json(&sealed().c1)).unwrap()
}

#[test]
fn both_forms_read_to_the_same_output() {
    let s = sealed();
    let bare = parse_c1(&c1_json(&s.c1), "bare").unwrap();
    let lotus = parse_c1(&lotus_bench_json(&s.c1, SECTOR), "lotus").unwrap();
    assert_eq!(bare.sector_num, None);
    assert_eq!(lotus.sector_num, Some(SECTOR));
    assert_eq!(bare.registered_proof(), PROOF);
    assert_eq!(bare.partitions(), 1);
    // Same content: re-serialised identically.
    assert_eq!(c1_json(&bare.phase1), c1_json(&lotus.phase1));
    assert_eq!(c1_json(&bare.phase1), c1_json(&s.c1));
    // A byte-order mark and surrounding whitespace are accepted.
    let mut bom = b"\xef\xbb\xbf  ".to_vec();
    bom.extend(lotus_bench_json(&s.c1, SECTOR));
    bom.extend(b"\n");
    assert!(parse_c1(&bom, "bom").is_ok());
}

#[test]
fn truncated_files_are_called_truncated() {
    let s = sealed();
    for bytes in [c1_json(&s.c1), lotus_bench_json(&s.c1, SECTOR)] {
        for cut in [bytes.len() / 2, bytes.len() - 1, 1] {
            let e = err(&bytes[..cut]);
            assert!(e.contains("truncated"), "cut at {cut}: {e}");
        }
    }
    // A truncated Phase1Out (cut at a base64 quantum, so still valid base64).
    let inner = base64::engine::general_purpose::STANDARD.encode(c1_json(&s.c1));
    let cut = &inner[..inner.len() / 8 * 4];
    let w = serde_json::json!({"SectorNum": 7, "Phase1Out": cut, "SectorSize": 2048});
    let e = err(w.to_string().as_bytes());
    assert!(e.contains("Phase1Out") && e.contains("truncated"), "{e}");
    assert!(err(b"").contains("truncated"));
}

#[test]
fn damaged_content_is_named() {
    let s = sealed();
    // Base64 with a character that is not base64.
    let mut w: serde_json::Value = serde_json::from_slice(&lotus_bench_json(&s.c1, 7)).unwrap();
    let mut p = w["Phase1Out"].as_str().unwrap().to_string();
    p.replace_range(10..11, "*");
    w["Phase1Out"] = p.into();
    let e = err(w.to_string().as_bytes());
    assert!(e.contains("base64"), "{e}");
    // A byte of the JSON structure changed.
    let mut j = c1_json(&s.c1);
    let at = j.iter().position(|&b| b == b':').unwrap();
    j[at] = b';';
    assert!(err(&j).contains("invalid JSON"), "{}", err(&j));
    // A commitment that is not 32 bytes.
    let mut v = json_value();
    v["comm_r"] = serde_json::json!([1, 2, 3]);
    assert!(err(v.to_string().as_bytes()).contains("invalid JSON"));
    // All-zero commitments and seed.
    for key in ["comm_r", "comm_d", "seed"] {
        let mut v = json_value();
        v[key] = serde_json::json!(vec![0u8; 32]);
        let e = err(v.to_string().as_bytes());
        assert!(e.contains(key) && e.contains("all zeros"), "{e}");
    }
    // Not a C1 file at all.
    assert!(err(b"{\"a\": 1}").contains("not a C1 output"));
    assert!(err(b"[1, 2]").contains("not a JSON object"));
    assert!(err(b"\xff\xfe").contains("UTF-8"));
}

#[test]
fn other_sizes_and_versions_are_refused_or_named() {
    let s = sealed();
    // The wrapper says 8 MiB, the content is 2 KiB.
    let mut w: serde_json::Value = serde_json::from_slice(&lotus_bench_json(&s.c1, 7)).unwrap();
    w["SectorSize"] = 8_388_608u64.into();
    let e = err(w.to_string().as_bytes());
    assert!(e.contains("SectorSize says 8388608"), "{e}");
    // The proof type says 8 MiB, the vanilla proofs are 2 KiB ones.
    let mut v = json_value();
    v["registered_proof"] = "StackedDrg8MiBV1_1".into();
    let e = err(v.to_string().as_bytes());
    assert!(
        e.contains("StackedDrg8MiBV1_1") && e.contains("2048-byte"),
        "{e}"
    );
    // Non-interactive PoRep: its C2 is an aggregate, which Bellows does not make.
    let mut v = json_value();
    v["registered_proof"] = "StackedDrg2KiBV1_2_Feat_NonInteractivePoRep".into();
    let e = err(v.to_string().as_bytes());
    assert!(e.contains("non-interactive"), "{e}");
    // A proof type no version knows.
    let mut v = json_value();
    v["registered_proof"] = "StackedDrg2KiBV9".into();
    let e = err(v.to_string().as_bytes());
    assert!(e.contains("not a seal proof type"), "{e}");
    // The same sector under proof version 1.0 reads (the two versions share one circuit and
    // one parameter file), but its partition circuit is not satisfied: 1.0 derives another
    // graph (porep id), so the vanilla proofs do not fit. See
    // `a_relabelled_c1_is_unsatisfied` for the synthesis.
    let mut v = json_value();
    v["registered_proof"] = "StackedDrg2KiBV1".into();
    parse_c1(v.to_string().as_bytes(), "v1").unwrap();
    assert_eq!(
        porep::cache_id(RegisteredSealProof::StackedDrg2KiBV1).unwrap(),
        porep::cache_id(PROOF).unwrap()
    );
    // A C2 without parameters in the folder names the file it wants.
    let dir = common::work_dir().join("no-params");
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = bellows_filecoin::ProveConfig::new(
        bellows_core::registry::resolve("cpu", &Default::default()).unwrap(),
    );
    let c1 = parse_c1(&c1_json(&s.c1), "c1").unwrap();
    let e = bellows_filecoin::prove_c2(&c1, &dir, &cfg)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no parameters for StackedDrg2KiBV1_1 ") && e.contains(".params"),
        "{e}"
    );
}

/// The real C1's partition circuit (2.69 M variables) is satisfied and has the published
/// shape; relabelled as proof version 1.0, or with another seed, its vanilla proofs no longer
/// verify, which is reported before any circuit is built.
#[test]
fn circuits_of_a_real_c1_and_relabelled_ones() {
    use bellows_core::groth16::synthesis::find_unsatisfied;
    use bellows_filecoin::filecoin_proofs::constants::SectorShape2KiB;
    let t = std::time::Instant::now();
    let c1 = parse_c1(&c1_json(&sealed().c1), "c1").unwrap();
    let inst = porep::instance::<SectorShape2KiB>(&c1).unwrap();
    assert_eq!(inst.circuits.len(), 1);
    assert_eq!(inst.public_inputs[0].len(), 39);
    assert!(find_unsatisfied(inst.circuits[0].clone())
        .unwrap()
        .is_none());
    eprintln!(
        "synthesis of a satisfied 2 KiB partition: {:?}",
        t.elapsed()
    );
    for (key, value) in [
        ("registered_proof", serde_json::json!("StackedDrg2KiBV1")),
        ("seed", serde_json::json!(vec![6u8; 32])),
        ("ticket", serde_json::json!(vec![6u8; 32])),
    ] {
        let mut v = json_value();
        v[key] = value;
        let c1 = parse_c1(v.to_string().as_bytes(), "changed").unwrap();
        match porep::instance::<SectorShape2KiB>(&c1) {
            // The ticket is not part of the PoRep statement (the replica id already binds it).
            Ok(_) => assert_eq!(key, "ticket"),
            Err(e) => {
                assert_ne!(key, "ticket");
                assert!(
                    e.to_string().contains("vanilla proofs do not verify"),
                    "{e}"
                );
            }
        }
    }
}

/// The cache file names are filecoin-proofs' own: for the published 2 KiB circuit,
/// parameters.json lists them.
#[test]
fn cache_names_are_filecoin_proofs_own() {
    let paths = porep::cache_paths(PROOF, std::path::Path::new("/p")).unwrap();
    let name = paths
        .params
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        name.starts_with(
            "v28-stacked-proof-of-replication-merkletree-poseidon_hasher-8-0-0-sha256_hasher-"
        ) && name.ends_with(".params"),
        "{name}"
    );
    assert!(paths.is_published(), "{name} is in parameters.json");
    assert_eq!(paths.vk.with_extension("params"), paths.params);
    assert_eq!(paths.meta.extension().unwrap(), "meta");
    assert_eq!(
        bellows_filecoin::filecoin_proofs_api::RegisteredSealProof::StackedDrg2KiBV1_1
            .cache_params_path()
            .unwrap()
            .file_name(),
        paths.params.file_name()
    );
}

/// Vanilla proofs cut short deep inside (a Merkle path missing an element, a list of proofs
/// missing one) are an error, never a panic, whichever step notices: reading, the vanilla-proof
/// check, or (for the two cuts filecoin-proofs' vanilla verifier lets through) the circuit's
/// synthesis, whose shape then differs from the blank circuit the parameters were made for, or
/// which fails outright.
#[test]
fn structurally_damaged_vanilla_proofs_are_errors() {
    use bellows_core::groth16::constraints::CircuitShape;
    use bellows_filecoin::filecoin_proofs::constants::SectorShape2KiB;
    use bellows_filecoin::prove::Guarded;
    /// Removes the last element of the `nth` array (depth-first) that holds arrays or objects.
    fn cut(v: &mut serde_json::Value, nth: &mut usize) -> bool {
        match v {
            serde_json::Value::Array(a) => {
                if a.len() >= 2 && a.iter().all(|x| x.is_array() || x.is_object()) {
                    if *nth == 0 {
                        a.pop();
                        return true;
                    }
                    *nth -= 1;
                }
                a.iter_mut().any(|x| cut(x, nth))
            }
            serde_json::Value::Object(o) => o.values_mut().any(|x| cut(x, nth)),
            _ => false,
        }
    }
    let blank = CircuitShape::of(porep::blank_circuit::<SectorShape2KiB>(PROOF).unwrap()).unwrap();
    let (mut damaged, mut at_synthesis) = (0, 0);
    for nth in 0..12 {
        let mut v = json_value();
        let mut k = nth;
        if !cut(&mut v["vanilla_proofs"], &mut k) {
            break;
        }
        damaged += 1;
        let inst = parse_c1(v.to_string().as_bytes(), "cut")
            .and_then(|c1| porep::instance::<SectorShape2KiB>(&c1));
        if let Ok(inst) = inst {
            at_synthesis += 1;
            match CircuitShape::of(Guarded(inst.circuits[0].clone())) {
                Ok(shape) => assert_ne!(shape, blank, "cut {nth}: the circuit kept its shape"),
                Err(e) => assert!(e.to_string().contains("panic"), "cut {nth}: {e}"),
            }
        }
    }
    assert!(damaged >= 10, "the walk found {damaged} places to cut");
    assert!(
        at_synthesis <= 2,
        "{at_synthesis} cuts passed the vanilla-proof check"
    );
}
