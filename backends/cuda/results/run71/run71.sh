#!/usr/bin/env bash
# Run 71: run 70's Fp2 products with fewer reductions with the G2 accumulation's register cap
# lifted (newacc0: BELLOWS_MSM_GROUP(g2, Fp2, 0)), against the kernels of 9e90e58 (base) and run
# 70's build (new), side by side. Three builds in one carry (.carry/r71.tar.xz: base/, new/,
# newacc0/, each from backends/cuda/scripts/build-device.sh; a fourth, mulonly/ with Fp2::mul alone
# changed, is run when present, and was not built for run 71). The fastest G2 MSM then runs the
# conformance suite, the MSM checks and dense K = 24 proofs against base, when it is not base.
#   bash backends/cuda/results/run71/run71.sh
set -u
out=${OUT:-/tmp/o}; w=/tmp/r71; mkdir -p "$out" $w; s=$w/summary.txt
d=/tmp/r71bin; mkdir -p $d; [ -x $d/base/bellows ] || xz -dc .carry/r71.tar.xz | tar xf - -C $d
save() { cp "$s" "$out/summary.txt"; tar czf "$out/run71-logs.tgz" -C $w .; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader >> "$s"
vs="${VARIANTS:-base new newacc0}"
for rep in 1 2; do
  for v in $vs; do
    [ -x $d/$v/bellows-cuda-msm ] || continue
    timeout 100 $d/$v/bellows-cuda-msm --log-n "" --check "" --g2-log-n 24 --iters 5 --precompute 20 > $w/msm-$v-$rep.log 2>&1
    echo "msm g2 2^24 $v rep $rep rc=$?: $(grep -hE "RESULT msm=G2|G2 random|G2 0/1|ERROR|rror" $w/msm-$v-$rep.log | tr "\n" " " | cut -c1-240)" >> "$s"
  done; save
done
best=$(for v in $vs; do
  m=$(sed -nE 's/.*median_ms=([0-9.]+).*/\1/p' $w/msm-$v-*.log 2>/dev/null | sort -n | head -1)
  [ -n "$m" ] && echo "$m $v"
done | sort -n | head -1 | cut -d' ' -f2)
echo "fastest G2 MSM: ${best:-none}" >> "$s"; save
if [ -n "$best" ] && [ "$best" != base ]; then
  timeout 100 $d/$best/bellows conformance --backend cuda --full --max-log-size 18 > $w/conf.log 2>&1
  echo "$best: conformance --full 18 rc=$?: $(grep -hE '^(PASS|FAIL)' $w/conf.log | tr '\n' ' ')" >> "$s"
  for mode in plain always; do
    case $mode in always) e="BELLOWS_MSM_TABLE=always"; p="--precompute 22";; *) e="X=1"; p="";; esac
    env $e timeout 80 $d/$best/bellows-cuda-msm --log-n "" --check 0,1,10,16,20 --g2-log-n 12 --iters 1 $p > "$w/check-$mode.log" 2>&1
    echo "$best: check $mode rc=$?: $(grep -ciE 'ok$' "$w/check-$mode.log") ok, $(grep -ciE 'mismatch|error' "$w/check-$mode.log") bad" >> "$s"
  done; save
  for v in base $best base $best; do
    timeout 110 $d/$v/bellows bench --backend cuda -k 24 --bits-pct 0 --reps 3 --warmup 1 --backend-opt msm-precompute=on > $w/k24-$v.log 2>&1
    echo "K=24 dense $v rc=$?: $(grep -hE '^  (G1 phase)' $w/k24-$v.log | awk '{$1=$1};1' | tr '\n' ';')" >> "$s"; save
  done
fi
save
cat "$s"
