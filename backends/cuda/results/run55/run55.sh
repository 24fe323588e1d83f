#!/usr/bin/env bash
# Run 55: prefetching the next base into L1 in the MSM accumulation (new) against the previous
# kernels (old), one command: checks of new (table path forced, and plain), G1 at 2^20..2^24
# with a c = 20 table and without (BELLOWS_MSM_TABLE=never) alternating the binaries twice, G2
# plain and with a table, then K = 24 proofs through each plugin (tables on), alternating.
# Carry .carry/ab.tar.xz (new/ and old/ from backends/cuda/scripts/build-device.sh builds).
set -u
out=${OUT:-/tmp/o}; mkdir -p "$out"; s=$out/summary.txt
d=/tmp/ab; mkdir -p $d; xz -dc .carry/ab.tar.xz | tar xf - -C $d
N=$d/new/bellows-cuda-msm; O=$d/old/bellows-cuda-msm
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader >> "$s"
steps=${STEPS:-check g1 g2 prove}
has() { case " $steps " in *" $1 "*) return 0;; *) return 1;; esac; }
if has check; then
  for mode in always plain; do
    if [ $mode = always ]; then e="BELLOWS_MSM_TABLE=always"; p="--precompute 20"; else e="X=1"; p=""; fi
    env $e timeout 120 $N --log-n "" --check 0,1,10,16,20 --g2-log-n 12 --iters 1 $p > "$out/check-$mode.log" 2>&1
    echo "new check $mode rc=$?: $(grep -iE 'passed|fail|mismatch|error' "$out/check-$mode.log" | tail -2 | tr '\n' ' ')" >> "$s"
  done
fi
if has g1; then
  for rep in 1 2; do for b in old new; do for t in auto never; do
    B=$d/$b/bellows-cuda-msm
    BELLOWS_MSM_TABLE=$t timeout 100 $B --log-n 20,22,24 --check "" --g2-log-n "" --iters 5 --scalars device --precompute 20 > "$out/g1-$b-$t-$rep.log" 2>&1
    grep -h "^RESULT msm" "$out/g1-$b-$t-$rep.log" | sed "s/^/$b table=$t rep=$rep /" >> "$s"
  done; done; done
fi
if has g2; then
  for b in old new; do for p in "" "--precompute 20"; do
    B=$d/$b/bellows-cuda-msm
    timeout 120 $B --log-n "" --check "" --g2-log-n 22,24 --iters 3 $p > "$out/g2-$b-${p:+table}.log" 2>&1
    grep -h "^RESULT msm" "$out/g2-$b-${p:+table}.log" | sed "s/^/$b ${p:+table} /" >> "$s"
  done; done
fi
if has prove; then
  for bits in ${BITS:-90 0}; do for b in old new; do
    BELLOWS_PLUGIN_PATH=$d/$b timeout 120 $d/new/bellows bench --backend cuda -k 24 --bits-pct $bits --reps 3 --warmup 1 --backend-opt msm-precompute=on > "$out/k24-b$bits-$b.log" 2>&1
    echo "K=24 bits=$bits plugin=$b: $(grep -hE '^  (synthesis|G1 phase|G2 MSM|total)' "$out/k24-b$bits-$b.log" | awk '{$1=$1};1' | tr '\n' ';')" >> "$s"
  done; done
fi
cat "$s"
