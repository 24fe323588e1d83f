//! How one NTT configuration is carried out: which kernel passes, over which bits, with which
//! pre- and post-scaling, and whether a bit-reversal pass follows. Pure host logic, shared by the
//! device path and the host emulation test.
//!
//! | input → output | passes | then |
//! |---|---|---|
//! | natural → bit-reversed | Gentleman–Sande (DIF), top bits first | — |
//! | bit-reversed → natural | Cooley–Tukey (DIT), low bits first | — |
//! | natural → natural | DIF | bit reversal |
//! | bit-reversed → bit-reversed | DIT | bit reversal |
//!
//! The coset factor g^i of a forward coset transform is applied as the first pass loads; 1/n (and
//! g^−i over a coset) of an inverse transform as the last pass stores, so scaling never costs a
//! pass of its own.

use bellows_backend_api::backend::ntt::{NttConfig, NttDirection, Ordering};
use cudarc::driver::DeviceRepr;

/// Largest transform the device supports: 2^27 elements (4 GiB per vector).
pub const MAX_LOG_N: u32 = 27;

/// Most stages (index bits) one pass handles; also the most elements of a tile, 2^11 (64 KiB of
/// shared memory).
pub const MAX_TILE_BITS: u32 = 11;

/// Threads per block of a pass (at most).
pub const PASS_THREADS: u32 = 256;

/// log2 of the side of the tiles of the tiled bit reversal (kernels/ntt/ntt.cuh).
pub const BITREV_TILE_BITS: u32 = 4;

/// Whether the bit reversal of 2^log_n elements uses the tiled kernel (else the simple one).
pub fn tiled_bitrev(log_n: u32) -> bool {
    log_n >= 2 * BITREV_TILE_BITS
}

/// Pass flags (kernels/ntt/ntt.cuh).
pub mod flags {
    /// Cooley–Tukey butterflies (bit-reversed input); else Gentleman–Sande.
    pub const DIT: u32 = 1 << 0;
    /// Use ω⁻¹.
    pub const INVERSE: u32 = 1 << 1;
    /// Multiply x_i by g^i as the pass loads.
    pub const PRE_COSET: u32 = 1 << 2;
    /// At load, an element's logical index is the bit reversal of its position.
    pub const PRE_BITREV: u32 = 1 << 3;
    /// Multiply by 1/n as the pass stores (inverse, not over a coset).
    pub const POST_SCALE: u32 = 1 << 4;
    /// Multiply x_i by g^−i/n as the pass stores (inverse over a coset).
    pub const POST_COSET: u32 = 1 << 5;
    /// At store, an element's logical index is the bit reversal of its position.
    pub const POST_BITREV: u32 = 1 << 6;
}

/// One kernel pass: stages on index bits `[b0, b0 + k)`, tiles of 2^k × 2^c elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pass {
    /// Lowest index bit of the pass.
    pub b0: u32,
    /// Number of stages (bits).
    pub k: u32,
    /// Neighbouring low bits carried in each tile.
    pub c: u32,
    /// [`flags`].
    pub flags: u32,
}

impl Pass {
    /// Elements per tile (log2).
    pub fn tile_bits(&self) -> u32 {
        self.k + self.c
    }
    /// Tiles per vector of 2^log_n.
    pub fn tiles(&self, log_n: u32) -> u64 {
        1u64 << (log_n - self.tile_bits())
    }
    /// Threads per block.
    pub fn threads(&self) -> u32 {
        PASS_THREADS.min(1 << (self.tile_bits() - 1))
    }
    /// Dynamic shared memory per block (32 bytes per element).
    pub fn shared_bytes(&self) -> u32 {
        32 << self.tile_bits()
    }
}

/// The passes of one transform, in execution order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// log2 of the vector length.
    pub log_n: u32,
    /// Kernel passes (empty for n = 1, where every transform is the identity).
    pub passes: Vec<Pass>,
    /// Whether a bit-reversal permutation follows the passes.
    pub bitrev_after: bool,
}

/// Plans the transform of vectors of 2^log_n elements under `cfg`. `log_n` must be at most
/// [`MAX_LOG_N`] (checked by the caller).
pub fn plan(log_n: u32, cfg: &NttConfig) -> Plan {
    plan_with_tiles(log_n, cfg, MAX_TILE_BITS)
}

