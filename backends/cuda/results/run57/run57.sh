#!/usr/bin/env bash
# Run 57: the quotient's uploads interleaved with its transforms (each vector's NTTs queued
# before the next vector uploads; new) against the committed plugin (old), at a PoRep
# partition's size: conformance of new first (whole proofs bit-exact with the CPU backend),
# then K = 27, 90 % bits, three repetitions a process (the first from heap buffers, the second
# pinning them, the third from pinned memory), old and new alternating, with the H MSM's profile.
# Carry .carry/r57.tar.xz (bin/ = new build of backends/cuda/scripts/build-device.sh, old/ = the
# previous libbellows_backend_cuda.so).
set -u
out=${OUT:-/tmp/o}; w=/tmp/r57; mkdir -p "$out" $w; s=$w/summary.txt
d=/tmp/r57bin; mkdir -p $d; xz -dc .carry/r57.tar.xz | tar xf - -C $d; B=$d/bin
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader >> "$s"
timeout 90 $B/bellows conformance --backend cuda --full --max-log-size 14 > $w/conf.log 2>&1
echo "conformance new rc=$?: $(grep -hE '^(PASS|FAIL)' $w/conf.log | tr '\n' ' ')" >> "$s"
for b in new old; do
  if [ $b = new ]; then P=$B; else P=$d/old; fi
  t0=$(date +%s)
  BELLOWS_PLUGIN_PATH=$P BELLOWS_MSM_PROFILE=1 RUST_LOG=info timeout ${K27_TIMEOUT:-250} $B/bellows bench --backend cuda -k 27 --bits-pct 90 --reps 3 --warmup 0 > $w/k27-$b.log 2>&1
  echo "k27 $b rc=$? in $(( $(date +%s) - t0 )) s" >> "$s"
  grep -hE 'rep [0-9]' $w/k27-$b.log | sed 's/.*INFO //' >> "$s"
  grep -h "msm-profile G1 n=134217727" $w/k27-$b.log >> "$s"
done
cp "$s" "$out/summary.txt"; tar czf "$out/run57-logs.tgz" -C $w .
cat "$s"
