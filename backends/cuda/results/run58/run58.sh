#!/usr/bin/env bash
# Run 58: Fp's Karatsuba product with a separate reduction and one reduction for Y3 (mul_sub)
# plus the quotient-overlap branch (k0: G1 accumulation unconstrained, 214 registers, two blocks
# of 128 a multiprocessor; k3: held to three blocks, 168 registers, 200 bytes spilled) against
# the previous kernels and plugin (old). Carry .carry/r58.tar.xz (old/, k0/, k3/).
#   STEPS="check g1 g2 conf" (call 1), STEPS="prove k27" NEW=k0|k3 (call 2)
set -u
out=${OUT:-/tmp/o}; w=/tmp/r58; mkdir -p "$out" $w; s=$w/summary.txt
d=/tmp/r58bin; mkdir -p $d; xz -dc .carry/r58.tar.xz | tar xf - -C $d
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader >> "$s"
steps=${STEPS:-check g1 g2 conf}; NEW=${NEW:-k0}
has() { case " $steps " in *" $1 "*) return 0;; *) return 1;; esac; }
if has check; then
  for mode in always plain; do
    if [ $mode = always ]; then e="BELLOWS_MSM_TABLE=always"; p="--precompute 20"; else e="X=1"; p=""; fi
    for b in k0 k3; do
      env $e timeout 120 $d/$b/bellows-cuda-msm --log-n "" --check 0,1,10,16,20 --g2-log-n 12 --iters 1 $p > "$w/check-$b-$mode.log" 2>&1
      echo "$b check $mode rc=$?: $(grep -iE 'passed|fail|mismatch|error' "$w/check-$b-$mode.log" | tail -2 | tr '\n' ' ')" >> "$s"
    done
  done
  timeout 150 $d/k0/bellows-cuda-check --quick --max-log 20 --repeats 7 > $w/cuda-check.log 2>&1
  echo "cuda-check rc=$?" >> "$s"; grep -E "G/s|FAIL|fail|passed" $w/cuda-check.log | head -20 >> "$s"
fi
if has g1; then
  for rep in 1 2; do for b in old k0 k3; do for t in auto never; do
    BELLOWS_MSM_TABLE=$t timeout 100 $d/$b/bellows-cuda-msm --log-n 20,22,24 --check "" --g2-log-n "" --iters 5 --scalars device --precompute 20 > "$w/g1-$b-$t-$rep.log" 2>&1
    grep -h "^RESULT msm" "$w/g1-$b-$t-$rep.log" | sed "s/^/$b table=$t rep=$rep /" >> "$s"
  done; done; done
  BELLOWS_MSM_PROFILE=1 timeout 100 $d/k0/bellows-cuda-msm --log-n 24 --check "" --g2-log-n "" --iters 3 --scalars device --precompute 20 > "$w/g1-k0-profile.log" 2>&1
  grep -h "msm-profile" "$w/g1-k0-profile.log" | tail -2 >> "$s"
  BELLOWS_MSM_PROFILE=1 timeout 100 $d/old/bellows-cuda-msm --log-n 24 --check "" --g2-log-n "" --iters 3 --scalars device --precompute 20 > "$w/g1-old-profile.log" 2>&1
  grep -h "msm-profile" "$w/g1-old-profile.log" | tail -2 >> "$s"
fi
if has g2; then
  for b in old k0; do for p in "" "--precompute 20"; do
    timeout 120 $d/$b/bellows-cuda-msm --log-n "" --check "" --g2-log-n 22,24 --iters 3 $p > "$w/g2-$b-${p:+table}.log" 2>&1
    grep -h "^RESULT msm" "$w/g2-$b-${p:+table}.log" | sed "s/^/$b ${p:+table} /" >> "$s"
  done; done
fi
if has conf; then
  t0=$(date +%s)
  BELLOWS_PLUGIN_PATH=$d/$NEW timeout 200 $d/k0/bellows conformance --backend cuda --full --max-log-size 18 > $w/conf.log 2>&1
  echo "conformance $NEW --full 18 rc=$? in $(( $(date +%s) - t0 )) s: $(grep -hE '^(PASS|FAIL)' $w/conf.log | tr '\n' ' ')" >> "$s"
fi
if has prove; then
  for bits in ${BITS:-90 0}; do for b in old $NEW; do
    BELLOWS_PLUGIN_PATH=$d/$b timeout 120 $d/k0/bellows bench --backend cuda -k 24 --bits-pct $bits --reps 3 --warmup 1 --backend-opt msm-precompute=on > "$w/k24-b$bits-$b.log" 2>&1
    echo "K=24 bits=$bits plugin=$b: $(grep -hE '^  (synthesis|G1 phase|G2 MSM|total)' "$w/k24-b$bits-$b.log" | awk '{$1=$1};1' | tr '\n' ';')" >> "$s"
  done; done
fi
if has k27; then
  for b in $NEW old; do
    t0=$(date +%s)
    BELLOWS_PLUGIN_PATH=$d/$b BELLOWS_MSM_PROFILE=1 RUST_LOG=info timeout ${K27_TIMEOUT:-200} $d/k0/bellows bench --backend cuda -k 27 --bits-pct 90 --reps ${K27_REPS:-2} --warmup 0 > $w/k27-$b.log 2>&1
    echo "k27 $b rc=$? in $(( $(date +%s) - t0 )) s" >> "$s"
    grep -hE 'rep [0-9]' $w/k27-$b.log | sed 's/.*INFO //' >> "$s"
    grep -h "msm-profile G1 n=134217727" $w/k27-$b.log >> "$s"
  done
fi
cp "$s" "$out/summary.txt"; tar czf "$out/run58-logs.tgz" -C $w .
cat "$s"
