//! Pre-compiled constraint systems: results equal direct synthesis bit for bit (synthetic at
//! several bit percentages, sha256, and a circuit exercising every kind of linear combination),
//! unsatisfied witnesses and foreign recordings are refused, cache files are checked (truncated,
//! corrupted, other version, other circuit) and written atomically, and the pipeline proves with
//! a recording exactly as without.

use crate::common;

use std::sync::Arc;

use bellows_core::{
    circuits::{BuiltinCircuit, CircuitOptions, CircuitSpec, Sha256Circuit, SyntheticCircuit},
    groth16::{
        prover::ProvingKey,
        setup::generate_random_parameters,
        synthesis::{synthesize, Synthesized},
        verifier::{prepare_verifying_key, verify_proof},
    },
    pce::{
        cache::{builtin_id, PceCache, Source},
        Pce,
    },
    pipeline::{Job, Pipeline, PipelineConfig},
    rng::ProofRng,
    Backend, Error,
};
use bellpepper_core::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError};
use blstrs::Scalar;
use ff::{Field, PrimeField};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

fn spec(name: &str, log_size: Option<u32>, bits: Option<u8>, bytes: Option<usize>) -> CircuitSpec {
    let mut o = CircuitOptions::default();
    o.log_size = log_size;
    o.bits_pct = bits;
    o.bytes = bytes;
    CircuitSpec::new(name, &o).unwrap()
}

fn check_spec(spec: &CircuitSpec, seeds: &[u64]) -> Pce {
    let pce = Pce::record(spec.blank(), &builtin_id(spec)).unwrap();
    assert_eq!(pce.num_constraints(), spec.num_constraints());
    for &seed in seeds {
        let direct = synthesize(spec.with_witness(seed)).unwrap();
        let fast = pce.synthesize(spec.with_witness(seed)).unwrap();
        common::assert_identical(&direct, &fast, &format!("{} seed {seed}", builtin_id(spec)));
    }
    pce
}

#[test]
fn synthetic_at_several_bit_percentages_equals_direct_synthesis() {
    // 2^13: two row blocks of 4096 and a partial one at the end.
    for bits in [0u8, 1, 37, 90, 100] {
        let s = spec("synthetic", Some(13), Some(bits), None);
        let pce = check_spec(&s, &[1, 2]);
        // Compact: at most 6 bytes per non-zero, everything included.
        assert!(
            pce.bytes_per_nonzero() <= 6.0,
            "{bits}%: {} bytes per non-zero",
            pce.bytes_per_nonzero()
        );
        assert_eq!(pce.entry_bytes(), 4);
    }
}

#[test]
fn sha256_equals_direct_synthesis_and_is_compact() {
    let s = spec("sha256", None, None, Some(3));
    let pce = check_spec(&s, &[7]);
    assert!(pce.num_coeffs() > 2, "sha256 has powers of two");
    assert!(
        pce.bytes_per_nonzero() <= 6.0,
        "{} bytes per non-zero",
        pce.bytes_per_nonzero()
    );
}

/// A circuit exercising every kind of linear combination: repeated variables (merged, and
/// cancelling to a zero coefficient), explicit zero and negative coefficients, inputs in A, B
/// and C, constant terms, empty combinations, a row of 300 terms (multi-byte row length) with
/// hundreds of distinct coefficients, a random large coefficient, an aux variable only in C and
/// one never used, and enough rows to span several row blocks. Every constraint holds for the
/// witness unless `break_row` names one to falsify.
#[derive(Clone)]
struct EdgeCircuit {
    seed: Option<u64>,
    rows: usize,
    break_row: Option<usize>,
}

impl EdgeCircuit {
    fn new(seed: u64, rows: usize) -> Self {
        Self {
            seed: Some(seed),
            rows,
            break_row: None,
        }
    }
}

/// The values of the variables allocated so far (None without a witness), by index.
#[derive(Default)]
struct Vals {
    inputs: Vec<Option<Scalar>>,
    aux: Vec<Option<Scalar>>,
}

impl Vals {
    fn eval(&self, lc: &LinearCombination<Scalar>) -> Option<Scalar> {
        let mut acc = Scalar::ZERO;
        for (var, coeff) in lc.iter() {
            let v = match var.get_unchecked() {
                Index::Input(i) => self.inputs[i]?,
                Index::Aux(i) => self.aux[i]?,
            };
            acc += v * coeff;
        }
        Some(acc)
    }
}

