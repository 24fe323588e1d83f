//! NTTs and the fused Groth16 quotient on the device (kernels in `shaders/ntt.wgsl`).
//!
//! Every configuration of [`NttConfig`] maps onto one in-place transform that flips the storage
//! order, one element-wise pass of powers for the coset shift and the 1/n, and a bit-reversal
//! pass only when input and output orders are the same (the mapping of the CPU backend):
//! - forward: (coset: x_i ·= g^i) then decimation in frequency from natural order (output
//!   bit-reversed) or decimation in time from bit-reversed order (output natural);
//! - inverse: the same transforms with ω⁻¹, then x_i ·= n⁻¹·g^(−i) (g = 1 without coset),
//!   positions read in the order the transform left them.
//!
//! The powers come from two tables of about √n entries each (`power` in ntt.wgsl), the twiddles
//! from a table of n/2 entries built on the device once per size and direction and kept.
//!
//! `h_poly` keeps a, b, c on the device from upload to download: per vector three inverse DIF
//! transforms, the coset shift with the 1/n (one pass of powers, on bit-reversed positions),
//! three forward DIT transforms, the pointwise (a·b − c)/Z(g), one inverse DIF, the inverse
//! coset shift with 1/n, and the one bit-reversal pass.

use std::{collections::HashMap, sync::Mutex};

use bellows_backend_api::{
    backend::{
        ntt::{batch_size, coset_generator, omega},
        quotient::z_inverse_on_coset,
        NttConfig, NttDirection, Ordering,
    },
    layout::Fr,
    Error, Result,
};
use ff::Field;

use crate::{
    gpu::{Batch, Gpu, Module, Params, Slice},
    plain::{bytes, bytes_mut},
};

/// Bytes of one Fr element.
const FR_BYTES: u64 = 32;
/// log2 of the elements of one workgroup-memory block (BLOCK_LOG in ntt.wgsl).
const BLOCK_LOG: u32 = 9;
/// Workgroup memory of one block.
const BLOCK_BYTES: u32 = (FR_BYTES as u32) << BLOCK_LOG;

/// Device state of the NTTs: twiddle tables by (log_n, inverse), and a small buffer bound where
/// a kernel ignores a binding.
pub struct NttEngine {
    twiddles: Mutex<HashMap<(u32, bool), wgpu::Buffer>>,
    dummy: wgpu::Buffer,
}

/// What a recorded pass works on: `count` vectors of 2^`log_n` elements, one after another in
/// `data`.
#[derive(Clone, Copy)]
struct Vectors<'a> {
    data: &'a wgpu::Buffer,
    log_n: u32,
    count: u64,
}

fn params(log_n: u32, log_m: u32, count: u64, flag: u32, log_lo: u32) -> Params {
    let mut p = [0u32; 16];
    p[0] = log_n;
    p[1] = log_m;
    p[2] = count as u32;
    p[3] = flag;
    p[4] = log_lo;
    p
}

/// `lo = x^0 … x^(2^L − 1)` followed by `hi = c·x^(s·2^L)` for `s < ⌈count / 2^L⌉`, with
/// `L = ⌈log2(count) / 2⌉`: `c·x^i = hi[i >> L]·lo[i mod 2^L]` for every i < count.
pub fn power_tables(x: blstrs::Scalar, c: blstrs::Scalar, count: u64) -> (u32, Vec<Fr>) {
    let bits = 64 - count.max(1).saturating_sub(1).leading_zeros();
    let log_lo = bits.div_ceil(2);
    let lo_len = 1usize << log_lo;
    let hi_len = (count.max(1) as usize).div_ceil(lo_len);
    let mut v = Vec::with_capacity(lo_len + hi_len);
    let mut p = blstrs::Scalar::ONE;
    for _ in 0..lo_len {
        v.push(Fr::from(p));
        p *= x;
    }
    // p = x^(2^L) now.
    let mut q = c;
    for _ in 0..hi_len {
        v.push(Fr::from(q));
        q *= p;
    }
    (log_lo, v)
}

