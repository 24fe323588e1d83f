//! Prove your own circuit with Bellows: a bellpepper circuit defined here, its parameters, one
//! proof, a batch, proofs with fixed r and s, verification, and what a wrong witness reports.
//!
//! ```sh
//! cargo run -p bellows --example own_circuit            # on the built-in CPU backend
//! cargo run -p bellows --example own_circuit -- cuda    # a plugin by name (BELLOWS_PLUGIN_PATH)
//! cargo run -p bellows --example own_circuit -- ./libbellows_backend_cpu.so   # or by path
//! ```
//!
//! `cargo test -p bellows` runs it too (the test at the end calls [`run`] on the CPU backend).

use bellows::bellpepper_core::boolean::AllocatedBit;
use bellows::groth16::{io, synthesis};
use bellows::prelude::*;

/// "I know a factorisation n = p·q with 2 ≤ p, q < 2^32 + 2", n public.
///
/// p − 2 and q − 2 are decomposed into 32 bits each (one boolean constraint per bit, one
/// packing constraint), then p·q = n: 67 constraints, 69 with the two that synthesis adds for
/// the public inputs (the constant one and n).
#[derive(Clone, Debug)]
struct Factorisation {
    /// The witness: p and q (`None` for setup).
    factors: Option<(u64, u64)>,
    /// The public n the circuit claims (`None` for setup). Normally p·q; anything else makes the
    /// witness wrong.
    n: Option<u64>,
}

impl Factorisation {
    fn blank() -> Self {
        Self {
            factors: None,
            n: None,
        }
    }

    fn new(p: u64, q: u64) -> Self {
        Self {
            factors: Some((p, q)),
            n: Some(p * q),
        }
    }

    /// The public inputs a verifier checks a proof against.
    fn public_inputs(&self) -> Vec<Scalar> {
        vec![Scalar::from(self.n.expect("a circuit with its witness"))]
    }
}

/// Allocates `value` and constrains it to `offset + Σ 2^i·bit_i` over `bits` booleans.
fn alloc_ranged<CS: ConstraintSystem<Scalar>>(
    mut cs: CS,
    value: Option<u64>,
    offset: u64,
    bits: usize,
) -> Result<Variable, SynthesisError> {
    let var = cs.alloc(
        || "value",
        || {
            value
                .map(Scalar::from)
                .ok_or(SynthesisError::AssignmentMissing)
        },
    )?;
    let mut packed = LinearCombination::zero();
    let mut weight = Scalar::ONE;
    for i in 0..bits {
        let bit_value = value.map(|v| (v.wrapping_sub(offset) >> i) & 1 == 1);
        let bit = AllocatedBit::alloc(cs.namespace(|| format!("bit {i}")), bit_value)?;
        packed = packed + (weight, bit.get_variable());
        weight = weight.double();
    }
    cs.enforce(
        || "value = offset + bits",
        |lc| lc + &packed + (Scalar::from(offset), CS::one()),
        |lc| lc + CS::one(),
        |lc| lc + var,
    );
    Ok(var)
}

impl Circuit<Scalar> for Factorisation {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let n = cs.alloc_input(
            || "n",
            || {
                self.n
                    .map(Scalar::from)
                    .ok_or(SynthesisError::AssignmentMissing)
            },
        )?;
        let p = alloc_ranged(cs.namespace(|| "p"), self.factors.map(|f| f.0), 2, 32)?;
        let q = alloc_ranged(cs.namespace(|| "q"), self.factors.map(|f| f.1), 2, 32)?;
        cs.enforce(|| "p * q = n", |lc| lc + p, |lc| lc + q, |lc| lc + n);
        Ok(())
    }
}

