#!/usr/bin/env bash
# Run 79: the binned scatter (kernels/msm.cuh, "The binned scatter"; src/msm.rs, scatter_bins)
# against the scatter by key ranges. One build (carry .carry/${CARRY:-r79.tar.xz}, bin/ from
# backends/cuda/scripts/build-device.sh). STEPS picks the parts:
#   check  bellows-cuda-msm's checks against blst with the bins forced (bins of 16 keys, so
#          that small MSMs have many), and conformance through the backend with them forced
#   msm    G1 MSMs side by side, ranges against bins (same_result compares the two): 2^24 with
#          a c = 20 table, 2^26 and 2^27 dense, 2^27 with 90 % of the scalars 0 or 1, bin sizes,
#          and G2 at 2^24 with a table
#   d26    2^26 dense, ranges against bins (the final build's check at size)
#   prof   2^24 with a table, then profiles at 2^27, dense and 90 % bits, ranges against bins
#   k24    whole proofs at K = 24 (dense and 90 % bits), --alternate-env ranges/bins
#   k27b   the same unprofiled, a warm-up and three repetitions a value
#   k27    a PoRep-sized proof, K = 27 at 90 % bits, --alternate-env ranges/auto (the default rule), profiled
set -u
out=${OUT:-/tmp/o}; w=/tmp/r79; mkdir -p "$out" $w; s=$w/summary.txt
d=/tmp/r79bin; mkdir -p $d; rm -rf $d/bin; xz -dc .carry/${CARRY:-r79.tar.xz} | tar xf - -C $d
b=$d/bin
save() { cp "$s" "$out/summary.txt"; tar czf "$out/run79-logs.tgz" -C $w .; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader >> "$s"
msm() { local name=$1; shift; t0=$(date +%s); timeout 280 $b/bellows-cuda-msm "$@" > $w/$name.log 2>&1; echo "$name rc=$? in $(( $(date +%s) - t0 )) s: $*" >> "$s"; grep -hE '^(RESULT|check .*MISMATCH|generated|[0-9]+ check)' $w/$name.log >> "$s"; save; }
line() { sed -n '/^per value of/,$p' "$1" | awk '{$1=$1};1' | tr '\n' ';'; }
for step in ${STEPS:-check msm}; do case $step in
check)
  BELLOWS_MSM_SCATTER=bins BELLOWS_MSM_BIN_KEYS=16 msm check --log-n 12 --g2-log-n 12 --check 8,12,16 --iters 1
  grep -c "^check .* ok" $w/check.log >> "$s"
  t0=$(date +%s)
  BELLOWS_MSM_SCATTER=bins BELLOWS_MSM_BIN_KEYS=16 timeout 150 $b/bellows conformance --backend cuda --full --max-log-size 18 > $w/conf.log 2>&1
  echo "conformance bins --full 18 rc=$? in $(( $(date +%s) - t0 )) s: $(grep -hE '^(PASS|FAIL)' $w/conf.log | tr '\n' ' ')" >> "$s"
  t0=$(date +%s)
  BELLOWS_MSM_SCATTER=bins BELLOWS_MSM_BIN_KEYS=16 timeout 120 $b/bellows conformance --backend cuda --max-log-size 16 --backend-opt gpu-memory-limit=4MiB > $w/conf-stream.log 2>&1
  echo "conformance bins streaming 16 rc=$? in $(( $(date +%s) - t0 )) s: $(grep -hE '^(PASS|FAIL)' $w/conf-stream.log | tr '\n' ' ')" >> "$s"
  save;;
msm)
  msm t24 --log-n 24 --precompute 20 --iters 5 --scalars device --sweep BELLOWS_MSM_SCATTER=ranges,bins
  msm g2 --log-n 10 --g2-log-n 24 --precompute 20 --iters 3 --scalars device --sweep BELLOWS_MSM_SCATTER=ranges,bins
  msm d26 --log-n 26 --iters 3 --scalars device --sweep BELLOWS_MSM_SCATTER=ranges,bins
  msm d27 --log-n 27 --iters 3 --scalars device --sweep BELLOWS_MSM_SCATTER=ranges,bins
  BELLOWS_MSM_SCATTER=bins msm d27w --log-n 27 --iters 3 --scalars device --sweep BELLOWS_MSM_WINDOW=20,21,22
  msm s27 --log-n 27 --iters 3 --scalars device --bits-pct 90 --sweep BELLOWS_MSM_SCATTER=ranges,bins
  BELLOWS_MSM_SCATTER=bins msm s27k --log-n 27 --iters 3 --scalars device --bits-pct 90 --sweep BELLOWS_MSM_BIN_KEYS=4096,32768,262144
  export BELLOWS_MSM_PROFILE=1
  msm p27 --log-n 27 --iters 1 --scalars device --sweep BELLOWS_MSM_SCATTER=ranges,bins
  grep -h "msm-profile" $w/p27.log | cut -c1-260 >> "$s"
  unset BELLOWS_MSM_PROFILE; save;;
d26)
  msm d26f --log-n 26 --iters 3 --scalars device --sweep BELLOWS_MSM_SCATTER=ranges,bins; save;;
prof)
  msm t24 --log-n 24 --precompute 20 --iters 5 --scalars device --sweep BELLOWS_MSM_SCATTER=ranges,bins
  export BELLOWS_MSM_PROFILE=1
  msm p27 --log-n 27 --iters 1 --scalars device --sweep BELLOWS_MSM_SCATTER=ranges,bins
  grep -h "msm-profile G1 n=134217728" $w/p27.log | cut -c1-260 >> "$s"
  msm ps27 --log-n 27 --iters 1 --scalars device --bits-pct 90 --sweep BELLOWS_MSM_SCATTER=ranges,bins
  grep -h "msm-profile G1 n=134217728" $w/ps27.log | cut -c1-260 >> "$s"
  unset BELLOWS_MSM_PROFILE; save;;
k24)
  for bits in 90 0; do
    timeout 150 $b/bellows bench --backend cuda -k 24 --bits-pct $bits --reps 6 --warmup 1 --backend-opt msm-precompute=on --alternate-env BELLOWS_MSM_SCATTER=ranges,bins > $w/k24-$bits.log 2>&1
    echo "K=24 bits=$bits rc=$?: $(line $w/k24-$bits.log)" >> "$s"; save
  done;;
k27)
  BELLOWS_MSM_PROFILE=1 timeout 420 $b/bellows bench --backend cuda -k 27 --bits-pct 90 --reps 4 --warmup 0 --alternate-env BELLOWS_MSM_SCATTER=ranges,auto > $w/k27.log 2>&1
  echo "K=27 bits=90 rc=$?: $(line $w/k27.log)" >> "$s"
  grep -h "msm-profile\|rep [0-9]" $w/k27.log | cut -c1-260 | tail -24 >> "$s"; save;;
k27b)
  RUST_LOG=info timeout 480 $b/bellows bench --backend cuda -k 27 --bits-pct 90 --reps 6 --warmup 1 --alternate-env BELLOWS_MSM_SCATTER=ranges,auto > $w/k27b.log 2>&1
  echo "K=27 bits=90 (unprofiled) rc=$?: $(line $w/k27b.log)" >> "$s"
  grep -h "rep [0-9]/" $w/k27b.log | sed 's/.*bench: //' | cut -c1-200 >> "$s"; save;;
esac; done
save
cat "$s"
