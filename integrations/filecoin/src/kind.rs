//! What PoRep, PoSt and SnapDeals proofs have in common, written once: a proof type names a
//! sector size, the sector size a shape ([`crate::shape`]), and for that shape each kind builds
//! its partition circuits ([`ProofKind`]). The cache identifier, the proof and the setup of every
//! kind go through the functions here; each kind's module states only its circuits.

use std::fmt::Debug;
use std::path::Path;
use std::sync::Arc;

use bellows_core::pce::Pce;
use bellows_core::Result;
use bellpepper_core::Circuit;
use blstrs::Scalar as Fr;
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};
use storage_proofs_core::compound_proof::{CircuitComponent, CompoundProof};
use storage_proofs_core::parameter_cache::ParameterSetMetadata;
use storage_proofs_core::proof::ProofScheme;

use crate::params::CachePaths;
use crate::prove::{self, Instance, ProofOutput, ProveConfig, SetupReport};
use crate::shape::{proofs_error, Shape};
use crate::with_sector_shape;

/// A registered proof type of filecoin-proofs-api, which names its sector size.
pub(crate) trait ProofType: Copy + Debug {
    /// The sector size, in bytes.
    fn sector_bytes(self) -> u64;
}

macro_rules! proof_type {
    ($($t:ty),+) => {$(
        impl ProofType for $t {
            fn sector_bytes(self) -> u64 {
                u64::from(self.sector_size())
            }
        }
    )+};
}
proof_type!(
    RegisteredSealProof,
    RegisteredPoStProof,
    RegisteredUpdateProof
);

/// One kind of Filecoin proof, as far as the shape dispatch needs it.
pub(crate) trait ProofKind {
    /// The registered proof type (`RegisteredSealProof`, …).
    type Proof: ProofType;
    /// What a proof is made from (a C1 output, vanilla proofs).
    type Input;
    /// The partition circuit for the sector shape `Tree`.
    type Circuit<Tree: Shape>: Circuit<Fr> + Send;
    /// The blank (witness-free) circuit for the sector shape `Tree`, as the setup needs it.
    type Blank<Tree: Shape>: Circuit<Fr>;

    /// The proof type `input` is for.
    fn proof(input: &Self::Input) -> Self::Proof;
    /// The parameter-cache identifier of `proof`'s circuit for the shape `Tree`.
    fn cache_id<Tree: Shape>(proof: Self::Proof) -> Result<String>;
    /// The blank (witness-free) circuit of `proof`, as the setup needs it.
    fn blank<Tree: Shape>(proof: Self::Proof) -> Result<Self::Blank<Tree>>;
    /// The partition circuits of `input`, checked, with their public inputs.
    fn instance<Tree: Shape>(input: &Self::Input) -> Result<Instance<Self::Circuit<Tree>>>;
    /// The recording of `proof`'s partition circuit under `id`: its blank circuit's, unless the
    /// kind knows a faster way to the same image.
    fn recording<Tree: Shape>(proof: Self::Proof, id: &str) -> Result<Pce> {
        Pce::record(prove::Guarded(Self::blank::<Tree>(proof)?), id)
    }
}

