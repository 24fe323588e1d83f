#!/usr/bin/env bash
# Run 66: the quotient in six transforms (c's coefficients subtracted after the inverse coset
# transform; CPU and CUDA), re-verification of the review mends (aa97bd5) on the GPU, sppark's
# MSM side by side with ours, and c = 22 tables (12 windows instead of 13) with the scatter in
# 16 launches. Carry .carry/r66.tar.xz (bin/: this build; old/: aa97bd5's bellows and CUDA
# plugin) and .carry/sppark (../shared/peers/sppark-msm/build.sh .carry/sppark).
#   STEPS="conf check sppark c22" | "k24 cpu" | "k27"
set -u
out=${OUT:-/tmp/o}; w=/tmp/r66; mkdir -p "$out" $w; s=$w/summary.txt
d=/tmp/r66bin; mkdir -p $d; [ -x $d/bin/bellows ] || xz -dc .carry/r66.tar.xz | tar xf - -C $d
b=$d/bin; o=$d/old
steps=" ${STEPS:-conf check sppark c22} "
has() { [[ "$steps" == *" $1 "* ]]; }
save() { cp "$s" "$out/summary.txt"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader >> "$s"
echo "steps:$steps" >> "$s"
line() { grep -hE '^  (synthesis|G1 phase|G2 MSM|total)' "$1" | awk '{$1=$1};1' | tr '\n' ';'; }
if has conf; then
  t0=$(date +%s)
  timeout 120 $b/bellows conformance --backend cuda --full --max-log-size 18 > $w/conf.log 2>&1
  echo "conformance --full 18 rc=$? in $(( $(date +%s) - t0 )) s: $(grep -hE '^(PASS|FAIL)' $w/conf.log | tr '\n' ' ')" >> "$s"; save
fi
if has check; then
  for mode in always plain; do
    if [ $mode = always ]; then e="BELLOWS_MSM_TABLE=always"; p="--precompute 22"; else e="X=1"; p=""; fi
    env $e timeout 90 $b/bellows-cuda-msm --log-n "" --check 0,1,10,16,20 --g2-log-n 12 --iters 1 $p > "$w/check-$mode.log" 2>&1
    echo "check $mode rc=$?: $(grep -ciE 'ok$' "$w/check-$mode.log") ok, $(grep -ciE 'mismatch|error' "$w/check-$mode.log") bad" >> "$s"
  done; save
fi
if has sppark; then
  timeout 70 .carry/sppark/run.sh --log-n 20,22,24,26 --check 20 --iters 5 --warmup 1 --modes dscalars --pin off > $w/sppark.log 2>&1
  echo "sppark rc=$?" >> "$s"; grep -hE "^RESULT|^DONE" $w/sppark.log >> "$s"; save
  timeout 60 $b/bellows-cuda-msm --log-n 20,22,24 --check "" --g2-log-n "" --iters 5 --scalars device --precompute 20 > $w/ours-table.log 2>&1
  echo "ours table rc=$?" >> "$s"; grep -h "^RESULT msm" $w/ours-table.log >> "$s"; save
  timeout 90 $b/bellows-cuda-msm --log-n 26 --check "" --g2-log-n "" --iters 5 --scalars device > $w/ours-26.log 2>&1
  echo "ours 2^26 rc=$?" >> "$s"; grep -h "^RESULT msm" $w/ours-26.log >> "$s"; save
fi
if has c22; then
  timeout 60 $b/bellows-cuda-msm --log-n 24 --check "" --g2-log-n "" --iters 7 --scalars device --precompute 22 --sweep BELLOWS_MSM_SCATTER_PASSES=8,16,32 > $w/c22-g1.log 2>&1
  echo "G1 c22 rc=$?" >> "$s"; grep -h "^RESULT msm" $w/c22-g1.log >> "$s"; save
  timeout 60 $b/bellows-cuda-msm --log-n 24 --check "" --g2-log-n "" --iters 7 --scalars device --precompute 20 > $w/c20-g1.log 2>&1
  echo "G1 c20 rc=$?" >> "$s"; grep -h "^RESULT msm" $w/c20-g1.log >> "$s"; save
  for c in 20 22; do
    BELLOWS_MSM_SCATTER_PASSES=$(( c == 22 ? 16 : 4 )) timeout 120 $b/bellows-cuda-msm --log-n "" --check "" --g2-log-n 24 --iters 5 --precompute $c > $w/g2-c$c.log 2>&1
    echo "G2 c$c rc=$?" >> "$s"; grep -h "^RESULT msm" $w/g2-c$c.log >> "$s"; save
  done
fi
if has k24; then
  for cfg in "old $o X=1 20" "new $b X=1 20"; do
    set -- $cfg; name=$1 dir=$2 e=$3 c=$4
    env $e timeout 120 $dir/bellows bench --backend cuda -k 24 --bits-pct 0 --reps 3 --warmup 1 --backend-opt msm-precompute=on --backend-opt msm-precompute-window=$c > "$w/k24-$name-c$c.log" 2>&1
    echo "K=24 bits=0 $name c=$c rc=$?: $(line "$w/k24-$name-c$c.log")" >> "$s"; save
  done
  timeout 120 $b/bellows bench --backend cuda -k 24 --bits-pct 90 --reps 3 --warmup 1 --backend-opt msm-precompute=on > "$w/k24-b90.log" 2>&1
  echo "K=24 bits=90 new c=20 rc=$?: $(line "$w/k24-b90.log")" >> "$s"; save
fi
if has cpu; then
  for r in 1 2; do for name in old new; do
    [ $name = old ] && dir=$o || dir=$b
    timeout 90 $dir/bellows bench --backend cpu -k 20 --bits-pct 0 --reps 3 --warmup 1 > "$w/cpu-$name-$r.log" 2>&1
    echo "CPU K=20 $name ($r) rc=$?: $(line "$w/cpu-$name-$r.log")" >> "$s"; save
  done; done
fi
if has k27; then
  t0=$(date +%s)
  BELLOWS_MSM_PROFILE=1 RUST_LOG=info timeout 230 $b/bellows bench --backend cuda -k 27 --bits-pct 90 --reps 2 --warmup 0 > $w/k27-new.log 2>&1
  echo "k27 new rc=$? in $(( $(date +%s) - t0 )) s: $(line $w/k27-new.log)" >> "$s"
  grep -hE 'rep [0-9]' $w/k27-new.log | sed 's/.*INFO //' >> "$s"
  grep -h "msm-profile" $w/k27-new.log | tail -8 | cut -c1-200 >> "$s"; save
fi
tar czf "$out/run66-logs.tgz" -C $w .
cat "$s"
