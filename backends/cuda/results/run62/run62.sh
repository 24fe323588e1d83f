#!/usr/bin/env bash
# Run 62: sweeps of the MSM's knobs in one process each (bellows-cuda-msm --sweep), with the
# defaults this build sets (scatter split into ⌈keys / 2^17⌉ ≤ 4 launches, segments of 32,
# reductions of 8, freed memory kept in the pool); K = 24 dense proofs, old configuration
# (pool-release=sync, one scatter launch, reductions of 32) against the new defaults; the pool
# checks of bellows-cuda-check. Carry .carry/r62.tar.xz (bin/).
#   STEPS="check sweep k24" (call 1), STEPS="k27" (call 2)
set -u
out=${OUT:-/tmp/o}; w=/tmp/r62; mkdir -p "$out" $w; s=$w/summary.txt
d=/tmp/r62bin; mkdir -p $d; xz -dc .carry/r62.tar.xz | tar xf - -C $d; b=$d/bin
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader >> "$s"
steps=${STEPS:-check sweep k24}
has() { case " $steps " in *" $1 "*) return 0;; *) return 1;; esac; }
OLD="BELLOWS_MSM_SCATTER_PASSES=1 BELLOWS_MSM_REDUCE_PER=32"
if has check; then
  timeout 120 $b/bellows-cuda-check --quick --max-log 18 --no-bench > $w/cuda-check.log 2>&1
  echo "cuda-check rc=$?: $(grep -E '^RESULT|correctness:' $w/cuda-check.log | tr '\n' ' ')" >> "$s"
  grep -A4 "## device memory pool" $w/cuda-check.log >> "$s"
fi
sweep() {  # name, log-n, precompute, knob=values
  timeout 120 $b/bellows-cuda-msm --log-n $2 --check "" --g2-log-n "" --iters 7 --scalars device --precompute $3 --sweep $4 > "$w/sweep-$1.log" 2>&1
  echo "sweep $1 rc=$?" >> "$s"; grep -h "^RESULT msm" "$w/sweep-$1.log" | sed "s/^/$1 /" >> "$s"
}
if has sweep; then
  sweep scatter24 22,24 20 BELLOWS_MSM_SCATTER_PASSES=1,2,4,8,1,4
  sweep segment24 24 20 BELLOWS_MSM_SEGMENT=16,32,64,32
  sweep reduce24 24 20 BELLOWS_MSM_REDUCE_PER=4,8,32,8
  sweep scatter26 26 0 BELLOWS_MSM_SCATTER_PASSES=1,2,4,8,16,4
  BELLOWS_MSM_PROFILE=1 timeout 60 $b/bellows-cuda-msm --log-n 24 --check "" --g2-log-n "" --iters 2 --scalars device --precompute 20 > "$w/g1-profile.log" 2>&1
  grep -h "msm-profile G1 n=16777216" "$w/g1-profile.log" | tail -2 >> "$s"
fi
if has k24; then
  for bits in ${BITS:-0}; do for cfg in "old sync $OLD" "new trim X=1"; do
    set -- $cfg; name=$1 pool=$2; shift 2
    env "$@" timeout 150 $b/bellows bench --backend cuda -k 24 --bits-pct $bits --reps 3 --warmup 1 --backend-opt msm-precompute=on --backend-opt pool-release=$pool > "$w/k24-b$bits-$name.log" 2>&1
    echo "K=24 bits=$bits $name rc=$?: $(grep -hE '^  (synthesis|G1 phase|G2 MSM|total)' "$w/k24-b$bits-$name.log" | awk '{$1=$1};1' | tr '\n' ';')" >> "$s"
  done; done
fi
if has k27; then
  for cfg in "new trim X=1" "old sync $OLD"; do
    set -- $cfg; name=$1 pool=$2; shift 2
    t0=$(date +%s)
    env "$@" BELLOWS_MSM_PROFILE=1 RUST_LOG=info timeout ${K27_TIMEOUT:-280} $b/bellows bench --backend cuda -k 27 --bits-pct 90 --reps ${K27_REPS:-2} --warmup 0 --backend-opt pool-release=$pool > $w/k27-$name.log 2>&1
    echo "k27 $name rc=$? in $(( $(date +%s) - t0 )) s: $(grep -hE '^  (synthesis|G1 phase|G2 MSM|total)' $w/k27-$name.log | awk '{$1=$1};1' | tr '\n' ';')" >> "$s"
    grep -h "msm-profile G1 n=134217727" $w/k27-$name.log >> "$s"
  done
fi
cp "$s" "$out/summary.txt"; tar czf "$out/run62-logs.tgz" -C $w .
cat "$s"
