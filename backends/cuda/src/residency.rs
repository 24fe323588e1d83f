//! Resident bases and their memory tiers: each set of bases a proving key hands to
//! `load_bases_*` is made resident on each GPU at the best tier the GPU's room allows — all on
//! the device (`Full`), a prefix on the device and the rest streamed from host memory
//! (`Partial`), or all streamed (`Streaming`) — so a proof never fails for lack of device memory;
//! a set wholly resident may also be stored as its precomputed window multiples.

use bellows_backend_api::{
    backend::{plan_tier, EncodedPoints, Group, SharedPoints, Tier},
    layout::{G1Affine, G2Affine},
    Error, Result,
};

use crate::{
    buffers::{DeviceVec, Plain},
    decode::Decode,
    device::CudaDevice,
    msm::{pass_size, window_count, BaseSource, Msm, MsmConfig, MsmGroup, PrecomputedTable},
};

/// Device memory kept free beyond the budget (the driver, streams and scratch need some).
pub const SAFETY_MARGIN: u64 = 1 << 30;
/// Device memory held back per lane for MSM and NTT scratch when bases are loaded (at most).
pub const WORK_RESERVE: u64 = 6 << 30;

/// One resident set of bases on one GPU, at the tier the GPU could afford when it was loaded.
/// The host points are kept (shared, not copied) whenever any point is streamed.
pub(crate) struct ResidentSet<T: Plain> {
    device: Option<DeviceVec<T>>,
    /// The precomputed table, which holds the bases as its first window (`device` is then
    /// None).
    table: Option<PrecomputedTable<T>>,
    host: Option<SharedPoints<T>>,
    pub tier: Tier,
}

impl<T: Plain> ResidentSet<T> {
    /// Where an MSM reads the set's points.
    pub fn source(&self) -> BaseSource<'_, T> {
        if let Some(t) = &self.table {
            return BaseSource::Table(t);
        }
        match (&self.device, &self.host) {
            (Some(d), None) => BaseSource::Device(d),
            (Some(d), Some(h)) => BaseSource::Split {
                prefix: d,
                host: h.points(),
            },
            (None, Some(h)) => BaseSource::Host(h.points()),
            // No points at all (an empty query).
            (None, None) => BaseSource::Host(&[]),
        }
    }
    /// (c, windows) of the precomputed table, if any.
    pub fn table_shape(&self) -> Option<(u32, u32)> {
        self.table.as_ref().map(|t| (t.c(), t.windows()))
    }
    /// Device bytes the set holds.
    pub fn device_bytes(&self) -> u64 {
        self.device.as_ref().map_or(0, |d| d.bytes() as u64)
            + self.table.as_ref().map_or(0, PrecomputedTable::bytes)
    }
}

/// A resident set of either group.
pub(crate) enum Resident {
    G1(ResidentSet<G1Affine>),
    G2(ResidentSet<G2Affine>),
}

impl Resident {
    /// Device bytes the set holds.
    pub fn bytes(&self) -> u64 {
        match self {
            Resident::G1(r) => r.device_bytes(),
            Resident::G2(r) => r.device_bytes(),
        }
    }
    /// The set's tier.
    pub fn tier(&self) -> Tier {
        match self {
            Resident::G1(s) => s.tier,
            Resident::G2(s) => s.tier,
        }
    }
    /// Whether the set still reads the points it was loaded from (a part of them is streamed
    /// from host memory); a set held whole on its GPU (as points or as a table) never does.
    pub fn reads_host(&self) -> bool {
        match self {
            Resident::G1(s) => s.host.is_some(),
            Resident::G2(s) => s.host.is_some(),
        }
    }
    /// The G1 set (the caller checked the group).
    pub fn g1(&self) -> &ResidentSet<G1Affine> {
        match self {
            Resident::G1(s) => s,
            Resident::G2(_) => unreachable!("the bases table checked the group"),
        }
    }
    /// The G2 set (the caller checked the group).
    pub fn g2(&self) -> &ResidentSet<G2Affine> {
        match self {
            Resident::G2(s) => s,
            Resident::G1(_) => unreachable!("the bases table checked the group"),
        }
    }
}

