//! Pippenger MSM on the device, G1 and G2: the host side of kernels/msm/ (msm/msm.cuh explains
//! the algorithm).
//!
//! - [`config`](MsmConfig): the tuning, one struct filled from the backend options;
//! - `plan`: window width, table use, scatter and window-pass choices, pass sizes (pure);
//! - `pass`: one device pass, step by step (digits, scatter, accumulate, reduce);
//! - `sources`: where scalars and bases are ([`ScalarSource`], [`BaseSource`]);
//! - `table`: precomputed window multiples ([`PrecomputedTable`]);
//! - `group`: G1 and G2 ([`MsmGroup`]); `kernels`: the handles; `profile`: the phase timer.
//!
//! [`Msm::run`] cuts an MSM into passes (at most `pass_points` scalars, never straddling the end
//! of a resident prefix), queues them, reads every pass's window sums back once at the end and
//! combines them with Horner's rule (c doublings a window, on blst).

mod config;
mod group;
mod kernels;
mod pass;
mod plan;
mod profile;
mod sources;
mod table;

use bellows_backend_api::{layout::Fr, Error, Result};
use cudarc::driver::CudaFunction;

pub use config::{MsmConfig, Scatter, TableUse, WindowPass, KNOBS, TABLE_WINDOW};
pub use group::{MsmGroup, G1, G2};
pub use plan::{pass_bytes, pass_size, window_bits, window_count, MAX_POINTS_PER_PASS};
pub(crate) use sources::words_as_fr;
pub use sources::{BaseSource, ScalarSource};
pub use table::PrecomputedTable;

use crate::{
    buffers::DeviceVec,
    device::CudaDevice,
    launch::{ptr, ptr_mut},
};
use kernels::MsmKernels;
use pass::PassInput;
use sources::{scalar_index_of_base, used_count, used_count_from, PassDensity};

/// The MSM of one GPU: its kernels and its tuning, shared by the GPU's lanes (every method
/// takes the lane, a [`CudaDevice`] of that GPU, whose streams run the work).
pub struct Msm {
    kernels: MsmKernels,
    config: MsmConfig,
}

impl Msm {
    /// Loads the MSM kernels from `dev`'s module (any lane of the GPU).
    pub fn new(dev: &CudaDevice, config: MsmConfig) -> Result<Self> {
        Ok(Self {
            kernels: MsmKernels::load(dev)?,
            config,
        })
    }

    /// The tuning the backend was created with.
    pub fn config(&self) -> &MsmConfig {
        &self.config
    }

    /// The tuning an MSM starting now runs with: [`Msm::config`] with the environment's
    /// overrides ([`MsmConfig::with_env_overrides`]).
    pub fn tuning(&self) -> MsmConfig {
        self.config.clone().with_env_overrides()
    }

    /// The kernels, by name (for [`CudaDevice::kernel_report`]).
    pub fn kernels(&self) -> Vec<(&'static str, &CudaFunction)> {
        self.kernels.list()
    }

    /// Builds the precomputed table of `bases` with windows of `c` bits (2..=31) on lane `dev`
    /// (waits for the device; fails cleanly, the device keeping nothing, when memory runs out).
    pub fn precompute_table<G: MsmGroup>(
        &self,
        dev: &CudaDevice,
        bases: &DeviceVec<G::Affine>,
        c: u32,
    ) -> Result<PrecomputedTable<G::Affine>> {
        PrecomputedTable::build::<G>(dev, &self.kernels, bases, c)
    }