/// The public functions each kind's module (`porep`, `post`, `update`) offers over its proof
/// type `$proof`, written once: [`cache_id`], [`pce`], [`cache_paths`] and [`setup`] for the
/// kind `$kind`.
macro_rules! kind_api {
    ($kind:ty, $proof:ty) => {
        /// The parameter-cache identifier of `proof`'s circuit (the part between `v28-` and
        /// `.params`).
        pub fn cache_id(proof: $proof) -> bellows_core::Result<String> {
            $crate::kind::cache_id::<$kind>(proof)
        }

        /// The recording of `proof`'s partition circuit in the PCE folder `pce_dir`, recorded
        /// from the blank circuit when there is none, under the key the setup and the prover
        /// use: what pre-compiled synthesis of every partition of this proof type runs on.
        pub fn pce(
            proof: $proof,
            pce_dir: &std::path::Path,
        ) -> bellows_core::Result<std::sync::Arc<bellows_core::pce::Pce>> {
            $crate::kind::pce::<$kind>(proof, pce_dir)
        }

        /// The cache files of `proof`'s circuit in `dir`.
        pub fn cache_paths(
            proof: $proof,
            dir: &std::path::Path,
        ) -> bellows_core::Result<$crate::params::CachePaths> {
            $crate::kind::cache_paths::<$kind>(proof, dir)
        }

        /// Generates TEST parameters for `proof`'s circuit with Bellows' setup and fresh toxic
        /// waste from `rng`, and writes them into the cache folder `dir` under filecoin-proofs'
        /// names (`.params`, `.vk`, `.meta`); see [`crate::prove::setup_circuit`].
        pub fn setup<R: rand_core::RngCore>(
            proof: $proof,
            dir: &std::path::Path,
            rng: &mut R,
            force: bool,
        ) -> bellows_core::Result<($crate::params::CachePaths, $crate::prove::SetupReport)> {
            $crate::kind::setup::<$kind>(
                proof,
                dir,
                rng,
                force,
                None,
                &bellows_core::groth16::setup::quiet,
            )
        }
    };
}
pub(crate) use kind_api;

/// The parameter-cache identifier of `proof`'s circuit (the part between `v28-` and `.params`).
pub(crate) fn cache_id<K: ProofKind>(proof: K::Proof) -> Result<String> {
    with_sector_shape!(proof.sector_bytes(), cache_id_shaped::<K>, proof)
}

fn cache_id_shaped<Tree: Shape, K: ProofKind>(proof: K::Proof) -> Result<String> {
    K::cache_id::<Tree>(proof)
}

/// The cache files of `proof`'s circuit in `dir`.
pub(crate) fn cache_paths<K: ProofKind>(proof: K::Proof, dir: &Path) -> Result<CachePaths> {
    Ok(CachePaths::new(dir, &cache_id::<K>(proof)?))
}

/// The recording of `proof`'s partition circuit in the PCE folder `pce_dir`, under the key the
/// setup and `bellows porep c2` use ([`prove::pce_id`] of the cache id), recorded from the blank
/// circuit when the folder has none: every partition of every proof of this type has that
/// constraint system, whatever its witness.
pub(crate) fn pce<K: ProofKind>(proof: K::Proof, pce_dir: &Path) -> Result<Arc<Pce>> {
    with_sector_shape!(proof.sector_bytes(), pce_shaped::<K>, proof, pce_dir)
}

fn pce_shaped<Tree: Shape, K: ProofKind>(proof: K::Proof, pce_dir: &Path) -> Result<Arc<Pce>> {
    prove::pce_with(pce_dir, &K::cache_id::<Tree>(proof)?, |id| {
        K::recording::<Tree>(proof, id)
    })
}

/// Proves `input` with the parameters in the cache folder `dir`, synthesising with the
/// circuit's recording when `cfg.pce_dir` names a PCE folder ([`pce`]), else directly.
pub(crate) fn prove<K: ProofKind>(
    input: &K::Input,
    dir: &Path,
    cfg: &ProveConfig,
) -> Result<ProofOutput> {
    let size = K::proof(input).sector_bytes();
    with_sector_shape!(size, prove_shaped::<K>, input, dir, cfg)
}

/// [`prove`] for the shape `Tree`.
pub(crate) fn prove_shaped<Tree: Shape, K: ProofKind>(
    input: &K::Input,
    dir: &Path,
    cfg: &ProveConfig,
) -> Result<ProofOutput> {
    let pce = match &cfg.pce_dir {
        Some(d) => Some(pce_shaped::<Tree, K>(K::proof(input), d)?),
        None => None,
    };
    prove::build_and_prove(
        &format!("{:?}", K::proof(input)),
        || K::instance::<Tree>(input),
        dir,
        cfg,
        pce,
    )
}

