#!/usr/bin/env bash
# Run 67: the G2 MSM inside the G1 phase's call (interface 2.2, Backend::groth16_g1_g2: the
# assignments are uploaded once) and the MSM window pass in levels (no double-and-add of each
# segment's offset). One build (carry .carry/r67.tar.xz, bin/ from
# backends/cuda/scripts/build-device.sh); "old" is the same binary with both switched off
# (--backend-opt g2-in-g1-call=off, BELLOWS_MSM_WINDOW_PASS=flat), alternating with the new
# defaults in the same command.
#   STEPS="conf check win k24" | "k27" | "conf final"
# Part 1 (results/run67/part1) had the window pass in levels of 32 all the way up; part 2 the
# two-level pass of the final build (STEPS="check win k24", then "k27").
set -u
out=${OUT:-/tmp/o}; w=/tmp/r67; mkdir -p "$out" $w; s=$w/summary.txt
d=/tmp/r67bin; mkdir -p $d; [ -x $d/bin/bellows ] || xz -dc .carry/r67.tar.xz | tar xf - -C $d
b=$d/bin
steps=" ${STEPS:-conf check win k24} "
has() { [[ "$steps" == *" $1 "* ]]; }
save() { cp "$s" "$out/summary.txt"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader >> "$s"
echo "steps:$steps" >> "$s"
line() { grep -hE '^  (synthesis|G1 phase|G2 MSM|total)' "$1" | awk '{$1=$1};1' | tr '\n' ';'; }
OLD="env BELLOWS_MSM_WINDOW_PASS=flat"; OLDOPT="--backend-opt g2-in-g1-call=off"
if has conf; then
  t0=$(date +%s)
  timeout 120 $b/bellows conformance --backend cuda --full --max-log-size 18 > $w/conf.log 2>&1
  echo "conformance --full 18 rc=$? in $(( $(date +%s) - t0 )) s: $(grep -hE '^(PASS|FAIL)' $w/conf.log | tr '\n' ' ')" >> "$s"
  grep -hE "groth16_g1" $w/conf.log | head -4 >> "$s"; save
fi
if has check; then
  for mode in always plain flat; do
    case $mode in
      always) e="BELLOWS_MSM_TABLE=always"; p="--precompute 22";;
      plain) e="X=1"; p="";;
      flat) e="BELLOWS_MSM_WINDOW_PASS=flat"; p="";;
    esac
    env $e timeout 90 $b/bellows-cuda-msm --log-n "" --check 0,1,10,16,20 --g2-log-n 12 --iters 1 $p > "$w/check-$mode.log" 2>&1
    echo "check $mode rc=$?: $(grep -ciE 'ok$' "$w/check-$mode.log") ok, $(grep -ciE 'mismatch|error' "$w/check-$mode.log") bad" >> "$s"
  done; save
fi
if has win; then
  timeout 120 $b/bellows-cuda-msm --log-n 26 --check "" --g2-log-n "" --iters 5 --scalars device --sweep BELLOWS_MSM_WINDOW_PASS=flat,levels,flat,levels > $w/win26.log 2>&1
  echo "window pass 2^26 rc=$?" >> "$s"; grep -h "^RESULT msm" $w/win26.log >> "$s"; save
  timeout 90 $b/bellows-cuda-msm --log-n 26 --check "" --g2-log-n "" --iters 5 --scalars device --sweep BELLOWS_MSM_SEGMENT=16,32,64,128 > $w/seg26.log 2>&1
  echo "segments 2^26 rc=$?" >> "$s"; grep -h "^RESULT msm" $w/seg26.log >> "$s"; save
  BELLOWS_MSM_PROFILE=1 timeout 60 $b/bellows-cuda-msm --log-n 26 --check "" --g2-log-n "" --iters 1 --scalars device --sweep BELLOWS_MSM_WINDOW_PASS=flat,levels > $w/prof26.log 2>&1
  grep -h "msm-profile G1 n=67108864" $w/prof26.log | cut -c1-260 >> "$s"; save
fi
# Configurations: old (both off), new (both on), g2only (the G2 change alone, the flat window pass).
cfg_env() {
  case $1 in
    old) pre=$OLD; opt=$OLDOPT;;
    g2only) pre=$OLD; opt="";;
    *) pre="env X=1"; opt="";;
  esac
}
if has k24; then
  for cfg in ${K24_CFGS:-old new g2only old new g2only}; do
    cfg_env $cfg
    $pre timeout 120 $b/bellows bench --backend cuda -k 24 --bits-pct 0 --reps 3 --warmup 1 --backend-opt msm-precompute=on $opt > "$w/k24-$cfg.log" 2>&1
    echo "K=24 bits=0 $cfg rc=$?: $(line "$w/k24-$cfg.log")" >> "$s"; save
  done
  timeout 120 $b/bellows bench --backend cuda -k 24 --bits-pct 90 --reps 3 --warmup 1 --backend-opt msm-precompute=on > "$w/k24-b90.log" 2>&1
  echo "K=24 bits=90 new rc=$?: $(line "$w/k24-b90.log")" >> "$s"; save
fi
if has final; then
  # The final build (the rule choosing the window pass, the review refactor): the MSM checks
  # with the levelled pass forced (their sizes would otherwise all run flat), and one dense
  # K = 24 bench with the defaults.
  BELLOWS_MSM_WINDOW_PASS=levels timeout 60 $b/bellows-cuda-msm --log-n "" --check 0,1,10,16,20 --g2-log-n 12 --iters 1 > "$w/check-levels.log" 2>&1
  echo "check levels rc=$?: $(grep -ciE 'ok$' "$w/check-levels.log") ok, $(grep -ciE 'mismatch|error' "$w/check-levels.log") bad" >> "$s"; save
  timeout 100 $b/bellows bench --backend cuda -k 24 --bits-pct 0 --reps 2 --warmup 1 --backend-opt msm-precompute=on > "$w/k24-final.log" 2>&1
  echo "K=24 bits=0 final rc=$?: $(line "$w/k24-final.log")" >> "$s"; save
fi
if has k27; then
  for cfg in ${K27_CFGS:-old new}; do
    cfg_env $cfg
    t0=$(date +%s)
    BELLOWS_MSM_PROFILE=1 RUST_LOG=info $pre timeout 250 $b/bellows bench --backend cuda -k 27 --bits-pct 90 --reps 2 --warmup 0 $opt > $w/k27-$cfg.log 2>&1
    echo "k27 $cfg rc=$? in $(( $(date +%s) - t0 )) s: $(line $w/k27-$cfg.log)" >> "$s"
    grep -hE 'rep [0-9]' $w/k27-$cfg.log | sed 's/.*INFO //' >> "$s"
    grep -h "msm-profile G2 n=[0-9]\{6,\}\|msm-profile G1 n=1342177" $w/k27-$cfg.log | tail -6 | cut -c1-230 >> "$s"; save
  done
fi
tar czf "$out/run67-logs.tgz" -C $w .
cat "$s"