impl NttEngine {
    /// The engine of `gpu`.
    pub fn new(gpu: &Gpu) -> Result<Self> {
        Ok(Self {
            twiddles: Mutex::new(HashMap::new()),
            dummy: gpu.storage(256, "unused")?,
        })
    }

    /// The table ω^0 … ω^(n/2 − 1) (ω⁻¹ when `inverse`) of size 2^log_n, built on first use.
    fn twiddles(&self, gpu: &Gpu, log_n: u32, inverse: bool) -> Result<wgpu::Buffer> {
        let mut cache = self.twiddles.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = cache.get(&(log_n, inverse)) {
            return Ok(t.clone());
        }
        let half = 1u64 << (log_n - 1);
        let mut w = omega(log_n);
        if inverse {
            w = w.invert().expect("a root of unity is invertible");
        }
        let table = gpu.storage(half * FR_BYTES, "twiddles")?;
        let (log_lo, small) = power_tables(w, blstrs::Scalar::ONE, half);
        let small = gpu.upload(bytes(&small), "power tables")?;
        let k = gpu.kernel(Module::Ntt, "expand_powers")?;
        let mut b = gpu.batch();
        b.dispatch(
            &k,
            &self.bind(&[&table, &small]),
            params(log_n, 0, half, 0, log_lo),
            half,
        );
        b.submit()?;
        cache.insert((log_n, inverse), table.clone());
        Ok(table)
    }

    /// `bufs` as a kernel's four bindings, those it ignores bound to the dummy buffer.
    fn bind(&self, bufs: &[&wgpu::Buffer]) -> [Slice; 4] {
        std::array::from_fn(|i| bufs.get(i).copied().unwrap_or(&self.dummy).into())
    }

    /// Records the radix-2 stages of one transform of every vector of `v`: decimation in
    /// frequency (natural → bit-reversed) when `dif`, else in time (bit-reversed → natural).
    fn record_stages(
        &self,
        gpu: &Gpu,
        b: &mut Batch<'_>,
        v: Vectors<'_>,
        dif: bool,
        inverse: bool,
    ) -> Result<()> {
        let Vectors {
            data,
            log_n,
            count: vectors,
        } = v;
        if log_n == 0 {
            return Ok(());
        }
        let tw = self.twiddles(gpu, log_n, inverse)?;
        let bind = self.bind(&[data, &tw]);
        if log_n >= BLOCK_LOG && gpu.limits.max_compute_workgroup_storage_size >= BLOCK_BYTES {
            // Passes of up to BLOCK_LOG stages in workgroup memory: stages [lo, lo + s), the
            // block over bits [b, b + BLOCK_LOG) with b = min(lo, log_n − BLOCK_LOG).
            let k = gpu.kernel(Module::Ntt, if dif { "dif_block" } else { "dit_block" })?;
            let blocks = vectors << (log_n - BLOCK_LOG);
            let mut passes = Vec::new();
            let mut lo = 0;
            while lo < log_n {
                let s = BLOCK_LOG.min(log_n - lo);
                passes.push((lo, s));
                lo += s;
            }
            if dif {
                passes.reverse();
            }
            for (lo, s) in passes {
                let base = lo.min(log_n - BLOCK_LOG);
                b.dispatch_groups(&k, &bind, params(log_n, lo, 0, s, base), blocks);
            }
            return Ok(());
        }
        let k = gpu.kernel(Module::Ntt, if dif { "dif_stage" } else { "dit_stage" })?;
        let count = vectors << (log_n - 1);
        let stages: Vec<u32> = if dif {
            (0..log_n).rev().collect()
        } else {
            (0..log_n).collect()
        };
        for log_m in stages {
            b.dispatch(&k, &bind, params(log_n, log_m, count, 0, 0), count);
        }
        Ok(())
    }

