#!/usr/bin/env bash
# Run 48: proofs with precomputed tables. PARTS: conf (conformance with a table behind every
# set and every MSM forced through it), single (K=24 one proof a call, tables off and on
# alternately), batch (K=24 eight proofs a call, tables on).
set -u
out=${OUT:-/tmp/o}; mkdir -p "$out"; s=$out/summary.txt
B=.carry/bin
for part in ${PARTS:-conf single}; do
case $part in
conf)
  BELLOWS_MSM_TABLE=always timeout 240 $B/bellows conformance --backend cuda --full --max-log-size ${CONF_MAX:-18} --backend-opt msm-precompute=on > "$out/conf-table.log" 2>&1
  echo "conformance (tables on, BELLOWS_MSM_TABLE=always) rc=$?: $(grep -hE '^(PASS|FAIL)|passed|failed' "$out/conf-table.log" | tail -2 | tr '\n' ' ')" >> "$s" ;;
single)
  for b in ${BITS:-0 90}; do for p in off on; do
    RUST_LOG=info timeout 200 $B/bellows bench --backend cuda -k 24 --bits-pct $b --reps 3 --backend-opt msm-precompute=$p > "$out/single-b$b-$p.log" 2>&1
    echo "K=24 bits=$b tables=$p one proof a call (3 reps): $(grep -hE '^  (synthesis|G1 phase|G2 MSM|total)|window multiples|does not fit|no device memory' "$out/single-b$b-$p.log" | sed 's/.*INFO //' | awk '{$1=$1};1' | tr '\n' ';')" >> "$s"
  done; done ;;
batch)
  for b in ${BITS:-0 90}; do
    timeout 250 $B/bellows bench --backend cuda -k 24 --bits-pct $b --count 8 --warmup 0 --reps 2 --backend-opt msm-precompute=on > "$out/batch-b$b-on.log" 2>&1
    echo "K=24 bits=$b tables=on count=8 (no warm-up, 2 reps: median min): $(grep -hE '^(  (synthesis|G1 phase|G2 MSM|total)|proofs/s)' "$out/batch-b$b-on.log" | awk '{$1=$1};1' | tr '\n' ';')" >> "$s"
  done ;;
esac
done
cat "$s"
