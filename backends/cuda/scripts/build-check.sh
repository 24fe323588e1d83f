#!/usr/bin/env bash
# Builds the device check program here (x86-64, release, kernels required) and puts a stripped
# copy in .carry/ (git-ignored) for the GPU machine. Run from anywhere inside the repository.
#   backends/cuda/scripts/build-check.sh [TOOLCHAIN_DIR]
# TOOLCHAIN_DIR (default /tmp/cuda-toolchain) receives nvcc from ../shared/tools/cuda-toolchain.sh.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
toolchain=${1:-/tmp/cuda-toolchain}
eval "$(bash "$root/../shared/tools/cuda-toolchain.sh" "$toolchain")"
export BELLOWS_REQUIRE_KERNELS=1
cargo build --release -p bellows-cuda --features testing --bin bellows-cuda-check
mkdir -p .carry
objcopy --strip-debug target/release/bellows-cuda-check .carry/bellows-cuda-check
# The fatbin alone too, for cuobjdump on the GPU machine (the program embeds it as plain bytes).
fatbin=$(ls -t target/release/build/bellows-cuda-*/out/bellows.fatbin | head -1)
cp "$fatbin" .carry/bellows.fatbin
ls -la .carry/bellows-cuda-check .carry/bellows.fatbin
