#!/usr/bin/env bash
# Run 56: a PoRep partition's size (K = 27, 90 % bits) with every MSM's phase profile
# (BELLOWS_MSM_PROFILE=1) and the bench's host phases (batch buffers, release); then calls in
# flight per GPU (streams 1 against 2) at K = 22, eight proofs through the scheduler.
# Carry .carry/k27.tar.xz (bin/ from backends/cuda/scripts/build-device.sh at the commit named
# in the summary). Everything under $OUT is packed into one tarball at the end.
set -u
out=${OUT:-/tmp/o}; w=/tmp/r56; mkdir -p "$out" $w; s=$w/summary.txt
d=/tmp/k27; mkdir -p $d; xz -dc .carry/k27.tar.xz | tar xf - -C $d; B=$d/bin
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader >> "$s"
t0=$(date +%s)
BELLOWS_MSM_PROFILE=1 RUST_LOG=info timeout ${K27_TIMEOUT:-400} $B/bellows bench --backend cuda -k 27 --bits-pct 90 --reps 2 --warmup 0 > $w/k27.log 2>&1
echo "k27 rc=$? in $(( $(date +%s) - t0 )) s" >> "$s"
grep -hE '^  [a-zA-Z]|proofs/s|rep [0-9]' $w/k27.log | sed 's/.*INFO //' >> "$s"
grep -h "msm-profile" $w/k27.log | tail -12 >> "$s"
for st in 1 2; do
  timeout 150 $B/bellows bench --backend cuda --devices 0 --backend-opt streams=$st -k 22 --bits-pct 90 --count 16 --concurrency 4 > $w/streams-$st.log 2>&1
  echo "streams=$st rc=$?: $(grep -hE 'proofs/s|busy' $w/streams-$st.log | tr '\n' ' ')" >> "$s"
done
cp "$s" "$out/summary.txt"; tar czf "$out/run56-logs.tgz" -C $w .
cat "$s"
