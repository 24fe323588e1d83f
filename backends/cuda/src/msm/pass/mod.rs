//! One device pass of the MSM over bases at one device address (kernels/msm/msm.cuh explains
//! the algorithm): the steps queued one after another on the lane's stream, with no
//! synchronisation until the window sums come back — digits counted ([`digits`]), histogram
//! scanned, digits scattered to their buckets ([`scatter`]), buckets accumulated and fixed up
//! ([`accumulate`]), window sums and the sum of the ones reduced ([`reduce`]). Sizes that depend
//! on the scalars (how many digits are non-zero, how many scalars are 1) stay on the device:
//! buffers and grids are sized for the worst case and threads past the real count return at
//! once.

mod accumulate;
mod digits;
mod reduce;
mod scatter;
mod shape;

use bellows_backend_api::Result;

use super::{
    config::MsmConfig,
    group::MsmGroup,
    kernels::MsmKernels,
    plan::bin_shift,
    profile::Phases,
    sources::{PassDensity, ScalarSource},
};
use crate::{buffers::DeviceVec, device::CudaDevice};
use shape::Shape;

/// What one pass reads.
pub(crate) struct PassInput<'a> {
    /// Device address of the pass's first base (window 0 of a table).
    pub bases_ptr: u64,
    /// The pass's scalars.
    pub scalars: ScalarSource<'a>,
    /// Their density bitmap, first word first.
    pub density: Option<PassDensity<'a>>,
    /// The density bit of the first scalar.
    pub first_bit: u64,
    /// The scalars the density selects (the bases the pass reads).
    pub used: usize,
    /// Device bytes the pass may take as scratch for the binned scatter.
    pub scratch_room: u64,
    /// (stride, c, windows) of the precomputed table `bases_ptr` points into: window w of base i
    /// at index w·stride + i; the digits of every window then share one bucket set and the pass
    /// returns a single window sum.
    pub table: Option<(u64, u32, u32)>,
}

/// Queues one pass on lane `dev` and returns its (windows + 1) Jacobian sums still on the
/// device, and c; None when no scalar is used.
pub(crate) fn run<G: MsmGroup>(
    dev: &CudaDevice,
    k: &MsmKernels,
    cfg: &MsmConfig,
    input: PassInput<'_>,
) -> Result<Option<(DeviceVec<G::Jacobian>, u32)>> {
    let n = input.scalars.len() as u64;
    if n == 0 || input.used == 0 {
        return Ok(None);
    }
    let shape = Shape::new(input.table, input.used, cfg);
    let max_entries = input.used as u64 * shape.windows as u64;
    let mut ph = Phases::new(dev, cfg.profile);
    let mut d = digits::Digits::allocate(
        dev,
        k,
        &shape,
        input.scalars,
        input.density,
        input.first_bit,
        max_entries,
        bin_shift(shape.keys, shape.windows, cfg),
    )?;
    ph.mark("setup");
    d.count(dev, k, input.scalars)?;
    ph.mark("upload+count");
    d.scan(dev, k)?;
    ph.mark("scan");
    scatter::run(dev, k, cfg, &shape, &mut d, n, input.scratch_room, &mut ph)?;
    ph.mark("scatter");
    let buckets = accumulate::run::<G>(
        dev,
        k,
        &shape,
        &mut d,
        input.bases_ptr,
        max_entries,
        &mut ph,
    )?;
    let jac = reduce::run::<G>(dev, k, cfg, &shape, d, buckets, input.bases_ptr, n, &mut ph)?;
    ph.report(G::NAME, n, shape.c);
    Ok(Some((jac, shape.c)))
}
