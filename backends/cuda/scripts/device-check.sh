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
# Machine code of the hot kernels, and an instruction histogram of each (where cuobjdump exists).
if command -v cuobjdump >/dev/null && [ -f .carry/bellows.fatbin ]; then
  for k in bellows_bench_fr_mul bellows_bench_fr_mul_generic bellows_bench_fp_mul bellows_ntt_pass; do
    cuobjdump -sass -fun "$k" .carry/bellows.fatbin > "$out/sass-$k.txt" 2>&1
    echo "$k: $(grep -cE '^\s+/\*[0-9a-f]{4,6}\*/' "$out/sass-$k.txt") instructions;" \
      "$(grep -oE '^\s+/\*[0-9a-f]{4,6}\*/\s+(@!?U?P[0-9T] )?[A-Z0-9]+' "$out/sass-$k.txt" | awk '{print $NF}' | sort | uniq -c | sort -rn | head -8 | awk '{printf "%s %s, ", $2, $1}')"
  done | tee "$out/sass-summary.txt"
  cat "$out"/sass-bellows_*.txt > "$out/sass.txt" && rm "$out"/sass-bellows_*.txt
fi
"$bin" "$@" 2>&1 | tee "$out/check.log"
rc=${PIPESTATUS[0]}
nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv >> "$out/machine.txt" 2>&1
echo "exit status $rc"
exit "$rc"
