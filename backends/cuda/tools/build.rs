//! Compiles the test and benchmark kernels (`kernels/testing.cu`, over the production headers of
//! `../kernels`) ahead of time into the fatbin that src/test_kernels.rs embeds, as the backend's
//! build script compiles the production kernels (../build/nvcc.rs).

#[path = "../build/nvcc.rs"]
mod nvcc;

fn main() {
    nvcc::build(&nvcc::Unit {
        entry: "kernels/testing.cu",
        include: &["kernels", "../kernels"],
        out: "bellows_testing.fatbin",
        cfg: "bellows_testing_kernels",
        what: "bellows-cuda-tools",
    });
}
