#!/usr/bin/env bash
# Run 45: the accumulation chunk set on the device from the real entry count; old plugin (.carry/prevplug) against new.
set -u
out=${OUT:-/tmp/o}; mkdir -p "$out"; s=$out/summary.txt; B=.carry/bin
timeout 100 $B/bellows-cuda-msm --log-n 20,22,24 --check 10,16,20 --g2-log-n 12 --iters 5 --scalars device > "$out/msm.log" 2>&1; echo "msm rc=$?" >> "$s"
grep -hE "^RESULT|passed|FAIL" "$out/msm.log" >> "$s"
BELLOWS_MSM_AFFINE_ROUNDS=2 timeout 60 $B/bellows-cuda-msm --log-n "" --check 12,16 --g2-log-n 12 --iters 1 2>&1 | grep -E "passed|FAIL" | sed 's/^/rounds=2 /' >> "$s"
timeout 120 $B/bellows conformance --backend cuda --full --max-log-size 18 > "$out/conformance.log" 2>&1; grep -hE "^(PASS|FAIL)" "$out/conformance.log" | sed 's/^/conformance: /' >> "$s"
for b in 90 0; do
  order="prev new new prev"; [ $b = 0 ] && order="new prev"
  for v in $order; do
    if [ $v = prev ]; then p=(env BELLOWS_PLUGIN_PATH=.carry/prevplug); else p=(env); fi
    "${p[@]}" timeout 100 $B/bellows bench --backend cuda -k 24 --bits-pct $b --reps 2 --warmup 1 > "$out/k24-b$b-$v.log" 2>&1
    echo "$v K=24 bits=$b: $(grep -hE '^  (synthesis|G1 phase|G2 MSM|total)' "$out/k24-b$b-$v.log" | awk '{$1=$1};1' | tr '\n' ';')" >> "$s"
  done
done
cat "$s"
