//! Proving keys: parameters made resident on a backend ([`ProvingKey`]), loaded from memory or
//! straight from a parameters file one section at a time, and the checks a key passes first.
//! Where the G2 MSM runs is the key's [`G2Policy`].

use std::sync::Arc;

use group::prime::PrimeCurveAffine;

use super::{
    io::{ParamsFile, ParamsSection, ParamsShape, PointCheck},
    params::Parameters,
    synthesis::Synthesized,
};
use crate::{
    backend::{Backend, BasesHandle, EncodedLoad, G1Handles, SharedPoints},
    Capabilities, Error, Result,
};

/// Where the G2 MSM (B in G2) of a proof runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum G2Policy {
    /// On the backend when it is an accelerator ([`Capabilities::accelerator`]) that offers
    /// `msm_g2`; otherwise on CPU threads beside the backend's G1 work.
    #[default]
    Auto,
    /// On the backend (an error at [`ProvingKey`] creation if it does not offer `msm_g2`).
    Device,
    /// On CPU threads, overlapping the backend's G1 work.
    Cpu,
}

impl G2Policy {
    /// Whether the G2 MSM runs on a backend with `caps` called `backend`; `Device` on a backend
    /// without `msm_g2` is an [`Error::Unsupported`].
    pub fn on_backend(self, caps: &Capabilities, backend: &str) -> Result<bool> {
        match self {
            G2Policy::Cpu => Ok(false),
            G2Policy::Auto => Ok(caps.accelerator && caps.msm_g2),
            G2Policy::Device if caps.msm_g2 => Ok(true),
            G2Policy::Device => Err(Error::unsupported(
                backend,
                "msm_g2, which the G2 policy `device` asks for (use `cpu` or `auto`)",
            )),
        }
    }
}

impl std::str::FromStr for G2Policy {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "auto" => Ok(G2Policy::Auto),
            "device" => Ok(G2Policy::Device),
            "cpu" => Ok(G2Policy::Cpu),
            other => Err(Error::invalid(format!(
                "unknown G2 policy {other:?}: expected auto, device or cpu"
            ))),
        }
    }
}

/// Parameters made resident on one backend: the handles of the h, l, a and b_g1 queries, and of
/// b_g2 when the G2 MSM runs on the backend ([`G2Policy`]; otherwise b_g2 stays on the host for
/// the CPU G2 MSM). Freed when dropped.
pub struct ProvingKey {
    pub(super) params: Arc<Parameters>,
    pub(super) backend: Arc<dyn Backend>,
    pub(super) handles: G1Handles,
    pub(super) b_g2: Option<BasesHandle>,
    lens: QueryLens,
}

/// The sizes of a key's queries: what proofs are checked against, whether or not the points
/// are still held on the host ([`ProvingKey::load_file`], [`ProvingKey::release_host_points`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueryLens {
    /// The evaluation domain size n (h holds n − 1 points).
    pub domain_size: usize,
    /// Public inputs, the constant one included (the IC length).
    pub num_inputs: usize,
    /// Private variables (the l length).
    pub num_aux: usize,
    /// Points of the a query.
    pub a_len: usize,
    /// Points of each b query (G1 and G2).
    pub b_len: usize,
}

impl From<&ParamsShape> for QueryLens {
    /// The query sizes a parameters file's header (or a recording's shape) gives.
    fn from(shape: &ParamsShape) -> Self {
        QueryLens {
            domain_size: shape.domain_size,
            num_inputs: shape.num_inputs,
            num_aux: shape.num_aux,
            a_len: shape.a_len,
            b_len: shape.b_len,
        }
    }
}

impl QueryLens {
    fn of(p: &Parameters) -> Self {
        QueryLens {
            domain_size: p.domain_size(),
            num_inputs: p.vk.ic.len(),
            num_aux: p.l.len(),
            a_len: p.a.len(),
            b_len: p.b_g1.len(),
        }
    }
}