    /// Records `data[s] *= c·x^i` for every element of `v`, i its position (bit-reversed when
    /// `bitrev`).
    fn record_powers(
        &self,
        gpu: &Gpu,
        b: &mut Batch<'_>,
        v: Vectors<'_>,
        [x, c]: [blstrs::Scalar; 2],
        bitrev: bool,
    ) -> Result<()> {
        let n = 1u64 << v.log_n;
        let (log_lo, small) = power_tables(x, c, n);
        let small = gpu.upload(bytes(&small), "power tables")?;
        let k = gpu.kernel(Module::Ntt, "mul_powers")?;
        let count = v.count * n;
        b.dispatch(
            &k,
            &self.bind(&[v.data, &small]),
            params(v.log_n, 0, count, bitrev as u32, log_lo),
            count,
        );
        Ok(())
    }

    /// Records the bit-reversal permutation of every vector of `v`.
    fn record_bit_reverse(&self, gpu: &Gpu, b: &mut Batch<'_>, v: Vectors<'_>) -> Result<()> {
        if v.log_n == 0 {
            return Ok(());
        }
        let k = gpu.kernel(Module::Ntt, "bit_reverse_permute")?;
        let count = v.count << v.log_n;
        b.dispatch(
            &k,
            &self.bind(&[v.data]),
            params(v.log_n, 0, count, 0, 0),
            count,
        );
        Ok(())
    }

    /// Records the transform `cfg` of every vector of `v`.
    fn record(&self, gpu: &Gpu, b: &mut Batch<'_>, v: Vectors<'_>, cfg: &NttConfig) -> Result<()> {
        let log_n = v.log_n;
        let n_inv = blstrs::Scalar::from(1u64 << log_n)
            .invert()
            .expect("n is invertible in Fr");
        let g = coset_generator();
        let in_br = cfg.input_order == Ordering::BitReversed;
        let out_br = cfg.output_order == Ordering::BitReversed;
        match cfg.direction {
            NttDirection::Forward => {
                if cfg.coset {
                    self.record_powers(gpu, b, v, [g, blstrs::Scalar::ONE], in_br)?;
                }
                self.record_stages(gpu, b, v, !in_br, false)?;
            }
            NttDirection::Inverse => {
                self.record_stages(gpu, b, v, !in_br, true)?;
                let x = if cfg.coset {
                    g.invert().expect("g is invertible")
                } else {
                    blstrs::Scalar::ONE
                };
                // After DIF (natural input) the coefficients are in bit-reversed positions.
                self.record_powers(gpu, b, v, [x, n_inv], !in_br)?;
            }
        }
        // The transform flipped the order: natural in → bit-reversed out, and back.
        if in_br == out_br {
            self.record_bit_reverse(gpu, b, v)?;
        }
        Ok(())
    }

    /// Vectors of 2^log_n elements one storage buffer holds, or an error when not even one fits.
    pub fn vectors_per_buffer(gpu: &Gpu, log_n: u32) -> Result<u64> {
        let limit = gpu
            .limits
            .max_storage_buffer_binding_size
            .min(gpu.limits.max_buffer_size);
        let vec_bytes = FR_BYTES << log_n;
        if vec_bytes > limit {
            return Err(Error::invalid(format!(
                "an NTT of 2^{log_n} needs a storage buffer of {} bytes; adapter {} binds at most \
                 {limit} bytes (NTTs up to 2^{} on it)",
                vec_bytes,
                gpu.name,
                max_log_ntt(gpu)
            )));
        }
        Ok(limit / vec_bytes)
    }

    /// Transforms every vector of `data` in place: per chunk of as many vectors as one storage
    /// binding holds, one command buffer (the copy in from a mapped staging buffer, the passes,
    /// the copy out to a mapped readback buffer), all buffers kept across calls.
    pub fn ntt(&self, gpu: &Gpu, data: &mut [Fr], log_n: u32, cfg: &NttConfig) -> Result<()> {
        let batch = batch_size(data.len(), log_n)? as u64;
        if batch == 0 {
            return Ok(());
        }
        let per = Self::vectors_per_buffer(gpu, log_n)?.min(batch);
        let n = 1usize << log_n;
        let buf = gpu.scratch("ntt data", per * (FR_BYTES << log_n))?;
        for chunk in data.chunks_mut(per as usize * n) {
            let vectors = (chunk.len() / n) as u64;
            let len = std::mem::size_of_val(chunk) as u64;
            let mut b = gpu.batch();
            b.upload("ntt upload", &buf, 0, bytes(chunk))?;
            let v = Vectors {
                data: &buf,
                log_n,
                count: vectors,
            };
            self.record(gpu, &mut b, v, cfg)?;
            b.download("ntt readback", &buf, 0, len)?;
            b.finish(&mut [bytes_mut(chunk)])?;
        }
        Ok(())
    }

