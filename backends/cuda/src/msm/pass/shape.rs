//! The shape of a pass: window width, digit windows, bucket sets and keys.

use crate::msm::{
    config::MsmConfig,
    plan::{window_bits, window_count},
};

/// The shape of a pass: window width, digit windows, bucket sets and keys.
pub(crate) struct Shape {
    /// Window width in bits.
    pub c: u32,
    /// The digit windows.
    pub windows: u32,
    /// 0, or the window stride of the precomputed table the bases point into.
    pub stride: u64,
    /// The bucket sets (and window sums): one with a table, else one a window.
    pub sum_windows: u32,
    /// Buckets a set, 2^(c−1).
    pub half: u32,
    /// Bucket keys in all, sum_windows·half.
    pub keys: u32,
}

impl Shape {
    /// Over a precomputed table of shape (stride, c, windows), or, without one, windows of
    /// [`window_bits`] for `used` scalars.
    pub fn new(table: Option<(u64, u32, u32)>, used: usize, cfg: &MsmConfig) -> Self {
        let (c, windows, stride) = match table {
            Some((stride, c, windows)) => (c, windows, stride),
            None => {
                let c = window_bits(used, cfg);
                (c, window_count(c), 0)
            }
        };
        let sum_windows = if stride != 0 { 1 } else { windows };
        let half = 1u32 << (c - 1);
        Self {
            c,
            windows,
            stride,
            sum_windows,
            half,
            keys: sum_windows * half,
        }
    }
}
