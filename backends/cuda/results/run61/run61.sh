#!/usr/bin/env bash
# Run 61: device memory kept in the pool between calls (pool-release=trim, the new default)
# against the driver's release at every synchronisation (sync); window segments shortened when
# threads are few and tree reductions of 8 (new) against 32 and 32 (old: BELLOWS_MSM_SEGMENT=32
# BELLOWS_MSM_REDUCE_PER=32); the scatter split into key ranges (BELLOWS_MSM_SCATTER_PASSES).
# One build (.carry/r61.tar.xz: bin/), every "old" figure through the knobs in the same binary.
#   STEPS="check g1 conf k24" (call 1), STEPS="k27" (call 2)
set -u
out=${OUT:-/tmp/o}; w=/tmp/r61; mkdir -p "$out" $w; s=$w/summary.txt
d=/tmp/r61bin; mkdir -p $d; xz -dc .carry/r61.tar.xz | tar xf - -C $d; b=$d/bin
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader >> "$s"
steps=${STEPS:-check g1 conf k24}
has() { case " $steps " in *" $1 "*) return 0;; *) return 1;; esac; }
OLD="BELLOWS_MSM_SEGMENT=32 BELLOWS_MSM_REDUCE_PER=32"
if has check; then
  timeout 120 $b/bellows-cuda-check --quick --max-log 20 --no-bench > $w/cuda-check.log 2>&1
  echo "cuda-check rc=$?: $(grep -E '^RESULT|memory pool|freed memory|trim returns|allocation with' $w/cuda-check.log | tr '\n' ' ')" >> "$s"
  for mode in always plain; do
    if [ $mode = always ]; then e="BELLOWS_MSM_TABLE=always"; p="--precompute 20"; else e="X=1"; p=""; fi
    env $e BELLOWS_MSM_SCATTER_PASSES=3 timeout 120 $b/bellows-cuda-msm --log-n "" --check 0,1,10,16,20 --g2-log-n 12 --iters 1 $p > "$w/check-$mode.log" 2>&1
    echo "check $mode scatter=3 rc=$?: $(grep -ciE 'ok$' "$w/check-$mode.log") ok, $(grep -ciE 'mismatch|error' "$w/check-$mode.log") bad" >> "$s"
  done
fi
g1() {  # name, pool, env...
  local name=$1 pool=$2; shift 2
  env "$@" timeout 60 $b/bellows-cuda-msm --log-n 22,24 --check "" --g2-log-n "" --iters 7 --scalars device --precompute 20 --pool-release $pool > "$w/g1-$name.log" 2>&1
  grep -h "^RESULT msm" "$w/g1-$name.log" | sed "s/^/$name /" >> "$s"
}
if has g1; then
  for rep in 1 2; do
    g1 old-$rep sync $OLD
    g1 pool-$rep trim $OLD
    g1 new-$rep trim X=1
    g1 scatter2-$rep trim BELLOWS_MSM_SCATTER_PASSES=2
    g1 scatter4-$rep trim BELLOWS_MSM_SCATTER_PASSES=4
  done
  for cfg in "old sync $OLD" "new trim X=1"; do
    set -- $cfg; name=$1 pool=$2; shift 2
    env "$@" BELLOWS_MSM_PROFILE=1 timeout 60 $b/bellows-cuda-msm --log-n 24 --check "" --g2-log-n "" --iters 3 --scalars device --precompute 20 --pool-release $pool > "$w/g1-$name-profile.log" 2>&1
    grep -h "msm-profile G1 n=16777216" "$w/g1-$name-profile.log" | tail -2 | sed "s/^/$name /" >> "$s"
  done
fi
if has conf; then
  t0=$(date +%s)
  timeout 150 $b/bellows conformance --backend cuda --full --max-log-size 16 > $w/conf.log 2>&1
  echo "conformance --full 16 rc=$? in $(( $(date +%s) - t0 )) s: $(grep -hE '^(PASS|FAIL)' $w/conf.log | tr '\n' ' ')" >> "$s"
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
    grep -hE 'rep [0-9]' $w/k27-$name.log | sed 's/.*INFO //' >> "$s"
    grep -h "msm-profile G1 n=134217727" $w/k27-$name.log >> "$s"
  done
fi
cp "$s" "$out/summary.txt"; tar czf "$out/run61-logs.tgz" -C $w .
cat "$s"