/// Runs `load`, which pushes every handle it loads onto the list it is given; if it fails, those
/// handles are freed again (best effort: its error is the one reported), so a key that could not
/// be made leaves nothing resident on the backend.
fn loading<T>(
    backend: &dyn Backend,
    load: impl FnOnce(&mut Vec<BasesHandle>) -> Result<T>,
) -> Result<T> {
    let mut loaded = Vec::with_capacity(5);
    let result = load(&mut loaded);
    if result.is_err() {
        for h in loaded {
            let _ = backend.free_bases(h);
        }
    }
    result
}

impl std::fmt::Debug for ProvingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProvingKey")
            .field("backend", &self.backend.info().name)
            .field("domain_size", &self.lens.domain_size)
            .finish()
    }
}

impl ProvingKey {
    /// Loads the G1 queries of `params` onto `backend` as resident bases, and b_g2 when the
    /// default [`G2Policy::Auto`] puts the G2 MSM on the backend.
    pub fn new(params: Arc<Parameters>, backend: Arc<dyn Backend>) -> Result<Self> {
        Self::with_g2_policy(params, backend, G2Policy::Auto)
    }

    /// Loads the G1 queries of `params` onto `backend`, and b_g2 when `g2` puts the G2 MSM there.
    ///
    /// Checks the backend's declared capabilities first: NTTs of the parameters' domain
    /// (`ntt`, `coset_ntt`, `max_log_ntt`), `msm_g1`, and `msm_g2` for [`G2Policy::Device`].
    pub fn with_g2_policy(
        params: Arc<Parameters>,
        backend: Arc<dyn Backend>,
        g2: G2Policy,
    ) -> Result<Self> {
        let lens = QueryLens::of(&params);
        let g2_on_backend = check_key(&params.vk, &lens, &*backend, g2)?;
        let (handles, b_g2) = loading(&*backend, |loaded| {
            let mut load = |p: &Arc<Vec<blstrs::G1Affine>>| -> Result<BasesHandle> {
                let h = backend.load_bases_g1(p.clone() as SharedPoints<_>)?;
                loaded.push(h);
                Ok(h)
            };
            let handles = G1Handles {
                h: load(&params.h)?,
                l: load(&params.l)?,
                a: load(&params.a)?,
                b_g1: load(&params.b_g1)?,
            };
            let b_g2 = if g2_on_backend {
                let h = backend.load_bases_g2(params.b_g2.clone() as SharedPoints<_>)?;
                loaded.push(h);
                Some(h)
            } else {
                None
            };
            Ok((handles, b_g2))
        })?;
        Ok(Self {
            params,
            backend,
            handles,
            b_g2,
            lens,
        })
    }

    /// Whether the G2 MSM of this key's proofs runs on the backend (else on CPU threads).
    pub fn g2_on_backend(&self) -> bool {
        self.b_g2.is_some()
    }

    /// The resident b_g2 handle, when the G2 MSM runs on the backend.
    pub fn b_g2_handle(&self) -> Option<BasesHandle> {
        self.b_g2
    }

    /// The resident G1 query handles.
    pub fn handles(&self) -> G1Handles {
        self.handles
    }

    /// The parameters. For a key loaded with [`ProvingKey::load_file`] or after
    /// [`ProvingKey::release_host_points`], the point vectors the backend holds are not kept on
    /// the host and are empty here: [`ProvingKey::lens`] gives their sizes.
    pub fn params(&self) -> &Arc<Parameters> {
        &self.params
    }

    /// The sizes of the queries.
    pub fn lens(&self) -> QueryLens {
        self.lens
    }

    /// Drops this key's host copies of the points the backend keeps for itself (it holds its
    /// own reference to any it streams from host memory), keeping the verifying key, and b_g2
    /// when the G2 MSM runs on CPU threads. The memory is freed when nobody else holds the
    /// [`Parameters`] this key was made from. On a GPU that holds every query, the host then
    /// keeps none of the proving key's points.
    pub fn release_host_points(&mut self) {
        let keep_g2 = self.b_g2.is_none();
        self.params = Arc::new(Parameters {
            vk: self.params.vk.clone(),
            h: Arc::default(),
            l: Arc::default(),
            a: Arc::default(),
            b_g1: Arc::default(),
            b_g2: if keep_g2 {
                self.params.b_g2.clone()
            } else {
                Arc::default()
            },
        });
    }

