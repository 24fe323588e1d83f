//! Compiles the vendor's C kernels into a static library linked into the plugin.
//!
//! A CUDA vendor does the same with `nvcc`: compile `.cu` files with `-Xcompiler -fPIC` into an
//! archive (or let `cc::Build::new().cuda(true)` drive nvcc), link it statically, and link the CUDA
//! runtime statically too (`cudart_static`) so the plugin file carries everything but the driver.

fn main() {
    println!("cargo:rerun-if-changed=kernels/permute.c");
    cc::Build::new()
        .file("kernels/permute.c")
        .flag_if_supported("-O3")
        .compile("vendor_kernels");
}
