//! Backends that wrap another backend (fault injectors, capability-editing test doubles,
//! counters) forward most calls unchanged. These macros write the forwarding once:
//! [`forward_ntt!`](crate::forward_ntt), [`forward_msm!`](crate::forward_msm) and
//! [`forward_memory!`](crate::forward_memory) each implement one trait of a wrapper type by
//! calling the same method on one of its fields; [`forward_primitives!`](crate::forward_primitives)
//! implements all three. A wrapper then writes by hand only the trait it changes (and
//! [`crate::Backend`] itself, whose `info` it usually edits).
//!
//! Every macro takes an optional third argument, a hook called as `hook(&self, "method")?` before
//! each forwarded call, so that a wrapper can fail or count calls by name:
//!
//! ```
//! use bellows_backend_api::{backend::BackendInfo, Backend, Result};
//! # use bellows_backend_api::{backend::*, layout::*};
//! # struct Noop;
//! # impl Ntt for Noop {
//! #     fn ntt(&self, _: &mut [Fr], _: u32, _: &NttConfig) -> Result<()> { Ok(()) }
//! # }
//! # impl Msm for Noop {
//! #     fn load_bases_g1(&self, _: SharedPoints<G1Affine>) -> Result<BasesHandle> {
//! #         Err(bellows_backend_api::Error::unsupported("noop", "load_bases_g1"))
//! #     }
//! #     fn free_bases(&self, _: BasesHandle) -> Result<()> { Ok(()) }
//! #     fn msm_g1(&self, _: BasesHandle, _: &[MsmJob<'_>], _: &mut [G1Jacobian]) -> Result<()> {
//! #         Ok(())
//! #     }
//! # }
//! # impl MemoryPool for Noop {}
//! # impl Backend for Noop {
//! #     fn info(&self) -> BackendInfo { BackendInfo::new("noop", "0", "does nothing") }
//! # }
//! /// Another backend under another name, logging every primitive call.
//! struct Renamed {
//!     inner: Noop,
//! }
//! fn log_call(_: &Renamed, call: &str) -> Result<()> {
//!     eprintln!("{call}");
//!     Ok(())
//! }
//! bellows_backend_api::forward_primitives!(Renamed, inner, log_call);
//! impl Backend for Renamed {
//!     fn info(&self) -> BackendInfo {
//!         let mut i = self.inner.info();
//!         i.name = "renamed".into();
//!         i
//!     }
//! }
//! ```
//!
//! `groth16_g1` is not forwarded by these macros: a wrapper that leaves it out of its `Backend`
//! impl gets the trait's default body (built from the forwarded primitives), which is what a
//! wrapper that counts or fails primitive calls wants; one that wants the inner backend's own
//! composite writes `self.inner.groth16_g1(input)` in its `Backend` impl.

/// Implements [`crate::backend::Ntt`] for `$ty` by forwarding to `self.$field` (see the
/// [module docs](crate::backend::forward)).
#[macro_export]
macro_rules! forward_ntt {
    ($ty:ty, $field:tt) => {
        $crate::forward_ntt!($ty, $field, |_: &$ty, _: &str| -> $crate::Result<()> {
            Ok(())
        });
    };
    ($ty:ty, $field:tt, $hook:expr) => {
        impl $crate::backend::Ntt for $ty {
            fn ntt(
                &self,
                data: &mut [$crate::layout::Fr],
                log_n: u32,
                cfg: &$crate::backend::NttConfig,
            ) -> $crate::Result<()> {
                ($hook)(self, "ntt")?;
                $crate::backend::Ntt::ntt(&self.$field, data, log_n, cfg)
            }
            fn h_poly(
                &self,
                a: &mut [$crate::layout::Fr],
                b: &mut [$crate::layout::Fr],
                c: &mut [$crate::layout::Fr],
                log_n: u32,
            ) -> $crate::Result<()> {
                ($hook)(self, "h_poly")?;
                $crate::backend::Ntt::h_poly(&self.$field, a, b, c, log_n)
            }
        }
    };
}

