#!/usr/bin/env bash
# Builds, here (x86-64, release), everything the H200 run of the wgpu backend needs and puts
# stripped copies in .carry/bin (git-ignored): the `bellows` CLI with the wgpu, CUDA and CPU
# plugins beside it (so `--backend wgpu|cuda` find them in the executable's folder), the
# side-by-side benchmark `bellows-wgpu-bench` and the kernel compile timer; and, once, the
# Vulkan loader packages the device machine lacks, in .gl (see /work/.library/device/README.md).
#   bench/wgpu-build.sh
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
# The CUDA plugin with its kernels (the side-by-side numbers need it).
if [ -f ../shared/tools/cuda-toolchain.sh ]; then
  eval "$(bash ../shared/tools/cuda-toolchain.sh "$root/.cuda-toolchain")"
  export BELLOWS_REQUIRE_KERNELS=1
fi
cargo build --release -p bellows-cli -p bellows-backend-wgpu -p bellows-backend-cuda -p bellows-backend-cpu
cargo build --release -p bellows-wgpu --features bench --bin bellows-wgpu-bench --example compile_times
mkdir -p .carry/bin
for f in bellows libbellows_backend_wgpu.so libbellows_backend_cuda.so libbellows_backend_cpu.so bellows-wgpu-bench; do
  objcopy --strip-debug "target/release/$f" ".carry/bin/$f"
done
objcopy --strip-debug target/release/examples/compile_times .carry/bin/wgpu-compile-times
# The Vulkan loader (libvulkan1) for the device machine, as the device README describes (.gl is
# git-ignored).
if ! ls .gl/libvulkan1_*.deb >/dev/null 2>&1; then
  mkdir -p .gl /tmp/amd64/partial
  o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
  apt-get $o update
  (cd .gl && apt-get $o download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
fi
ls -la .carry/bin .gl
