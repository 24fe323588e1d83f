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
    proto::{submit_request::Kind, SubmitRequest},
};

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
    /// A Filecoin PoRep C2: each partition's circuit built from the C1 output
    /// ([`crate::porep::PorepJob`]; cargo feature `filecoin`).
    #[cfg(feature = "filecoin")]
    Porep(std::sync::Arc<crate::porep::PorepJob>),
}

impl JobKind {
    /// The kind's name in the journal (claims of a fleet filter on it): the circuit's name
    /// (`synthetic`, `sha256`) or [`POREP_C2_KIND`].
    pub fn name(&self) -> &str {
        match self {
            JobKind::Builtin(c) => c.name(),
            #[cfg(feature = "filecoin")]
            JobKind::Porep(_) => POREP_C2_KIND,
        }
    }
}

/// The journal's kind of a PoRep C2 job (a fleet node serves it when built with Filecoin
/// support).
pub const POREP_C2_KIND: &str = "porep-c2";

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
}

impl JobSpec {
    /// Checks a request against the limits (not yet against the parameters: see
    /// [`JobSpec::check_params`]).
    pub fn from_request(req: &SubmitRequest, limits: &Limits) -> Result<Self> {
        if let Some(Kind::PorepC2(p)) = &req.kind {
            return Self::porep(req, p, limits);
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
            Some(Kind::PorepC2(_)) => unreachable!("handled above"),
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
        })
    }

    /// A PoRep C2 request: the C1 output parsed and checked, every partition's circuit built
    /// (refused without the cargo feature `filecoin`).
    #[cfg(not(feature = "filecoin"))]
    fn porep(_req: &SubmitRequest, _p: &crate::proto::PorepC2, _limits: &Limits) -> Result<Self> {
        Err(ServeError::Unsupported(NO_FILECOIN.into()))
    }

    /// A PoRep C2 request: the C1 output parsed and checked, every partition's circuit built.
    #[cfg(feature = "filecoin")]
    fn porep(req: &SubmitRequest, p: &crate::proto::PorepC2, limits: &Limits) -> Result<Self> {
        if p.params_dir.is_empty() {
            return Err(ServeError::invalid(
                "the PoRep C2 request names no parameter folder (params_dir)",
            ));
        }
        let job = crate::porep::PorepJob::new(&p.c1, std::path::Path::new(&p.params_dir))?;
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
            kind: JobKind::Porep(std::sync::Arc::new(job)),
            partitions,
            witness_seed: 0,
            seed: req.seed,
            priority: req.priority,
            curve_only: req.skip_subgroup_checks,
            params_path,
            params_digest: digest_of(req)?,
        })
    }

    /// log2 of the circuit's domain (a PoRep circuit's from its parameters' `shape`).
    #[cfg_attr(not(feature = "filecoin"), allow(unused_variables))]
    pub fn log_domain(&self, shape: &ParamsShape) -> u32 {
        match &self.kind {
            JobKind::Builtin(c) => c.log_domain(),
            #[cfg(feature = "filecoin")]
            JobKind::Porep(_) => shape.domain_size.trailing_zeros(),
        }
    }

    /// Checks the parameters' shape (length fields) against the circuit.
    pub fn check_params(&self, shape: &ParamsShape) -> Result<()> {
        #[allow(clippy::infallible_destructuring_match)] // without the feature `filecoin`
        let spec = match &self.kind {
            JobKind::Builtin(c) => c,
            #[cfg(feature = "filecoin")]
            JobKind::Porep(p) => return p.check_params(shape),
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
            JobKind::Porep(p) => format!("PoRep C2 {} × {}", p.proof_name(), self.partitions),
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
