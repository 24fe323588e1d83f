#!/usr/bin/env bash
# Run 65 (written 2026-12-02, NOT YET RUN: the session's device time ran out): G1 MSM at
# 2^20/2^22/2^24 (c = 20 table) and 2^26 (no table), scalars on the device, run 64's build beside
# sppark's MSM (the one inside SupraSeal C2), scalars on the device too, in one command.
# Build here: backends/cuda/scripts/build-device.sh, then pack .carry/bin as .carry/r64.tar.xz
# (bin/), and ../shared/peers/sppark-msm/build.sh .carry/sppark. Carry both; about 80 s of work.
set -u
out=${OUT:-/tmp/o}; w=/tmp/r65; mkdir -p "$out" $w; s=$w/summary.txt
d=/tmp/r65bin; mkdir -p $d; xz -dc .carry/r64.tar.xz | tar xf - -C $d; b=$d/bin
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader >> "$s"
save() { cp "$s" "$out/summary.txt"; }
timeout 60 .carry/sppark/run.sh --log-n 20,22,24,26 --check 20 --iters 5 --warmup 1 --modes dscalars --pin off > $w/sppark.log 2>&1
echo "sppark rc=$?" >> "$s"; grep -hE "^RESULT|^DONE" $w/sppark.log >> "$s"; save
timeout 60 $b/bellows-cuda-msm --log-n 20,22,24 --check "" --g2-log-n "" --iters 5 --scalars device --precompute 20 > $w/ours-table.log 2>&1
echo "ours table rc=$?" >> "$s"; grep -h "^RESULT msm" $w/ours-table.log >> "$s"; save
timeout 90 $b/bellows-cuda-msm --log-n 26 --check "" --g2-log-n "" --iters 5 --scalars device > $w/ours-26.log 2>&1
echo "ours 2^26 rc=$?" >> "$s"; grep -h "^RESULT msm" $w/ours-26.log >> "$s"; save
tar czf "$out/run65-logs.tgz" -C $w .
cat "$s"