/// Implements [`crate::backend::Msm`] for `$ty` by forwarding to `self.$field` (see the
/// [module docs](crate::backend::forward)).
#[macro_export]
macro_rules! forward_msm {
    ($ty:ty, $field:tt) => {
        $crate::forward_msm!($ty, $field, |_: &$ty, _: &str| -> $crate::Result<()> {
            Ok(())
        });
    };
    ($ty:ty, $field:tt, $hook:expr) => {
        impl $crate::backend::Msm for $ty {
            fn load_bases_g1(
                &self,
                bases: $crate::backend::SharedPoints<$crate::layout::G1Affine>,
            ) -> $crate::Result<$crate::backend::BasesHandle> {
                ($hook)(self, "load_bases_g1")?;
                $crate::backend::Msm::load_bases_g1(&self.$field, bases)
            }
            fn load_bases_g2(
                &self,
                bases: $crate::backend::SharedPoints<$crate::layout::G2Affine>,
            ) -> $crate::Result<$crate::backend::BasesHandle> {
                ($hook)(self, "load_bases_g2")?;
                $crate::backend::Msm::load_bases_g2(&self.$field, bases)
            }
            fn load_bases_g1_encoded(
                &self,
                points: &dyn $crate::backend::EncodedPoints,
            ) -> $crate::Result<$crate::backend::EncodedLoad> {
                ($hook)(self, "load_bases_g1_encoded")?;
                $crate::backend::Msm::load_bases_g1_encoded(&self.$field, points)
            }
            fn load_bases_g2_encoded(
                &self,
                points: &dyn $crate::backend::EncodedPoints,
            ) -> $crate::Result<$crate::backend::EncodedLoad> {
                ($hook)(self, "load_bases_g2_encoded")?;
                $crate::backend::Msm::load_bases_g2_encoded(&self.$field, points)
            }
            fn free_bases(&self, handle: $crate::backend::BasesHandle) -> $crate::Result<()> {
                ($hook)(self, "free_bases")?;
                $crate::backend::Msm::free_bases(&self.$field, handle)
            }
            fn bases_need_host(
                &self,
                handle: $crate::backend::BasesHandle,
            ) -> $crate::Result<bool> {
                ($hook)(self, "bases_need_host")?;
                $crate::backend::Msm::bases_need_host(&self.$field, handle)
            }
            fn msm_g1(
                &self,
                handle: $crate::backend::BasesHandle,
                jobs: &[$crate::backend::MsmJob<'_>],
                out: &mut [$crate::layout::G1Jacobian],
            ) -> $crate::Result<()> {
                ($hook)(self, "msm_g1")?;
                $crate::backend::Msm::msm_g1(&self.$field, handle, jobs, out)
            }
            fn msm_g2(
                &self,
                handle: $crate::backend::BasesHandle,
                jobs: &[$crate::backend::MsmJob<'_>],
                out: &mut [$crate::layout::G2Jacobian],
            ) -> $crate::Result<()> {
                ($hook)(self, "msm_g2")?;
                $crate::backend::Msm::msm_g2(&self.$field, handle, jobs, out)
            }
        }
    };
}

/// Implements [`crate::backend::MemoryPool`] for `$ty` by forwarding to `self.$field` (see the
/// [module docs](crate::backend::forward)).
#[macro_export]
macro_rules! forward_memory {
    ($ty:ty, $field:tt) => {
        $crate::forward_memory!($ty, $field, |_: &$ty, _: &str| -> $crate::Result<()> {
            Ok(())
        });
    };
    ($ty:ty, $field:tt, $hook:expr) => {
        impl $crate::backend::MemoryPool for $ty {
            fn memory_info(&self) -> $crate::Result<$crate::backend::MemoryInfo> {
                ($hook)(self, "memory_info")?;
                $crate::backend::MemoryPool::memory_info(&self.$field)
            }
            fn set_memory_budget(&self, bytes: Option<u64>) -> $crate::Result<()> {
                ($hook)(self, "set_memory_budget")?;
                $crate::backend::MemoryPool::set_memory_budget(&self.$field, bytes)
            }
            unsafe fn pin_host(&self, ptr: *const u8, len: usize) -> $crate::Result<bool> {
                ($hook)(self, "pin_host")?;
                // SAFETY: the caller's contract (the range stays allocated until `unpin_host`)
                // is passed on unchanged.
                unsafe { $crate::backend::MemoryPool::pin_host(&self.$field, ptr, len) }
            }
            unsafe fn unpin_host(&self, ptr: *const u8) -> $crate::Result<()> {
                ($hook)(self, "unpin_host")?;
                // SAFETY: the caller's contract (`ptr` was pinned here, or not at all) is passed
                // on unchanged.
                unsafe { $crate::backend::MemoryPool::unpin_host(&self.$field, ptr) }
            }
            fn trim(&self) -> $crate::Result<()> {
                ($hook)(self, "trim")?;
                $crate::backend::MemoryPool::trim(&self.$field)
            }
            fn alloc_host(&self, bytes: usize) -> $crate::Result<Option<::std::ptr::NonNull<u8>>> {
                ($hook)(self, "alloc_host")?;
                $crate::backend::MemoryPool::alloc_host(&self.$field, bytes)
            }
            unsafe fn free_host(
                &self,
                ptr: ::std::ptr::NonNull<u8>,
                bytes: usize,
            ) -> $crate::Result<()> {
                // No hook: memory the inner backend gave must go back to it.
                // SAFETY: the caller's contract (from `alloc_host(bytes)` here, freed once) is
                // passed on unchanged: `alloc_host` above forwarded to the same inner backend.
                unsafe { $crate::backend::MemoryPool::free_host(&self.$field, ptr, bytes) }
            }
            fn reserve_host(&self, sizes: &[usize]) -> $crate::Result<()> {
                ($hook)(self, "reserve_host")?;
                $crate::backend::MemoryPool::reserve_host(&self.$field, sizes)
            }
        }
    };
}

/// [`forward_ntt!`](crate::forward_ntt), [`forward_msm!`](crate::forward_msm) and
/// [`forward_memory!`](crate::forward_memory) at once.
#[macro_export]
macro_rules! forward_primitives {
    ($ty:ty, $field:tt) => {
        $crate::forward_ntt!($ty, $field);
        $crate::forward_msm!($ty, $field);
        $crate::forward_memory!($ty, $field);
    };
    ($ty:ty, $field:tt, $hook:expr) => {
        $crate::forward_ntt!($ty, $field, $hook);
        $crate::forward_msm!($ty, $field, $hook);
        $crate::forward_memory!($ty, $field, $hook);
    };
}

#[cfg(test)]
// The forwarded `MemoryPool` methods are `unsafe fn`s calling `unsafe fn`s.
#[allow(unsafe_code)]
mod tests {
    use std::sync::Mutex;

    use crate::{
        backend::{BackendInfo, MemoryPool, Msm, Ntt, NttConfig},
        layout::Fr,
        Backend, Error, Result,
    };

    /// A backend answering every primitive with a fixed error naming the call.
    struct Inner;
    impl Ntt for Inner {
        fn ntt(&self, _: &mut [Fr], _: u32, _: &NttConfig) -> Result<()> {
            Err(Error::invalid("inner ntt"))
        }
    }
    impl Msm for Inner {
        fn load_bases_g1(
            &self,
            _: crate::backend::SharedPoints<crate::layout::G1Affine>,
        ) -> Result<crate::backend::BasesHandle> {
            Err(Error::invalid("inner load_bases_g1"))
        }
        fn free_bases(&self, _: crate::backend::BasesHandle) -> Result<()> {
            Err(Error::invalid("inner free_bases"))
        }
        fn msm_g1(
            &self,
            _: crate::backend::BasesHandle,
            _: &[crate::backend::MsmJob<'_>],
            _: &mut [crate::layout::G1Jacobian],
        ) -> Result<()> {
            Err(Error::invalid("inner msm_g1"))
        }
    }
    impl MemoryPool for Inner {
        fn trim(&self) -> Result<()> {
            Err(Error::invalid("inner trim"))
        }
    }

    struct Wrapper {
        inner: Inner,
        calls: Mutex<Vec<String>>,
        refuse: &'static str,
    }
    fn hook(w: &Wrapper, call: &str) -> Result<()> {
        w.calls.lock().unwrap().push(call.to_string());
        if call == w.refuse {
            return Err(Error::invalid(format!("refused {call}")));
        }
        Ok(())
    }
    crate::forward_primitives!(Wrapper, inner, hook);
    impl Backend for Wrapper {
        fn info(&self) -> BackendInfo {
            BackendInfo::new("wrapper", "0", "test")
        }
    }

    struct Tuple(Inner);
    crate::forward_primitives!(Tuple, 0);
    impl Backend for Tuple {
        fn info(&self) -> BackendInfo {
            BackendInfo::new("tuple", "0", "test")
        }
    }

    #[test]
    fn calls_reach_the_inner_backend_after_the_hook() {
        let w = Wrapper {
            inner: Inner,
            calls: Mutex::new(Vec::new()),
            refuse: "trim",
        };
        let mut d = [Fr::default(); 2];
        assert!(w
            .ntt(&mut d, 1, &NttConfig::forward())
            .unwrap_err()
            .to_string()
            .contains("inner ntt"));
        // h_poly reaches the inner backend's default body, which calls the inner ntt.
        let (mut a, mut b, mut c) = (d, d, d);
        assert!(w.h_poly(&mut a, &mut b, &mut c, 1).is_err());
        let h = crate::backend::BasesHandle {
            id: 0,
            group: crate::backend::Group::G1,
            len: 0,
        };
        assert!(w
            .free_bases(h)
            .unwrap_err()
            .to_string()
            .contains("inner free_bases"));
        // The hook's error stops the call before the inner backend sees it.
        assert!(w.trim().unwrap_err().to_string().contains("refused trim"));
        assert_eq!(
            *w.calls.lock().unwrap(),
            ["ntt", "h_poly", "free_bases", "trim"]
        );
        // Defaults of the inner backend come through: no G2, no memory info.
        assert!(matches!(w.memory_info(), Err(Error::Unsupported { .. })));
        let t = Tuple(Inner);
        assert!(t.trim().unwrap_err().to_string().contains("inner trim"));
    }
}
