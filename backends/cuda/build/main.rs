//! Compiles the production kernels (`kernels/backend.cu`) ahead of time into the fatbin that
//! src/fatbin.rs embeds (see build/nvcc.rs for how nvcc is found and what happens without it).

#[path = "nvcc.rs"]
mod nvcc;

fn main() {
    nvcc::build(&nvcc::Unit {
        entry: "kernels/backend.cu",
        include: &["kernels"],
        out: "bellows.fatbin",
        cfg: "bellows_kernels",
        what: "bellows-cuda",
    });
}
