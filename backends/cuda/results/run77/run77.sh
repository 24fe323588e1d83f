#!/usr/bin/env bash
# Run 77: the G1 phase split over two lanes of the GPU (option split-phase=on: the quotient and
# the H MSM on one, the L, A, B1 and G2 MSMs over the assignments on the other, at once), and
# bellows-cuda-msm --overlap (two MSMs on two lanes against one after the other). One build
# (carry .carry/r77.tar.xz, bin/ from backends/cuda/scripts/build-device.sh). Side by side in
# one process: bench --alternate-env BELLOWS_SPLIT_PHASE=on,off (off = one stream, as before).
#   STEPS="conf overlap k24" | "k27"
set -u
out=${OUT:-/tmp/o}; w=/tmp/r77; mkdir -p "$out" $w; s=$w/summary.txt
d=/tmp/r77bin; mkdir -p $d; [ -x $d/bin/bellows ] || xz -dc .carry/r77.tar.xz | tar xf - -C $d
b=$d/bin
steps=" ${STEPS:-conf overlap k24} "
has() { [[ "$steps" == *" $1 "* ]]; }
save() { cp "$s" "$out/summary.txt"; tar czf "$out/run77-logs.tgz" -C $w .; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader >> "$s"
echo "steps:$steps" >> "$s"
split="--backend-opt split-phase=on"
alt="--alternate-env BELLOWS_SPLIT_PHASE=on,off"
per() { sed -n '/^per value of/,$p' "$1" | awk '{$1=$1};1' | tr '\n' ';'; }
if has conf; then
  t0=$(date +%s)
  timeout 150 $b/bellows conformance --backend cuda --full --max-log-size 18 $split > $w/conf.log 2>&1
  echo "conformance --full 18 split rc=$? in $(( $(date +%s) - t0 )) s: $(grep -hE '^(PASS|FAIL)' $w/conf.log | tr '\n' ' ')" >> "$s"
  t0=$(date +%s)
  timeout 120 $b/bellows conformance --backend cuda --max-log-size 16 --backend-opt gpu-memory-limit=4MiB $split > $w/conf-stream.log 2>&1
  echo "conformance streaming 16 split rc=$? in $(( $(date +%s) - t0 )) s: $(grep -hE '^(PASS|FAIL)' $w/conf-stream.log | tr '\n' ' ')" >> "$s"
  save
fi
if has overlap; then
  t0=$(date +%s)
  timeout 150 $b/bellows-cuda-msm --log-n "" --check 10 --iters 3 --overlap 26 > $w/overlap.log 2>&1
  echo "overlap rc=$? in $(( $(date +%s) - t0 )) s" >> "$s"
  grep -hE '^(RESULT|check .*MISMATCH|generated|.*ERROR)' $w/overlap.log >> "$s"; save
fi
if has k24; then
  for bits in 0 90; do
    t0=$(date +%s)
    RUST_LOG=info timeout 150 $b/bellows bench --backend cuda -k 24 --bits-pct $bits --reps 6 --warmup 2 --backend-opt msm-precompute=on $split $alt > $w/k24-$bits.log 2>&1
    echo "K=24 bits=$bits rc=$? in $(( $(date +%s) - t0 )) s: $(per $w/k24-$bits.log)" >> "$s"
    grep -h "out of device memory" $w/k24-$bits.log | head -2 >> "$s"; save
  done
fi
if has k27; then
  t0=$(date +%s)
  RUST_LOG=info timeout 420 $b/bellows bench --backend cuda -k 27 --bits-pct 90 --reps 4 --warmup 2 $split $alt > $w/k27.log 2>&1
  echo "K=27 bits=90 rc=$? in $(( $(date +%s) - t0 )) s: $(per $w/k27.log)" >> "$s"
  grep -hE 'rep [0-9]|out of device memory' $w/k27.log | sed 's/.*INFO //' >> "$s"; save
fi
save
cat "$s"
