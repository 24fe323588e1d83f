//! The composite Groth16 G1 phase ([`bellows_core::Backend::groth16_g1`]): for a batch of two
//! synthetic circuits with seeded witnesses, the candidate's `[H, L, A', B₁']` per proof must
//! equal, exactly, the default body ([`groth16_g1_from_primitives`]: `h_poly` then density MSMs)
//! run on the reference backend. With G2 MSMs, the same for
//! [`bellows_core::Backend::groth16_g1_g2`] (the phase and B₂' in one call) against the
//! reference's G1 phase and its G2 MSM over the B density jobs ([`b2_sums`]).

use std::sync::Arc;

use bellows_core::{
    backend::{b2_sums, groth16_g1_from_primitives, G1Handles, G1PhaseInput, ProofAssignment},
    circuits::{witness_seed, SyntheticCircuit},
    groth16::{
        synthesis::{synthesize_batch, Synthesized},
        Parameters,
    },
    host_buffer::HostVec,
    layout::{fr_slice, G1Jacobian, G2Jacobian},
    Backend, Result,
};
use blstrs::Scalar;
use ff::Field;

use super::{cand, needs, refr, Check, CheckResult, Ctx, Fail};
use crate::compare;

/// Loads the four G1 queries (and b_g2 with `with_g2`), runs the phase (the backend's own, or
/// the default body), frees. With `host`, a, b, c and the aux assignments are copied into the
/// host memory that backend provides ([`bellows_core::backend::MemoryPool::alloc_host`]), as
/// the prover's synthesis writes them. With `with_g2`, the backend's own phase is
/// `groth16_g1_g2` and the default body is followed by [`b2_sums`]; without, the G2 vector is
/// empty.
fn phase(
    b: &dyn Backend,
    params: &Parameters,
    syn: &[Synthesized],
    default_body: bool,
    host: Option<&Arc<dyn Backend>>,
    with_g2: bool,
) -> Result<(Vec<[G1Jacobian; 4]>, Vec<G2Jacobian>)> {
    let mut loaded = Vec::new();
    let result = (|| {
        for q in [&params.h, &params.l, &params.a, &params.b_g1] {
            loaded.push(b.load_bases_g1(q.clone())?);
        }
        if with_g2 {
            loaded.push(b.load_bases_g2(params.b_g2.clone())?);
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
        match (default_body, with_g2) {
            (true, false) => Ok((groth16_g1_from_primitives(b, &mut input)?, Vec::new())),
            (false, false) => Ok((b.groth16_g1(&mut input)?, Vec::new())),
            (true, true) => {
                let g1 = groth16_g1_from_primitives(b, &mut input)?;
                Ok((g1, b2_sums(b, &proofs, loaded[4])?))
            }
            (false, true) => b.groth16_g1_g2(&mut input, loaded[4]),
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

/// Runs the phase (with `with_g2`, the phase and B₂') for a batch of two circuits on both
/// backends and compares.
pub fn run(ctx: &Ctx, log_size: u32, bits_pct: u8, with_g2: bool) -> CheckResult {
    let params = refr(ctx.params.synthetic(log_size, bits_pct), "setup")?;
    let circuits = (0..2u64)
        .map(|i| {
            SyntheticCircuit::new(log_size, bits_pct)
                .map(|c| c.with_witness(witness_seed(ctx.seed, 50 + i)))
        })
        .collect::<Result<Vec<_>>>()
        .map_err(|e| Fail::Error(e.to_string()))?;
    let syn = synthesize_batch(circuits).map_err(|e| Fail::Error(e.to_string()))?;
    let call = if with_g2 {
        "groth16_g1_g2"
    } else {
        "groth16_g1"
    };
    let (want, want2) = refr(
        phase(&*ctx.refb, &params, &syn, true, None, with_g2),
        &format!("{call} default body"),
    )?;
    let (got, got2) = cand(
        phase(&*ctx.cand, &params, &syn, false, Some(&ctx.cand), with_g2),
        call,
    )?;
    if got.len() != want.len() || got2.len() != want2.len() {
        return Err(Fail::Error(format!(
            "{call} returned {} G1 and {} G2 results for {} proofs",
            got.len(),
            got2.len(),
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
    for (k, (w, g)) in want2.iter().zip(&got2).enumerate() {
        compare::g2(
            std::slice::from_ref(w),
            std::slice::from_ref(g),
            &format!("synthetic 2^{log_size}, proof {k}, B2'"),
        )?;
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
            move |ctx| run(ctx, l, 50, false),
        ),
        Check::new(
            format!("groth16_g1_g2 synthetic 2^{l}"),
            "batch of 2, 50% boolean constraints: the G1 phase and B2' in one call, against the \
             default body and the G2 MSM on the reference",
            |c| needs::prover(c).or(needs::g2(c)),
            move |ctx| run(ctx, l, 50, true),
        ),
    ]
}