    /// The fused quotient of every vector triple; leaves h in `a`.
    pub fn h_poly(&self, gpu: &Gpu, a: &mut [Fr], b: &[Fr], c: &[Fr], log_n: u32) -> Result<()> {
        let batch = batch_size(a.len(), log_n)? as u64;
        if batch == 0 {
            return Ok(());
        }
        let per = Self::vectors_per_buffer(gpu, log_n)?.min(batch);
        let n = 1usize << log_n;
        let size = per * (FR_BYTES << log_n);
        let bufs = [
            gpu.scratch("ntt data", size)?,
            gpu.scratch("h_poly b", size)?,
            gpu.scratch("h_poly c", size)?,
        ];
        let zinv = gpu.upload(bytes(&[Fr::from(z_inverse_on_coset(log_n))]), "1/Z(g)")?;
        let n_inv = blstrs::Scalar::from(1u64 << log_n)
            .invert()
            .expect("n is invertible in Fr");
        let g = coset_generator();
        let g_inv = g.invert().expect("g is invertible");
        let step = per as usize * n;
        for (k, ac) in a.chunks_mut(step).enumerate() {
            let vectors = (ac.len() / n) as u64;
            let range = k * step..k * step + ac.len();
            let mut rec = gpu.batch();
            rec.upload("ntt upload", &bufs[0], 0, bytes(ac))?;
            rec.upload("h_poly upload b", &bufs[1], 0, bytes(&b[range.clone()]))?;
            rec.upload("h_poly upload c", &bufs[2], 0, bytes(&c[range]))?;
            let v = |data| Vectors {
                data,
                log_n,
                count: vectors,
            };
            for buf in &bufs {
                // Inverse DIF: coefficients in bit-reversed positions, without the 1/n.
                self.record_stages(gpu, &mut rec, v(buf), true, true)?;
                // Coefficient i ·= n⁻¹·g^i, then the forward DIT back to natural order: the
                // evaluations on the coset g·H.
                self.record_powers(gpu, &mut rec, v(buf), [g, n_inv], true)?;
                self.record_stages(gpu, &mut rec, v(buf), false, false)?;
            }
            let k = gpu.kernel(Module::Ntt, "quotient_pointwise")?;
            let count = vectors << log_n;
            rec.dispatch(
                &k,
                &self.bind(&[&bufs[0], &zinv, &bufs[1], &bufs[2]]),
                params(log_n, 0, count, 0, 0),
                count,
            );
            self.record_stages(gpu, &mut rec, v(&bufs[0]), true, true)?;
            self.record_powers(gpu, &mut rec, v(&bufs[0]), [g_inv, n_inv], true)?;
            self.record_bit_reverse(gpu, &mut rec, v(&bufs[0]))?;
            rec.download(
                "ntt readback",
                &bufs[0],
                0,
                std::mem::size_of_val(ac) as u64,
            )?;
            rec.finish(&mut [bytes_mut(ac)])?;
        }
        Ok(())
    }
}

/// The largest NTT (log2) whose vector fits one storage buffer of `gpu` (at most 2^31 elements:
/// indices are 32-bit words in the kernels, 8 per element... capped at 2^27).
pub fn max_log_ntt(gpu: &Gpu) -> u32 {
    let limit = gpu
        .limits
        .max_storage_buffer_binding_size
        .min(gpu.limits.max_buffer_size);
    let elems = limit / FR_BYTES;
    (63 - elems.max(1).leading_zeros()).min(MAX_LOG_N)
}

/// Word indices are u32 in the kernels (8 words per element): 2^27 elements at most.
pub const MAX_LOG_N: u32 = 27;
