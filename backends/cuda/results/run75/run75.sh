#!/usr/bin/env bash
# Run 75: the tree after stop 36's changes (the per-scalar pass rule as
# MsmGroup::PASS_BYTES_PER_SCALAR, the same values; test and docs changes otherwise). One build
# (carry .carry/r75.tar.xz, bin/ from backends/cuda/scripts/build-device.sh): the conformance
# suite in full and at the streaming tier (where the per-scalar rule sizes the passes and the
# tiers), and K = 24 proofs as in run 74 for comparison.
set -u
out=${OUT:-/tmp/o}; w=/tmp/r75; mkdir -p "$out" $w; s=$w/summary.txt
d=/tmp/r75bin; mkdir -p $d; [ -x $d/bin/bellows ] || xz -dc .carry/r75.tar.xz | tar xf - -C $d
b=$d/bin
save() { cp "$s" "$out/summary.txt"; tar czf "$out/run75-logs.tgz" -C $w .; }
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
