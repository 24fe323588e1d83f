//! The arguments of the operations: NTT configurations, bases handles, MSM jobs and the proofs
//! and handles of a G1 phase.

use abi_stable::{std_types::RSlice, StableAbi};

use super::{codes, FfiError, FfiFr};
use crate::{
    backend::{
        BasesHandle, EncodedLoad, G1Handles, Group, MsmJob, NttConfig, NttDirection, Ordering,
        PointDefect, ProofAssignment,
    },
    Error,
};

/// [`NttConfig`] across the boundary; enums as `u8` codes (0 = `Forward`/`Natural`,
/// 1 = `Inverse`/`BitReversed`).
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
pub struct FfiNttConfig {
    /// 0 forward, 1 inverse.
    pub direction: u8,
    /// 1 for a coset transform.
    pub coset: u8,
    /// 0 natural, 1 bit-reversed.
    pub input_order: u8,
    /// 0 natural, 1 bit-reversed.
    pub output_order: u8,
}

fn order_code(o: Ordering) -> u8 {
    match o {
        Ordering::Natural => 0,
        Ordering::BitReversed => 1,
    }
}

fn order_from(c: u8) -> Result<Ordering, FfiError> {
    match c {
        0 => Ok(Ordering::Natural),
        1 => Ok(Ordering::BitReversed),
        _ => Err(FfiError::new(
            codes::INVALID_INPUT,
            format!("unknown NTT ordering code {c}"),
            "",
        )),
    }
}

impl From<&NttConfig> for FfiNttConfig {
    fn from(c: &NttConfig) -> Self {
        Self {
            direction: match c.direction {
                NttDirection::Forward => 0,
                NttDirection::Inverse => 1,
            },
            coset: u8::from(c.coset),
            input_order: order_code(c.input_order),
            output_order: order_code(c.output_order),
        }
    }
}

impl FfiNttConfig {
    /// Back to [`NttConfig`]; unknown codes are an invalid-input error.
    pub fn to_config(self) -> Result<NttConfig, FfiError> {
        let direction = match self.direction {
            0 => NttDirection::Forward,
            1 => NttDirection::Inverse,
            d => {
                return Err(FfiError::new(
                    codes::INVALID_INPUT,
                    format!("unknown NTT direction code {d}"),
                    "",
                ))
            }
        };
        let base = match direction {
            NttDirection::Forward => NttConfig::forward(),
            NttDirection::Inverse => NttConfig::inverse(),
        };
        Ok(base.with_coset(self.coset != 0).with_orders(
            order_from(self.input_order)?,
            order_from(self.output_order)?,
        ))
    }
}

/// [`BasesHandle`] across the boundary (group: 1 = G1, 2 = G2).
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
pub struct FfiBasesHandle {
    /// Backend-chosen identifier.
    pub id: u64,
    /// 1 = G1, 2 = G2.
    pub group: u8,
    /// Number of points.
    pub len: u64,
}

impl From<BasesHandle> for FfiBasesHandle {
    fn from(h: BasesHandle) -> Self {
        Self {
            id: h.id,
            group: match h.group {
                Group::G1 => 1,
                Group::G2 => 2,
            },
            len: h.len,
        }
    }
}

impl FfiBasesHandle {
    /// Back to [`BasesHandle`]; an unknown group code is `None`.
    pub fn to_handle(self) -> Option<BasesHandle> {
        let group = match self.group {
            1 => Group::G1,
            2 => Group::G2,
            _ => return None,
        };
        Some(BasesHandle {
            id: self.id,
            group,
            len: self.len,
        })
    }
}

/// [`EncodedLoad`] across the boundary: `defect` 0 and the handle, or the refused point's
/// index and its [`PointDefect`] code (the handle then unused).
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
pub struct FfiEncodedLoad {
    /// The bases' handle when `defect` is 0.
    pub handle: FfiBasesHandle,
    /// The index of the first refused point.
    pub index: u64,
    /// 0 when loaded, else the refusal's [`PointDefect`] code.
    pub defect: u8,
}

impl From<EncodedLoad> for FfiEncodedLoad {
    fn from(l: EncodedLoad) -> Self {
        match l {
            EncodedLoad::Loaded(h) => Self {
                handle: h.into(),
                index: 0,
                defect: 0,
            },
            EncodedLoad::Refused { index, defect } => Self {
                handle: FfiBasesHandle {
                    id: 0,
                    group: 0,
                    len: 0,
                },
                index,
                defect: defect as u8,
            },
        }
    }
}

impl FfiEncodedLoad {
    /// Back to [`EncodedLoad`]: `None` for an unknown defect code or, when loaded, an unknown
    /// group code.
    pub fn to_load(self) -> Option<EncodedLoad> {
        if self.defect == 0 {
            return self.handle.to_handle().map(EncodedLoad::Loaded);
        }
        PointDefect::from_code(self.defect).map(|defect| EncodedLoad::Refused {
            index: self.index,
            defect,
        })
    }
}

/// One MSM job ([`MsmJob`]): `Σ scalars[i] · bases[start + i]`, or over the used scalars of
/// `density` only.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug)]
pub struct FfiMsmJob<'a> {
    /// Index of the first base point.
    pub start: u64,
    /// The scalars.
    pub scalars: RSlice<'a, FfiFr>,
    /// Density bitmap over `scalars` (layout of [`MsmJob`]); empty: every scalar is used.
    pub density: RSlice<'a, u64>,
}

