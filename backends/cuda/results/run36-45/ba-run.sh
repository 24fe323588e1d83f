#!/usr/bin/env bash
# Batch-affine rounds on the H200: correctness at forced round counts, then sweeps (one process
# per BELLOWS_MSM_AFFINE_ROUNDS value), sppark beside, G2, conformance and proofs.
set -u
out=${OUT:-/tmp/o}; mkdir -p "$out"
B=.carry/bin
s=$out/summary.txt
steps=${STEPS:-check g1}
has() { case " $steps " in *" $1 "*) return 0;; *) return 1;; esac; }
runr() { local r=$1; shift; if [ "$r" = default ]; then env -u BELLOWS_MSM_AFFINE_ROUNDS "$@"; else BELLOWS_MSM_AFFINE_ROUNDS=$r "$@"; fi; }
if has check; then
  for r in ${CHECK_R:-default 0 1 3 6}; do
    runr $r timeout 150 $B/bellows-cuda-msm --log-n "" --check 10,16,20 --g2-log-n 12 --iters 1 > "$out/check-$r.log" 2>&1
    echo "check rounds=$r rc=$?: $(grep -iE 'passed|fail|mismatch|error' "$out/check-$r.log" | tail -3 | tr '\n' ' ')" >> "$s"
  done
fi
if has g1; then
  for r in ${G1_R:-0 2 3 4 5 6 default}; do
    runr $r timeout 120 $B/bellows-cuda-msm --log-n ${G1_LOG_N:-20,22,24} --check "" --g2-log-n "" --iters 5 --scalars device > "$out/g1-$r.log" 2>&1
    grep -h "^RESULT" "$out/g1-$r.log" | sed "s/^/rounds=$r /" >> "$s"
  done
  for r in 0 default; do
    runr $r env BELLOWS_MSM_PROFILE=1 timeout 60 $B/bellows-cuda-msm --log-n 24 --check "" --g2-log-n "" --iters 2 --scalars device > "$out/g1-prof-$r.log" 2>&1
    grep -h "msm-profile" "$out/g1-prof-$r.log" | tail -1 | sed "s/^/rounds=$r /" >> "$s"
  done
  [ -x .carry/sppark/run.sh ] && timeout 150 .carry/sppark/run.sh --log-n ${G1_LOG_N:-20,22,24} --check none --iters 5 --modes dscalars --pin off > "$out/sppark.log" 2>&1
  grep -h "^RESULT" "$out/sppark.log" 2>/dev/null | sed 's/^/sppark /' >> "$s"
fi
if has g2; then
  for r in ${G2_R:-0 default 4}; do
    runr $r env BELLOWS_MSM_PROFILE=${G2_PROF:-1} timeout 200 $B/bellows-cuda-msm --log-n "" --check "" --g2-log-n ${G2_LOG_N:-22,24} --iters 3 > "$out/g2-$r.log" 2>&1
    { grep -h "^RESULT" "$out/g2-$r.log"; grep -h "msm-profile G2 n=16777216" "$out/g2-$r.log" | tail -1; } | sed "s/^/rounds=$r /" >> "$s"
  done
fi
if has conf; then
  timeout ${CONF_TIMEOUT:-200} $B/bellows conformance --backend cuda --full --max-log-size ${CONF_MAX:-20} > "$out/conformance.log" 2>&1
  grep -hE "^(PASS|FAIL)" "$out/conformance.log" | sed 's/^/conformance: /' >> "$s"
fi
if has prove; then
  for k in ${K:-22 24}; do for b in ${BITS:-0 90}; do for r in ${PROVE_R:-0 default}; do
    runr $r timeout 200 $B/bellows bench --backend cuda -k $k --bits-pct $b --reps ${REPS:-3} > "$out/prove-k$k-b$b-$r.log" 2>&1
    echo "prove K=$k bits=$b rounds=$r: $(grep -hE '^  (G1 phase|G2 MSM|total|synthesis)' "$out/prove-k$k-b$b-$r.log" | awk '{$1=$1};1' | tr '\n' ';')" >> "$s"
  done; done; done
fi
cat "$s"
