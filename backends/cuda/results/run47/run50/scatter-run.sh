#!/usr/bin/env bash
# Run 50: digits made 16 windows at a time before their atomics (new2) against the committed
# kernels (new): checks of new2 (table path forced, and plain), then G1 at 2^20..2^24 with a
# c = 20 table and without (BELLOWS_MSM_TABLE=never), alternating the binaries twice; profiles.
set -u
out=${OUT:-/tmp/o}; mkdir -p "$out"; s=$out/summary.txt
for mode in always plain; do
  if [ $mode = always ]; then e="BELLOWS_MSM_TABLE=always"; p="--precompute 20"; else e="X=1"; p=""; fi
  env $e timeout 120 .carry/new2/bellows-cuda-msm --log-n "" --check 0,1,10,16,20 --g2-log-n 12 --iters 1 $p > "$out/check-$mode.log" 2>&1
  echo "new2 check $mode rc=$?: $(grep -iE 'passed|fail|mismatch|error' "$out/check-$mode.log" | tail -2 | tr '\n' ' ')" >> "$s"
done
for rep in 1 2; do for b in new new2; do for t in auto never; do
  BELLOWS_MSM_TABLE=$t timeout 100 .carry/$b/bellows-cuda-msm --log-n 20,22,24 --check "" --g2-log-n "" --iters 5 --scalars device --precompute 20 > "$out/g1-$b-$t-$rep.log" 2>&1
  grep -h "^RESULT msm" "$out/g1-$b-$t-$rep.log" | sed "s/^/$b table=$t rep=$rep /" >> "$s"
done; done; done
for b in new new2; do
  BELLOWS_MSM_PROFILE=1 timeout 100 .carry/$b/bellows-cuda-msm --log-n 24 --check "" --g2-log-n "" --iters 2 --scalars device --precompute 20 > "$out/prof-$b.log" 2>&1
  grep -h "msm-profile" "$out/prof-$b.log" | tail -1 | sed "s/^/$b /" >> "$s"
done
cat "$s"
