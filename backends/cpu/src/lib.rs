//! # bellows-cpu
//!
//! The CPU reference backend of Bellows: the backend every other backend is compared with, and
//! the one to prove with when there is no GPU. All field and curve arithmetic is blst's, on
//! blstrs values reached through the zero-copy views of [`bellows_backend_api::layout`] (the
//! NTT's hot loops call `blst_fr_add/sub/mul` on them directly, writing results in place, which halves the
//! cost of a butterfly against blstrs' by-value operators); parallelism is rayon's.
//!
//! ## NTT
//! Conventions are those of [`bellows_backend_api::backend::ntt`]. Each configuration maps onto one
//! in-place transform that flips the storage order, a diagonal pass for coset powers and `1/n`,
//! and a bit-reversal permutation only when input and output orders are the same:
//! - decimation in frequency, natural → bit-reversed: Gentleman & Sande, "Fast Fourier
//!   transforms — for fun and profit", AFIPS Fall Joint Computer Conference, 1966;
//! - decimation in time, bit-reversed → natural: Cooley & Tukey, "An algorithm for the machine
//!   calculation of complex Fourier series", Mathematics of Computation 19, 1965;
//! - both radix-2, recursive (depth first, so late stages run in cache), parallel across a batch,
//!   across the butterflies of early stages and across independent halves, with twiddles from
//!   tables precomputed once per stage size (up to 2^20);
//! - from 2^21 up, the four-step scheme of Bailey, "FFTs in external or hierarchical memory",
//!   J. Supercomputing 4, 1990: column transforms on gathered column blocks, a twiddle pass,
//!   row transforms — in place, with the same bit-reversed ordering, and tables of `O(√n)`;
//! - coset powers `g^(±i)` folded into coset-shifted twiddles (no pass of their own);
//! - bit reversal tiled as in Carter & Gatlin, "Towards an optimal bit-reversal permutation
//!   program", FOCS 1998.
//!
//! ## `h_poly`
//! Fused: a, b, c transformed in parallel (inverse DIF, then a forward DIT with the coset folded
//! in), the pointwise `(a·b − n·c)/(n³·Z(g))` (which also carries every `1/n`), then one inverse
//! DIF with the inverse coset folded in and the only bit-reversal pass. The result equals
//! [`bellows_backend_api::backend::quotient::h_poly_from_primitives`] exactly.
//!
//! ## MSM
//! Resident bases are the caller's [`SharedPoints`] `Arc`, kept by reference (zero-copy). Each job
//! runs [`bellows_backend_api::host_msm`]: Pippenger, "On the evaluation of powers and related
//! problems", FOCS 1976, as implemented by blst (`blst_p1s_mult_pippenger`), one chunk of points
//! per rayon thread. Jobs with a density bitmap have their used scalars gathered first.
//!
//! The backend registers itself as the built-in backend `"cpu"`; link the crate
//! (`use bellows_cpu as _;`) and select it with [`bellows_backend_api::builtin::create_builtin`]
//! (or bellows-core's `registry::resolve`), or construct a [`CpuBackend`] directly. The crate
//! depends on the vendor SDK, bellows-backend-api, alone, as a vendor's backend does.

#![warn(missing_docs)]

mod field;
mod hpoly;
mod msm;
mod ntt;

use std::sync::Arc;

use bellows_backend_api::{
    backend::{
        encoded::decode_encoded,
        host_memory_info,
        ntt::{batch_size, h_poly_batch},
        BasesHandle, DeviceInfo, EncodedLoad, EncodedPoints, MemoryBudget, MemoryInfo, MemoryPool,
        Msm, MsmJob, Ntt, NttConfig, SharedPoints,
    },
    builtin::BuiltinBackend,
    layout::{scalars_mut, Fr, G1Affine, G1Jacobian, G2Affine, G2Jacobian},
    Backend, BackendConfig, BackendInfo, Capabilities, Error, Result,
};

/// Name of the backend, as given to `--backend`.
pub const NAME: &str = "cpu";

/// The CPU backend: NTT, `h_poly` and MSM on rayon threads with blst arithmetic.
///
/// Safe to share between threads (`Send + Sync`); calls may run concurrently.
pub struct CpuBackend {
    /// Own thread pool when a thread count was configured; `None` runs on rayon's global pool.
    pool: Option<rayon::ThreadPool>,
    bases: msm::Resident,
    budget: MemoryBudget,
}

impl std::fmt::Debug for CpuBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuBackend")
            .field("threads", &self.threads())
            .field("own_pool", &self.pool.is_some())
            .field("resident_handles", &self.bases.count())
            .finish()
    }
}

impl Default for CpuBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl CpuBackend {
    /// A backend on rayon's global thread pool, with no memory budget.
    pub fn new() -> Self {
        Self {
            pool: None,
            bases: msm::Resident::default(),
            budget: MemoryBudget::default(),
        }
    }

