#!/usr/bin/env bash
# Run 59: Fp's dedicated squaring and one-reduction a·b − c·d (mul_sub) plus the quotient-overlap
# branch (new) against the previous kernels and plugin (old); qo = the quotient-overlap branch
# alone (previous kernels). Carry .carry/r59.tar.xz (old/, new/, qo/).
#   STEPS="check g1 conf prove" (call 1), STEPS="k27" (call 2)
set -u
out=${OUT:-/tmp/o}; w=/tmp/r59; mkdir -p "$out" $w; s=$w/summary.txt
d=/tmp/r59bin; mkdir -p $d; xz -dc .carry/r59.tar.xz | tar xf - -C $d
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader >> "$s"
steps=${STEPS:-check g1 conf prove}
has() { case " $steps " in *" $1 "*) return 0;; *) return 1;; esac; }
if has check; then
  for mode in always plain; do
    if [ $mode = always ]; then e="BELLOWS_MSM_TABLE=always"; p="--precompute 20"; else e="X=1"; p=""; fi
    env $e timeout 120 $d/new/bellows-cuda-msm --log-n "" --check 0,1,10,16,20 --g2-log-n 12 --iters 1 $p > "$w/check-$mode.log" 2>&1
    echo "new check $mode rc=$?: $(grep -iE 'passed|fail|mismatch|error' "$w/check-$mode.log" | tail -2 | tr '\n' ' ')" >> "$s"
  done
  timeout 150 $d/new/bellows-cuda-check --quick --max-log 20 --repeats 7 > $w/cuda-check.log 2>&1
  echo "cuda-check rc=$?" >> "$s"; grep -E "G/s|FAIL|fail|correctness" $w/cuda-check.log | sort -u >> "$s"
fi
if has g1; then
  for rep in 1 2; do for b in old new; do for t in auto never; do
    BELLOWS_MSM_TABLE=$t timeout 100 $d/$b/bellows-cuda-msm --log-n 20,22,24 --check "" --g2-log-n "" --iters 5 --scalars device --precompute 20 > "$w/g1-$b-$t-$rep.log" 2>&1
    grep -h "^RESULT msm" "$w/g1-$b-$t-$rep.log" | sed "s/^/$b table=$t rep=$rep /" >> "$s"
  done; done; done
  for b in new old; do
    BELLOWS_MSM_PROFILE=1 timeout 100 $d/$b/bellows-cuda-msm --log-n 24 --check "" --g2-log-n "" --iters 3 --scalars device --precompute 20 > "$w/g1-$b-profile.log" 2>&1
    grep -h "msm-profile" "$w/g1-$b-profile.log" | tail -2 | sed "s/^/$b /" >> "$s"
  done
fi
if has conf; then
  t0=$(date +%s)
  BELLOWS_PLUGIN_PATH=$d/new timeout 200 $d/new/bellows conformance --backend cuda --full --max-log-size 18 > $w/conf.log 2>&1
  echo "conformance new --full 18 rc=$? in $(( $(date +%s) - t0 )) s: $(grep -hE '^(PASS|FAIL)' $w/conf.log | tr '\n' ' ')" >> "$s"
fi
if has prove; then
  for bits in ${BITS:-90 0}; do for b in old new; do
    BELLOWS_PLUGIN_PATH=$d/$b timeout 120 $d/new/bellows bench --backend cuda -k 24 --bits-pct $bits --reps 3 --warmup 1 --backend-opt msm-precompute=on > "$w/k24-b$bits-$b.log" 2>&1
    echo "K=24 bits=$bits plugin=$b: $(grep -hE '^  (synthesis|G1 phase|G2 MSM|total)' "$w/k24-b$bits-$b.log" | awk '{$1=$1};1' | tr '\n' ';')" >> "$s"
  done; done
fi
if has k27; then
  for b in ${K27_BUILDS:-new old}; do
    t0=$(date +%s)
    BELLOWS_PLUGIN_PATH=$d/$b BELLOWS_MSM_PROFILE=1 RUST_LOG=info timeout ${K27_TIMEOUT:-200} $d/new/bellows bench --backend cuda -k 27 --bits-pct 90 --reps ${K27_REPS:-2} --warmup 0 > $w/k27-$b.log 2>&1
    echo "k27 $b rc=$? in $(( $(date +%s) - t0 )) s" >> "$s"
    grep -hE 'rep [0-9]' $w/k27-$b.log | sed 's/.*INFO //' >> "$s"
    grep -h "msm-profile G1 n=134217727" $w/k27-$b.log >> "$s"
  done
fi
cp "$s" "$out/summary.txt"; tar czf "$out/run59-logs.tgz" -C $w .
cat "$s"
