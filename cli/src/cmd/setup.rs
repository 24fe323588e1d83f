//! `bellows setup`: parameters for a built-in circuit.

use std::time::Instant;

use bellows_core::{
    groth16::{io, limits, setup, Parameters},
    rng::ProofRng,
};
use rand_core::RngCore;

use crate::cli::SetupArgs;
use crate::common::{circuit_plan, fmt_duration, spinner, warn, warn_benchmark_only};
use crate::error::Result;
use crate::outln;
use crate::output::{self, Out};

/// Runs the command.
pub fn run(args: &SetupArgs) -> Result<()> {
    let (spec, shape) = circuit_plan(&args.circuit)?;
    let (what, need) = if args.fast {
        (
            "benchmark-only parameter generation",
            shape.fast_setup_bytes(),
        )
    } else {
        ("the trusted setup", shape.setup_bytes())
    };
    limits::check_memory(
        &format!(
            "{what} for {} (domain 2^{})",
            args.circuit.circuit,
            shape.domain.trailing_zeros()
        ),
        need,
    )?;
    // Every output is checked, and created as a temporary file, before the setup runs.
    let mut outs = vec![Out {
        opt: "--out",
        path: &args.out,
        what: "parameters file",
    }];
    if let Some(vk) = &args.vk_out {
        outs.push(Out {
            opt: "--vk-out",
            path: vk,
            what: "verifying key file",
        });
    }
    let mut files = output::prepare(&[], &outs, args.force)?.into_iter();
    let (params_out, vk_out) = (files.next().expect("--out"), files.next());

    outln!("circuit: {}", spec.description());
    let t = Instant::now();
    let span = tracing::debug_span!("setup", fast = args.fast).entered();
    let params: Parameters = if args.fast {
        warn_benchmark_only("--fast: these");
        let seed = args.seed.unwrap_or_else(|| ProofRng::os().next_u64());
        let pb = spinner("generating benchmark-only parameters");
        let p = setup::generate_benchmark_parameters(spec.blank(), seed);
        pb.finish_and_clear();
        p?
    } else {
        if let Some(seed) = args.seed {
            warn(&format!(
                "INSECURE SETUP: the toxic waste is derived from --seed {seed}. Anyone who knows \
                 the seed can forge proofs for these parameters. Use them for test vectors only."
            ));
        }
        let pb = spinner("trusted setup (toxic waste is wiped afterwards)");
        let p =
            setup::generate_random_parameters(spec.blank(), &mut ProofRng::from_option(args.seed));
        pb.finish_and_clear();
        p?
    };
    drop(span);
    let setup_time = t.elapsed();
    let t = Instant::now();
    {
        let _s = tracing::debug_span!("write").entered();
        params_out.commit(|w| io::write_parameters(&params, w))?;
        if let Some(f) = vk_out {
            f.commit(|w| io::write_verifying_key(&params.vk, w))?;
        }
    }
    outln!(
        "{} parameters: domain 2^{}, {} public input(s), {} private variables",
        if args.fast {
            "benchmark-only"
        } else {
            "trusted"
        },
        params.domain_size().trailing_zeros(),
        params.num_inputs() - 1,
        params.num_aux()
    );
    outln!(
        "setup: {}, writing: {}",
        fmt_duration(setup_time),
        fmt_duration(t.elapsed())
    );
    outln!("wrote {}", args.out.display());
    if let Some(vk_out) = &args.vk_out {
        outln!("wrote {}", vk_out.display());
    }
    Ok(())
}
