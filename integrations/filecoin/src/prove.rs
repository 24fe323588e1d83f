//! The route every Filecoin proof takes here, whatever its circuit: parameters from the cache,
//! made resident on a backend, the partition circuits proved through Bellows' pipeline, the
//! partition proofs concatenated as filecoin-proofs writes them (its `MultiProof::write`), and a
//! check against the verifying key before the bytes are returned. And the other way: a setup
//! that writes a circuit's parameters under the cache's names.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bellows_core::groth16::io::{read_verifying_key, ParamsShape, PointCheck};
use bellows_core::groth16::prover::{G2Policy, ProvingKey};
use bellows_core::groth16::{
    prepare_verifying_key, verify_proof, Parameters, PreparedVerifyingKey, Proof, VerifyingKey,
};
use bellows_core::pce::{cache::PceCache, Pce};
use bellows_core::pipeline::{Job, Pipeline, PipelineConfig};
use bellows_core::{Backend, Error, Result};
use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;

use crate::params::{self, CachePaths, Check, LoadReport};

/// How a proof is made.
#[derive(Clone)]
#[non_exhaustive]
pub struct ProveConfig {
    /// The backend the partitions are proved on.
    pub backend: Arc<dyn Backend>,
    /// How the parameters file is checked when loaded. Default: [`Check::Batched`].
    pub check: Check,
    /// For [`Check::TrustedDigest`]: a manifest in `parameters.json`'s format to take the
    /// digest from. Default: `None`, the `parameters.json` storage-proofs-core carries.
    pub manifest: Option<std::path::PathBuf>,
    /// The pipeline's settings (synthesis workers, device workers, memory budget, seed).
    /// Default: [`PipelineConfig::default`] (r and s from the operating system).
    pub pipeline: PipelineConfig,
    /// Where the G2 MSM runs. Default: [`G2Policy::Auto`].
    pub g2: G2Policy,
    /// Verify the partition proofs with Bellows' verifier before returning them, as
    /// filecoin-proofs does, against the cached `.vk` (or the parameters' own key when there is
    /// none). Default: true.
    pub verify: bool,
    /// Pre-compiled synthesis for PoRep C2 ([`crate::porep::prove_c2`]): the folder of
    /// recordings ([`bellows_core::pce::PceCache`]) where the partition circuit's constraint
    /// system is kept, recorded there on first use (one run of the circuit's constraint code,
    /// about one direct synthesis) under `filecoin-` and the parameter-cache id. Every partition
    /// is then synthesised with it: its witness code runs, its constraint code does not, and the
    /// sparse products run on every core; the result equals direct synthesis bit for bit.
    /// Default: `None`, direct synthesis.
    pub pce_dir: Option<std::path::PathBuf>,
}

impl ProveConfig {
    /// The defaults, on `backend`.
    pub fn new(backend: Arc<dyn Backend>) -> Self {
        ProveConfig {
            backend,
            check: Check::default(),
            manifest: None,
            pipeline: PipelineConfig::default(),
            g2: G2Policy::default(),
            verify: true,
            pce_dir: None,
        }
    }
}

/// A proof and what making it took.
#[derive(Clone, Debug)]
pub struct ProofOutput {
    /// The proof bytes, exactly as filecoin-proofs returns them: the partition proofs
    /// concatenated, 192 bytes each.
    pub proof: Vec<u8>,
    /// The partition proofs.
    pub partitions: Vec<Proof>,
    /// The parameter load.
    pub load: LoadReport,
    /// Building the partition circuits from the input (vanilla proofs checked included).
    pub circuits_time: Duration,
    /// Making the parameters resident on the backend.
    pub key_time: Duration,
    /// Proving every partition through the pipeline (synthesis and backend work overlapped).
    pub prove_time: Duration,
    /// The self-check against the verifying key, when it ran.
    pub verify_time: Option<Duration>,
}

/// What a setup did.
#[derive(Clone, Debug)]
pub struct SetupReport {
    /// The setup itself (circuit synthesis and every fixed-base multiplication).
    pub setup_time: Duration,
    /// Writing the three files.
    pub write_time: Duration,
    /// The circuit's evaluation domain.
    pub domain_size: usize,
    /// Public inputs, the constant one included.
    pub num_inputs: usize,
    /// Private variables.
    pub num_aux: usize,
}