impl Circuit<Scalar> for EdgeCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut rng = self.seed.map(ChaCha20Rng::seed_from_u64);
        let mut rnd = || rng.as_mut().map(Scalar::random);
        let big = Scalar::from_u128(0x1234_5678_9abc_def0_1122_3344_5566_7788) + Scalar::from(3u64);
        let one = CS::one();
        let mut vals = Vals {
            inputs: vec![Some(Scalar::ONE)],
            aux: Vec::new(),
        };
        let alloc = |cs: &mut CS, v: Option<Scalar>, input: bool, vals: &mut Vals| {
            if input {
                vals.inputs.push(v);
                cs.alloc_input(|| "in", || v.ok_or(SynthesisError::AssignmentMissing))
            } else {
                vals.aux.push(v);
                cs.alloc(|| "aux", || v.ok_or(SynthesisError::AssignmentMissing))
            }
        };
        let x = alloc(cs, rnd(), true, &mut vals)?;
        let y = alloc(cs, rnd(), true, &mut vals)?;
        let mut aux = Vec::new();
        for _ in 0..320 {
            aux.push(alloc(cs, rnd(), false, &mut vals)?);
        }
        let _unused = alloc(cs, rnd(), false, &mut vals)?;
        let only_c = alloc(cs, rnd(), false, &mut vals)?;
        let lc0 = LinearCombination::<Scalar>::zero;
        // Each shape: (A, B, C-extra); C = z + C-extra − value(C-extra) · one, z = A·B.
        let mut j = 0usize;
        while j < self.rows {
            let (p, q) = (aux[j % 320], aux[(j * 7 + 3) % 320]);
            let c_j = Scalar::from(j as u64 + 2);
            let (a, b, c_extra): (LinearCombination<Scalar>, LinearCombination<Scalar>, _) =
                match j % 12 {
                    // Repeated variable merging to coefficient 3; constant and −1 in B.
                    0 => (
                        lc0() + x + (Scalar::from(3u64), p) - p + p,
                        lc0() + (Scalar::from(5u64), one) - q,
                        lc0(),
                    ),
                    // A cancels to a zero coefficient; explicit zero coefficient in B.
                    1 => (
                        lc0() + p - p,
                        lc0() + (Scalar::ZERO, q) + one,
                        lc0() + (Scalar::ZERO, p),
                    ),
                    // Inputs in A, B and C.
                    2 => (lc0() + x - y, lc0() + y + (c_j, x), lc0() + (-c_j, y) + x),
                    // Constants only.
                    3 => (
                        lc0() + (Scalar::from(2u64), one),
                        lc0() + (Scalar::from(3u64), one),
                        lc0() + one,
                    ),
                    // A long row with distinct power-of-two and per-row coefficients.
                    4 => {
                        let mut a = lc0();
                        for (i, v) in aux.iter().take(300).enumerate() {
                            let mut c = Scalar::from(2u64).pow_vartime([(i % 200) as u64]);
                            if i % 3 == 0 {
                                c = -c;
                            }
                            a = a + (c + Scalar::from(j as u64), *v);
                        }
                        (a, lc0() + one, lc0() + only_c - only_c + only_c)
                    }
                    // A random large coefficient and a negated variable.
                    5 => (lc0() + (big, p), lc0() - q, lc0() + (big, only_c)),
                    // Empty A and B.
                    6 => (lc0(), lc0(), lc0()),
                    // Empty B, per-row coefficient in A.
                    7 => (lc0() + (c_j, p), lc0(), lc0() + (-Scalar::ONE, q)),
                    // Variable in both A and B with −1, input in C only.
                    8 => (lc0() - p, lc0() - p + one, lc0() + y),
                    // Out-of-order additions (the indexer keeps them sorted).
                    9 => (
                        lc0() + aux[(j + 5) % 320] + aux[(j + 1) % 320] + aux[(j + 3) % 320],
                        lc0() + q + x,
                        lc0(),
                    ),
                    // Subtraction of a scaled combination.
                    10 => {
                        let inner = lc0() + p + (Scalar::from(4u64), q);
                        (lc0() + one - (Scalar::from(6u64), &inner), lc0() + p, lc0())
                    }
                    _ => (
                        lc0() + p,
                        lc0() + q,
                        lc0() + (Scalar::from(1u64 << 40), one),
                    ),
                };
            // z = A·B − extra, so that C = z + extra holds and the shape needs no witness.
            let zv = vals
                .eval(&a)
                .zip(vals.eval(&b))
                .zip(vals.eval(&c_extra))
                .map(|((a, b), e)| a * b - e);
            let zv = match self.break_row {
                Some(r) if r == j => zv.map(|z| z + Scalar::ONE),
                _ => zv,
            };
            let z = alloc(cs, zv, false, &mut vals)?;
            let c = c_extra + z;
            cs.enforce(|| format!("row {j}"), |_| a, |_| b, |_| c);
            j += 1;
        }
        Ok(())
    }
}