/// TEST parameters for `proof`'s circuit, written into `dir` under filecoin-proofs' names (see
/// [`prove::setup_circuit`]; `pce_dir` keeps the circuit's recording there).
pub(crate) fn setup<K: ProofKind>(
    proof: K::Proof,
    dir: &Path,
    rng: &mut dyn rand_core::RngCore,
    force: bool,
    pce_dir: Option<&Path>,
    report: &dyn Fn(&bellows_core::groth16::setup::SetupStep),
) -> Result<(CachePaths, SetupReport)> {
    let to = SetupTo {
        dir,
        rng,
        force,
        pce_dir,
        report,
    };
    with_sector_shape!(proof.sector_bytes(), setup_shaped::<K>, proof, to)
}

/// Where and how [`setup`] writes.
struct SetupTo<'a> {
    dir: &'a Path,
    rng: &'a mut dyn rand_core::RngCore,
    force: bool,
    pce_dir: Option<&'a Path>,
    report: &'a dyn Fn(&bellows_core::groth16::setup::SetupStep),
}

fn setup_shaped<Tree: Shape, K: ProofKind>(
    proof: K::Proof,
    to: SetupTo<'_>,
) -> Result<(CachePaths, SetupReport)> {
    let id = K::cache_id::<Tree>(proof)?;
    let size = proof.sector_bytes();
    let record = |pid: &str| K::recording::<Tree>(proof, pid);
    prove::setup_circuit(
        record, &id, to.dir, size, to.rng, to.force, to.pce_dir, to.report,
    )
}

/// `vanilla`, each decoded from bincode as a `T` (a `what` of the proof type `proof`, as
/// filecoin-proofs-api serialises them); an error names the first that is not one, by index.
pub(crate) fn decode_vanilla<T: serde::de::DeserializeOwned>(
    vanilla: &[Vec<u8>],
    what: &str,
    proof: impl Debug,
) -> Result<Vec<T>> {
    vanilla
        .iter()
        .enumerate()
        .map(|(i, b)| {
            bincode::deserialize(b).map_err(|e| {
                bellows_core::Error::malformed(
                    format!("{what} {i}"),
                    format!("not a {proof:?} {what}: {e}"),
                )
            })
        })
        .collect()
}

/// One circuit per partition with the compound proof `P` of the scheme `S`, from the partitions'
/// vanilla proofs, and each partition's public inputs (generated from `verifier_inputs`, the
/// statement as the verifier sees it); errors name the partition after `context`.
pub(crate) fn partition_circuits<'a, S, C, P>(
    inputs: &S::PublicInputs,
    verifier_inputs: &S::PublicInputs,
    vanilla: &[S::Proof],
    params: &S::PublicParams,
    context: &str,
) -> Result<(Vec<C>, Vec<Vec<Fr>>)>
where
    S: ProofScheme<'a>,
    S::Proof: Sync + Send,
    S::PublicParams: ParameterSetMetadata + Sync + Send,
    S::PublicInputs: Clone + Sync,
    C: Circuit<Fr> + CircuitComponent + Send,
    P: CompoundProof<'a, S, C>,
{
    let mut circuits = Vec::with_capacity(vanilla.len());
    let mut public_inputs = Vec::with_capacity(vanilla.len());
    for (k, v) in vanilla.iter().enumerate() {
        circuits.push(
            P::circuit(inputs, Default::default(), v, params, Some(k))
                .map_err(|e| proofs_error(&format!("{context}partition {k}"), e))?,
        );
        public_inputs.push(
            P::generate_public_inputs(verifier_inputs, params, Some(k))
                .map_err(|e| proofs_error(&format!("public inputs of partition {k}"), e))?,
        );
    }
    Ok((circuits, public_inputs))
}
