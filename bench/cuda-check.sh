#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with the binaries of bench/cuda-build.sh
# carried (BIN, default .carry/bin): records the GPU's state, dumps the machine code of the hot
# kernels with an instruction histogram of each (where cuobjdump exists), and runs
# bellows-cuda-check (every kernel against blst and the CPU backend, bit for bit, then the
# arithmetic and NTT throughput) with the given arguments. Everything goes to $OUT (default
# /tmp/bellows-cuda-out); exits with the check program's status.
#   bench/cuda-check.sh [bellows-cuda-check arguments...]     (its defaults: --max-log 27 --repeats 7)
set -u -o pipefail
out=${OUT:-/tmp/bellows-cuda-out}
mkdir -p "$out"
B=${BIN:-.carry/bin}
{
  date -u
  uname -a
  nproc
  nvidia-smi
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv
} > "$out/machine.txt" 2>&1
head -c 2000 "$out/machine.txt" | grep -E "NVIDIA|Driver" | head -3
# Each kernel's SASS from whichever fatbin holds it (the production and the test kernels are
# compiled apart).
if command -v cuobjdump >/dev/null && ls "$B"/*.fatbin >/dev/null 2>&1; then
  for k in bellows_bench_fr_mul bellows_bench_fr_mul_generic bellows_bench_fp_mul bellows_ntt_pass; do
    for fb in "$B"/*.fatbin; do
      cuobjdump -sass -fun "$k" "$fb" > "$out/sass-$k.txt" 2>&1
      grep -qE '^\s+/\*[0-9a-f]{4,6}\*/' "$out/sass-$k.txt" && break
    done
    echo "$k: $(grep -cE '^\s+/\*[0-9a-f]{4,6}\*/' "$out/sass-$k.txt") instructions;" \
      "$(grep -oE '^\s+/\*[0-9a-f]{4,6}\*/\s+(@!?U?P[0-9T] )?[A-Z0-9]+' "$out/sass-$k.txt" | awk '{print $NF}' | sort | uniq -c | sort -rn | head -8 | awk '{printf "%s %s, ", $2, $1}')"
  done | tee "$out/sass-summary.txt"
  cat "$out"/sass-bellows_*.txt > "$out/sass.txt" && rm "$out"/sass-bellows_*.txt
fi
"$B/bellows-cuda-check" "$@" 2>&1 | tee "$out/check.log"
rc=${PIPESTATUS[0]}
nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv >> "$out/machine.txt" 2>&1
echo "exit status $rc"
exit "$rc"
