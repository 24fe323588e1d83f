//! The Groth16 quotient h on the device ([`bellows_backend_api::backend::Ntt::h_poly`]): a, b, c go up,
//! h stays in device memory, where the G1 phase's H MSM reads it.
//!
//! h = (coset_iNTT(A·B) − C)/Z, where A and B are a's and b's evaluations on the coset, C is c's
//! coefficient vector and Z = g^n − 1 is Z's constant value on the coset: the inverse coset
//! transform is linear and undoes the forward coset transform of c's coefficients, so c only
//! goes through the inverse transform, six transforms instead of seven.

use bellows_backend_api::{
    backend::{quotient::z_inverse_on_coset, NttConfig, Ordering},
    layout::Fr,
    Result,
};
use cudarc::driver::{CudaFunction, DeviceRepr, PushKernelArg};

use crate::{
    buffers::DeviceVec,
    device::CudaDevice,
    launch::{ptr, ptr_mut, stride_cfg},
    ntt::Ntt,
};

/// An Fr passed by value to a kernel.
#[repr(C)]
#[derive(Clone, Copy)]
struct FrArg([u64; 4]);
// SAFETY: four u64 limbs, the layout of the kernel's `Fr` parameter (32 bytes, 8-aligned).
unsafe impl DeviceRepr for FrArg {}

/// The quotient's two pointwise kernels of one GPU (the transforms are [`Ntt`]'s).
pub struct Quotient {
    product: CudaFunction,
    finish: CudaFunction,
}

impl Quotient {
    /// Loads the kernels from `dev`'s module (any lane of the GPU).
    pub fn new(dev: &CudaDevice) -> Result<Self> {
        Ok(Self {
            product: dev.function("bellows_quotient_product")?,
            finish: dev.function("bellows_quotient_finish")?,
        })
    }

    /// The kernels, by name (for [`CudaDevice::kernel_report`]).
    pub fn kernels(&self) -> Vec<(&'static str, &CudaFunction)> {
        vec![
            ("bellows_quotient_product", &self.product),
            ("bellows_quotient_finish", &self.finish),
        ]
    }

    /// The quotient of host vectors a, b, c on lane `dev`, h returned on the device; and the
    /// vectors of `also` (the assignments) copied into buffers allocated beside a, b and c,
    /// returned in order.
    ///
    /// The three buffers are allocated first and every copy is ordered after that point alone
    /// ([`CudaDevice::upload_staged_after`]), and each vector's transforms are queued right after
    /// its own upload: so the copy engine fills b while the compute stream transforms a, and c
    /// while it transforms b, instead of each copy waiting for the transforms queued before it.
    /// The vectors of `also` are copied after c, under c's transform and the quotient's last
    /// steps.
    #[allow(clippy::too_many_arguments)]
    pub fn upload_and_compute(
        &self,
        dev: &CudaDevice,
        ntt: &Ntt,
        a: &[Fr],
        b: &[Fr],
        c: &[Fr],
        log_n: u32,
        also: &[&[Fr]],
    ) -> Result<(DeviceVec<Fr>, Vec<DeviceVec<Fr>>)> {
        let mut da = dev.alloc_uninit::<Fr>(a.len())?;
        let mut db = dev.alloc_uninit::<Fr>(b.len())?;
        let mut dc = dev.alloc_uninit::<Fr>(c.len())?;
        let mut more = also
            .iter()
            .map(|v| dev.alloc_uninit::<Fr>(v.len()))
            .collect::<Result<Vec<_>>>()?;
        let allocated = dev.stream().record_event(None).map_err(|e| dev.err(e))?;
        for (host, d) in [(a, &mut da), (b, &mut db)] {
            dev.upload_staged_after(host, d, &allocated, |_, _| Ok(()))?;
            to_coset(dev, ntt, d, log_n)?;
        }
        dev.upload_staged_after(c, &mut dc, &allocated, |_, _| Ok(()))?;
        ntt.transform_device(dev, &mut dc, log_n, &NttConfig::inverse())?;
        self.product_and_divide(dev, ntt, &mut da, &db, &dc, log_n)?;
        // Queued after the quotient on the compute stream, so it does not wait for these copies;
        // on the copy stream they follow c's.
        for (host, d) in also.iter().zip(more.iter_mut()) {
            dev.upload_staged_after(host, d, &allocated, |_, _| Ok(()))?;
        }
        Ok((da, more))
    }

    /// A·B on the coset, the inverse coset transform, then (· − C)/Z: `a` receives h (`a`, `b`
    /// hold the coset evaluations, `c` the coefficients, all in natural order).
    fn product_and_divide(
        &self,
        dev: &CudaDevice,
        ntt: &Ntt,
        a: &mut DeviceVec<Fr>,
        b: &DeviceVec<Fr>,
        c: &DeviceVec<Fr>,
        log_n: u32,
    ) -> Result<()> {
        // Z(g·ω^j) = g^n − 1 for every j.
        let z_inv = FrArg(blst::blst_fr::from(z_inverse_on_coset(log_n)).l);
        let len = a.len() as u64;
        let cfg = stride_cfg(len);
        let pa = ptr_mut(a, dev);
        let (pb, pc) = (ptr(b, dev), ptr(c, dev));
        let mut l = dev.stream().launch_builder(&self.product);
        l.arg(&pa).arg(&pb).arg(&len);
        // SAFETY: reads and writes len elements of a, reads len of b (equal lengths).
        unsafe { l.launch(cfg) }.map_err(|e| dev.err(e))?;
        let inv_coset = NttConfig::inverse().with_coset(true);
        ntt.transform_device(dev, a, log_n, &inv_coset)?;
        let pa = ptr_mut(a, dev);
        let mut l = dev.stream().launch_builder(&self.finish);
        l.arg(&pa).arg(&pc).arg(&z_inv).arg(&len);
        // SAFETY: reads and writes len elements of a, reads len of c (equal lengths).
        unsafe { l.launch(cfg) }.map_err(|e| dev.err(e))?;
        Ok(())
    }
}

/// Evaluations → evaluations on the coset (inverse transform, then the forward coset
/// transform), queued on the compute stream.
fn to_coset(dev: &CudaDevice, ntt: &Ntt, v: &mut DeviceVec<Fr>, log_n: u32) -> Result<()> {
    let inv = NttConfig::inverse().with_orders(Ordering::Natural, Ordering::BitReversed);
    let fwd_coset = NttConfig::forward()
        .with_coset(true)
        .with_orders(Ordering::BitReversed, Ordering::Natural);
    ntt.transform_device(dev, v, log_n, &inv)?;
    ntt.transform_device(dev, v, log_n, &fwd_coset)
}
