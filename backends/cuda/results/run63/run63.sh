#!/usr/bin/env bash
# Run 63: the final build of this round (scatter split into ⌈keys / 2^17⌉ ≤ 8 launches,
# reductions of 8, freed device memory kept in the pool): conformance, G1 at 2^22/2^24 (table)
# and 2^26 (none) against the old configuration through the knobs, and K = 27 (90 % bits) proofs
# new against old (old: pool-release=sync, one scatter launch, reductions of 32).
# Carry .carry/r63.tar.xz (bin/).
set -u
out=${OUT:-/tmp/o}; w=/tmp/r63; mkdir -p "$out" $w; s=$w/summary.txt
d=/tmp/r63bin; mkdir -p $d; xz -dc .carry/r63.tar.xz | tar xf - -C $d; b=$d/bin
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader >> "$s"
OLD="BELLOWS_MSM_SCATTER_PASSES=1 BELLOWS_MSM_REDUCE_PER=32"
t0=$(date +%s)
timeout 100 $b/bellows conformance --backend cuda --full --max-log-size 18 > $w/conf.log 2>&1
echo "conformance --full 18 rc=$? in $(( $(date +%s) - t0 )) s: $(grep -hE '^(PASS|FAIL)' $w/conf.log | tr '\n' ' ')" >> "$s"
for cfg in "new trim X=1" "old sync $OLD"; do
  set -- $cfg; name=$1 pool=$2; shift 2
  env "$@" timeout 60 $b/bellows-cuda-msm --log-n 22,24 --check "" --g2-log-n "" --iters 7 --scalars device --precompute 20 --pool-release $pool > "$w/g1-$name.log" 2>&1
  grep -h "^RESULT msm" "$w/g1-$name.log" | sed "s/^/$name /" >> "$s"
done
for cfg in "new trim X=1" "old sync $OLD"; do
  set -- $cfg; name=$1 pool=$2; shift 2
  t0=$(date +%s)
  env "$@" BELLOWS_MSM_PROFILE=1 RUST_LOG=info timeout 230 $b/bellows bench --backend cuda -k 27 --bits-pct 90 --reps 2 --warmup 0 --backend-opt pool-release=$pool > $w/k27-$name.log 2>&1
  echo "k27 $name rc=$? in $(( $(date +%s) - t0 )) s: $(grep -hE '^  (synthesis|G1 phase|G2 MSM|total)' $w/k27-$name.log | awk '{$1=$1};1' | tr '\n' ';')" >> "$s"
  grep -hE 'rep [0-9]' $w/k27-$name.log | sed 's/.*INFO //' >> "$s"
  grep -h "msm-profile G1 n=134217727" $w/k27-$name.log >> "$s"
  cp "$s" "$out/summary.txt"
done
cp "$s" "$out/summary.txt"; tar czf "$out/run63-logs.tgz" -C $w .
cat "$s"