#[test]
fn every_kind_of_linear_combination_equals_direct_synthesis() {
    // 9000 circuit rows: three row blocks. Recorded from the blank circuit.
    let blank = EdgeCircuit {
        seed: None,
        rows: 9000,
        break_row: None,
    };
    let pce = Pce::record(blank, "edge").unwrap();
    for seed in [3u64, 4] {
        let circuit = EdgeCircuit::new(seed, 9000);
        let direct = synthesize(circuit.clone()).unwrap();
        let fast = pce.synthesize(circuit).unwrap();
        common::assert_identical(&direct, &fast, &format!("edge seed {seed}"));
        assert!(pce.num_coeffs() > 256, "{} coefficients", pce.num_coeffs());
        // The never-used aux variable and the C-only one occur in no A and no B.
        assert!(!fast.a_aux_density.is_used(320) && !fast.b_aux_density.is_used(320));
        assert!(!fast.a_aux_density.is_used(321) && !fast.b_aux_density.is_used(321));
        assert!(fast.b_input_density.is_used(1) && fast.b_input_density.is_used(2));
    }
}

#[test]
fn an_unsatisfied_witness_names_the_same_constraint_as_direct_synthesis() {
    // A row in the second block, and the last circuit row.
    for row in [5000usize, 8999] {
        let mut c = EdgeCircuit::new(5, 9000);
        let pce = Pce::record(c.clone(), "edge").unwrap();
        c.break_row = Some(row);
        let direct = synthesize(c.clone()).unwrap_err();
        let fast = pce.synthesize(c).unwrap_err();
        assert!(matches!(fast, Error::Unsatisfied(_)), "{fast}");
        assert_eq!(direct.to_string(), fast.to_string());
        assert!(
            fast.to_string().contains(&format!("constraint {row} of")),
            "{fast}"
        );
    }
    // A wrong public output in the synthetic circuit: its last circuit constraint.
    let s = SyntheticCircuit::new(10, 50).unwrap();
    let pce = Pce::record(s.clone(), "synthetic-k10-b50").unwrap();
    let bad = s.with_witness(1).with_claimed_output(Scalar::from(9u64));
    let direct = synthesize(bad.clone()).unwrap_err();
    let fast = pce.synthesize(bad).unwrap_err();
    assert_eq!(direct.to_string(), fast.to_string());
    let at_the_output = fast.to_string().contains("constraint 1019 of 1022");
    assert!(at_the_output, "{fast}");
}

#[test]
fn a_recording_of_another_circuit_is_refused() {
    // Same counts, different shape: caught by the sampled rows.
    let p0 = spec("synthetic", Some(13), Some(0), None);
    let p90 = spec("synthetic", Some(13), Some(90), None);
    let pce = Pce::record(p0.blank(), "x").unwrap();
    let err = pce.synthesize(p90.with_witness(1)).unwrap_err().to_string();
    assert!(err.contains("does not match this circuit"), "{err}");
    assert!(
        err.contains("constraint 512: its A combination differs"),
        "{err}"
    );
    // Different counts.
    let k12 = spec("synthetic", Some(12), Some(0), None);
    let err = pce.synthesize(k12.with_witness(1)).unwrap_err().to_string();
    assert!(
        err.contains("4094 constraints") && err.contains("8190"),
        "{err}"
    );
    // The library path for batches too.
    let err = pce
        .synthesize_batch(vec![p0.with_witness(1), p90.with_witness(2)])
        .unwrap_err();
    assert!(matches!(err, Error::InvalidInput(_)), "{err}");
}

/// `n` witnesses of synthetic 2^`k` with `bits` % of bits, synthesised as one batch on a fresh
/// recording; every `step`-th is asserted equal to its direct synthesis. The recording and the
/// batch.
fn batch_equals_direct(k: u32, bits: u8, n: u64, step: usize) -> (Pce, Vec<Synthesized>) {
    let s = spec("synthetic", Some(k), Some(bits), None);
    let pce = Pce::record(s.blank(), &builtin_id(&s)).unwrap();
    let circuits: Vec<BuiltinCircuit> = (0..n).map(|i| s.with_witness(i)).collect();
    let fast = pce.synthesize_batch(circuits.clone()).unwrap();
    for (c, f) in circuits.into_iter().zip(&fast).step_by(step) {
        common::assert_identical(&synthesize(c).unwrap(), f, &format!("batch of {n}"));
    }
    (pce, fast)
}