    /// `Σ scalars[i] · bases[start + rank(i)]` on lane `dev`, where rank(i) = i without a
    /// density and the number of set density bits before i with one (scalars whose bit is clear
    /// are skipped). Bases are device-resident, or partly or wholly streamed from host memory
    /// (see [`BaseSource`]); scalars are in host memory or already on the device. Work is split
    /// into passes of at most `pass_points` scalars (and [`MAX_POINTS_PER_PASS`]); a streamed
    /// pass's bases upload on the copy stream while the previous pass computes, and every pass's
    /// result is read back once, at the end (one synchronisation). `scratch_room`: device bytes
    /// a pass may take as scratch for the binned scatter (one whose binned scatter needs more
    /// scatters by key ranges; `u64::MAX`: whatever the driver gives).
    ///
    /// `density_dev`: the density bitmap's words also on the device (padded into whole Fr values
    /// as the G1 phase uploads them once per proof), or None: a pass that starts on a word
    /// boundary (every pass but the one after a partial tier's resident prefix) then reads them
    /// in place instead of copying its words from pageable host memory (tuning
    /// `density_in_place`). The host words are still read, for the passes' counts.
    #[allow(clippy::too_many_arguments)]
    pub fn run<G: MsmGroup>(
        &self,
        dev: &CudaDevice,
        bases: BaseSource<'_, G::Affine>,
        start: usize,
        scalars: ScalarSource<'_>,
        density: Option<&[u64]>,
        density_dev: Option<&DeviceVec<Fr>>,
        pass_points: usize,
        scratch_room: u64,
    ) -> Result<G::Jacobian> {
        let tuning = self.tuning();
        let n = scalars.len();
        let used = used_count(n, density)?;
        let density_dev = match (density, density_dev) {
            (Some(d), Some(dd)) => {
                if dd.len() != d.len().div_ceil(4) {
                    return Err(Error::invalid(format!(
                        "device density of {} words for a bitmap of {} (need {})",
                        dd.len() * 4,
                        d.len(),
                        d.len().div_ceil(4) * 4
                    )));
                }
                Some(dd).filter(|_| tuning.density_in_place)
            }
            _ => None,
        };
        let total = bases.len();
        if start.checked_add(used).is_none_or(|end| end > total) {
            return Err(Error::invalid(format!(
                "{} MSM over bases {start}..{} of {total} resident points",
                G::NAME,
                start.saturating_add(used),
            )));
        }
        // Scalar-index boundaries: passes never straddle the end of a resident prefix.
        let pass = pass_points.clamp(64, MAX_POINTS_PER_PASS) / 64 * 64;
        let resident = bases.resident_len();
        let mut cuts = vec![0usize];
        if start < resident && start + used > resident {
            cuts.push(scalar_index_of_base(n, density, resident - start));
        }
        cuts.push(n);
        let table = match &bases {
            BaseSource::Table(t) => Some((t.len as u64, t.c, t.windows)),
            _ => None,
        };
        let mut pending: Vec<(DeviceVec<G::Jacobian>, u32)> = Vec::new();
        let mut base_off = start;
        for seg in cuts.windows(2) {
            let (s0, s1) = (seg[0], seg[1]);
            let mut p0 = s0;
            while p0 < s1 {
                // Passes start on density-word boundaries (s0 is one, or the only cut).
                let p1 = if s1 - p0 > pass { p0 + pass } else { s1 };
                // This pass's density words: in place on the device when the pass starts on
                // a word boundary, else a host copy with the bits of earlier scalars cleared.
                // (Without a density, base indices are just offsets into the pass's bases.)
                let first_bit = if density.is_some() { p0 % 64 } else { 0 };
                let words = density.map(|d| &d[p0 / 64..p1.div_ceil(64)]);
                let consumed = used_count_from(p1 - p0, words, first_bit)?;
                let in_place = density_dev.filter(|_| first_bit == 0);
                let dens_owned: Option<Vec<u64>> = match (words, in_place) {
                    (Some(w), None) => {
                        let mut v = w.to_vec();
                        v[0] &= !0u64 << first_bit;
                        Some(v)
                    }
                    _ => None,
                };
                let dens = match (words, in_place, dens_owned.as_deref()) {
                    (Some(w), Some(dd), _) => Some(PassDensity::Device {
                        ptr: ptr(dd, dev) + (p0 / 64 * 8) as u64,
                        words: w.len() as u64,
                    }),
                    (_, _, Some(v)) => Some(PassDensity::Host(v)),
                    _ => None,
                };
                let sc = scalars.range(p0, p1);
                if consumed > 0 {
                    let input = |bases_ptr, table| PassInput {
                        bases_ptr,
                        scalars: sc,
                        density: dens,
                        first_bit: first_bit as u64,
                        used: consumed,
                        scratch_room,
                        table,
                    };
                    let r = match bases.resident(dev, base_off, consumed) {
                        Some(dev_ptr) => {
                            let table = table
                                .filter(|&(_, c, _)| plan::precomputed_pays(consumed, c, &tuning));
                            pass::run::<G>(dev, &self.kernels, &tuning, input(dev_ptr, table))?
                        }
                        None => {
                            let host = bases.host_range(base_off, consumed)?;
                            let mut scratch = dev.alloc_uninit::<G::Affine>(consumed)?;
                            dev.upload_staged(host, &mut scratch, |_, _| Ok(()))?;
                            let p = ptr_mut(&mut scratch, dev);
                            let r = pass::run::<G>(dev, &self.kernels, &tuning, input(p, None))?;
                            // Freed in stream order, after the pass that reads it.
                            drop(scratch);
                            r
                        }
                    };
                    pending.extend(r);
                }
                base_off += consumed;
                p0 = p1;
            }
        }
        let mut acc = G::Jacobian::default();
        for (jac, c) in pending {
            let host = dev.download(&jac)?;
            let windows = host.len() - 1;
            let r = G::combine(&host[..windows], &host[windows], c);
            acc = G::combine(&[acc], &r, 0);
        }
        Ok(acc)
    }
}
