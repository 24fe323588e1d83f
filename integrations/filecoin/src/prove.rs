//! The route every Filecoin proof takes here, whatever its circuit: parameters from the cache,
//! made resident on a backend, the partition circuits proved through Bellows' pipeline, the
//! partition proofs concatenated as filecoin-proofs writes them (its `MultiProof::write`), and a
//! check against the verifying key before the bytes are returned. And the other way: a setup
//! that writes a circuit's parameters under the cache's names.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bellows_core::groth16::io::{read_verifying_key, ParamsShape, PointCheck};
use bellows_core::groth16::prover::{G2Policy, ProvingKey, QueryLens};
use bellows_core::groth16::setup::{SetupStep, SETUP_STEPS};
use bellows_core::groth16::{
    prepare_verifying_key, verify_proof, Parameters, PreparedVerifyingKey, Proof, VerifyingKey,
};
use bellows_core::pce::{cache::PceCache, Pce};
use bellows_core::pipeline::{Job, JobResult, Loading, Pipeline, PipelineConfig};
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
    /// How the parameters file is checked when loaded. Default: [`Check::Auto`].
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
    /// Pre-compiled synthesis for every kind (PoRep C2, PoSt, SnapDeals): the folder of
    /// recordings ([`bellows_core::pce::cache::PceCache`]) where the partition circuit's constraint
    /// system is kept, recorded there on first use (one run of the circuit's constraint code,
    /// about one direct synthesis) under `filecoin-` and the parameter-cache id. Every partition
    /// is then synthesised with it: its witness code runs, its constraint code does not, and the
    /// sparse products run on every core; the result equals direct synthesis bit for bit.
    /// Default: `None`, direct synthesis.
    pub pce_dir: Option<std::path::PathBuf>,
    /// For [`Check::TrustedDigest`] (and `Auto` on a published file): where digests that
    /// matched are recorded per file version ([`params::DigestMemo`]), so that the next load
    /// of the unchanged file is not hashed again. Default: `None`, every load hashes.
    pub digest_memo: Option<std::path::PathBuf>,
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
            digest_memo: None,
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
    /// Size of the parameters file written.
    pub params_bytes: u64,
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
    let (path, expect) = cached_file(what, cache_id, dir, num_inputs)?;
    params::load_with_manifest(&path, check, manifest, expect)
}

/// The parameters file of `cache_id` in `dir` (an error naming it when missing), and the check
/// of its shape: a circuit of `num_inputs` public inputs (the constant one not counted).
fn cached_file(
    what: &str,
    cache_id: &str,
    dir: &Path,
    num_inputs: usize,
) -> Result<(std::path::PathBuf, impl FnOnce(&ParamsShape) -> Result<()>)> {
    cached_file_of(what, cache_id, dir, num_inputs, None)
}

/// [`cached_file`], also checking the file's every query size against the circuit's recording
/// `shape` when there is one (a file of another circuit with as many public inputs is then
/// refused before a point is decoded, not after a partition's synthesis).
fn cached_file_of(
    what: &str,
    cache_id: &str,
    dir: &Path,
    num_inputs: usize,
    shape: Option<ParamsShape>,
) -> Result<(std::path::PathBuf, impl FnOnce(&ParamsShape) -> Result<()>)> {
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
    let expect = move |got: &ParamsShape| {
        if got.num_inputs != num_inputs + 1 {
            return Err(Error::malformed(
                label,
                format!(
                    "it is for a circuit with {} public inputs, but {what}'s partition circuit \
                     has {num_inputs}: the file does not belong to this proof type",
                    got.num_inputs.saturating_sub(1)
                ),
            ));
        }
        if let Some(want) = shape {
            let sizes = |s: &ParamsShape| [s.domain_size, s.num_aux, s.a_len, s.b_len];
            if sizes(got) != sizes(&want) {
                return Err(Error::malformed(
                    label,
                    format!(
                        "it is for another circuit: domain, private variables, A and B \
                         queries {:?}, where {what}'s partition circuit has {:?}",
                        sizes(got),
                        sizes(&want)
                    ),
                ));
            }
        }
        Ok(())
    };
    Ok((paths.params, expect))
}

