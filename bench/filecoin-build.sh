#!/usr/bin/env bash
# Builds, here (x86-64, release, CUDA kernels required), what the Filecoin GPU run
# (bench/filecoin-c2.sh) needs, and puts stripped copies in .carry/bin (git-ignored): `bellows`
# with `porep` (feature filecoin), the CUDA and CPU plugins beside it, and the Filecoin benchmark
# programs (c2_bench, load_bench, setup_bench). About 15-25 minutes on 2 busy cores from a cold
# target folder (the filecoin-proofs stack and the CUDA kernels); then run bench/filecoin-c2.sh
# there with carry [".carry/bin"].
#   bench/filecoin-build.sh [TOOLCHAIN_DIR]
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
toolchain=${1:-$root/.cuda-toolchain}
eval "$(bash "$root/../shared/tools/cuda-toolchain.sh" "$toolchain")"
export BELLOWS_REQUIRE_KERNELS=1
cargo build --release -p bellows-cli --features bellows-cli/filecoin -p bellows-backend-cuda -p bellows-backend-cpu
cargo build --release -p bellows-filecoin --example c2_bench --example load_bench --example setup_bench
mkdir -p .carry/bin
for f in bellows libbellows_backend_cuda.so libbellows_backend_cpu.so examples/c2_bench examples/load_bench examples/setup_bench; do
  objcopy --strip-debug "target/release/$f" ".carry/bin/$(basename "$f")"
done
ls -la .carry/bin
# The device tool carries at most 64 MiB (working tree included).
total=$(du -cb .carry/bin/* | tail -n1 | cut -f1)
echo "carry: $((total / 1048576)) MiB in .carry/bin"
[ "$total" -lt $((56 * 1048576)) ] || { echo "too large to carry (64 MiB with the working tree)"; exit 1; }
