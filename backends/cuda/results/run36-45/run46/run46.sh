#!/usr/bin/env bash
# Run 46: a, b, c uploaded and transformed one at a time (each vector's NTTs overlap the next copy); previous plugin (.carry/prevplug, run 45's) against new.
set -u
out=${OUT:-/tmp/o}; mkdir -p "$out"; s=$out/summary.txt; B=.carry/bin
timeout 60 $B/bellows conformance --backend cuda --full --max-log-size 18 > "$out/conformance.log" 2>&1; grep -hE "^(PASS|FAIL)" "$out/conformance.log" | sed 's/^/conformance: /' >> "$s"
for b in 90 0; do
  order="prev new new prev"; [ $b = 0 ] && order="new prev"
  for v in $order; do
    if [ $v = prev ]; then p=(env BELLOWS_PLUGIN_PATH=.carry/prevplug); else p=(env); fi
    "${p[@]}" timeout 60 $B/bellows bench --backend cuda -k 24 --bits-pct $b --reps 2 --warmup 1 > "$out/k24-b$b-$v.log" 2>&1
    echo "$v K=24 bits=$b: $(grep -hE '^  (synthesis|G1 phase|G2 MSM|total)' "$out/k24-b$b-$v.log" | awk '{$1=$1};1' | tr '\n' ';')" >> "$s"
  done
done
cat "$s"
