#!/usr/bin/env bash
# Builds, here (x86-64, release, CUDA kernels required), what the Filecoin GPU run needs, and puts
# stripped copies in .carry/bin (git-ignored): `bellows` with `porep` (feature filecoin), the CUDA
# and CPU plugins beside it, and the Filecoin benchmark programs (c2_bench, load_bench, setup_bench).
#   integrations/filecoin/scripts/build-device.sh [TOOLCHAIN_DIR]
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
toolchain=${1:-$root/.cuda-toolchain}
eval "$(bash "$root/../shared/tools/cuda-toolchain.sh" "$toolchain")"
export BELLOWS_REQUIRE_KERNELS=1
cargo build --release -p bellows-cli --features filecoin -p bellows-backend-cuda -p bellows-backend-cpu
cargo build --release -p bellows-filecoin --example c2_bench --example load_bench --example setup_bench
mkdir -p .carry/bin
for f in bellows libbellows_backend_cuda.so libbellows_backend_cpu.so examples/c2_bench examples/load_bench examples/setup_bench; do
  objcopy --strip-debug "target/release/$f" ".carry/bin/$(basename "$f")"
done
ls -la .carry/bin
