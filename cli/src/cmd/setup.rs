//! `bellows setup`: parameters for a built-in circuit.

use std::time::Instant;

use bellows_core::{
    groth16::{io, setup, Parameters},
    rng::ProofRng,
    Result,
};
use rand_core::RngCore;

use crate::cli::SetupArgs;
use crate::common::{circuit_spec, fmt_duration, spinner, warn, warn_benchmark_only};

/// Runs the command.
pub fn run(args: &SetupArgs) -> Result<()> {
    let spec = circuit_spec(&args.circuit)?;
    println!("circuit: {}", spec.description());
    let t = Instant::now();
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
        let pb = spinner("trusted setup (toxic waste is discarded afterwards)");
        let p =
            setup::generate_random_parameters(spec.blank(), &mut ProofRng::from_option(args.seed));
        pb.finish_and_clear();
        p?
    };
    let setup_time = t.elapsed();
    let t = Instant::now();
    io::write_parameters_file(&params, &args.out)?;
    if let Some(vk_out) = &args.vk_out {
        io::write_verifying_key_file(&params.vk, vk_out)?;
    }
    println!(
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
    println!(
        "setup: {}, writing: {}",
        fmt_duration(setup_time),
        fmt_duration(t.elapsed())
    );
    println!("wrote {}", args.out.display());
    if let Some(vk_out) = &args.vk_out {
        println!("wrote {}", vk_out.display());
    }
    Ok(())
}
