#!/usr/bin/env bash
# Run 76: the MSM window width at 2^27 (a PoRep partition's size), dense (the H MSM) and with
# 90 % of the scalars 0 or 1 (the L, A and B1 MSMs of a 90 %-boolean witness): today's rule
# takes c = 20 for both. bellows-cuda-msm of the tree after 3fedc0d with --bits-pct (carry
# .carry/r76.tar.xz, bin/bellows-cuda-msm), bases resident, scalars on the device.
set -u
out=${OUT:-/tmp/o}; w=/tmp/r76; mkdir -p "$out" $w; s=$w/summary.txt
d=/tmp/r76bin; mkdir -p $d; [ -x $d/bin/bellows-cuda-msm ] || xz -dc .carry/r76.tar.xz | tar xf - -C $d
b=$d/bin/bellows-cuda-msm
save() { cp "$s" "$out/summary.txt"; tar czf "$out/run76-logs.tgz" -C $w .; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader >> "$s"
run() { local name=$1; shift; t0=$(date +%s); timeout 280 $b "$@" > $w/$name.log 2>&1; echo "$name rc=$? in $(( $(date +%s) - t0 )) s: $*" >> "$s"; grep -hE '^(RESULT|check .*MISMATCH|generated)' $w/$name.log >> "$s"; save; }
run dense --log-n 27 --check 10 --iters 3 --scalars device --sweep BELLOWS_MSM_WINDOW=19,20,21,22
run sparse --log-n 27 --check 10 --iters 3 --scalars device --bits-pct 90 --sweep BELLOWS_MSM_WINDOW=14,15,16,17,18,19,20
export BELLOWS_MSM_PROFILE=1; run sparse-profile --log-n 27 --check 10 --iters 1 --scalars device --bits-pct 90 --sweep BELLOWS_MSM_WINDOW=16,18,20
grep -h "msm-profile G1 n=134217728" $w/sparse-profile.log | cut -c1-260 >> "$s"
save
cat "$s"
