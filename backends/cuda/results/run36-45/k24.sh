#!/usr/bin/env bash
# K=24: ours (eight proofs a call, then one a call) and a peer, one command. PART=ours|supraseal|cuda
set -u
out=${OUT:-/tmp/o}; mkdir -p "$out"; s=$out/summary.txt
B=.carry/bin
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/nvidia/lib64:/usr/local/nvidia/lib
for part in ${PARTS:-ours}; do
case $part in
ours)
  for b in 0 90; do
    timeout 200 $B/bellows bench --backend cuda -k 24 --bits-pct $b --count 8 --warmup 0 --reps 2 > "$out/ours-batch-b$b.log" 2>&1
    echo "bellows K=24 bits=$b count=8 (no warm-up, 2 reps: median min): $(grep -hE '^(  (synthesis|G1 phase|G2 MSM|total)|proofs/s)' "$out/ours-batch-b$b.log" | awk '{$1=$1};1' | tr '\n' ';')" >> "$s"
  done
  for b in 0 90; do
    timeout 150 $B/bellows bench --backend cuda -k 24 --bits-pct $b --reps 3 > "$out/ours-single-b$b.log" 2>&1
    echo "bellows K=24 bits=$b one proof a call (3 reps): $(grep -hE '^  (synthesis|G1 phase|G2 MSM|total)' "$out/ours-single-b$b.log" | awk '{$1=$1};1' | tr '\n' ';')" >> "$s"
  done ;;
supraseal)
  mkdir -p /tmp/pp; timeout 300 .carry/peers/bench-supraseal bench --log-n 24 --iters 1 --warmup ${WARM:-1} --batch 8 --bits-pct 90 --params-dir /tmp/pp > "$out/supraseal-b90.log" 2>&1
  grep -h "^RESULT\|^iter\|^warmup" "$out/supraseal-b90.log" | sed 's/^/supraseal /' >> "$s" ;;
cuda)
  mkdir -p /tmp/pp; timeout 500 .carry/peers/bench-cuda bench --log-n 24 --iters 1 --warmup 0 --batch 8 --bits-pct ${CUDA_BITS:-0,90} --params-dir /tmp/pp > "$out/cuda.log" 2>&1
  grep -h "^RESULT\|^iter" "$out/cuda.log" | sed 's/^/bellperson-cuda /' >> "$s" ;;
esac
done
cat "$s"
