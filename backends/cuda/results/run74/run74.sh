#!/usr/bin/env bash
# Run 74: density bitmaps uploaded once per proof and read in place by the MSM passes, and one
# pass for an MSM whose exact bound fits (the K = 27 G2 MSM was split in two). One build (carry
# .carry/r74.tar.xz, bin/ from backends/cuda/scripts/build-device.sh); "old" is the same binary
# under BELLOWS_MSM_DENSITY=host BELLOWS_MSM_WHOLE_PASS=off (both changes off).
#   STEPS="conf k24 k27new" | "k27old"
set -u
out=${OUT:-/tmp/o}; w=/tmp/r74; mkdir -p "$out" $w; s=$w/summary.txt
d=/tmp/r74bin; mkdir -p $d; [ -x $d/bin/bellows ] || xz -dc .carry/r74.tar.xz | tar xf - -C $d
b=$d/bin
steps=" ${STEPS:-conf k24} "
has() { [[ "$steps" == *" $1 "* ]]; }
save() { cp "$s" "$out/summary.txt"; tar czf "$out/run74-logs.tgz" -C $w .; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader >> "$s"
echo "steps:$steps" >> "$s"
line() { grep -hE '^  (synthesis|G1 phase|total)' "$1" | awk '{$1=$1};1' | tr '\n' ';'; }
old() { ( export BELLOWS_MSM_DENSITY=host BELLOWS_MSM_WHOLE_PASS=off; "$@" ); }
if has conf; then
  t0=$(date +%s)
  timeout 120 $b/bellows conformance --backend cuda --full --max-log-size 18 > $w/conf.log 2>&1
  echo "conformance --full 18 rc=$? in $(( $(date +%s) - t0 )) s: $(grep -hE '^(PASS|FAIL)' $w/conf.log | tr '\n' ' ')" >> "$s"
  t0=$(date +%s)
  timeout 120 $b/bellows conformance --backend cuda --max-log-size 16 --backend-opt gpu-memory-limit=4MiB > $w/conf-stream.log 2>&1
  echo "conformance streaming 16 rc=$? in $(( $(date +%s) - t0 )) s: $(grep -hE '^(PASS|FAIL)' $w/conf-stream.log | tr '\n' ' ')" >> "$s"
  save
fi
if has k24; then
  k24() { timeout 100 $b/bellows bench --backend cuda -k 24 --bits-pct $1 --reps 3 --warmup 1 --backend-opt msm-precompute=on; }
  for bits in 90 0; do
    for cfg in new old; do
      if [ $cfg = old ]; then old k24 $bits > $w/k24-$bits-$cfg.log 2>&1; else k24 $bits > $w/k24-$bits-$cfg.log 2>&1; fi
      echo "K=24 bits=$bits $cfg rc=$?: $(line $w/k24-$bits-$cfg.log)" >> "$s"; save
    done
  done
fi
for cfg in new old; do
  if has k27$cfg; then
    t0=$(date +%s)
    k27() { BELLOWS_MSM_PROFILE=1 RUST_LOG=info timeout 300 $b/bellows bench --backend cuda -k 27 --bits-pct 90 --reps 3 --warmup 0; }
    if [ $cfg = old ]; then old k27 > $w/k27-$cfg.log 2>&1; else k27 > $w/k27-$cfg.log 2>&1; fi
    echo "k27 $cfg rc=$? in $(( $(date +%s) - t0 )) s: $(line $w/k27-$cfg.log)" >> "$s"
    grep -hE 'rep [0-9]' $w/k27-$cfg.log | sed 's/.*INFO //' >> "$s"
    grep -h "msm-profile" $w/k27-$cfg.log | tail -9 | cut -c1-260 >> "$s"; save
  fi
done
save
cat "$s"
