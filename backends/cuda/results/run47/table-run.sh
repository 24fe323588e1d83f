#!/usr/bin/env bash
# Precomputed window multiples on the H200: checks over tables (BELLOWS_MSM_TABLE=always, so
# even 2^10 runs the table path), then G1 timings with tables of c = 20, 22, 24 against the
# same binary ignoring its table (BELLOWS_MSM_TABLE=never), the previous binary and sppark;
# then G2 likewise. One process per line; every timing has its scalars on the device.
set -u
out=${OUT:-/tmp/o}; mkdir -p "$out"
N=.carry/new/bellows-cuda-msm; O=.carry/old/bellows-cuda-msm
s=$out/summary.txt
steps=${STEPS:-check g1 g2}
has() { case " $steps " in *" $1 "*) return 0;; *) return 1;; esac; }
if has check; then
  for c in 22 13; do
    BELLOWS_MSM_TABLE=always timeout 200 $N --log-n "" --check 0,1,10,16,20 --g2-log-n 12 --iters 1 --precompute $c > "$out/check-c$c.log" 2>&1
    echo "check table c=$c rc=$?: $(grep -iE 'RESULT table|passed|fail|mismatch|error' "$out/check-c$c.log" | tr '\n' ' ')" >> "$s"
  done
fi
if has g1; then
  L=${G1_LOG_N:-20,22,24}
  timeout 120 $O --log-n $L --check "" --g2-log-n "" --iters 5 --scalars device > "$out/g1-old.log" 2>&1
  grep -h "^RESULT" "$out/g1-old.log" | sed 's/^/old /' >> "$s"
  for c in ${G1_C:-22 24 20}; do
    timeout 150 $N --log-n $L --check "" --g2-log-n "" --iters 5 --scalars device --precompute $c > "$out/g1-c$c.log" 2>&1
    grep -h "^RESULT" "$out/g1-c$c.log" | sed "s/^/new c=$c /" >> "$s"
  done
  BELLOWS_MSM_TABLE=never timeout 120 $N --log-n $L --check "" --g2-log-n "" --iters 5 --scalars device --precompute 22 > "$out/g1-never.log" 2>&1
  grep -h "^RESULT msm" "$out/g1-never.log" | sed 's/^/new never /' >> "$s"
  BELLOWS_MSM_PROFILE=1 timeout 100 $N --log-n 24 --check "" --g2-log-n "" --iters 2 --scalars device --precompute 22 > "$out/g1-prof.log" 2>&1
  grep -h "msm-profile" "$out/g1-prof.log" | tail -1 >> "$s"
  [ -x .carry/sppark/run.sh ] && timeout 150 .carry/sppark/run.sh --log-n $L --check none --iters 5 --modes dscalars --pin off > "$out/sppark.log" 2>&1
  grep -h "^RESULT" "$out/sppark.log" 2>/dev/null | sed 's/^/sppark /' >> "$s"
fi
if has g2; then
  L2=${G2_LOG_N:-22,24}
  timeout 200 $O --log-n "" --check "" --g2-log-n $L2 --iters 3 > "$out/g2-old.log" 2>&1
  grep -h "^RESULT" "$out/g2-old.log" | sed 's/^/old /' >> "$s"
  for c in ${G2_C:-22 24}; do
    BELLOWS_MSM_PROFILE=1 timeout 200 $N --log-n "" --check "" --g2-log-n $L2 --iters 3 --precompute $c > "$out/g2-c$c.log" 2>&1
    { grep -h "^RESULT" "$out/g2-c$c.log"; grep -h "msm-profile G2 n=16777216" "$out/g2-c$c.log" | tail -1; } | sed "s/^/new c=$c /" >> "$s"
  done
fi
cat "$s"
