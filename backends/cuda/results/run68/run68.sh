#!/usr/bin/env bash
# Run 68: the final build of the G2-in-the-G1-call work (commit 0e75a24: the A and B jobs from
# ProofAssignment::a_jobs/b_jobs) on the H200, and BELLOWS_MSM_SEGMENT=64 against the default 32 in
# whole proofs. One build (carry .carry/r68.tar.xz, bin/ from backends/cuda/scripts/build-device.sh).
#   STEPS="conf check k24" | "k27"
set -u
out=${OUT:-/tmp/o}; w=/tmp/r68; mkdir -p "$out" $w; s=$w/summary.txt
d=/tmp/r68bin; mkdir -p $d; [ -x $d/bin/bellows ] || xz -dc .carry/r68.tar.xz | tar xf - -C $d
b=$d/bin
steps=" ${STEPS:-conf check k24} "
has() { [[ "$steps" == *" $1 "* ]]; }
save() { cp "$s" "$out/summary.txt"; tar czf "$out/run68-logs.tgz" -C $w .; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader >> "$s"
echo "steps:$steps" >> "$s"
line() { grep -hE '^  (synthesis|G1 phase|G2 MSM|total)' "$1" | awk '{$1=$1};1' | tr '\n' ';'; }
cfg_env() { case $1 in seg64) pre="env BELLOWS_MSM_SEGMENT=64";; *) pre="env X=1";; esac; }
if has conf; then
  t0=$(date +%s)
  timeout 120 $b/bellows conformance --backend cuda --full --max-log-size 18 > $w/conf.log 2>&1
  echo "conformance --full 18 rc=$? in $(( $(date +%s) - t0 )) s: $(grep -hE '^(PASS|FAIL)' $w/conf.log | tr '\n' ' ')" >> "$s"
  grep -hE "^\[.*groth16_g1" $w/conf.log | head -4 >> "$s"; save
fi
if has check; then
  for mode in plain levels always; do
    case $mode in
      always) e="BELLOWS_MSM_TABLE=always"; p="--precompute 22";;
      levels) e="BELLOWS_MSM_WINDOW_PASS=levels"; p="";;
      *) e="X=1"; p="";;
    esac
    env $e timeout 90 $b/bellows-cuda-msm --log-n "" --check 0,1,10,16,20 --g2-log-n 12 --iters 1 $p > "$w/check-$mode.log" 2>&1
    echo "check $mode rc=$?: $(grep -ciE 'ok$' "$w/check-$mode.log") ok, $(grep -ciE 'mismatch|error' "$w/check-$mode.log") bad" >> "$s"
  done; save
fi
if has k24; then
  for cfg in ${K24_CFGS:-new seg64 new seg64}; do
    cfg_env $cfg
    $pre timeout 120 $b/bellows bench --backend cuda -k 24 --bits-pct 0 --reps 3 --warmup 1 --backend-opt msm-precompute=on > "$w/k24-$cfg.log" 2>&1
    echo "K=24 bits=0 $cfg rc=$?: $(line "$w/k24-$cfg.log")" >> "$s"; save
  done
  timeout 120 $b/bellows bench --backend cuda -k 24 --bits-pct 90 --reps 3 --warmup 1 --backend-opt msm-precompute=on > "$w/k24-b90.log" 2>&1
  echo "K=24 bits=90 new rc=$?: $(line "$w/k24-b90.log")" >> "$s"; save
fi
if has k27; then
  for cfg in ${K27_CFGS:-new seg64}; do
    cfg_env $cfg
    t0=$(date +%s)
    BELLOWS_MSM_PROFILE=1 RUST_LOG=info $pre timeout 250 $b/bellows bench --backend cuda -k 27 --bits-pct 90 --reps 2 --warmup 0 > $w/k27-$cfg.log 2>&1
    echo "k27 $cfg rc=$? in $(( $(date +%s) - t0 )) s: $(line $w/k27-$cfg.log)" >> "$s"
    grep -hE 'rep [0-9]' $w/k27-$cfg.log | sed 's/.*INFO //' >> "$s"
    grep -h "msm-profile G2 n=[0-9]\{6,\}\|msm-profile G1 n=1342177" $w/k27-$cfg.log | tail -6 | cut -c1-230 >> "$s"; save
  done
fi
save
cat "$s"