/// The tier a set of `len` bases can have on the GPU of lane `dev`: what `room` allows beside
/// the work reserve of its `streams` lanes (half the room at most).
fn plan<G: MsmGroup>(
    dev: &CudaDevice,
    len: usize,
    room: &dyn Fn() -> Result<u64>,
    streams: usize,
) -> Result<Tier> {
    let size = (<G as MsmGroup>::Affine::WORDS * 8) as u64;
    let free = room()?;
    let reserve = (WORK_RESERVE * streams as u64).min(free / 2);
    let min_chunk = 1024 * (G::PASS_BYTES_PER_SCALAR + size);
    plan_tier(
        len as u64 * size,
        min_chunk,
        free.saturating_sub(reserve),
        dev.label(),
    )
}

/// Loads a set of bases on the GPU of lane `dev` at the best tier `room` (bytes usable on that
/// GPU now, asked again after the bases are resident) allows beside the work reserve of its
/// `streams` lanes, a full, partial or streaming residency instead of an out-of-memory failure;
/// and, with `precompute` set (a window width), stores a wholly resident set as its table of
/// window multiples when the table still leaves the reserve free.
pub(crate) fn load<G: MsmGroup>(
    dev: &CudaDevice,
    msm: &Msm,
    bases: &SharedPoints<G::Affine>,
    group: Group,
    room: &dyn Fn() -> Result<u64>,
    streams: usize,
    precompute: Option<u32>,
) -> Result<ResidentSet<G::Affine>> {
    type T<G> = <G as MsmGroup>::Affine;
    let points = bases.points();
    let len = points.len();
    let size = (T::<G>::WORDS * 8) as u64;
    let tier = plan::<G>(dev, len, room, streams)?;
    let resident_points = match tier {
        Tier::Full => len,
        Tier::Partial(bytes) => ((bytes / size) as usize).min(len),
        Tier::Streaming(_) => 0,
    };
    let device = if resident_points > 0 {
        let mut d = dev.alloc_uninit::<T<G>>(resident_points)?;
        dev.upload_staged(&points[..resident_points], &mut d, |_, _| Ok(()))?;
        dev.synchronize()?;
        Some(d)
    } else {
        None
    };
    let (device, table) = match (tier, device) {
        (Tier::Full, Some(d)) => with_table::<G>(dev, msm, d, group, room, streams, precompute)?,
        (_, d) => (d, None),
    };
    if tier != Tier::Full {
        tracing::info!(
            "{}: {len} {group:?} bases at tier {tier:?} ({resident_points} resident, the rest \
             streamed from host memory)",
            dev.label()
        );
    }
    Ok(ResidentSet {
        device,
        table,
        host: (resident_points < len).then(|| bases.clone()),
        tier,
    })
}

