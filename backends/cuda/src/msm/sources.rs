//! Where an MSM's scalars and bases come from (host memory, device memory, the memory tiers of
//! resident bases), and the density bitmap that selects the scalars: counting the used ones,
//! and cutting passes at a base index.

use bellows_backend_api::{layout::Fr, Error, Result};

use super::table::PrecomputedTable;
use crate::{
    buffers::{DeviceVec, Plain},
    device::CudaDevice,
    launch::ptr,
};

/// One pass's density bitmap, first word first: host words (uploaded for the pass, the bits
/// of scalars before the pass cleared) or `words` u64 at device address `ptr`, inside a device
/// copy of the whole bitmap (the pass then starts on a word boundary).
#[derive(Clone, Copy)]
pub(crate) enum PassDensity<'a> {
    Host(&'a [u64]),
    Device { ptr: u64, words: u64 },
}

/// Density words padded into whole Fr values (4 words each) for upload.
pub(crate) fn words_as_fr(d: &[u64]) -> Vec<Fr> {
    d.chunks(4)
        .map(|c| {
            let mut w = [0u64; 4];
            w[..c.len()].copy_from_slice(c);
            Fr(w)
        })
        .collect()
}

/// Where the scalars of an MSM are.
#[derive(Clone, Copy)]
pub enum ScalarSource<'a> {
    /// In host memory (uploaded through pinned staging).
    Host(&'a [Fr]),
    /// Already on the device: `len` values from `offset` on.
    Device(&'a DeviceVec<Fr>, usize, usize),
}

impl<'a> ScalarSource<'a> {
    /// Number of scalars.
    pub fn len(&self) -> usize {
        match self {
            ScalarSource::Host(s) => s.len(),
            ScalarSource::Device(_, _, n) => *n,
        }
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub(crate) fn range(&self, a: usize, b: usize) -> ScalarSource<'a> {
        match *self {
            ScalarSource::Host(s) => ScalarSource::Host(&s[a..b]),
            ScalarSource::Device(v, off, _) => ScalarSource::Device(v, off + a, b - a),
        }
    }
}

/// Where the bases of an MSM are: the memory tiers of the backend.
pub enum BaseSource<'a, T: Plain> {
    /// Every point resident in device memory.
    Device(&'a DeviceVec<T>),
    /// Every point resident, with its precomputed window multiples: MSMs large enough for
    /// them to pay ([`super::plan::precomputed_pays`]) read the table, smaller ones its first
    /// window.
    Table(&'a PrecomputedTable<T>),
    /// The first `prefix.len()` points resident, the rest streamed from `host` (all points).
    Split {
        /// Resident prefix.
        prefix: &'a DeviceVec<T>,
        /// Every point, in host memory.
        host: &'a [T],
    },
    /// Every point streamed from host memory, a pass at a time.
    Host(&'a [T]),
}

impl<T: Plain> BaseSource<'_, T> {
    pub(crate) fn len(&self) -> usize {
        match self {
            BaseSource::Device(d) => d.len(),
            BaseSource::Table(t) => t.len,
            BaseSource::Split { host, .. } | BaseSource::Host(host) => host.len(),
        }
    }
    pub(crate) fn resident_len(&self) -> usize {
        match self {
            BaseSource::Device(d) => d.len(),
            BaseSource::Table(t) => t.len,
            BaseSource::Split { prefix, .. } => prefix.len(),
            BaseSource::Host(_) => 0,
        }
    }
    /// Device address of points [a, a + n) when they are all resident.
    pub(crate) fn resident(&self, dev: &CudaDevice, a: usize, n: usize) -> Option<u64> {
        let d = match self {
            BaseSource::Table(t) => {
                return (a + n <= t.len).then(|| ptr(&t.points, dev) + (a * T::WORDS * 8) as u64)
            }
            BaseSource::Device(d) => d,
            BaseSource::Split { prefix, .. } => prefix,
            BaseSource::Host(_) => return None,
        };
        (a + n <= d.len()).then(|| ptr(d, dev) + (a * T::WORDS * 8) as u64)
    }
    pub(crate) fn host_range(&self, a: usize, n: usize) -> Result<&[T]> {
        match self {
            BaseSource::Split { host, .. } | BaseSource::Host(host) => Ok(&host[a..a + n]),
            BaseSource::Device(_) | BaseSource::Table(_) => {
                Err(Error::invalid("resident bases have no host copy"))
            }
        }
    }
}

/// Scalars used among the first `n` (all without a density).
pub(crate) fn used_count(n: usize, density: Option<&[u64]>) -> Result<usize> {
    used_count_from(n, density, 0)
}

/// Scalars used among `n` starting at bit `first_bit` of `density[0]`.
pub(crate) fn used_count_from(
    n: usize,
    density: Option<&[u64]>,
    first_bit: usize,
) -> Result<usize> {
    let Some(d) = density else { return Ok(n) };
    let words = (first_bit + n).div_ceil(64);
    if d.len() < words {
        return Err(Error::invalid(format!(
            "density of {} words for {n} scalars (need {words})",
            d.len()
        )));
    }
    let mut total = 0usize;
    for (w, x) in d[..words].iter().enumerate() {
        let lo = if w == 0 { first_bit } else { 0 };
        let hi = (first_bit + n - w * 64).min(64);
        let below_hi = if hi >= 64 { !0u64 } else { (1u64 << hi) - 1 };
        let mask = below_hi & (!0u64 << lo);
        total += (x & mask).count_ones() as usize;
    }
    Ok(total)
}

/// The index of the scalar that uses base `k` (relative to the MSM's start): scalars before it
/// use bases below k. `n` when fewer than k + 1 scalars are used.
pub(crate) fn scalar_index_of_base(n: usize, density: Option<&[u64]>, k: usize) -> usize {
    let Some(d) = density else { return k.min(n) };
    // Walk whole words, then bits: the cut is the index of the k-th used scalar.
    let mut seen = 0usize;
    for (w, x) in d.iter().enumerate() {
        let c = x.count_ones() as usize;
        if seen + c > k {
            let mut x = *x;
            let mut need = k - seen;
            let mut bit = 0;
            while need > 0 || x & 1 == 0 {
                if x & 1 == 1 {
                    need -= 1;
                }
                x >>= 1;
                bit += 1;
            }
            return (w * 64 + bit).min(n);
        }
        seen += c;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn used_scalars_are_counted_from_any_bit() {
        let d = [0b1011u64, u64::MAX, 1];
        assert_eq!(used_count(10, None).unwrap(), 10);
        assert_eq!(used_count(4, Some(&d)).unwrap(), 3);
        assert_eq!(used_count(64, Some(&d)).unwrap(), 3);
        assert_eq!(used_count(129, Some(&d)).unwrap(), 68);
        assert_eq!(used_count_from(2, Some(&d), 1).unwrap(), 1);
        assert_eq!(used_count_from(64, Some(&d[1..]), 0).unwrap(), 64);
        assert!(used_count(200, Some(&d)).is_err());
    }

    #[test]
    fn cuts_fall_on_the_scalar_that_uses_a_base() {
        let d = [0b1011u64, u64::MAX];
        assert_eq!(scalar_index_of_base(100, None, 7), 7);
        assert_eq!(scalar_index_of_base(5, None, 7), 5);
        assert_eq!(scalar_index_of_base(128, Some(&d), 0), 0);
        assert_eq!(scalar_index_of_base(128, Some(&d), 2), 3);
        assert_eq!(scalar_index_of_base(128, Some(&d), 3), 64);
        assert_eq!(scalar_index_of_base(128, Some(&d), 100), 128);
    }

    #[test]
    fn density_words_pad_into_whole_values() {
        let v = words_as_fr(&[1, 2, 3, 4, 5]);
        assert_eq!(v, vec![Fr([1, 2, 3, 4]), Fr([5, 0, 0, 0])]);
        assert!(words_as_fr(&[]).is_empty());
    }
}
