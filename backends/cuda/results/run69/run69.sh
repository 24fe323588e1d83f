#!/usr/bin/env bash
# Run 69: the review mends of 916f2eb (the CUDA phase's A, B and G2 jobs through one on_device
# pair) on the H200, and where the time of a dense K = 24 phase goes (BELLOWS_MSM_PROFILE=1), and
# K = 27 without the profile's synchronisations. One build (carry .carry/r69.tar.xz, bin/ from
# backends/cuda/scripts/build-device.sh).
#   STEPS="conf check k24" | "k27"
set -u
out=${OUT:-/tmp/o}; w=/tmp/r69; mkdir -p "$out" $w; s=$w/summary.txt
d=/tmp/r69bin; mkdir -p $d; [ -x $d/bin/bellows ] || xz -dc .carry/r69.tar.xz | tar xf - -C $d
b=$d/bin
steps=" ${STEPS:-conf check k24} "
has() { [[ "$steps" == *" $1 "* ]]; }
save() { cp "$s" "$out/summary.txt"; tar czf "$out/run69-logs.tgz" -C $w .; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader >> "$s"
echo "steps:$steps" >> "$s"
line() { grep -hE '^  (synthesis|G1 phase|G2 MSM|total)' "$1" | awk '{$1=$1};1' | tr '\n' ';'; }
prof() { grep -h "msm-profile" "$1" | tail -${2:-5} | cut -c1-230 >> "$s"; }
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
  k24() { timeout 150 $b/bellows bench --backend cuda -k 24 --bits-pct $1 --reps 3 --warmup 1 --backend-opt msm-precompute=on; }
  k24 0 > $w/k24.log 2>&1
  echo "K=24 bits=0 rc=$?: $(line $w/k24.log)" >> "$s"; save
  BELLOWS_MSM_PROFILE=1 RUST_LOG=info k24 0 > $w/k24-prof.log 2>&1
  echo "K=24 bits=0 profiled rc=$?: $(line $w/k24-prof.log)" >> "$s"; prof $w/k24-prof.log 5; save
  k24 90 > $w/k24-b90.log 2>&1
  echo "K=24 bits=90 rc=$?: $(line $w/k24-b90.log)" >> "$s"; save
fi
if has k27; then
  t0=$(date +%s)
  RUST_LOG=info timeout 280 $b/bellows bench --backend cuda -k 27 --bits-pct 90 --reps 3 --warmup 0 > $w/k27.log 2>&1
  echo "k27 unprofiled rc=$? in $(( $(date +%s) - t0 )) s: $(line $w/k27.log)" >> "$s"
  grep -hE 'rep [0-9]' $w/k27.log | sed 's/.*INFO //' >> "$s"; save
fi
save
cat "$s"