fn main() -> std::process::ExitCode {
    let backend = std::env::args().nth(1).unwrap_or_else(|| "cpu".to_string());
    match run(&backend) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The whole walk-through on the backend `backend` (a name or a plugin path).
fn run(backend: &str) -> Result<(), Box<dyn std::error::Error>> {
    // 1. Parameters. A real circuit has parameters from a ceremony, read with
    //    `io::read_parameters(path, PointCheck::Full)`. This toy one gets a local setup (whoever
    //    knows its randomness can forge proofs: never for production), kept in memory.
    let params = bellows::groth16::setup::generate_random_parameters(
        Factorisation::blank(),
        &mut ProofRng::os(),
    )?;
    println!(
        "parameters: domain 2^{}, {} public input(s), {} private variables",
        params.domain_size().trailing_zeros(),
        params.num_inputs() - 1,
        params.num_aux()
    );
    // The same parameters through bellperson's format, as a file from elsewhere would come.
    let mut bytes = Vec::new();
    io::write_parameters(&params, &mut bytes)?;
    let params = io::parameters_from_bytes(&bytes, io::PointCheck::Full)?;

    // 2. A backend, and the parameters made resident on it.
    let key = ProvingKey::from_parameters(params, bellows::backend(backend)?)?;
    let info = key.backend().info();
    println!(
        "backend: {} {} ({})",
        info.name, info.version, info.description
    );
    let pvk = prepare_verifying_key(&key.params().vk);

    // 3. One proof, randomness from the operating system.
    let circuit = Factorisation::new(65_521, 4_294_967_291);
    let inputs = circuit.public_inputs();
    let proof = prove_one(&key, circuit, &mut ProofRng::os())?;
    let ok = verify_proof(&pvk, &proof, &inputs)?;
    println!(
        "one proof: {} bytes, verifies: {ok}",
        proof.to_bytes().len()
    );
    assert!(ok, "a proof of a satisfied circuit must verify");
    let wrong = [inputs[0] + Scalar::ONE];
    assert!(
        !verify_proof(&pvk, &proof, &wrong)?,
        "another n must not verify"
    );

    // 4. A batch: one call, the circuits synthesised in parallel, the backend's work batched.
    let batch: Vec<_> = [(3, 5), (101, 103), (7_919, 7_927)]
        .into_iter()
        .map(|(p, q)| Factorisation::new(p, q))
        .collect();
    let batch_inputs: Vec<_> = batch.iter().map(Factorisation::public_inputs).collect();
    let proofs = prove(&key, batch, &mut ProofRng::seeded(7))?;
    let ok = verify_proofs_batch(&pvk, &proofs, &batch_inputs, &mut ProofRng::os())?;
    println!("batch of {}: verifies (batched check): {ok}", proofs.len());
    assert!(ok);

    // 5. Fixed r and s (test vectors, comparison with bellperson): byte-identical proofs.
    let (r, s) = (Scalar::from(11u64), Scalar::from(13u64));
    let once = prove_one_with_randomness(&key, Factorisation::new(3, 5), r, s)?;
    let again = prove_one_with_randomness(&key, Factorisation::new(3, 5), r, s)?;
    assert_eq!(once.to_bytes(), again.to_bytes());
    assert!(verify_proof(&pvk, &once, &[Scalar::from(15u64)])?);
    println!("fixed r, s: byte-identical proofs, verified");

    // 6. A wrong witness is an error naming the constraint, not a proof that fails later.
    let lie = Factorisation {
        factors: Some((3, 5)),
        n: Some(16),
    };
    match prove_one(&key, lie.clone(), &mut ProofRng::os()) {
        Err(Error::Unsatisfied(why)) => {
            println!("wrong witness: {why}");
            assert!(why.contains("p * q = n"), "{why}");
        }
        other => return Err(format!("expected an unsatisfied circuit, got {other:?}").into()),
    }
    // The same as a value: the namespace path and annotation of the first failing constraint.
    let bad = synthesis::find_unsatisfied(lie)?.expect("the lie is caught");
    println!("  first failing constraint: {bad}");
    // A factor out of range fails in its range check: p − 2 wraps around and its 32 bits do not
    // add up to p.
    let too_small = Factorisation {
        factors: Some((1, 15)),
        n: Some(15),
    };
    let bad = synthesis::find_unsatisfied(too_small)?.expect("p = 1 is out of range");
    println!("  p = 1: {bad}");
    assert_eq!(bad.path, "p/value = offset + bits");
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_example_runs_on_the_cpu_backend() {
        super::run("cpu").unwrap();
    }
}