    /// A backend configured by `cfg`: `threads: Some(k)` gives it its own pool of k threads
    /// (`None`: rayon's global pool); `memory_budget` is stored and reported. `device` is
    /// ignored (there is one host).
    ///
    /// Errors with [`Error::InvalidInput`] for `threads: Some(0)`, and with [`Error::Backend`] if
    /// the thread pool cannot be created.
    pub fn with_config(cfg: &BackendConfig) -> Result<Self> {
        let pool = match cfg.threads {
            None => None,
            Some(0) => return Err(Error::invalid("the CPU backend needs at least one thread")),
            Some(k) => Some(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(k)
                    .thread_name(|i| format!("bellows-cpu-{i}"))
                    .build()
                    .map_err(|e| Error::Backend {
                        name: NAME.to_string(),
                        reason: format!("cannot start {k} threads: {e}"),
                    })?,
            ),
        };
        Ok(Self {
            pool,
            bases: msm::Resident::default(),
            budget: MemoryBudget::new(cfg.memory_budget),
        })
    }

    /// Worker threads this backend computes on.
    pub fn threads(&self) -> usize {
        match &self.pool {
            Some(p) => p.current_num_threads(),
            None => rayon::current_num_threads(),
        }
    }

    /// Runs `f` on this backend's thread pool.
    fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        match &self.pool {
            Some(p) => p.install(f),
            None => f(),
        }
    }
}

impl Ntt for CpuBackend {
    fn ntt(&self, data: &mut [Fr], log_n: u32, cfg: &NttConfig) -> Result<()> {
        batch_size(data.len(), log_n)?;
        if data.is_empty() {
            return Ok(());
        }
        let data = scalars_mut(data);
        self.install(|| ntt::transform_batch(data, log_n, cfg));
        Ok(())
    }

    fn h_poly(&self, a: &mut [Fr], b: &mut [Fr], c: &mut [Fr], log_n: u32) -> Result<()> {
        h_poly_batch(a.len(), b.len(), c.len(), log_n)?;
        if a.is_empty() {
            return Ok(());
        }
        let (a, b, c) = (scalars_mut(a), scalars_mut(b), scalars_mut(c));
        self.install(|| hpoly::h_poly(a, b, c, log_n));
        Ok(())
    }
}

impl Msm for CpuBackend {
    fn load_bases_g1(&self, bases: SharedPoints<G1Affine>) -> Result<BasesHandle> {
        Ok(self.bases.load_g1(bases))
    }

    fn load_bases_g2(&self, bases: SharedPoints<G2Affine>) -> Result<BasesHandle> {
        Ok(self.bases.load_g2(bases))
    }

    /// Decoded on this backend's threads into memory it keeps (the bases live on the host
    /// here, so this costs what the caller's own decoding would).
    fn load_bases_g1_encoded(&self, points: &dyn EncodedPoints) -> Result<EncodedLoad> {
        Ok(
            match self.install(|| decode_encoded::<blstrs::G1Affine>(points))? {
                Ok(v) => EncodedLoad::Loaded(self.bases.load_g1(Arc::new(v))),
                Err((index, defect)) => EncodedLoad::Refused { index, defect },
            },
        )
    }

    fn load_bases_g2_encoded(&self, points: &dyn EncodedPoints) -> Result<EncodedLoad> {
        Ok(
            match self.install(|| decode_encoded::<blstrs::G2Affine>(points))? {
                Ok(v) => EncodedLoad::Loaded(self.bases.load_g2(Arc::new(v))),
                Err((index, defect)) => EncodedLoad::Refused { index, defect },
            },
        )
    }

    fn free_bases(&self, handle: BasesHandle) -> Result<()> {
        self.bases.free(handle)
    }

    fn msm_g1(&self, handle: BasesHandle, jobs: &[MsmJob], out: &mut [G1Jacobian]) -> Result<()> {
        self.install(|| msm::msm_g1(&self.bases, handle, jobs, out))
    }

    fn msm_g2(&self, handle: BasesHandle, jobs: &[MsmJob], out: &mut [G2Jacobian]) -> Result<()> {
        self.install(|| msm::msm_g2(&self.bases, handle, jobs, out))
    }
}

impl MemoryPool for CpuBackend {
    fn memory_info(&self) -> Result<MemoryInfo> {
        Ok(self.budget.host_info())
    }

    fn set_memory_budget(&self, bytes: Option<u64>) -> Result<()> {
        self.budget.set(bytes);
        Ok(())
    }
}

impl Backend for CpuBackend {
    fn info(&self) -> BackendInfo {
        let mut capabilities = Capabilities::all(bellows_backend_api::MAX_LOG_NTT);
        capabilities.fused_h_poly = true;
        // The host's own cores: the prover keeps the G2 MSM on CPU threads beside it.
        capabilities.accelerator = false;
        BackendInfo::new(NAME, env!("CARGO_PKG_VERSION"), DESCRIPTION)
            .with_device(DeviceInfo::new(
                format!("host ({} threads)", self.threads()),
                host_memory_info().total,
            ))
            .with_capabilities(capabilities)
    }
}

const DESCRIPTION: &str = "CPU reference backend (rayon + blst)";

fn create(cfg: &BackendConfig) -> Result<Arc<dyn Backend>> {
    Ok(Arc::new(CpuBackend::with_config(cfg)?))
}

inventory::submit! {
    BuiltinBackend {
        name: NAME,
        description: DESCRIPTION,
        create,
    }
}