/// Loads the parameters of circuit `cache_id` (named `what` in messages) from the cache folder
/// `dir` with `check` (and `manifest` for the digest check, see [`params::load_with_manifest`]),
/// after checking from the file's length fields that it is for a circuit with `num_inputs`
/// public inputs (the constant one not counted).
pub fn load_cached(
    what: &str,
    cache_id: &str,
    dir: &Path,
    check: Check,
    manifest: Option<&Path>,
    num_inputs: usize,
) -> Result<(Parameters, LoadReport)> {
    let paths = CachePaths::new(dir, cache_id);
    if !paths.params.exists() {
        return Err(Error::invalid(format!(
            "no parameters for {what} in {}: expected {} (filecoin-proofs' name for this \
             circuit; fetch the published file with `lotus fetch-params`, or make test \
             parameters with `bellows porep setup`)",
            dir.display(),
            paths.params.display()
        )));
    }
    let what = what.to_string();
    let label = format!("parameters file {}", paths.params.display());
    params::load_with_manifest(
        &paths.params,
        check,
        manifest,
        move |shape: &ParamsShape| {
            if shape.num_inputs != num_inputs + 1 {
                return Err(Error::malformed(
                    label,
                    format!(
                    "it is for a circuit with {} public inputs, but {what}'s partition circuit \
                     has {num_inputs}: the file does not belong to this proof type",
                    shape.num_inputs.saturating_sub(1)
                ),
                ));
            }
            Ok(())
        },
    )
}

/// A circuit whose synthesis cannot panic: a panic inside it (filecoin-proofs' gadgets panic on
/// some malformed witnesses, "unsupported arity", say) becomes a synthesis error naming it, so
/// that the proof fails with a message instead of taking the process (or a pipeline worker)
/// down. Every circuit [`prove_instance`] proves is wrapped in it.
#[derive(Clone, Debug)]
pub struct Guarded<C>(pub C);

impl<C: Circuit<Fr>> Circuit<Fr> for Guarded<C> {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.0.synthesize(cs)))
            .unwrap_or_else(|p| {
                Err(SynthesisError::IoError(std::io::Error::other(format!(
                    "the circuit stopped with a panic (malformed vanilla proofs?): {}",
                    bellows_core::error::panic_message(&*p)
                ))))
            })
    }
}

/// What [`build_and_prove`] proves: a proof's partition circuits, each partition's public
/// inputs (the constant one not included) and the circuit's parameter-cache identifier.
pub struct Built<C> {
    /// One circuit per partition.
    pub circuits: Vec<C>,
    /// Each partition's public inputs.
    pub public_inputs: Vec<Vec<Fr>>,
    /// The parameter-cache identifier.
    pub cache_id: String,
}

/// Builds a proof's partition circuits with `build` (timed: [`ProofOutput::circuits_time`]),
/// then proves them with [`prove_instance`]. The route PoRep, PoSt and SnapDeals share.
pub fn build_and_prove<C: Circuit<Fr> + Send>(
    what: &str,
    build: impl FnOnce() -> Result<Built<C>>,
    dir: &Path,
    cfg: &ProveConfig,
) -> Result<ProofOutput> {
    let t = Instant::now();
    let b = build()?;
    let circuits_time = t.elapsed();
    let mut out = prove_instance(
        what,
        &b.cache_id,
        b.circuits,
        &b.public_inputs,
        dir,
        cfg,
        None,
    )?;
    out.circuits_time = circuits_time;
    Ok(out)
}

/// The key of the circuit `cache_id`'s recording in a PCE folder: `filecoin-` and the
/// parameter-cache id (`bellows porep c2` and the daemon share it).
pub fn pce_id(cache_id: &str) -> String {
    format!("filecoin-{cache_id}")
}

/// The recording of the circuit `cache_id` in the folder `pce_dir` (key [`pce_id`]), made from
/// `circuit` and saved there when there is none.
pub fn pce_for<C: Circuit<Fr>>(pce_dir: &Path, cache_id: &str, circuit: C) -> Result<Arc<Pce>> {
    let (pce, _) = PceCache::new(pce_dir).load_or_record(Guarded(circuit), &pce_id(cache_id))?;
    Ok(Arc::new(pce))
}

/// Proves `circuits` (the partitions of one proof of `what`, circuit `cache_id`, with these
/// public inputs) with the parameters in `dir` (see the module documentation), synthesising
/// with the recording `pce` when there is one (it must be the recording of these circuits: a
/// recording of another circuit is refused), else directly.
pub fn prove_instance<C: Circuit<Fr> + Send>(
    what: &str,
    cache_id: &str,
    circuits: Vec<C>,
    public_inputs: &[Vec<Fr>],
    dir: &Path,
    cfg: &ProveConfig,
    pce: Option<Arc<Pce>>,
) -> Result<ProofOutput> {
    let num_inputs = public_inputs.first().map_or(0, Vec::len);
    let (params, load) = load_cached(
        what,
        cache_id,
        dir,
        cfg.check,
        cfg.manifest.as_deref(),
        num_inputs,
    )?;
    let params = Arc::new(params);
    let t = Instant::now();
    let key = Arc::new(ProvingKey::with_g2_policy(
        params.clone(),
        cfg.backend.clone(),
        cfg.g2,
    )?);
    let key_time = t.elapsed();
    let t = Instant::now();
    let guarded: Vec<Guarded<C>> = circuits.into_iter().map(Guarded).collect();
    let partitions = prove_circuits_with(key, guarded, &cfg.pipeline, pce)?;
    let prove_time = t.elapsed();
    let proof: Vec<u8> = partitions.iter().flat_map(|p| p.to_bytes()).collect();
    let verify_time = if cfg.verify {
        let t = Instant::now();
        let vk = cached_vk(&CachePaths::new(dir, cache_id).vk, &params.vk)?;
        check_partitions(&vk, &partitions, public_inputs)?;
        Some(t.elapsed())
    } else {
        None
    };
    Ok(ProofOutput {
        proof,
        partitions,
        load,
        circuits_time: Duration::ZERO,
        key_time,
        prove_time,
        verify_time,
    })
}