impl<'a> FfiMsmJob<'a> {
    /// The job as it crosses (a density job over no scalars crosses as a plain one: the same
    /// empty sum).
    pub fn from_job(j: &MsmJob<'a>) -> Self {
        Self {
            start: j.start as u64,
            scalars: RSlice::from_slice(FfiFr::from_layout(j.scalars)),
            density: RSlice::from_slice(j.density.unwrap_or(&[])),
        }
    }

    /// Back to [`MsmJob`]; a start that does not fit in `usize` is an invalid-input error.
    pub fn to_job(&self) -> Result<MsmJob<'a>, Error> {
        let start = usize::try_from(self.start).map_err(|_| {
            Error::invalid(format!("MSM start {} does not fit in usize", self.start))
        })?;
        let job = MsmJob::new(start, FfiFr::to_layout(self.scalars.as_slice()));
        let bits = self.density.as_slice();
        Ok(if bits.is_empty() {
            job
        } else {
            job.with_density(bits)
        })
    }
}

/// [`ProofAssignment`] across the boundary: one proof of a G1 phase.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug)]
pub struct FfiProofAssignment<'a> {
    /// Public inputs, the constant one first.
    pub inputs: RSlice<'a, FfiFr>,
    /// Private variables.
    pub aux: RSlice<'a, FfiFr>,
    /// Density bitmap of the aux variables in A.
    pub a_aux_density: RSlice<'a, u64>,
    /// Density bitmap of the inputs in B.
    pub b_input_density: RSlice<'a, u64>,
    /// Density bitmap of the aux variables in B.
    pub b_aux_density: RSlice<'a, u64>,
}

impl<'a> From<&ProofAssignment<'a>> for FfiProofAssignment<'a> {
    fn from(p: &ProofAssignment<'a>) -> Self {
        Self {
            inputs: RSlice::from_slice(FfiFr::from_layout(p.inputs)),
            aux: RSlice::from_slice(FfiFr::from_layout(p.aux)),
            a_aux_density: RSlice::from_slice(p.a_aux_density),
            b_input_density: RSlice::from_slice(p.b_input_density),
            b_aux_density: RSlice::from_slice(p.b_aux_density),
        }
    }
}

impl<'a> From<&FfiProofAssignment<'a>> for ProofAssignment<'a> {
    fn from(p: &FfiProofAssignment<'a>) -> Self {
        Self {
            inputs: FfiFr::to_layout(p.inputs.as_slice()),
            aux: FfiFr::to_layout(p.aux.as_slice()),
            a_aux_density: p.a_aux_density.as_slice(),
            b_input_density: p.b_input_density.as_slice(),
            b_aux_density: p.b_aux_density.as_slice(),
        }
    }
}

/// [`G1Handles`] across the boundary.
#[repr(C)]
#[derive(StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
pub struct FfiG1Handles {
    /// The h query.
    pub h: FfiBasesHandle,
    /// The l query.
    pub l: FfiBasesHandle,
    /// The a query.
    pub a: FfiBasesHandle,
    /// The b_g1 query.
    pub b_g1: FfiBasesHandle,
}

impl From<G1Handles> for FfiG1Handles {
    fn from(h: G1Handles) -> Self {
        Self {
            h: h.h.into(),
            l: h.l.into(),
            a: h.a.into(),
            b_g1: h.b_g1.into(),
        }
    }
}

impl FfiG1Handles {
    /// Back to [`G1Handles`]; an unknown group code is `None`.
    pub fn to_handles(self) -> Option<G1Handles> {
        Some(G1Handles {
            h: self.h.to_handle()?,
            l: self.l.to_handle()?,
            a: self.a.to_handle()?,
            b_g1: self.b_g1.to_handle()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Fr;

    #[test]
    fn ntt_configs_round_trip() {
        for c in NttConfig::all() {
            assert_eq!(FfiNttConfig::from(&c).to_config().unwrap(), c);
        }
        let bad = FfiNttConfig {
            direction: 2,
            coset: 0,
            input_order: 0,
            output_order: 0,
        };
        assert_eq!(bad.to_config().unwrap_err().code, codes::INVALID_INPUT);
    }

    #[test]
    fn handles_round_trip() {
        let h = BasesHandle {
            id: 9,
            group: Group::G2,
            len: 77,
        };
        assert_eq!(FfiBasesHandle::from(h).to_handle(), Some(h));
        assert_eq!(
            FfiBasesHandle {
                group: 0,
                ..FfiBasesHandle::from(h)
            }
            .to_handle(),
            None
        );
    }

    #[test]
    fn msm_jobs_cross_with_their_density() {
        let sc = vec![Fr::ONE; 70];
        let bits = [u64::MAX, 0b101];
        let j = MsmJob::new(5, &sc).with_density(&bits);
        let f = FfiMsmJob::from_job(&j);
        assert_eq!(f.density.as_slice(), &bits);
        assert_eq!(
            f.scalars.as_slice().as_ptr().cast::<u8>(),
            sc.as_ptr().cast::<u8>()
        );
        let back = f.to_job().unwrap();
        assert_eq!((back.start, back.scalars.len()), (5, 70));
        assert_eq!(back.density, Some(&bits[..]));
        let plain = FfiMsmJob::from_job(&MsmJob::new(0, &sc));
        assert!(plain.density.is_empty());
        assert_eq!(plain.to_job().unwrap().density, None);
    }
}
