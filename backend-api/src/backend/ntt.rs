//! Number-theoretic transforms over Fr.
//!
//! ## Design
//! One call transforms a whole batch: `data` holds `batch` vectors of `2^log_n` elements each,
//! back to back, and the batch size is `data.len() >> log_n`. A device backend therefore sees the
//! work as one coarse operation it can keep resident, split across streams, or fuse; nothing
//! crosses the interface per element. [`Ntt::h_poly`] is the whole Groth16 quotient computation
//! (three inverse transforms, three coset transforms, the pointwise `(a·b − c)/Z`, one inverse coset
//! transform); its default body is built from [`Ntt::ntt`] calls plus host pointwise arithmetic,
//! and a device backend overrides it to keep a, b, c on the device from start to finish.
//!
//! Conventions (shared by every backend, checked by conformance):
//! - ω_n is the primitive 2^log_n-th root of unity `ROOT_OF_UNITY^(2^(32 − log_n))` of blstrs'
//!   `PrimeField` (the same domain as bellperson's `EvaluationDomain`).
//! - Forward: `X_j = Σ_i x_i · ω^(i·j)`. Inverse: `x_i = n⁻¹ Σ_j X_j · ω^(−i·j)`.
//! - Coset (with generator g = `MULTIPLICATIVE_GENERATOR` = 7): the forward transform evaluates
//!   on `g·ω^j`, i.e. multiplies `x_i` by `g^i` first; the inverse coset transform divides
//!   coefficient i by `g^i` after the inverse transform.
//! - Orderings: [`Ordering::BitReversed`] means element `i` is stored at index `bitrev(i)`. A
//!   backend may then skip its bit-reversal pass (a decimation-in-frequency forward transform
//!   naturally yields bit-reversed output; a decimation-in-time inverse consumes it).

use crate::{layout::Fr, Result};

/// Transform direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
pub enum NttDirection {
    /// Evaluate: coefficients → values.
    #[default]
    Forward,
    /// Interpolate: values → coefficients (includes the 1/n scaling).
    Inverse,
}

/// Storage order of a vector.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[repr(C)]
pub enum Ordering {
    /// Element i at index i.
    #[default]
    Natural,
    /// Element i at index bitrev_{log_n}(i).
    BitReversed,
}

/// How one [`Ntt::ntt`] call transforms its batch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct NttConfig {
    /// Direction. Default: [`NttDirection::Forward`].
    pub direction: NttDirection,
    /// Transform over the coset g·H instead of H (g = 7). Default: `false`.
    pub coset: bool,
    /// Order of the input vectors. Default: [`Ordering::Natural`].
    pub input_order: Ordering,
    /// Order of the output vectors. Default: [`Ordering::Natural`].
    pub output_order: Ordering,
}

impl NttConfig {
    /// Forward, natural order, no coset.
    pub fn forward() -> Self {
        Self::default()
    }
    /// Inverse, natural order, no coset.
    pub fn inverse() -> Self {
        Self {
            direction: NttDirection::Inverse,
            ..Self::default()
        }
    }
    /// Same configuration over the coset g·H.
    pub fn with_coset(mut self, coset: bool) -> Self {
        self.coset = coset;
        self
    }
    /// Same configuration with the given input and output orderings.
    pub fn with_orders(mut self, input: Ordering, output: Ordering) -> Self {
        self.input_order = input;
        self.output_order = output;
        self
    }
    /// Every configuration, direction × coset × input order × output order (16), forward
    /// first: what a backend's tests run each transform under.
    pub fn all() -> Vec<NttConfig> {
        let orders = [Ordering::Natural, Ordering::BitReversed];
        let mut v = Vec::with_capacity(16);
        for base in [NttConfig::forward(), NttConfig::inverse()] {
            for coset in [false, true] {
                for input in orders {
                    for output in orders {
                        v.push(base.with_coset(coset).with_orders(input, output));
                    }
                }
            }
        }
        v
    }
}

/// The primitive `2^log_n`-th root of unity of the conventions above:
/// `ROOT_OF_UNITY^(2^(32 − log_n))` (the ω of bellperson's `EvaluationDomain`).
///
/// Panics if `log_n` exceeds 32, the two-adicity of Fr (callers check sizes first).
pub fn omega(log_n: u32) -> blstrs::Scalar {
    use ff::{Field, PrimeField};
    assert!(
        log_n <= blstrs::Scalar::S,
        "no 2^{log_n}-th root of unity in Fr"
    );
    let mut w = blstrs::Scalar::ROOT_OF_UNITY;
    for _ in log_n..blstrs::Scalar::S {
        w = w.square();
    }
    w
}

/// The coset generator g of the conventions above (blstrs' `MULTIPLICATIVE_GENERATOR`, 7).
pub fn coset_generator() -> blstrs::Scalar {
    <blstrs::Scalar as ff::PrimeField>::MULTIPLICATIVE_GENERATOR
}

/// Checks the three vectors of [`Ntt::h_poly`] (equal lengths, whole vectors of `2^log_n`) and
/// returns the batch size: what every `h_poly` checks first.
pub fn h_poly_batch(a_len: usize, b_len: usize, c_len: usize, log_n: u32) -> Result<usize> {
    if a_len != b_len || a_len != c_len {
        return Err(crate::Error::invalid(format!(
            "h_poly: a, b, c have different lengths ({a_len}, {b_len}, {c_len})"
        )));
    }
    batch_size(a_len, log_n)
}

/// Checks `data` against `log_n` and returns the batch size.
pub fn batch_size(data_len: usize, log_n: u32) -> Result<usize> {
    if log_n > crate::MAX_LOG_NTT {
        return Err(crate::Error::invalid(format!(
            "NTT size 2^{log_n} exceeds the field's two-adicity 2^{}",
            crate::MAX_LOG_NTT
        )));
    }
    let n = 1usize << log_n;
    if !data_len.is_multiple_of(n) {
        return Err(crate::Error::invalid(format!(
            "NTT input of {data_len} elements is not a whole number of vectors of 2^{log_n}"
        )));
    }
    Ok(data_len / n)
}

/// Batched NTTs and the fused Groth16 quotient.
pub trait Ntt {
    /// Transforms every `2^log_n`-element vector of `data` in place according to `cfg`.
    ///
    /// Errors with [`crate::Error::InvalidInput`] when `data.len()` is not a multiple of `2^log_n`
    /// or `log_n` exceeds 32 (the two-adicity of Fr).
    fn ntt(&self, data: &mut [Fr], log_n: u32, cfg: &NttConfig) -> Result<()>;

    /// Groth16 quotient: given the evaluations of the A, B, C polynomials on the domain H of size
    /// `2^log_n` (batched as in [`Ntt::ntt`]), leaves in `a` the coefficients of
    /// `h(x) = (A(x)·B(x) − C(x)) / Z(x)`, natural order, with `Z(x) = x^n − 1`. Coefficient
    /// `n − 1` is always zero. `b` and `c` are clobbered.
    ///
    /// The default runs three inverse transforms, three forward coset transforms, the pointwise
    /// step on the host and one inverse coset transform. Backends override it to fuse.
    fn h_poly(&self, a: &mut [Fr], b: &mut [Fr], c: &mut [Fr], log_n: u32) -> Result<()> {
        super::quotient::h_poly_from_primitives(self, a, b, c, log_n)
    }
}
