//! The composite Groth16 G1 phase ([`bellows_core::Backend::groth16_g1`]): for a batch of two
//! synthetic circuits with seeded witnesses, the candidate's `[H, L, A', B₁']` per proof must
//! equal, exactly, the default body ([`groth16_g1_from_primitives`]: `h_poly` then density MSMs)
//! run on the reference backend.

use std::sync::Arc;

use bellows_core::{
    backend::{groth16_g1_from_primitives, G1Handles, G1PhaseInput, ProofAssignment},
    circuits::{witness_seed, SyntheticCircuit},
    groth16::{
        synthesis::{synthesize_batch, Synthesized},
        Parameters,
    },
    host_vec::HostVec,
    layout::{fr_slice, G1Jacobian},
    Backend, Result,
};
use blstrs::Scalar;
use ff::Field;

use super::{cand, needs, refr, Check, CheckResult, Ctx, Fail};
use crate::compare;

/// Loads the four G1 queries, runs the phase (the backend's own, or the default body), frees.
/// With `host`, a, b, c and the aux assignments are copied into the host memory that backend
/// provides ([`bellows_core::backend::MemoryPool::alloc_host`]), as the prover's synthesis
/// writes them.
fn phase(
    b: &dyn Backend,
    params: &Parameters,
    syn: &[Synthesized],
    default_body: bool,
    host: Option<&Arc<dyn Backend>>,
) -> Result<Vec<[G1Jacobian; 4]>> {
    let mut loaded = Vec::new();
    let result = (|| {
        for q in [&params.h, &params.l, &params.a, &params.b_g1] {
            loaded.push(b.load_bases_g1(q.clone())?);
        }
        let handles = G1Handles {
            h: loaded[0],
            l: loaded[1],
            a: loaded[2],
            b_g1: loaded[3],
        };
        let log_n = syn[0].log_domain();
        let n = 1usize << log_n;
        let pad = |f: fn(&Synthesized) -> &[Scalar]| -> HostVec<Scalar> {
            let mut v = HostVec::with_capacity_in(n * syn.len(), host);
            for s in syn {
                for x in f(s) {
                    v.push(*x);
                }
                v.resize_with_value(v.len().next_multiple_of(n), Scalar::ZERO);
            }
            v
        };
        let (mut a, mut bb, mut c) = (pad(|s| &s.a[..]), pad(|s| &s.b[..]), pad(|s| &s.c[..]));
        let aux: Vec<HostVec<Scalar>> = syn
            .iter()
            .map(|s| {
                let mut v = HostVec::with_capacity_in(s.aux_assignment.len(), host);
                for x in s.aux_assignment.iter() {
                    v.push(*x);
                }
                v
            })
            .collect();
        let proofs: Vec<ProofAssignment<'_>> = syn
            .iter()
            .zip(&aux)
            .map(|(s, aux)| ProofAssignment {
                inputs: fr_slice(&s.input_assignment),
                aux: fr_slice(aux),
                a_aux_density: s.a_aux_density.bits(),
                b_input_density: s.b_input_density.bits(),
                b_aux_density: s.b_aux_density.bits(),
            })
            .collect();
        let mut input = G1PhaseInput {
            a: bellows_core::layout::fr_slice_mut(&mut a),
            b: bellows_core::layout::fr_slice_mut(&mut bb),
            c: bellows_core::layout::fr_slice_mut(&mut c),
            log_n,
            proofs: &proofs,
            handles,
        };
        if default_body {
            groth16_g1_from_primitives(b, &mut input)
        } else {
            b.groth16_g1(&mut input)
        }
    })();
    let mut freed = Ok(());
    for h in loaded {
        freed = freed.and(b.free_bases(h));
    }
    let out = result?;
    freed?;
    Ok(out)
}

/// Runs the phase for a batch of two circuits on both backends and compares.
pub fn run(ctx: &Ctx, log_size: u32, bits_pct: u8) -> CheckResult {
    let params = refr(ctx.params.synthetic(log_size, bits_pct), "setup")?;
    let circuits = (0..2u64)
        .map(|i| {
            SyntheticCircuit::new(log_size, bits_pct)
                .map(|c| c.with_witness(witness_seed(ctx.seed, 50 + i)))
        })
        .collect::<Result<Vec<_>>>()
        .map_err(|e| Fail::Error(e.to_string()))?;
    let syn = synthesize_batch(circuits).map_err(|e| Fail::Error(e.to_string()))?;
    let want = refr(
        phase(&*ctx.refb, &params, &syn, true, None),
        "groth16_g1 default body",
    )?;
    let got = cand(
        phase(&*ctx.cand, &params, &syn, false, Some(&ctx.cand)),
        "groth16_g1",
    )?;
    if got.len() != want.len() {
        return Err(Fail::Error(format!(
            "groth16_g1 returned {} results for {} proofs",
            got.len(),
            want.len()
        )));
    }
    for (k, (w, g)) in want.iter().zip(&got).enumerate() {
        for (i, name) in ["H", "L", "A'", "B1'"].iter().enumerate() {
            compare::g1(
                &w[i..=i],
                &g[i..=i],
                &format!("synthetic 2^{log_size}, proof {k}, {name}"),
            )?;
        }
    }
    Ok(())
}

/// The host memory a backend provides, through the prover's own wrapper ([`HostVec`], which
/// also refuses misaligned blocks): as long as asked, writable and readable back, and given
/// back when dropped. A backend that gives none passes (the prover then uses its heap). The G1 phase check runs on such memory.
pub fn host_memory(ctx: &Ctx) -> CheckResult {
    for len in [8usize, (1 << 17) + 4, 3 << 17] {
        let mut v: HostVec<u64> = HostVec::with_capacity_in(len, Some(&ctx.cand));
        if !v.is_backend_memory() {
            return Ok(());
        }
        if v.capacity() < len {
            return Err(Fail::Error(format!(
                "alloc_host for {len} values gave room for {}",
                v.capacity()
            )));
        }
        for i in 0..len {
            v.push((i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        }
        if !v.is_backend_memory()
            || v.iter()
                .enumerate()
                .any(|(i, &x)| x != (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15))
        {
            return Err(Fail::Error(format!(
                "alloc_host for {len} values: what was written did not read back"
            )));
        }
    }
    Ok(())
}

/// The G1 phase check (on the candidate's host memory) and the host memory check.
pub fn checks(ctx: &Ctx) -> Vec<Check> {
    let cap = ctx
        .k
        .clamp(bellows_core::circuits::synthetic::MIN_LOG_SIZE, 20);
    let l = ctx.by_level(6, 8, 10).min(cap);
    vec![
        Check::new(
            "host memory",
            "alloc_host of 64 B, 1 MiB + 32 B, 3 MiB: written, read back, freed",
            // What the memory serves: proving. (A backend declaring nothing must not pass on this
            // check alone, as one that lends no memory passes it.)
            needs::prover,
            host_memory,
        ),
        Check::new(
            format!("groth16_g1 synthetic 2^{l}"),
            "batch of 2, 50% boolean constraints, a, b, c and aux in the candidate's host memory, \
             against the default body on the reference",
            needs::prover,
            move |ctx| run(ctx, l, 50),
        ),
    ]
}