    /// Loads the parameters file `file` straight onto `backend`, one section at a time: each
    /// section is read and decoded (with `check`), handed to the backend, and dropped before the
    /// next is read, so the host holds at most one section's points (and two read blocks) while
    /// loading and, once loaded, none that the backend keeps itself (b_g2 stays on the
    /// host when `g2` puts the G2 MSM on CPU threads). A 32 GiB PoRep's parameters (about
    /// 50 GB) thus load onto a GPU that holds them with the host's memory left for
    /// partitions. `progress(n)` is called as runs of n points are read or decoded.
    ///
    /// With [`PointCheck::CurveOnly`], a backend that decodes encoded points itself
    /// ([`crate::backend::Msm::load_bases_g1_encoded`]: the CUDA backend, on its GPU) is handed
    /// each section as the file's bytes, and the host decodes nothing; a refused point is
    /// named in the file as the host's decoding would name it. The other checks test the
    /// subgroup, which such a backend does not, and decode on the host.
    pub fn load_file(
        file: &ParamsFile,
        check: PointCheck,
        backend: Arc<dyn Backend>,
        g2: G2Policy,
        progress: &(dyn Fn(u64) + Sync),
    ) -> Result<Self> {
        let lens = QueryLens::from(&file.shape());
        let vk = file.decode_verifying_key(check)?;
        let g2_on_backend = check_key(&vk, &lens, &*backend, g2)?;
        let (handles, b_g2, host_b_g2) = loading(&*backend, |loaded| {
            let mut g1 = |which: ParamsSection| -> Result<BasesHandle> {
                if let Some(h) = load_encoded(file, which, check, &*backend, progress, loaded)? {
                    return Ok(h);
                }
                let points = Arc::new(file.decode_g1(which, check, progress)?);
                let h = backend.load_bases_g1(points as SharedPoints<_>)?;
                loaded.push(h);
                Ok(h)
            };
            let handles = G1Handles {
                h: g1(ParamsSection::H)?,
                l: g1(ParamsSection::L)?,
                a: g1(ParamsSection::A)?,
                b_g1: g1(ParamsSection::BG1)?,
            };
            if !g2_on_backend {
                return Ok((handles, None, Arc::new(file.decode_b_g2(check, progress)?)));
            }
            let bg2 = ParamsSection::BG2;
            if let Some(h) = load_encoded(file, bg2, check, &*backend, progress, loaded)? {
                return Ok((handles, Some(h), Arc::default()));
            }
            let b_g2 = Arc::new(file.decode_b_g2(check, progress)?);
            let h = backend.load_bases_g2(b_g2 as SharedPoints<_>)?;
            loaded.push(h);
            Ok((handles, Some(h), Arc::default()))
        })?;
        Ok(Self {
            params: Arc::new(Parameters {
                vk,
                h: Arc::default(),
                l: Arc::default(),
                a: Arc::default(),
                b_g1: Arc::default(),
                b_g2: host_b_g2,
            }),
            backend,
            handles,
            b_g2,
            lens,
        })
    }

    /// The backend the bases are resident on.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// Checks that synthesised circuit `k` has the shape of this key's queries.
    pub(super) fn check_shape(&self, s: &Synthesized, k: usize) -> Result<()> {
        let p = &self.lens;
        let mismatch = |what: &str, got: usize, want: usize| {
            Err(Error::invalid(format!(
                "circuit {k} does not match the parameters: {what} is {got}, parameters expect {want}"
            )))
        };
        if s.input_assignment.len() != p.num_inputs {
            return mismatch(
                "number of public inputs (with the constant one)",
                s.input_assignment.len(),
                p.num_inputs,
            );
        }
        if s.aux_assignment.len() != p.num_aux {
            return mismatch(
                "number of private variables",
                s.aux_assignment.len(),
                p.num_aux,
            );
        }
        if 1usize << s.log_domain() != p.domain_size {
            return mismatch("domain size", 1 << s.log_domain(), p.domain_size);
        }
        let a_len = s.input_assignment.len() + s.a_aux_density.total();
        if a_len != p.a_len {
            return mismatch("A-query density", a_len, p.a_len);
        }
        let b_len = s.b_input_density.total() + s.b_aux_density.total();
        if b_len != p.b_len {
            return mismatch("B-query density", b_len, p.b_len);
        }
        Ok(())
    }
}

