//! `bellows setup`: parameters for a built-in circuit.

use clap::Args;
use std::path::PathBuf;
use std::time::Instant;

use bellows_core::{
    groth16::{io, limits, setup, Parameters},
    rng::ProofRng,
};
use rand_core::RngCore;

use crate::circuit::circuit_plan;
use crate::error::Result;
use crate::outln;
use crate::output::{self, Content, Out};
use crate::params::warn_benchmark_only;
use crate::progress::spinner;
use crate::stats::fmt_duration;
use crate::stdio::warn;

/// `bellows setup --help`.
pub const SETUP_ABOUT: &str =
    "Generate Groth16 parameters for a built-in circuit and write them in \
bellperson's parameters format (and optionally the verifying key alone), each file written \
atomically (temporary file, then rename; devices and FIFOs written through). Output paths are \
checked before the setup starts, an existing file is replaced only with --force, and a setup \
larger than the available memory is refused with the estimate.\n\n\
Default: a real trusted setup. The toxic waste (tau, alpha, beta, gamma, delta) is drawn from the \
operating system's RNG and discarded when setup ends. `--seed S` draws it from a seeded RNG \
instead: anyone who knows S can forge proofs, so use it only for reproducible test vectors.\n\n\
`--fast` makes BENCHMARK-ONLY parameters instead: valid curve points of exactly the right shape, \
generated quickly, with no trusted setup behind them. PROOFS MADE WITH THEM DO NOT VERIFY; every \
bellows command that reads them says so. A real setup costs several scalar multiplications per \
constraint and is meant for small circuits (up to ~2^16 in seconds to minutes); use --fast for \
benchmarks at 2^18 and above.\n\n\
The circuit options must be given again, identically, to `bellows prove`.\n\n\
Examples:\n  bellows setup --circuit synthetic --log-size 14 --out s14.params --vk-out s14.vk\n  \
bellows setup --circuit sha256 --bytes 64 --out sha.params\n  \
bellows setup --circuit synthetic --log-size 22 --bits-pct 80 --fast --out bench22.params";

/// `bellows setup`.
#[derive(Debug, Args)]
pub struct SetupArgs {
    /// The circuit.
    #[command(flatten)]
    pub circuit: crate::circuit::CircuitArgs,
    /// Benchmark-only parameters (fast, no trusted setup): PROOFS WILL NOT VERIFY.
    #[arg(long)]
    pub fast: bool,
    /// Draw the toxic waste (or the --fast points) from this seed. INSECURE: for test vectors only.
    #[arg(long, value_name = "S", value_parser = crate::values::seed)]
    pub seed: Option<u64>,
    /// Parameters file to write (bellperson format).
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: PathBuf,
    /// Also write the verifying key alone (bellperson verifying-key format).
    #[arg(long = "vk-out", value_name = "FILE")]
    pub vk_out: Option<PathBuf>,
    /// Replace output files that already exist.
    #[arg(long, short = 'f')]
    pub force: bool,
    /// `--threads`.
    #[command(flatten)]
    pub threads: crate::cli::ThreadsArg,
}

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
    let outputs = output::prepare(&[], &outs, args.force)?;

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
        // The parameters and the key together, or neither.
        let mut contents: Vec<Content<'_>> = vec![Box::new(|w| io::write_parameters(&params, w))];
        if args.vk_out.is_some() {
            contents.push(Box::new(|w| io::write_verifying_key(&params.vk, w)));
        }
        outputs.commit(contents)?;
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