/// As [`plan`] with tiles of at most 2^max_tile_bits elements (1..=11). Smaller tiles give
/// plans with more passes at small sizes, which the emulation test uses to exercise the index
/// logic of every kind of pass cheaply.
pub fn plan_with_tiles(log_n: u32, cfg: &NttConfig, max_tile_bits: u32) -> Plan {
    assert!(
        (1..=MAX_TILE_BITS).contains(&max_tile_bits),
        "tile bits {max_tile_bits}"
    );
    if log_n == 0 {
        return Plan {
            log_n,
            passes: Vec::new(),
            bitrev_after: false,
        };
    }
    let input_bitrev = cfg.input_order == Ordering::BitReversed;
    let output_bitrev = cfg.output_order == Ordering::BitReversed;
    let inverse = cfg.direction == NttDirection::Inverse;
    // DIF consumes natural order and leaves bit-reversed; DIT the opposite.
    let dit = input_bitrev;
    let bitrev_after = input_bitrev == output_bitrev;

    // Split log_n bits into as few passes as tiles allow, sizes within one of each other, the
    // larger ones on the low bits (whose tiles carry no neighbour bits).
    let count = log_n.div_ceil(max_tile_bits);
    let (base, extra) = (log_n / count, log_n % count);
    let mut ranges = Vec::with_capacity(count as usize);
    let mut b0 = 0;
    for i in 0..count {
        let k = base + u32::from(i < extra);
        ranges.push((b0, k));
        b0 += k;
    }
    if !dit {
        ranges.reverse();
    }

    let last = ranges.len() - 1;
    let passes = ranges
        .into_iter()
        .enumerate()
        .map(|(i, (b0, k))| {
            let mut f = if dit { flags::DIT } else { 0 };
            if inverse {
                f |= flags::INVERSE;
            }
            if i == 0 && cfg.coset && !inverse {
                f |= flags::PRE_COSET;
                if input_bitrev {
                    f |= flags::PRE_BITREV;
                }
            }
            if i == last && inverse {
                // Over a coset the table already carries 1/n (tables::inverse_coset_tables).
                f |= if cfg.coset {
                    flags::POST_COSET
                } else {
                    flags::POST_SCALE
                };
                // After DIF passes the data is bit-reversed; after DIT, natural.
                if !dit {
                    f |= flags::POST_BITREV;
                }
            }
            Pass {
                b0,
                k,
                c: b0.min(max_tile_bits - k),
                flags: f,
            }
        })
        .collect();
    Plan {
        log_n,
        passes,
        bitrev_after,
    }
}

/// The kernel argument of one pass (kernels/ntt/ntt.cuh `NttPass`), passed by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct NttPassArgs {
    /// Device address of the first vector of the launch.
    pub data: u64,
    /// Device address of the twiddle table.
    pub twiddles: u64,
    /// Device address of the coset table pair (g for pre-scaling, g⁻¹ for post-scaling).
    pub coset: u64,
    /// Vector length.
    pub n: u64,
    /// 1/n in Montgomery form, as 32-bit limbs.
    pub scale: [u32; 8],
    /// log2 n.
    pub log_n: u32,
    /// Lowest bit of the pass.
    pub b0: u32,
    /// Stages in the pass.
    pub k: u32,
    /// Neighbour bits per tile.
    pub c: u32,
    /// log2 of the twiddle table's root order.
    pub tw_log: u32,
    /// [`flags`].
    pub flags: u32,
    /// Zero.
    pub reserved0: u32,
    /// Zero.
    pub reserved1: u32,
}

const _: () = assert!(std::mem::size_of::<NttPassArgs>() == 96);

// SAFETY: a #[repr(C)] struct of integers with no padding (asserted size 96 = 4·8 + 8·4 + 8·4),
// matching the kernel's `NttPass` field for field.
unsafe impl DeviceRepr for NttPassArgs {}

