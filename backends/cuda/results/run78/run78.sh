#!/usr/bin/env bash
# Run 78: the final tree of stop 38 (89d3aa9: the G1 phase moved to backend/phase.rs unchanged,
# split-phase removed). One build (carry .carry/r78.tar.xz, bin/ from
# backends/cuda/scripts/build-device.sh): the conformance suite in full and at the streaming
# tier, and K = 24 proofs as in runs 74, 75 and 77.
set -u
out=${OUT:-/tmp/o}; w=/tmp/r78; mkdir -p "$out" $w; s=$w/summary.txt
d=/tmp/r78bin; mkdir -p $d; [ -x $d/bin/bellows ] || xz -dc .carry/r78.tar.xz | tar xf - -C $d
b=$d/bin
save() { cp "$s" "$out/summary.txt"; tar czf "$out/run78-logs.tgz" -C $w .; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader >> "$s"
line() { grep -hE '^  (synthesis|G1 phase|total)' "$1" | awk '{$1=$1};1' | tr '\n' ';'; }
t0=$(date +%s)
timeout 120 $b/bellows conformance --backend cuda --full --max-log-size 18 > $w/conf.log 2>&1
echo "conformance --full 18 rc=$? in $(( $(date +%s) - t0 )) s: $(grep -hE '^(PASS|FAIL)' $w/conf.log | tr '\n' ' ')" >> "$s"
t0=$(date +%s)
timeout 120 $b/bellows conformance --backend cuda --max-log-size 16 --backend-opt gpu-memory-limit=4MiB > $w/conf-stream.log 2>&1
echo "conformance streaming 16 rc=$? in $(( $(date +%s) - t0 )) s: $(grep -hE '^(PASS|FAIL)' $w/conf-stream.log | tr '\n' ' ')" >> "$s"
save
for bits in 90 0; do
  timeout 100 $b/bellows bench --backend cuda -k 24 --bits-pct $bits --reps 3 --warmup 1 --backend-opt msm-precompute=on > $w/k24-$bits.log 2>&1
  echo "K=24 bits=$bits rc=$?: $(line $w/k24-$bits.log)" >> "$s"; save
done
save
cat "$s"