/// Proves the partition `circuits` as one pipeline job on `key`.
pub fn prove_circuits<C: Circuit<Fr> + Send>(
    key: Arc<ProvingKey>,
    circuits: Vec<C>,
    config: &PipelineConfig,
) -> Result<Vec<Proof>> {
    prove_circuits_with(key, circuits, config, None)
}

/// [`prove_circuits`], synthesising with the recording `pce` when there is one.
pub fn prove_circuits_with<C: Circuit<Fr> + Send>(
    key: Arc<ProvingKey>,
    circuits: Vec<C>,
    config: &PipelineConfig,
    pce: Option<Arc<Pce>>,
) -> Result<Vec<Proof>> {
    let mut pipeline = Pipeline::new(vec![key], config.clone())?;
    if let Some(pce) = pce {
        pipeline = pipeline.with_pce(pce);
    }
    let mut result = None;
    pipeline.run(
        std::iter::once(Job {
            id: 0,
            partitions: circuits,
        }),
        |done| result = Some(done.proofs),
    )?;
    result.unwrap_or_else(|| Err(Error::Pipeline("the proof job never completed".into())))
}

/// The verifying key a proof is checked against: the cache folder's `.vk` at `path` (fully
/// checked), or `fallback` (the parameters' own) when the folder has none.
pub fn cached_vk(path: &Path, fallback: &VerifyingKey) -> Result<VerifyingKey> {
    if path.exists() {
        read_verifying_key(path, PointCheck::Full)
    } else {
        Ok(fallback.clone())
    }
}

/// Verifies each partition proof with Bellows' verifier against `vk` and the partition's public
/// inputs; an invalid partition is an error naming it.
pub fn check_partitions(
    vk: &VerifyingKey,
    proofs: &[Proof],
    public_inputs: &[Vec<Fr>],
) -> Result<()> {
    if proofs.len() != public_inputs.len() {
        return Err(Error::invalid(format!(
            "{} partition proofs for {} sets of public inputs",
            proofs.len(),
            public_inputs.len()
        )));
    }
    let pvk = prepare_verifying_key(vk);
    for (k, (p, inputs)) in proofs.iter().zip(public_inputs).enumerate() {
        check_partition(&pvk, k, p, inputs)?;
    }
    Ok(())
}

/// Verifies partition `index`'s proof against the prepared key and its public inputs; a proof
/// that does not verify is [`Error::VerificationFailed`] naming the partition.
pub fn check_partition(
    pvk: &PreparedVerifyingKey,
    index: usize,
    proof: &Proof,
    inputs: &[Fr],
) -> Result<()> {
    if verify_proof(pvk, proof, inputs)? {
        return Ok(());
    }
    Err(Error::VerificationFailed(format!(
        "partition {index} does not verify with the verifying key: the parameters and the \
         verifying key in the folder do not belong together"
    )))
}

/// Generates parameters for the circuit `blank` (no witness) with Bellows' setup and fresh toxic
/// waste from `rng`, and writes them into the cache folder `dir` as circuit `cache_id`
/// (`.params`, `.vk`, and `.meta` with `sector_size`).
///
/// These are **test parameters**: whoever ran the setup could forge proofs with them, and
/// proofs made with them verify only against their own verifying key, never on the Filecoin
/// network (which uses the published parameters of its trusted setup ceremony).
pub fn setup_circuit<C: Circuit<Fr>>(
    blank: C,
    cache_id: &str,
    dir: &Path,
    sector_size: u64,
    rng: &mut dyn rand_core::RngCore,
    force: bool,
) -> Result<(CachePaths, SetupReport)> {
    if !force {
        // Refuse before the (long) setup rather than after it.
        let paths = CachePaths::new(dir, cache_id);
        for p in [&paths.params, &paths.vk, &paths.meta] {
            if p.exists() {
                return Err(Error::invalid(format!(
                    "{} exists already; remove it or ask for it to be replaced (--force)",
                    p.display()
                )));
            }
        }
    }
    let t = Instant::now();
    let params = bellows_core::groth16::setup::generate_random_parameters(blank, rng)?;
    let setup_time = t.elapsed();
    let t = Instant::now();
    let paths = params::write_cache(dir, cache_id, &params, sector_size, force)?;
    Ok((
        paths,
        SetupReport {
            setup_time,
            write_time: t.elapsed(),
            domain_size: params.domain_size(),
            num_inputs: params.num_inputs(),
            num_aux: params.num_aux(),
        },
    ))
}
