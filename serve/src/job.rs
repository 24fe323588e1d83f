//! A job as the engine runs it: the request checked and resolved ([`JobSpec`]), and the encoding
//! of its results.

use std::path::PathBuf;

use bellows_core::{
    circuits::{witness_seed, CircuitOptions, CircuitSpec},
    groth16::io::ParamsShape,
};
use blstrs::Scalar;
use ff::PrimeField;

use crate::{
    error::{Result, ServeError},
    params::ParamsDirs,
    proto::{submit_request::Kind, SubmitRequest},
};

/// Longest path a request may name (parameters, parameter folder, outputs), in bytes.
pub const MAX_PATH_BYTES: usize = crate::params::dirs::MAX_PATH_BYTES;

/// Longest circuit name a request may give, in bytes.
pub const MAX_NAME_BYTES: usize = 64;

/// Longest idempotency key (`request_id`) a request may give, in bytes.
pub const MAX_REQUEST_ID_BYTES: usize = 256;

/// Refuses the request's strings past their limits (they are journaled with the job).
fn check_lengths(req: &SubmitRequest) -> Result<()> {
    let mut strings: Vec<(&str, usize, usize)> = vec![
        ("params_path", req.params_path.len(), MAX_PATH_BYTES),
        ("params_digest", req.params_digest.len(), 32),
    ];
    if let Some(o) = &req.outputs {
        strings.push(("outputs.proof_out", o.proof_out.len(), MAX_PATH_BYTES));
        strings.push(("outputs.inputs_out", o.inputs_out.len(), MAX_PATH_BYTES));
    }
    match &req.kind {
        Some(Kind::Builtin(b)) => strings.push(("builtin.name", b.name.len(), MAX_NAME_BYTES)),
        Some(Kind::PorepC2(p)) => {
            strings.push(("porep_c2.params_dir", p.params_dir.len(), MAX_PATH_BYTES))
        }
        Some(Kind::Filecoin(f)) => strings.push((
            "filecoin.request_id",
            f.request_id.len(),
            MAX_REQUEST_ID_BYTES,
        )),
        None => {}
    }
    for (field, len, max) in strings {
        if len > max {
            return Err(ServeError::invalid(format!(
                "{field} is {len} bytes long, more than the {max} allowed"
            )));
        }
    }
    Ok(())
}

/// Limits on what one request may ask for.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Most partitions in one job. Default: 1024.
    pub max_partitions: u32,
    /// Most jobs queued or running at once. Default: 10 000.
    pub max_active_jobs: usize,
    /// Largest circuit domain, log2. Default: 27.
    pub max_log_domain: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_partitions: 1024,
            max_active_jobs: 10_000,
            max_log_domain: 27,
        }
    }
}

/// What a job proves.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum JobKind {
    /// A built-in circuit, the same for every partition (each with its own witness).
    Builtin(CircuitSpec),
    /// A Filecoin proof (PoRep C2, a WindowPoSt partition, a WinningPoSt, a SnapDeals
    /// update): each partition's circuit built from the request's inputs
    /// ([`crate::filecoin::FilecoinJob`]; cargo feature `filecoin`).
    #[cfg(feature = "filecoin")]
    Filecoin(std::sync::Arc<crate::filecoin::FilecoinJob>),
}

impl JobKind {
    /// The kind's name in the journal (claims of a fleet filter on it): the circuit's name
    /// (`synthetic`, `sha256`) or one of [`FILECOIN_KINDS`].
    pub fn name(&self) -> &str {
        match self {
            JobKind::Builtin(c) => c.name(),
            #[cfg(feature = "filecoin")]
            JobKind::Filecoin(f) => f.kind().name(),
        }
    }

    /// Whether a partition's witness runs on every core, so that two partitions per device in
    /// flight keep the devices busy (Filecoin PoRep with pre-compiled synthesis): the engine
    /// holds no more of them at once.
    pub fn witness_on_every_core(&self) -> bool {
        match self {
            JobKind::Builtin(_) => false,
            #[cfg(feature = "filecoin")]
            JobKind::Filecoin(f) => f.witness_on_every_core(),
        }
    }
}

/// The journal's kinds of Filecoin jobs (PoRep C2, a WindowPoSt partition, a WinningPoSt, a
/// SnapDeals update): a fleet node serves them when built with Filecoin support.
pub const FILECOIN_KINDS: [&str; 4] = ["porep-c2", "window-post", "winning-post", "snap-update"];

/// The refusal of a PoRep C2 job by a daemon built without the cargo feature `filecoin`.
pub const NO_FILECOIN: &str =
    "this daemon was built without Filecoin support: build with --features filecoin";

