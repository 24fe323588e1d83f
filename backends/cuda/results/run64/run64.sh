#!/usr/bin/env bash
# Run 64: scatter launches limited on the device to one per 1.5 entries a scalar
# (msm::scatter_range) and 0/1 told from their Montgomery forms before the conversion; the
# rest as run 63. Checks (bits and 90 % bits included), conformance, G1 new/old at 2^22/2^24
# with a table, K = 24 at 90 % bits and K = 27 (90 % bits), new only (old K = 27: run 63).
# Carry .carry/r64.tar.xz (bin/).
set -u
out=${OUT:-/tmp/o}; w=/tmp/r64; mkdir -p "$out" $w; s=$w/summary.txt
d=/tmp/r64bin; mkdir -p $d; xz -dc .carry/r64.tar.xz | tar xf - -C $d; b=$d/bin
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader >> "$s"
OLD="BELLOWS_MSM_SCATTER_PASSES=1 BELLOWS_MSM_REDUCE_PER=32"
save() { cp "$s" "$out/summary.txt"; }
t0=$(date +%s)
timeout 100 $b/bellows conformance --backend cuda --full --max-log-size 18 > $w/conf.log 2>&1
echo "conformance --full 18 rc=$? in $(( $(date +%s) - t0 )) s: $(grep -hE '^(PASS|FAIL)' $w/conf.log | tr '\n' ' ')" >> "$s"; save
for mode in always plain; do
  if [ $mode = always ]; then e="BELLOWS_MSM_TABLE=always"; p="--precompute 20"; else e="X=1"; p=""; fi
  env $e timeout 90 $b/bellows-cuda-msm --log-n "" --check 0,1,10,16,20 --g2-log-n 12 --iters 1 $p > "$w/check-$mode.log" 2>&1
  echo "check $mode rc=$?: $(grep -ciE 'ok$' "$w/check-$mode.log") ok, $(grep -ciE 'mismatch|error' "$w/check-$mode.log") bad" >> "$s"
done; save
for cfg in "new trim X=1" "old sync $OLD"; do
  set -- $cfg; name=$1 pool=$2; shift 2
  env "$@" timeout 60 $b/bellows-cuda-msm --log-n 22,24 --check "" --g2-log-n "" --iters 7 --scalars device --precompute 20 --pool-release $pool > "$w/g1-$name.log" 2>&1
  grep -h "^RESULT msm" "$w/g1-$name.log" | sed "s/^/$name /" >> "$s"
done; save
timeout 120 $b/bellows bench --backend cuda -k 24 --bits-pct 90 --reps 3 --warmup 1 --backend-opt msm-precompute=on > "$w/k24-b90.log" 2>&1
echo "K=24 bits=90 new rc=$?: $(grep -hE '^  (synthesis|G1 phase|G2 MSM|total)' "$w/k24-b90.log" | awk '{$1=$1};1' | tr '\n' ';')" >> "$s"; save
t0=$(date +%s)
BELLOWS_MSM_PROFILE=1 RUST_LOG=info timeout 230 $b/bellows bench --backend cuda -k 27 --bits-pct 90 --reps 2 --warmup 0 > $w/k27-new.log 2>&1
echo "k27 new rc=$? in $(( $(date +%s) - t0 )) s: $(grep -hE '^  (synthesis|G1 phase|G2 MSM|total)' $w/k27-new.log | awk '{$1=$1};1' | tr '\n' ';')" >> "$s"
grep -hE 'rep [0-9]' $w/k27-new.log | sed 's/.*INFO //' >> "$s"
grep -h "msm-profile" $w/k27-new.log | tail -8 | cut -c1-200 >> "$s"
save; tar czf "$out/run64-logs.tgz" -C $w .
cat "$s"
