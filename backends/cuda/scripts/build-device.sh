#!/usr/bin/env bash
# Builds, here (x86-64, release, kernels required), everything a GPU run needs and puts stripped
# copies in .carry/bin (git-ignored): the `bellows` CLI, the CUDA and CPU plugins beside it (so
# `--backend cuda` finds the plugin in the executable's folder), and the CUDA check programs.
#   backends/cuda/scripts/build-device.sh [TOOLCHAIN_DIR]
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
toolchain=${1:-$root/.cuda-toolchain}
eval "$(bash "$root/../shared/tools/cuda-toolchain.sh" "$toolchain")"
export BELLOWS_REQUIRE_KERNELS=1
cargo build --release -p bellows-cli -p bellows-backend-cuda -p bellows-backend-cpu
cargo build --release -p bellows-cuda --features testing --bins
mkdir -p .carry/bin
for f in bellows libbellows_backend_cuda.so libbellows_backend_cpu.so bellows-cuda-msm bellows-cuda-check bellows-cuda-overhead; do
  objcopy --strip-debug "target/release/$f" ".carry/bin/$f"
done
ls -la .carry/bin