/// A checked request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobSpec {
    /// What every partition proves.
    pub kind: JobKind,
    /// Number of partitions.
    pub partitions: u32,
    /// Partition i's witness comes from `witness_seed(witness_seed, i)`.
    pub witness_seed: u64,
    /// Seed of r and s, if deterministic.
    pub seed: Option<u64>,
    /// Higher first.
    pub priority: i32,
    /// Read the parameters with curve checks only.
    pub curve_only: bool,
    /// The parameters file.
    pub params_path: PathBuf,
    /// The digest the parameters file must have, if the client gave one.
    pub params_digest: Option<[u8; 32]>,
    /// The submitter's idempotency key (the cuzk API's `request_id`), if any: the same key and
    /// request submitted again is this job.
    pub key: Option<String>,
}

impl JobSpec {
    /// Checks a request against the limits (not yet against the parameters: see
    /// [`JobSpec::check_params`]); a PoRep job's files are looked for inside `dirs` only.
    pub fn from_request(req: &SubmitRequest, limits: &Limits, dirs: &ParamsDirs) -> Result<Self> {
        check_lengths(req)?;
        match &req.kind {
            Some(Kind::PorepC2(_)) | Some(Kind::Filecoin(_)) => {
                return Self::filecoin(req, limits, dirs)
            }
            _ => {}
        }
        let circuit = match &req.kind {
            None => return Err(ServeError::invalid("the request names no circuit (kind)")),
            Some(Kind::Builtin(b)) => {
                let mut o = CircuitOptions::default();
                o.log_size = b.log_size;
                o.bits_pct = match b.bits_pct {
                    None => None,
                    Some(p) if p <= 100 => Some(p as u8),
                    Some(p) => {
                        return Err(ServeError::invalid(format!(
                            "bits_pct {p} is not a percentage (0..=100)"
                        )))
                    }
                };
                o.bytes = match b.bytes {
                    None => None,
                    Some(n) => Some(usize::try_from(n).map_err(|_| {
                        ServeError::invalid(format!("sha256 preimage of {n} bytes is too large"))
                    })?),
                };
                if let Some(k) = b.log_size {
                    if k > limits.max_log_domain {
                        return Err(ServeError::invalid(format!(
                            "log_size {k} is above this daemon's limit of {}",
                            limits.max_log_domain
                        )));
                    }
                }
                if let Some(n) = o.bytes {
                    // A rough bound before building anything: 8 constraints per preimage bit.
                    if (n as u64).saturating_mul(64) > 1u64 << limits.max_log_domain {
                        return Err(ServeError::invalid(format!(
                            "a sha256 preimage of {n} bytes is above this daemon's size limit \
                             (2^{} constraints)",
                            limits.max_log_domain
                        )));
                    }
                }
                CircuitSpec::new(&b.name, &o).map_err(|e| ServeError::invalid(e.to_string()))?
            }
            Some(Kind::PorepC2(_)) | Some(Kind::Filecoin(_)) => unreachable!("handled above"),
        };
        if req.partitions == 0 {
            return Err(ServeError::invalid("a job needs at least one partition"));
        }
        if req.partitions > limits.max_partitions {
            return Err(ServeError::invalid(format!(
                "{} partitions is above this daemon's limit of {} per job",
                req.partitions, limits.max_partitions
            )));
        }
        if req.params_path.is_empty() {
            return Err(ServeError::invalid("the request names no parameters file"));
        }
        let params_digest = digest_of(req)?;
        Ok(Self {
            kind: JobKind::Builtin(circuit),
            partitions: req.partitions,
            witness_seed: req.witness_seed,
            seed: req.seed,
            priority: req.priority,
            curve_only: req.skip_subgroup_checks,
            params_path: PathBuf::from(&req.params_path),
            params_digest,
            key: None,
        })
    }

    /// A Filecoin request (refused without the cargo feature `filecoin`).
    #[cfg(not(feature = "filecoin"))]
    fn filecoin(_req: &SubmitRequest, _limits: &Limits, _dirs: &ParamsDirs) -> Result<Self> {
        Err(ServeError::Unsupported(NO_FILECOIN.into()))
    }

