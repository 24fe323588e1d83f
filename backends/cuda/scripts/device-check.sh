#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, after build-check.sh has put the program in
# .carry/: records the GPU's state, runs bellows-cuda-check with the given arguments, and writes
# everything under $OUT (or /tmp/bellows-cuda-out). Exits with the check program's status.
#   backends/cuda/scripts/device-check.sh [bellows-cuda-check arguments...]
set -u -o pipefail
out=${OUT:-/tmp/bellows-cuda-out}
mkdir -p "$out"
bin=.carry/bellows-cuda-check
{
  date -u
  uname -a
  nproc
  nvidia-smi
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv
} > "$out/machine.txt" 2>&1
head -c 2000 "$out/machine.txt" | grep -E "NVIDIA|Driver" | head -3
"$bin" "$@" 2>&1 | tee "$out/check.log"
rc=${PIPESTATUS[0]}
nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv >> "$out/machine.txt" 2>&1
echo "exit status $rc"
exit "$rc"