/// A set held whole on the GPU of lane `dev` (`device`, its `len` points), stored as its table
/// of window multiples when `precompute` (a window width) is set and the table fits (see
/// [`load`]); otherwise kept as it is. Returns what the set keeps: the points or the table.
#[allow(clippy::type_complexity)]
fn with_table<G: MsmGroup>(
    dev: &CudaDevice,
    msm: &Msm,
    device: DeviceVec<G::Affine>,
    group: Group,
    room: &dyn Fn() -> Result<u64>,
    streams: usize,
    precompute: Option<u32>,
) -> Result<(
    Option<DeviceVec<G::Affine>>,
    Option<PrecomputedTable<G::Affine>>,
)> {
    type T<G> = <G as MsmGroup>::Affine;
    let len = device.len();
    let size = (T::<G>::WORDS * 8) as u64;
    let full = len as u64 * size;
    let Some(c) = precompute else {
        return Ok((Some(device), None));
    };
    // A table where the whole set is resident and the table (with its build scratch and the
    // bases it is built from) still leaves the whole work reserve (not the half of a small
    // room the tiers settle for: under a tight budget the MSMs' scratch needs all of it), and
    // room for the sets a key loads after this one (a Groth16 key has at most four more, each
    // about this size or smaller in bytes): tables are on by default, and must never push a
    // later set off the device or a concurrent call's scratch out of the budget.
    let table_reserve = WORK_RESERVE * streams as u64;
    let bytes = PrecomputedTable::<T<G>>::bytes_for(len, size, c);
    let scratch = (len.min(1 << 22) as u64) * size * 2;
    let later_sets = 4 * full;
    let free = room()?;
    let windows = window_count(c) as u64;
    if len as u64 * windows >= 1 << 31 {
        tracing::info!(
            "{}: {len} {group:?} bases are too many for a table of {windows} windows (2^31 \
             points at most); loaded without it",
            dev.label()
        );
    } else if free >= bytes + scratch + table_reserve + later_sets {
        let t0 = std::time::Instant::now();
        match msm.precompute_table::<G>(dev, &device, c) {
            Ok(t) => {
                tracing::info!(
                    "{}: {len} {group:?} bases stored with their window multiples (c = {c}, \
                     {} windows, {:.1} GB), built in {:.2} s",
                    dev.label(),
                    t.windows(),
                    t.bytes() as f64 / 1e9,
                    t0.elapsed().as_secs_f64()
                );
                return Ok((None, Some(t)));
            }
            Err(Error::OutOfMemory { .. }) => tracing::info!(
                "{}: no device memory for the {group:?} table of {len} bases; loaded \
                 without it",
                dev.label()
            ),
            Err(e) => return Err(e),
        }
    } else {
        tracing::info!(
            "{}: the {group:?} table of {len} bases ({:.1} GB) does not fit beside the work \
             reserve and room for the sets loaded after it ({:.1} GB free); loaded without it",
            dev.label(),
            bytes as f64 / 1e9,
            free as f64 / 1e9
        );
    }
    Ok((Some(device), None))
}

/// As [`load`], from encoded points that the GPU of lane `dev` decodes itself
/// ([`Decode::into_device`]), when the whole set fits on it (tier `Full`): `None` where it does
/// not, before anything is read (a set partly streamed needs decoded points on the host). A
/// refused point is `Some(Err((index, verdict)))`, with nothing kept.
#[allow(clippy::type_complexity)]
pub(crate) fn load_encoded<G: MsmGroup>(
    dev: &CudaDevice,
    msm: &Msm,
    points: &dyn EncodedPoints,
    group: Group,
    room: &dyn Fn() -> Result<u64>,
    streams: usize,
    precompute: Option<u32>,
) -> Result<Option<std::result::Result<ResidentSet<G::Affine>, (u64, u8)>>> {
    type T<G> = <G as MsmGroup>::Affine;
    let len = usize::try_from(points.len())
        .map_err(|_| Error::invalid(format!("{} points do not fit", points.len())))?;
    let tier = plan::<G>(dev, len, room, streams)?;
    if tier != Tier::Full {
        return Ok(None);
    }
    let (device, table) = if len == 0 {
        (None, None)
    } else {
        let mut d = dev.alloc_uninit::<T<G>>(len)?;
        if let Some(bad) = Decode::new(dev)?.into_device(dev, points, &mut d)? {
            return Ok(Some(Err(bad)));
        }
        with_table::<G>(dev, msm, d, group, room, streams, precompute)?
    };
    Ok(Some(Ok(ResidentSet {
        device,
        table,
        host: None,
        tier,
    })))
}

/// Scalars per pass for an MSM of `n` scalars over `set` in `room` bytes of a lane, and the room
/// left beside the passes for scratch ([`crate::msm::pass_size`]; streamed bases take room too).
pub(crate) fn passes<G: MsmGroup>(
    set: &ResidentSet<G::Affine>,
    n: usize,
    room: u64,
    tuning: &MsmConfig,
    device: &str,
) -> Result<(usize, u64)> {
    pass_size::<G>(
        n,
        room,
        set.tier != Tier::Full,
        set.table_shape(),
        tuning,
        device,
    )
}
