#!/usr/bin/env bash
# Run 70: Fp2 products with fewer reductions (Fp2::mul as two one-reduction sums of two products,
# Fp2::mul_sub as two of four) against the build before them, side by side. Two builds in one
# carry (.carry/r70.tar.xz: base/ = 9e90e58's kernels, new/ = the change; each from
# backends/cuda/scripts/build-device.sh).
#   STEPS="field msm conf k24" (run 70 ran "field msm conf": the MSM verdict made k24 moot)
set -u
out=${OUT:-/tmp/o}; w=/tmp/r70; mkdir -p "$out" $w; s=$w/summary.txt
d=/tmp/r70bin; mkdir -p $d; [ -x $d/new/bellows ] || xz -dc .carry/r70.tar.xz | tar xf - -C $d
steps=" ${STEPS:-field msm conf k24} "
has() { [[ "$steps" == *" $1 "* ]]; }
save() { cp "$s" "$out/summary.txt"; tar czf "$out/run70-logs.tgz" -C $w .; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader >> "$s"
echo "steps:$steps" >> "$s"
line() { grep -hE '^  (G1 phase)' "$1" | awk '{$1=$1};1' | tr '\n' ';'; }
if has field; then
  for v in new base; do
    timeout 150 $d/$v/bellows-cuda-check --quick --max-log 20 > $w/field-$v.log 2>&1
    echo "field $v rc=$?: $(grep -hE '^-- ' $w/field-$v.log | tail -1)" >> "$s"
    grep -hiE 'madd|dbl|Fp2|fp2' $w/field-$v.log | grep -viE ' ok$' | head -12 | cut -c1-160 >> "$s"
  done; save
fi
if has msm; then
  for v in base new base new; do
    timeout 120 $d/$v/bellows-cuda-msm --log-n "" --check "" --g2-log-n 24 --iters 5 --precompute 20 > $w/msm-$v.log 2>&1
    echo "msm g2 2^24 $v rc=$?: $(grep -hE "RESULT msm=G2|G2 random|G2 0/1|ERROR" $w/msm-$v.log | tr "\n" " " | cut -c1-240)" >> "$s"
  done
  cat $w/msm-new.log >> $w/msm-new-all.log; save
fi
if has conf; then
  timeout 120 $d/new/bellows conformance --backend cuda --full --max-log-size 18 > $w/conf.log 2>&1
  echo "new: conformance --full 18 rc=$?: $(grep -hE '^(PASS|FAIL)' $w/conf.log | tr '\n' ' ')" >> "$s"
  for mode in plain levels always; do
    case $mode in
      always) e="BELLOWS_MSM_TABLE=always"; p="--precompute 22";;
      levels) e="BELLOWS_MSM_WINDOW_PASS=levels"; p="";;
      *) e="X=1"; p="";;
    esac
    env $e timeout 90 $d/new/bellows-cuda-msm --log-n "" --check 0,1,10,16,20 --g2-log-n 12 --iters 1 $p > "$w/check-$mode.log" 2>&1
    echo "new: check $mode rc=$?: $(grep -ciE 'ok$' "$w/check-$mode.log") ok, $(grep -ciE 'mismatch|error' "$w/check-$mode.log") bad" >> "$s"
  done; save
fi
if has k24; then
  for v in base new base new; do
    timeout 150 $d/$v/bellows bench --backend cuda -k 24 --bits-pct 0 --reps 3 --warmup 1 --backend-opt msm-precompute=on > $w/k24-$v.log 2>&1
    echo "K=24 dense $v rc=$?: $(line $w/k24-$v.log)" >> "$s"; save
  done
fi
save
cat "$s"