#[test]
fn batches_equal_direct_synthesis_and_outputs_can_be_the_callers_buffers() {
    let (pce, fast) = batch_equals_direct(9, 60, 4, 1);
    // evaluate_into writes every element of caller-provided buffers; wrong lengths are refused.
    let d = &fast[0];
    let n = pce.num_constraints();
    let mut bufs = vec![std::mem::MaybeUninit::new(Scalar::from(99u64)); 3 * n];
    let (a, rest) = bufs.split_at_mut(n);
    let (b, c) = rest.split_at_mut(n);
    pce.evaluate_into(&d.input_assignment, &d.aux_assignment, a, b, c)
        .unwrap();
    // SAFETY: initialised above (and rewritten by evaluate_into).
    let got: Vec<Scalar> = bufs.iter().map(|x| unsafe { x.assume_init() }).collect();
    assert_eq!(&got[..n], &d.a[..]);
    assert_eq!(&got[n..2 * n], &d.b[..]);
    assert_eq!(&got[2 * n..], &d.c[..]);
    let (a, rest) = bufs.split_at_mut(n - 1);
    let (b, c) = rest.split_at_mut(n);
    let err = pce
        .evaluate_into(
            &d.input_assignment,
            &d.aux_assignment,
            a,
            b,
            &mut c[..n - 1],
        )
        .unwrap_err();
    assert!(err.to_string().contains("output buffers"), "{err}");
}