/// The shape the parameters of the circuit recorded in `pce` have (file sizes left zero).
pub fn recorded_shape(pce: &Pce) -> Result<ParamsShape> {
    let (domain_size, _) = bellows_core::groth16::constraints::domain_size(
        pce.num_constraints(),
        pce.num_constraints().saturating_sub(pce.num_inputs()),
    )?;
    Ok(ParamsShape {
        domain_size,
        num_inputs: pce.num_inputs(),
        num_aux: pce.num_aux(),
        a_len: pce.num_inputs() + pce.a_aux_density().total(),
        b_len: pce.b_input_density().total() + pce.b_aux_density().total(),
        file_bytes: 0,
        decoded_bytes: 0,
    })
}

/// Refuses a job the host cannot hold before any work starts: one partition's buffers beside
/// the largest query being decoded while the key loads (`available` bytes of host memory).
pub fn check_host_memory(what: &str, shape: &ParamsShape, available: u64) -> Result<()> {
    let partition = bellows_core::pipeline::partition_bytes_of(
        shape.domain_size as u64,
        (shape.num_inputs + shape.num_aux) as u64,
        shape.b_len as u64,
    );
    let largest_section = [
        96 * shape.domain_size as u64,
        96 * shape.num_aux as u64,
        96 * shape.a_len as u64,
        192 * shape.b_len as u64,
    ]
    .into_iter()
    .max()
    .unwrap_or(0);
    let need = partition + largest_section;
    if available > 0 && need > available {
        return Err(Error::invalid(format!(
            "{what}: this host has {} of memory available; one partition needs {} and loading \
             the parameters {} more: prove on a larger host, or free memory",
            bellows_core::units::format_bytes(available),
            bellows_core::units::format_bytes(partition),
            bellows_core::units::format_bytes(largest_section)
        )));
    }
    Ok(())
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

/// The partition circuits of one proof, with their public inputs: what [`build_and_prove`]
/// proves.
pub struct Instance<C> {
    /// One circuit per partition, in partition order.
    pub circuits: Vec<C>,
    /// Each partition's public inputs (the constant one not included), as the proof's
    /// compound proof generates them for verification.
    pub public_inputs: Vec<Vec<Fr>>,
    /// The circuit's parameter-cache identifier.
    pub cache_id: String,
}

/// Builds a proof's partition circuits with `build` (timed: [`ProofOutput::circuits_time`]),
/// then proves them with [`prove_instance`], synthesising with the recording `pce` when there
/// is one. The route PoSt and SnapDeals take.
pub fn build_and_prove<C: Circuit<Fr> + Send>(
    what: &str,
    build: impl FnOnce() -> Result<Instance<C>>,
    dir: &Path,
    cfg: &ProveConfig,
    pce: Option<Arc<Pce>>,
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
        pce,
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
    pce_with(pce_dir, cache_id, |id| Pce::record(Guarded(circuit), id))
}

/// As [`pce_for`], recording with `record` (given the recording's key) when there is none.
pub fn pce_with(
    pce_dir: &Path,
    cache_id: &str,
    record: impl FnOnce(&str) -> Result<Pce>,
) -> Result<Arc<Pce>> {
    let id = pce_id(cache_id);
    let (pce, _) = PceCache::new(pce_dir).load_or_record_with(&id, || record(&id))?;
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
    let batch = prove_instances(
        what,
        cache_id,
        vec![(circuits, public_inputs.to_vec())],
        dir,
        cfg,
        pce,
    )?;
    let mut out = batch
        .proofs
        .into_iter()
        .next()
        .ok_or_else(|| Error::Pipeline("the proof job never completed".into()))?;
    out.load = batch.load;
    out.prove_time = batch.prove_time;
    Ok(out)
}

/// Several proofs of one circuit in a row: what [`prove_instances`] returns.
#[derive(Clone, Debug)]
pub struct ProofBatch {
    /// Each proof, in the order given (its `load` is this batch's; its `prove_time` is the time
    /// from the start of proving to its own completion).
    pub proofs: Vec<ProofOutput>,
    /// The parameter load (once for the batch).
    pub load: LoadReport,
    /// Proving every proof through the pipeline, from the first partition to the last proof.
    pub prove_time: Duration,
    /// Where the pipeline's time went (synthesis, the device phases, their occupancy).
    pub stats: bellows_core::pipeline::PipelineStats,
}

/// Proves several proofs of `what` (circuit `cache_id`), each given as its partition circuits
/// and their public inputs, loading the parameters once and feeding every partition of every
/// proof through one pipeline, so that a proof's first partitions are synthesised while the
/// previous proof's last ones are on the device: the steady state of a prover that is never
/// idle. Each proof is verified against the verifying key (unless `cfg.verify` is off).
pub fn prove_instances<C: Circuit<Fr> + Send>(
    what: &str,
    cache_id: &str,
    proofs: Vec<(Vec<C>, Vec<Vec<Fr>>)>,
    dir: &Path,
    cfg: &ProveConfig,
    pce: Option<Arc<Pce>>,
) -> Result<ProofBatch> {
    let num_inputs = proofs
        .first()
        .and_then(|(_, i)| i.first())
        .map_or(0, Vec::len);
    // Loaded onto the backend section by section: the host keeps no copy of what the backend
    // holds, so its memory goes to the partitions in flight. Making the key resident is part
    // of the load here (`key_time` stays zero).
    let shape = pce.as_deref().map(recorded_shape).transpose()?;
    if let Some(shape) = &shape {
        check_host_memory(what, shape, bellows_core::backend::host_memory_info().free)?;
    }
    let lens = shape.as_ref().map(QueryLens::from);
    let (path, expect) = cached_file_of(what, cache_id, dir, num_inputs, shape)?;
    // The cache folder's verifying key is read before any work.
    let early_vk = if cfg.verify {
        cached_vk(&CachePaths::new(dir, cache_id).vk)?
    } else {
        None
    };
    let mut inputs = Vec::with_capacity(proofs.len());
    let jobs: Vec<Job<Guarded<C>>> = proofs
        .into_iter()
        .enumerate()
        .map(|(id, (circuits, public))| {
            inputs.push(public);
            Job {
                id: id as u64,
                partitions: circuits.into_iter().map(Guarded).collect(),
            }
        })
        .collect();
    let n = jobs.len();
    // When each proof completed, and when the key was ready: the times reported are from the
    // end of the load.
    let mut done: Vec<Option<(Result<Vec<Proof>>, Instant)>> = (0..n).map(|_| None).collect();
    let on_done = |r: JobResult| {
        if let Some(slot) = done.get_mut(r.id as usize) {
            *slot = Some((r.proofs, Instant::now()));
        }
    };
    let memo = cfg.digest_memo.as_ref().map(params::DigestMemo::new);
    let load_key = || {
        params::load_key(
            &path,
            cfg.check,
            cfg.manifest.as_deref(),
            memo.as_ref(),
            expect,
            cfg.backend.clone(),
            cfg.g2,
        )
    };
    let (stats, load, key_vk, loaded_at) = match lens {
        // The recording gives the key's shape before the key: the partitions' host blocks are
        // made ready (pinned by a device backend) and the first partitions synthesised while
        // the key loads, instead of on the first proof's path.
        Some(lens) => {
            let mut loaded = None;
            let slot = &mut loaded;
            let loading = Loading {
                lens,
                backend: cfg.backend.clone(),
                load: move || {
                    let (key, load) = load_key()?;
                    *slot = Some((load, key.params().vk.clone(), Instant::now()));
                    Ok(vec![Arc::new(key)])
                },
            };
            let stats = Pipeline::run_loading(&cfg.pipeline, pce, loading, jobs, on_done)?;
            let (load, vk, at) =
                loaded.ok_or_else(|| Error::Pipeline("the parameters were never loaded".into()))?;
            (stats, load, vk, at)
        }
        None => {
            let (key, load) = load_key()?;
            let loaded_at = Instant::now();
            let vk = key.params().vk.clone();
            let mut pipeline = Pipeline::new(vec![Arc::new(key)], cfg.pipeline.clone())?;
            if let Some(pce) = pce {
                pipeline = pipeline.with_pce(pce);
            }
            (pipeline.run(jobs, on_done)?, load, vk, loaded_at)
        }
    };
    let vk = cfg.verify.then(|| early_vk.unwrap_or(key_vk));
    let done: Vec<Option<(Result<Vec<Proof>>, Duration)>> = done
        .into_iter()
        .map(|slot| slot.map(|(r, at)| (r, at.saturating_duration_since(loaded_at))))
        .collect();
    let prove_time = loaded_at.elapsed();
    let mut out = Vec::with_capacity(n);
    for (k, slot) in done.into_iter().enumerate() {
        let (partitions, at) =
            slot.ok_or_else(|| Error::Pipeline(format!("proof {k} of the batch never completed")))?;
        let partitions = partitions?;
        let verify_time = match &vk {
            Some(vk) => {
                let t = Instant::now();
                check_partitions(vk, &partitions, &inputs[k])?;
                Some(t.elapsed())
            }
            None => None,
        };
        out.push(ProofOutput {
            proof: partitions.iter().flat_map(|p| p.to_bytes()).collect(),
            partitions,
            load: load.clone(),
            circuits_time: Duration::ZERO,
            key_time: Duration::ZERO,
            prove_time: at,
            verify_time,
        });
    }
    Ok(ProofBatch {
        proofs: out,
        load,
        prove_time,
        stats,
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

/// The cache folder's verifying key at `path` (fully checked), which proofs are checked
/// against; `None` when the folder has none (the parameters' own is used then).
pub fn cached_vk(path: &Path) -> Result<Option<VerifyingKey>> {
    path.exists()
        .then(|| read_verifying_key(path, PointCheck::Full))
        .transpose()
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

/// Generates parameters for the circuit `record` records (its blank circuit's recording, given
/// the recording's key) with Bellows' setup and fresh toxic
/// waste from `rng`, and writes them into the cache folder `dir` as circuit `cache_id`
/// (`.params`, `.vk`, and `.meta` with `sector_size`); with `pce_dir`, the circuit's recording
/// is taken from (or saved to) that PCE folder under [`pce_id`], where `bellows porep c2` and
/// the daemon find it.
///
/// These are **test parameters**: whoever ran the setup could forge proofs with them, and
/// proofs made with them verify only against their own verifying key, never on the Filecoin
/// network (which uses the published parameters of its trusted setup ceremony).
///
/// The setup runs from the recording ([`bellows_core::groth16::setup::write_parameters_from_pce`]:
/// the same file as the in-memory setup, byte for byte) and writes each query as soon as it is
/// computed, so a 32 GiB PoRep partition (2^27 constraints, a file of about 50 GB) needs a
/// fraction of the memory its parameters take. Before any point is computed, the file's exact
/// size is checked against the free space of `dir`, and the setup's working memory against the
/// host's available memory: either short is an error naming both numbers, with nothing written.
///
/// `report` is handed each step as it ends: the circuit's recording (read from the PCE folder,
/// or made), then the setup's own ([`SETUP_STEPS`]): [`SETUP_CIRCUIT_STEPS`] in all.
#[allow(clippy::too_many_arguments)]
pub fn setup_circuit(
    record: impl FnOnce(&str) -> Result<Pce>,
    cache_id: &str,
    dir: &Path,
    sector_size: u64,
    rng: &mut dyn rand_core::RngCore,
    force: bool,
    pce_dir: Option<&Path>,
    report: &dyn Fn(&SetupStep),
) -> Result<(CachePaths, SetupReport)> {
    use bellows_core::groth16::setup::{parameters_file_size, write_random_parameters_from_pce};
    let of = SETUP_CIRCUIT_STEPS;
    let paths = CachePaths::new(dir, cache_id);
    // Refuse before the (long) setup rather than after it.
    paths.make_room(dir, force)?;
    let t = Instant::now();
    let pce = match pce_dir {
        Some(d) => pce_with(d, cache_id, record)?,
        None => Arc::new(record(&pce_id(cache_id))?),
    };
    let record_time = t.elapsed();
    report(&SetupStep {
        index: 1,
        of,
        name: RECORDING_STEP,
        next: Some(SETUP_STEPS[0]),
        took: record_time,
    });
    let file_bytes = parameters_file_size(&pce)?;
    let free_disk = fs2::available_space(dir)
        .map_err(|e| Error::io(format!("the free space of {}", dir.display()), e))?;
    // The replaced file's space comes back only after the new one is renamed over it.
    let needed_disk = file_bytes + (1 << 20);
    check_setup_disk(cache_id, dir, needed_disk, free_disk)?;
    check_setup_memory(
        cache_id,
        setup_memory(&pce)?,
        bellows_core::backend::host_memory_info().free,
    )?;
    let t = Instant::now();
    let mut vk = None;
    bellows_core::groth16::output::OutputFile::prepare(&paths.params, "parameters file")?.commit(
        |w| {
            vk = Some(write_random_parameters_from_pce(&pce, rng, w, &|s| {
                report(&s.within(1, of))
            })?);
            Ok(())
        },
    )?;
    let setup_time = record_time + t.elapsed();
    let vk = vk.ok_or_else(|| Error::invalid("internal error: the setup gave no verifying key"))?;
    let t = Instant::now();
    let paths = params::write_vk_and_meta(dir, cache_id, &vk, sector_size)?;
    let (domain_size, _) = bellows_core::groth16::constraints::domain_size(
        pce.num_constraints(),
        pce.num_constraints().saturating_sub(pce.num_inputs()),
    )?;
    Ok((
        paths,
        SetupReport {
            setup_time,
            write_time: t.elapsed(),
            domain_size,
            num_inputs: pce.num_inputs(),
            num_aux: pce.num_aux(),
            params_bytes: file_bytes,
        },
    ))
}

/// The first step [`setup_circuit`] reports, before the setup's own.
pub const RECORDING_STEP: &str = "the circuit's recording";

/// How many steps [`setup_circuit`] reports: the recording, then the setup's.
pub const SETUP_CIRCUIT_STEPS: usize = SETUP_STEPS.len() + 1;

/// Refuses a setup whose file (`needed` bytes) does not fit in the `free` bytes of `dir`.
fn check_setup_disk(cache_id: &str, dir: &Path, needed: u64, free: u64) -> Result<()> {
    if free >= needed {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "the parameters of {cache_id} take {} on disk; {} has {} free: free some space or \
         choose another --params-dir",
        bellows_core::units::format_bytes(needed),
        dir.display(),
        bellows_core::units::format_bytes(free)
    )))
}

/// Refuses a setup whose working memory (`needed` bytes) exceeds the host's `available` memory
/// (0: unknown, not refused).
fn check_setup_memory(cache_id: &str, needed: u64, available: u64) -> Result<()> {
    if available == 0 || needed <= available {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "the setup of {cache_id} needs about {} of memory beside its recording; this host has \
         {} available",
        bellows_core::units::format_bytes(needed),
        bellows_core::units::format_bytes(available)
    )))
}

/// The setup's working memory beside its recording, from the recording's counts: the powers of
/// τ and the h scalars (2n), u, v, w and one query's scalars (4 per variable), and the largest
/// query's points (l, a, b_g1 or h in G1, b_g2 in G2), plus the window tables.
fn setup_memory(pce: &Pce) -> Result<u64> {
    let (n, _) = bellows_core::groth16::constraints::domain_size(
        pce.num_constraints(),
        pce.num_constraints().saturating_sub(pce.num_inputs()),
    )?;
    let vars = (pce.num_inputs() + pce.num_aux()) as u64;
    let b = (pce.b_input_density().total() + pce.b_aux_density().total()) as u64;
    let largest = (96 * (n as u64).max(vars)).max(192 * b);
    Ok(32 * (2 * n as u64 + 4 * vars) + largest + (1 << 30))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(domain_size: usize, num_aux: usize) -> ParamsShape {
        ParamsShape {
            domain_size,
            num_inputs: 4,
            num_aux,
            a_len: num_aux,
            b_len: num_aux / 2,
            file_bytes: 0,
            decoded_bytes: 0,
        }
    }

    #[test]
    fn parameters_of_another_circuit_are_named_before_decoding() {
        let dir = std::env::temp_dir().join(format!("bellows-shape-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(CachePaths::new(&dir, "c").params, b"x").unwrap();
        let want = shape(1 << 10, 900);
        let (_, expect) = cached_file_of("P", "c", &dir, 3, Some(want)).unwrap();
        let e = expect(&shape(1 << 11, 900)).unwrap_err().to_string();
        assert!(e.contains("another circuit"), "{e}");
        let (_, expect) = cached_file_of("P", "c", &dir, 3, Some(want)).unwrap();
        assert!(expect(&want).is_ok());
        let (_, expect) = cached_file_of("P", "c", &dir, 5, Some(want)).unwrap();
        assert!(expect(&want)
            .unwrap_err()
            .to_string()
            .contains("public inputs"));
        assert!(cached_file_of("P", "missing", &dir, 3, None).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_host_too_small_is_refused_before_work() {
        // A 2^27-domain partition (about 19 GB) and its 13 GB h query, on a 16 GiB host.
        let big = shape(1 << 27, 130_000_000);
        let e = check_host_memory("C2", &big, 16 << 30)
            .unwrap_err()
            .to_string();
        assert!(e.contains("one partition needs"), "{e}");
        assert!(check_host_memory("C2", &big, 128 << 30).is_ok());
        assert!(
            check_host_memory("C2", &big, 0).is_ok(),
            "unknown memory is not refused"
        );
        let e = check_setup_disk("c", Path::new("/p"), 50 << 30, 10 << 30).unwrap_err();
        assert!(e.to_string().contains("free some space"), "{e}");
        assert!(check_setup_disk("c", Path::new("/p"), 10, 10).is_ok());
        assert!(check_setup_memory("c", 100 << 30, 64 << 30).is_err());
        assert!(check_setup_memory("c", 1 << 30, 64 << 30).is_ok());
    }
}