/// Loads section `which` of `file` through `backend`'s own decoding (pushing its handle onto
/// `loaded`) when `check` is curve-only and the backend offers it; `None` where it does not
/// (nothing was kept), for the caller to decode on the host. A refused point is the error the
/// host's decoding gives; a file that changed while the backend read it is an error too.
fn load_encoded(
    file: &ParamsFile,
    which: ParamsSection,
    check: PointCheck,
    backend: &dyn Backend,
    progress: &(dyn Fn(u64) + Sync),
    loaded: &mut Vec<BasesHandle>,
) -> Result<Option<BasesHandle>> {
    if check != PointCheck::CurveOnly {
        return Ok(None);
    }
    let src = file.encoded(which, progress)?;
    let t = std::time::Instant::now();
    let answer = match which {
        ParamsSection::BG2 => backend.load_bases_g2_encoded(&src),
        _ => backend.load_bases_g1_encoded(&src),
    };
    match answer {
        Err(e @ Error::Unsupported { .. }) => {
            tracing::info!(
                "{}: section {which:?} decoded on the host ({e})",
                file.label()
            );
            Ok(None)
        }
        Err(e) => Err(e),
        Ok(EncodedLoad::Refused { index, defect }) => Err(src.refused(index, defect)),
        Ok(EncodedLoad::Loaded(h)) => {
            loaded.push(h);
            file.check_unchanged()?;
            tracing::info!(
                "{}: section {which:?}, {} points, read and decoded by backend {} in {:.2?}",
                file.label(),
                h.len,
                backend.info().name,
                t.elapsed()
            );
            Ok(Some(h))
        }
    }
}

/// The checks every key passes before anything is loaded: a sound δ, a power-of-two domain,
/// and a backend that offers what Groth16 needs at this size. Returns whether the G2 MSM runs
/// on the backend under `g2`.
fn check_key(
    vk: &super::VerifyingKey,
    lens: &QueryLens,
    backend: &dyn Backend,
    g2: G2Policy,
) -> Result<bool> {
    if bool::from(vk.delta_g1.is_identity() | vk.delta_g2.is_identity()) {
        return Err(Error::InvalidPoint {
            what: "verifying key δ".into(),
            reason: "δ is the identity: the parameters are subverted".into(),
        });
    }
    if !lens.domain_size.is_power_of_two() {
        return Err(Error::malformed(
            "parameters",
            format!(
                "h query has {} points; expected 2^k − 1",
                lens.domain_size - 1
            ),
        ));
    }
    let info = backend.info();
    let caps = &info.capabilities;
    let log_n = lens.domain_size.trailing_zeros();
    caps.check_ntt_size(log_n, &info.name)?;
    if !caps.coset_ntt {
        return Err(Error::unsupported(
            &info.name,
            "coset_ntt (Groth16 needs it)",
        ));
    }
    if !caps.msm_g1 {
        return Err(Error::unsupported(&info.name, "msm_g1 (Groth16 needs it)"));
    }
    g2.on_backend(caps, &info.name)
}

impl Drop for ProvingKey {
    fn drop(&mut self) {
        let g = self.handles;
        for h in [g.h, g.l, g.a, g.b_g1].into_iter().chain(self.b_g2) {
            if let Err(e) = self.backend.free_bases(h) {
                tracing::warn!("freeing resident bases {}: {e}", h.id);
            }
        }
    }
}

impl ProvingKey {
    /// As [`ProvingKey::new`], taking the parameters by value (they are moved into an `Arc`; the
    /// queries themselves are already shared and are not copied).
    pub fn from_parameters(params: Parameters, backend: Arc<dyn Backend>) -> Result<Self> {
        Self::new(Arc::new(params), backend)
    }
}