    /// A Filecoin request: a PoRep C2 (its C1 output and parameter folder) or a proof as the
    /// cuzk API asks for it; the inputs parsed and checked, every partition's circuit built.
    #[cfg(feature = "filecoin")]
    fn filecoin(req: &SubmitRequest, limits: &Limits, dirs: &ParamsDirs) -> Result<Self> {
        use crate::filecoin::FilecoinJob;
        let (job, priority, key) = match &req.kind {
            Some(Kind::PorepC2(p)) => {
                if p.params_dir.is_empty() {
                    return Err(ServeError::invalid(
                        "the PoRep C2 request names no parameter folder (params_dir)",
                    ));
                }
                let job = FilecoinJob::from_c1(&p.c1, std::path::Path::new(&p.params_dir), dirs)?;
                (job, req.priority, None)
            }
            Some(Kind::Filecoin(f)) => {
                if req.priority != 0 {
                    return Err(ServeError::invalid(
                        "a Filecoin request gives its priority in filecoin.priority (the cuzk \
                         API's classes), not in priority",
                    ));
                }
                let job = FilecoinJob::from_cuzk(f, dirs)?;
                let priority = crate::cuzk::priority(f.priority, f.proof_kind);
                (
                    job,
                    priority,
                    Some(f.request_id.clone()).filter(|k| !k.is_empty()),
                )
            }
            _ => return Err(ServeError::invalid("not a Filecoin request")),
        };
        let partitions = job.partitions();
        if req.partitions != 0 && req.partitions != partitions {
            return Err(ServeError::invalid(format!(
                "{} partitions asked for, but a {} proof has {partitions}: leave partitions at 0",
                req.partitions,
                job.proof_name()
            )));
        }
        if partitions > limits.max_partitions {
            return Err(ServeError::invalid(format!(
                "{partitions} partitions is above this daemon's limit of {} per job",
                limits.max_partitions
            )));
        }
        let params_path = job.params_path().to_path_buf();
        Ok(Self {
            kind: JobKind::Filecoin(std::sync::Arc::new(job)),
            partitions,
            witness_seed: 0,
            seed: req.seed,
            priority,
            curve_only: req.skip_subgroup_checks,
            params_path,
            params_digest: digest_of(req)?,
            key,
        })
    }

    /// log2 of the circuit's domain (a PoRep circuit's from its parameters' `shape`).
    #[cfg_attr(not(feature = "filecoin"), allow(unused_variables))]
    pub fn log_domain(&self, shape: &ParamsShape) -> u32 {
        match &self.kind {
            JobKind::Builtin(c) => c.log_domain(),
            #[cfg(feature = "filecoin")]
            JobKind::Filecoin(_) => shape.domain_size.trailing_zeros(),
        }
    }

    /// Checks the parameters' shape (length fields) against the circuit.
    pub fn check_params(&self, shape: &ParamsShape) -> Result<()> {
        #[allow(clippy::infallible_destructuring_match)] // without the feature `filecoin`
        let spec = match &self.kind {
            JobKind::Builtin(c) => c,
            #[cfg(feature = "filecoin")]
            JobKind::Filecoin(f) => return f.check_params(shape),
        };
        let want_inputs = spec.num_public_inputs() + 1;
        let want_domain = 1usize << spec.log_domain();
        if shape.num_inputs != want_inputs || shape.domain_size != want_domain {
            return Err(ServeError::invalid(format!(
                "the parameters do not fit the circuit {}: {} serves a domain of {} with {} \
                 public inputs, the circuit needs a domain of {} with {}",
                spec.description(),
                self.params_path.display(),
                shape.domain_size,
                shape.num_inputs.saturating_sub(1),
                want_domain,
                want_inputs - 1
            )));
        }
        Ok(())
    }

    /// The witness seed of partition `index`.
    pub fn partition_witness_seed(&self, index: u32) -> u64 {
        witness_seed(self.witness_seed, u64::from(index))
    }

    /// One line for listings.
    pub fn label(&self) -> String {
        match &self.kind {
            JobKind::Builtin(c) => format!("{} × {}", c.description(), self.partitions),
            #[cfg(feature = "filecoin")]
            JobKind::Filecoin(f) => format!(
                "{} {} × {}{}",
                f.kind().describe(),
                f.proof_name(),
                self.partitions,
                self.key
                    .as_ref()
                    .map(|k| format!(" (request {k})"))
                    .unwrap_or_default()
            ),
        }
    }
}

/// The request's parameters digest, if it gives one.
fn digest_of(req: &SubmitRequest) -> Result<Option<[u8; 32]>> {
    match req.params_digest.len() {
        0 => Ok(None),
        32 => Ok(Some(req.params_digest[..].try_into().expect("32 bytes"))),
        n => Err(ServeError::invalid(format!(
            "params_digest has {n} bytes; a SHA-256 digest has 32"
        ))),
    }
}

/// Public inputs as stored and sent: 32 bytes each, canonical little-endian.
pub fn encode_inputs(inputs: &[Scalar]) -> Vec<u8> {
    inputs.iter().flat_map(|s| s.to_repr()).collect()
}

/// Public inputs from [`encode_inputs`]'s bytes; an error for a length that is not a multiple
/// of 32 or a value that is not a field element.
pub fn decode_inputs(bytes: &[u8]) -> Result<Vec<Scalar>> {
    if !bytes.len().is_multiple_of(32) {
        return Err(ServeError::invalid(format!(
            "public inputs of {} bytes: not a multiple of 32",
            bytes.len()
        )));
    }
    bytes
        .chunks(32)
        .map(|c| {
            let repr: [u8; 32] = c.try_into().expect("32 bytes");
            Option::<Scalar>::from(Scalar::from_repr(repr))
                .ok_or_else(|| ServeError::invalid("a public input is not a field element"))
        })
        .collect()
}
