#!/usr/bin/env bash
# Run 60: the assignments' copies beside the quotient's (their buffers allocated with a, b, c
# when the room allows; copied after c, under c's transforms and the quotient's last steps) and
# the shared CIOS rows of field.cuh (new), against run 59's build (old). Carry .carry/r60.tar.xz.
# One short call: conformance of new, K = 24 dense proofs and G1 2^24 with a table, alternating.
set -u
out=${OUT:-/tmp/o}; w=/tmp/r60; mkdir -p "$out" $w; s=$w/summary.txt
d=/tmp/r60bin; mkdir -p $d; xz -dc .carry/r60.tar.xz | tar xf - -C $d
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader >> "$s"
timeout 60 $d/new/bellows conformance --backend cuda --full --max-log-size 14 > $w/conf.log 2>&1
echo "conformance new --full 14 rc=$?: $(grep -hE '^(PASS|FAIL)' $w/conf.log | tr '\n' ' ')" >> "$s"
for b in old new; do
  BELLOWS_PLUGIN_PATH=$d/$b timeout 60 $d/new/bellows bench --backend cuda -k 24 --bits-pct 0 --reps 3 --warmup 1 --backend-opt msm-precompute=on > "$w/k24-$b.log" 2>&1
  echo "K=24 bits=0 plugin=$b rc=$?: $(grep -hE '^  (G1 phase|G2 MSM|total)' "$w/k24-$b.log" | awk '{$1=$1};1' | tr '\n' ';')" >> "$s"
done
for b in old new; do
  timeout 40 $d/$b/bellows-cuda-msm --log-n 24 --check "" --g2-log-n "" --iters 5 --scalars device --precompute 20 > "$w/g1-$b.log" 2>&1
  grep -h "^RESULT msm" "$w/g1-$b.log" | sed "s/^/$b /" >> "$s"
done
cp "$s" "$out/summary.txt"; tar czf "$out/run60-logs.tgz" -C $w .
cat "$s"