fn tmpdir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("bellows-pce-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn cache_files_round_trip_authenticated() {
    let dir = tmpdir("roundtrip");
    let cache = PceCache::new(&dir);
    let s = spec("sha256", None, None, Some(2));
    let id = builtin_id(&s);
    assert_eq!(id, "sha256-n2");
    assert!(!cache.contains(&id));
    let (built, src) = cache.load_or_record(s.blank(), &id).unwrap();
    assert_eq!(src, Source::RecordedAndSaved);
    let (loaded, src) = cache.load_or_record(s.blank(), &id).unwrap();
    assert_eq!(src, Source::Loaded);
    assert_eq!(loaded.digest(), built.digest());
    // The image and its tag (32 bytes) and the trailer's magic (8).
    assert_eq!(
        loaded.size_bytes() + 40,
        std::fs::metadata(cache.path(&id).unwrap()).unwrap().len()
    );
    let direct = synthesize(s.with_witness(11)).unwrap();
    common::assert_identical(
        &direct,
        &loaded.synthesize(s.with_witness(11)).unwrap(),
        "loaded",
    );
    // Expected digest: matching passes, another is refused.
    cache.load(&id, Some(&built.digest())).unwrap();
    let err = cache.load(&id, Some(&[7; 32])).unwrap_err().to_string();
    assert!(err.contains("expected 0707"), "{err}");
    // Another circuit's id: refused by name.
    std::fs::copy(cache.path(&id).unwrap(), cache.path("sha256-n3").unwrap()).unwrap();
    let err = cache.load("sha256-n3", None).unwrap_err().to_string();
    assert!(
        err.contains("records circuit \"sha256-n2\", not \"sha256-n3\""),
        "{err}"
    );
    assert_eq!(cache.list().unwrap().len(), 2);
    // Unusable identifiers.
    assert!(cache.path("../evil").is_err());
    assert!(cache.path(".hidden").is_err());
    // The key is the folder's own, readable by its owner only.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(dir.join(".key"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0, "{mode:o}");
    // An entry whose image was replaced by another recording's (every digest recomputed, as an
    // editor could) but whose tag was not: refused, and not silently recorded again.
    let path = cache.path(&id).unwrap();
    let tagged = std::fs::read(&path).unwrap();
    let other = Pce::record(spec("sha256", None, None, Some(3)).blank(), &id).unwrap();
    let other_image = dir.join("other.pce");
    other.save(&other_image).unwrap();
    let mut forged = std::fs::read(&other_image).unwrap();
    forged.extend_from_slice(&tagged[tagged.len() - 40..]);
    std::fs::write(&path, &forged).unwrap();
    let err = cache.load(&id, None).unwrap_err().to_string();
    assert!(err.contains("tag does not match"), "{err}");
    assert!(cache.load_or_record(s.blank(), &id).is_err());
    // An entry without a tag (written elsewhere): refused by `load`, recorded again by
    // `load_or_record`, then tagged.
    std::fs::copy(&other_image, &path).unwrap();
    let err = cache.load(&id, None).unwrap_err().to_string();
    assert!(err.contains("no tag"), "{err}");
    let (again, src) = cache.load_or_record(s.blank(), &id).unwrap();
    assert_eq!(src, Source::RecordedAndSaved);
    assert_eq!(again.digest(), built.digest());
    cache.load(&id, Some(&built.digest())).unwrap();
    // A cache with another key does not accept this one's entries.
    std::fs::remove_file(dir.join(".key")).unwrap();
    assert!(cache.load(&id, None).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn truncated_corrupted_and_foreign_files_are_refused() {
    let dir = tmpdir("corrupt");
    let s = spec("synthetic", Some(13), Some(90), None);
    let pce = Pce::record(s.blank(), "t").unwrap();
    let path = dir.join("t.pce");
    pce.save(&path).unwrap();
    let good = std::fs::read(&path).unwrap();
    let bad = dir.join("bad.pce");
    let load_err = |bytes: &[u8]| {
        std::fs::write(&bad, bytes).unwrap();
        Pce::load(&bad, None).unwrap_err()
    };
    // Truncations anywhere: in the header, in a section, one byte short; and trailing bytes.
    for cut in [0, 10, 100, good.len() / 2, good.len() - 1] {
        let e = load_err(&good[..cut]);
        assert!(matches!(e, Error::Malformed { .. }), "cut {cut}: {e}");
        assert!(e.to_string().contains("truncated"), "cut {cut}: {e}");
    }
    let mut longer = good.clone();
    longer.extend_from_slice(&[0; 8]);
    assert!(load_err(&longer).to_string().contains("trailing bytes"));
    // A flipped bit anywhere (header fields, coefficients, entries, lengths, block index).
    let step = good.len() / 37;
    for pos in (0..good.len())
        .step_by(step.max(1))
        .chain([8, 20, 200, good.len() - 9])
    {
        let mut b = good.clone();
        b[pos] ^= 0x10;
        let e = load_err(&b).to_string();
        assert!(
            e.contains("corrupted")
                || e.contains("magic")
                || e.contains("version")
                || e.contains("header length")
                || e.contains("truncated")
                || e.contains("trailing"),
            "byte {pos}: {e}"
        );
    }
    // Another format version: a clear message (the version field is under the header check, so
    // a real v2 file would carry a valid check; the version is examined first).
    let mut b = good.clone();
    b[8..12].copy_from_slice(&2u32.to_le_bytes());
    assert!(load_err(&b).to_string().contains("format version 2"));
    assert!(load_err(b"not a recording at all")
        .to_string()
        .contains("bad magic"));
    // The good file still loads.
    Pce::load(&path, Some("t")).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn concurrent_writers_of_one_entry_never_expose_a_partial_file() {
    let dir = tmpdir("concurrent");
    let cache = PceCache::new(&dir);
    let s = spec("synthetic", Some(12), Some(10), None);
    let pce = Arc::new(Pce::record(s.blank(), "c").unwrap());
    let path = cache.path("c").unwrap();
    std::thread::scope(|scope| {
        for _ in 0..3 {
            let pce = pce.clone();
            let cache = &cache;
            scope.spawn(move || {
                for _ in 0..10 {
                    cache.store(&pce).unwrap();
                }
            });
        }
        scope.spawn(|| {
            let mut loads = 0;
            while loads < 30 {
                if path.exists() {
                    let got = cache.load("c", Some(&pce.digest())).unwrap();
                    assert_eq!(got.num_constraints(), pce.num_constraints());
                    loads += 1;
                } else {
                    std::thread::yield_now();
                }
            }
        });
    });
    // No temporary files are left behind.
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(
        names,
        vec![
            std::ffi::OsString::from(".key"),
            std::ffi::OsString::from("c.pce")
        ]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_pipeline_proves_with_a_recording_exactly_as_without() {
    let s = spec("synthetic", Some(8), Some(30), None);
    let params = Arc::new(generate_random_parameters(s.blank(), &mut ProofRng::seeded(5)).unwrap());
    let backend: Arc<dyn Backend> = Arc::new(bellows_cpu::CpuBackend::new());
    let key = Arc::new(ProvingKey::new(params.clone(), backend).unwrap());
    let pvk = prepare_verifying_key(&params.vk);
    let pce = Arc::new(Pce::record(s.blank(), &builtin_id(&s)).unwrap());
    let mut cfg = PipelineConfig::default();
    cfg.synthesis_workers = 2;
    cfg.seed = Some(3);
    let jobs = || {
        (0..3u64)
            .map(|j| Job {
                id: j,
                partitions: vec![s.instance(j).unwrap().0, s.instance(10 + j).unwrap().0],
            })
            .collect::<Vec<_>>()
    };
    let run = |p: Pipeline| {
        let mut out = Vec::new();
        p.run(jobs(), |r| out.push((r.id, r.proofs.unwrap())))
            .unwrap();
        out.sort_by_key(|r| r.0);
        out
    };
    let plain = run(Pipeline::new(vec![key.clone()], cfg.clone()).unwrap());
    let with = run(Pipeline::new(vec![key], cfg).unwrap().with_pce(pce));
    assert_eq!(plain, with);
    for (id, proofs) in &with {
        for (p, proof) in proofs.iter().enumerate() {
            let seed = if p == 0 { *id } else { 10 + id };
            let inputs = s.instance(seed).unwrap().1;
            assert!(verify_proof(&pvk, proof, &inputs).unwrap());
        }
    }
}

#[test]
fn products_overlapping_the_witness_equal_direct_synthesis() {
    // 2^15: eight row blocks, published as the witness goes, so the products of the first blocks
    // run while the witness makes the next ones.
    for bits in [0u8, 90] {
        let s = spec("synthetic", Some(15), Some(bits), None);
        check_spec(&s, &[7]);
    }
}

/// A circuit whose witness code panics half-way (the recording, without a witness, does not).
struct Panicky {
    witness: bool,
}

impl Circuit<Scalar> for Panicky {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        for i in 0..6000u64 {
            if self.witness && i == 5000 {
                panic!("witness code failed at {i}");
            }
            let v = cs.alloc(|| "v", || Ok(Scalar::from(i)))?;
            cs.enforce(|| "v*1=v", |lc| lc + v, |lc| lc + CS::one(), |lc| lc + v);
        }
        Ok(())
    }
}

#[test]
fn a_panicking_witness_is_an_error_not_a_panic_or_a_hang() {
    let pce = Pce::record(Panicky { witness: false }, "panicky").unwrap();
    assert!(pce.synthesize(Panicky { witness: false }).is_ok());
    let err = pce.synthesize(Panicky { witness: true }).unwrap_err();
    assert!(matches!(err, Error::Synthesis(_)), "{err}");
    let where_it_failed = err.to_string().contains("witness code failed at 5000");
    assert!(where_it_failed, "{err}");
}

#[test]
fn a_large_batch_on_a_fresh_recording_completes() {
    // Sixteen circuits of two row blocks each on a recording whose block table is not computed
    // yet: the syntheses start together on the rayon pool (a regression test for a deadlock when
    // that table was built inside a blocking one-time initialisation, with rayon inside it).
    batch_equals_direct(13, 0, 16, 5);
}

/// The sha256 circuit's parallel witness (every block's compression at once, handed over with
/// `extend_aux`) gives exactly direct synthesis's assignment and products, at the lengths around
/// every padding boundary: 55/56 (one or two blocks), 63/64/65 (the preimage fills, ends at or
/// crosses the first block), 119/120, and 200 bytes (four blocks), and 0 (padding only).
#[test]
fn sha256_parallel_witness_equals_direct_synthesis_at_every_padding_boundary() {
    for len in [0usize, 1, 55, 56, 63, 64, 65, 119, 120, 200] {
        let blank = Sha256Circuit::new(len).unwrap();
        let pce = Pce::record(blank.clone(), &format!("sha256-{len}")).unwrap();
        let seed = len as u64;
        let direct = synthesize(blank.clone().with_witness(seed)).unwrap();
        let fast = pce.synthesize(blank.clone().with_witness(seed)).unwrap();
        common::assert_identical(&direct, &fast, &format!("sha256 of {len} bytes"));
    }
}

#[test]
fn sha256_parallel_witness_refuses_a_recording_of_another_length_and_a_wrong_claim() {
    // 63 and 64 bytes: both two blocks, different counts.
    let pce = Pce::record(Sha256Circuit::new(63).unwrap(), "sha256-63").unwrap();
    let c64 = Sha256Circuit::new(64).unwrap().with_witness(1);
    let err = pce.synthesize(c64).unwrap_err();
    assert!(matches!(err, Error::InvalidInput(_)), "{err}");
    assert!(
        err.to_string().contains("does not match this circuit"),
        "{err}"
    );
    // A wrong claimed digest: unsatisfied, at the same constraint as direct synthesis.
    let bad = Sha256Circuit::new(63)
        .unwrap()
        .with_witness(2)
        .with_claimed_digest([7; 32]);
    let direct = synthesize(bad.clone()).unwrap_err();
    let fast = pce.synthesize(bad).unwrap_err();
    assert!(matches!(fast, Error::Unsatisfied(_)), "{fast}");
    assert_eq!(direct.to_string(), fast.to_string());
}

/// A circuit that, in a witness generator, hands its values over in bulk (`extend_aux`,
/// `allocate_empty_aux`, `extend_inputs`) instead of allocating them one by one: `extra` more
/// values than its constraint code allocates when non-zero.
struct Bulk {
    n: u64,
    extra: usize,
}

impl Circuit<Scalar> for Bulk {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let val = |i: u64| Scalar::from(i * i + 3);
        let x = cs.alloc_input(|| "x", || Ok(Scalar::from(5u64)))?;
        if cs.is_witness_generator() {
            let half = self.n / 2;
            let first: Vec<Scalar> = (0..half).map(val).collect();
            cs.extend_aux(&first);
            let rest = cs.allocate_empty_aux((self.n - half) as usize + self.extra);
            for (k, slot) in rest.iter_mut().enumerate() {
                *slot = val(half + k as u64);
            }
            cs.extend_inputs(&[Scalar::from(9u64)]);
            return Ok(());
        }
        for i in 0..self.n {
            let v = cs.alloc(|| "v", || Ok(val(i)))?;
            // v·1 = v, and v − x·0 = v: two rows per value, some referencing the input.
            cs.enforce(|| "v", |lc| lc + v, |lc| lc + CS::one(), |lc| lc + v);
            cs.enforce(
                || "w",
                |lc| lc + v,
                |lc| lc + CS::one() + x - x,
                |lc| lc + v,
            );
        }
        cs.alloc_input(|| "y", || Ok(Scalar::from(9u64)))?;
        Ok(())
    }
}

#[test]
fn values_handed_over_in_bulk_equal_direct_synthesis_and_extra_ones_are_refused() {
    let pce = Pce::record(Bulk { n: 5000, extra: 0 }, "bulk").unwrap();
    let direct = synthesize(Bulk { n: 5000, extra: 0 }).unwrap();
    let fast = pce.synthesize(Bulk { n: 5000, extra: 0 }).unwrap();
    common::assert_identical(&direct, &fast, "bulk");
    // More values than the recording holds: refused by the counts, nothing written out of bounds.
    let err = pce.synthesize(Bulk { n: 5000, extra: 3 }).unwrap_err();
    assert!(err.to_string().contains("5003 aux variables"), "{err}");
}

/// A synthetic 2^8 circuit at 40 % bits, its parameters (setup seed `seed`), a CPU backend that
/// lends host memory, a key on it and the circuit's recording.
struct Lent {
    s: CircuitSpec,
    params: Arc<bellows_core::groth16::Parameters>,
    lending: Arc<common::lending::Lending>,
    backend: Arc<dyn Backend>,
    key: ProvingKey,
    pce: Pce,
}

fn lent(seed: u64) -> Lent {
    let s = spec("synthetic", Some(8), Some(40), None);
    let params =
        Arc::new(generate_random_parameters(s.blank(), &mut ProofRng::seeded(seed)).unwrap());
    let lending = Arc::new(common::lending::Lending::with_limit(usize::MAX));
    let backend: Arc<dyn Backend> = lending.clone();
    let key = ProvingKey::new(params.clone(), backend.clone()).unwrap();
    let pce = Pce::record(s.blank(), &builtin_id(&s)).unwrap();
    Lent {
        s,
        params,
        lending,
        backend,
        key,
        pce,
    }
}

#[test]
fn proofs_from_a_backends_host_memory_equal_proofs_from_the_heap() {
    use bellows_core::groth16::prover::start_with_randomness;
    let Lent {
        s,
        params,
        lending,
        backend,
        key,
        pce,
    } = lent(6);
    let circuits = || {
        (0..2u64)
            .map(|j| s.instance(j).unwrap().0)
            .collect::<Vec<_>>()
    };
    let heap = pce.synthesize_batch(circuits()).unwrap();
    let lent = pce
        .synthesize_batch_for(circuits(), Some(&backend))
        .unwrap();
    for (h, l) in heap.iter().zip(&lent) {
        common::assert_identical(h, l, "lent memory");
        assert!(!h.a.is_backend_memory());
        assert!(l.a.is_backend_memory() && l.b.is_backend_memory() && l.c.is_backend_memory());
        assert!(l.aux_assignment.is_backend_memory());
        // Room for the whole domain: the prover pads in place.
        assert_eq!(l.a.capacity(), 1 << l.log_domain());
    }
    // One proof (padded in place) and a batch of two (one batch buffer, also lent).
    let r = [Scalar::from(7u64), Scalar::from(8u64)];
    let t = [Scalar::from(9u64), Scalar::from(10u64)];
    let prove = |syn: Vec<Synthesized>, k: usize| {
        start_with_randomness(&key, syn, r[..k].to_vec(), t[..k].to_vec())
            .unwrap()
            .finalize()
            .unwrap()
    };
    let single_heap = prove(heap[..1].to_vec(), 1);
    let mut lent = lent;
    let second = lent.pop().unwrap();
    let single_lent = prove(lent, 1);
    assert_eq!(single_heap, single_lent);
    let pair_heap = prove(heap, 2);
    let pair_lent = prove(
        vec![
            pce.synthesize_for(s.instance(0).unwrap().0, Some(&backend))
                .unwrap(),
            second,
        ],
        2,
    );
    assert_eq!(pair_heap, pair_lent);
    assert_eq!(pair_lent[0], single_lent[0]);
    let pvk = prepare_verifying_key(&params.vk);
    for (j, proof) in pair_lent.iter().enumerate() {
        assert!(verify_proof(&pvk, proof, &s.instance(j as u64).unwrap().1).unwrap());
    }
    // Every block came back (the batch buffers included), and there were some.
    assert!(lending.lent.lock().unwrap().is_empty());
    assert!(lending.allocs.load(std::sync::atomic::Ordering::SeqCst) >= 4 * 3 + 3);
}

#[test]
fn a_batch_reserved_ahead_asks_for_exactly_the_blocks_reserved() {
    use bellows_core::groth16::prover::start_with_randomness;
    let Lent {
        s,
        lending,
        backend,
        key,
        pce,
        ..
    } = lent(7);
    for count in [1usize, 3] {
        lending.asked.lock().unwrap().clear();
        lending.reserved.lock().unwrap().clear();
        bellows_core::groth16::reserve_batch(&key, count).unwrap();
        let circuits = (0..count as u64)
            .map(|j| s.instance(j).unwrap().0)
            .collect();
        let syn = pce.synthesize_batch_for(circuits, Some(&backend)).unwrap();
        let r = vec![Scalar::from(7u64); count];
        start_with_randomness(&key, syn, r.clone(), r)
            .unwrap()
            .finalize()
            .unwrap();
        // The same blocks, as a multiset: a reservation the batch does not use, or a request
        // it does not serve, would pin memory for nothing or leave the pinning on the batch.
        let mut asked = lending.asked.lock().unwrap().clone();
        let mut reserved = lending.reserved.lock().unwrap().clone();
        asked.sort_unstable();
        reserved.sort_unstable();
        assert!(!asked.is_empty());
        assert_eq!(asked, reserved, "a batch of {count}");
    }
}

#[test]
fn the_reservation_a_caller_makes_ahead_is_the_one_the_pipeline_makes() {
    let Lent {
        s,
        lending,
        key,
        pce,
        ..
    } = lent(8);
    let key = Arc::new(key);
    let mut cfg = PipelineConfig::default();
    cfg.synthesis_workers = 2;
    cfg.workers_per_device = 2;
    cfg.seed = Some(1);
    cfg.partitions_in_flight = Some(2);
    let pipeline = Pipeline::new(vec![key.clone()], cfg.clone())
        .unwrap()
        .with_pce(Arc::new(pce));
    let device_workers = pipeline.workers_for(&key);
    let sorted = |mut v: Vec<usize>| {
        v.sort_unstable();
        v
    };
    // Two partitions in flight: a, b, c and aux of each; one partition only: its own four.
    let ahead = cfg.host_reservation(&key.lens(), device_workers, 5);
    assert_eq!(ahead.len(), 8);
    assert_eq!(
        cfg.host_reservation(&key.lens(), device_workers, 1).len(),
        4
    );
    assert!(cfg
        .host_reservation(&key.lens(), device_workers, 0)
        .is_empty());
    lending.reserved.lock().unwrap().clear();
    let jobs = vec![Job {
        id: 0,
        partitions: (0..5u64).map(|j| s.instance(j).unwrap().0).collect(),
    }];
    let mut ok = 0;
    pipeline
        .run(jobs, |r| ok += r.proofs.map_or(0, |p| p.len()))
        .unwrap();
    assert_eq!(ok, 5);
    // What the run reserved is what was computed ahead, so a caller that reserves it while
    // the key loads leaves the run nothing to pin.
    let reserved = lending.reserved.lock().unwrap().clone();
    assert_eq!(sorted(reserved), sorted(ahead));
}