impl NttPassArgs {
    /// The arguments of `pass` over the vectors at address `data` (device addresses, or host
    /// addresses under emulation). `coset` is the address of [`super::tables::coset_tables`]
    /// (used for pre-scaling), `inverse_coset` that of
    /// [`super::tables::inverse_coset_tables`]`(log_n)` (used for post-scaling; 0 when the plan
    /// has no inverse coset pass).
    pub fn new(
        log_n: u32,
        pass: &Pass,
        data: u64,
        twiddles: u64,
        tw_log: u32,
        coset: u64,
        inverse_coset: u64,
    ) -> Self {
        let coset = if pass.flags & flags::POST_COSET != 0 {
            inverse_coset
        } else {
            coset
        };
        Self {
            data,
            twiddles,
            coset,
            n: 1 << log_n,
            scale: super::tables::n_inverse_limbs(log_n),
            log_n,
            b0: pass.b0,
            k: pass.k,
            c: pass.c,
            tw_log,
            flags: pass.flags,
            reserved0: 0,
            reserved1: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_cover_every_bit_once() {
        for log_n in 1..=MAX_LOG_N {
            for cfg in NttConfig::all() {
                let p = plan(log_n, &cfg);
                let mut bits = vec![0u32; log_n as usize];
                for pass in &p.passes {
                    assert!(pass.k >= 1 && pass.tile_bits() <= MAX_TILE_BITS, "{pass:?}");
                    assert!(pass.c <= pass.b0, "{pass:?}");
                    for b in pass.b0..pass.b0 + pass.k {
                        bits[b as usize] += 1;
                    }
                }
                assert!(bits.iter().all(|&c| c == 1), "log_n {log_n}: {p:?}");
                assert_eq!(p.passes.len() as u32, log_n.div_ceil(MAX_TILE_BITS));
                // DIF runs from the top bits down, DIT from the bottom up.
                let dit = cfg.input_order == Ordering::BitReversed;
                let b0s: Vec<u32> = p.passes.iter().map(|x| x.b0).collect();
                let mut sorted = b0s.clone();
                sorted.sort();
                if !dit {
                    sorted.reverse();
                }
                assert_eq!(b0s, sorted);
                assert_eq!(p.bitrev_after, cfg.input_order == cfg.output_order);
            }
        }
    }

    #[test]
    fn scaling_lands_on_first_and_last_pass() {
        let cfg = NttConfig::inverse().with_coset(true);
        let p = plan(27, &cfg);
        assert_eq!(p.passes.len(), 3);
        assert_eq!(p.passes[0].flags, flags::INVERSE);
        assert_eq!(
            p.passes[2].flags,
            flags::INVERSE | flags::POST_COSET | flags::POST_BITREV
        );
        let fwd = NttConfig::forward()
            .with_coset(true)
            .with_orders(Ordering::BitReversed, Ordering::Natural);
        let p = plan(5, &fwd);
        assert_eq!(
            p.passes,
            vec![Pass {
                b0: 0,
                k: 5,
                c: 0,
                flags: flags::DIT | flags::PRE_COSET | flags::PRE_BITREV
            }]
        );
        assert!(!p.bitrev_after);
        assert!(plan(0, &fwd).passes.is_empty());
    }

    #[test]
    fn small_tiles_make_more_passes() {
        let p = plan_with_tiles(12, &NttConfig::forward(), 4);
        assert_eq!(p.passes.len(), 3);
        assert!(p.passes.iter().all(|x| x.tile_bits() <= 4));
        let a = NttPassArgs::new(12, &p.passes[2], 0x1000, 0x2000, 14, 0x3000, 0x5000);
        assert_eq!(
            (a.n, a.b0, a.k, a.tw_log, a.coset),
            (4096, 0, 4, 14, 0x3000)
        );
        let inv = plan(3, &NttConfig::inverse().with_coset(true));
        let a = NttPassArgs::new(3, &inv.passes[0], 0, 0, 16, 0x3000, 0x5000);
        assert_eq!(a.coset, 0x5000);
    }

    #[test]
    fn tiles_carry_neighbours_for_coalescing() {
        let p = plan(27, &NttConfig::forward());
        let shapes: Vec<(u32, u32, u32)> = p.passes.iter().map(|x| (x.b0, x.k, x.c)).collect();
        assert_eq!(shapes, vec![(18, 9, 2), (9, 9, 2), (0, 9, 0)]);
        assert_eq!(p.passes[0].tiles(27), 1 << 16);
        assert_eq!(p.passes[0].threads(), 256);
        assert_eq!(p.passes[0].shared_bytes(), 64 * 1024);
    }
}
