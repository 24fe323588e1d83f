#!/usr/bin/env bash
# Final run of the session (run 34): Fp2 lazy reduction against the previous kernels, CUDA
# conformance, wgpu with msm-arith=auto (straight on the H200): conformance and G1 MSM vs CUDA.
set -u
B=.carry/bin; P=.carry/prev; o=${OUT:-/tmp/out}; s=$o/summary.txt; : > "$s"
for i in 1 2; do
  BELLOWS_MSM_G2_ACCUMULATE=occ3 BELLOWS_MSM_PROFILE=1 timeout 100 $P/bellows-cuda-msm --log-n 10 --check 10 --g2-log-n 22,24 --iters 3 2>&1 | grep -E "RESULT|check .*G2|msm-profile G2 n=16777216" | tail -n 5 | sed "s/^/prev: /" >> "$s"
  BELLOWS_MSM_PROFILE=1 timeout 100 $B/bellows-cuda-msm --log-n 10 --check 10 --g2-log-n 22,24 --iters 3 2>&1 | grep -E "RESULT|check .*G2|msm-profile G2 n=16777216" | tail -n 5 | sed "s/^/lazy: /" >> "$s"
done
timeout 120 $B/bellows conformance --backend cuda --full --max-log-size 18 > $o/cuda-conformance.log 2>&1; grep -E "^(PASS|FAIL)" $o/cuda-conformance.log | sed 's/^/cuda conformance: /' >> "$s"
for w in prev new prev new; do
  if [ $w = prev ]; then e=(env BELLOWS_PLUGIN_PATH=$P); else e=(env); fi
  timeout 60 "${e[@]}" $B/bellows bench --backend cuda -k 22 --bits-pct 0 --warmup 1 --reps 3 > $o/p.log 2>&1
  echo "proof $w K=22 dense: $(grep -hE '^  (G1 phase|G2 MSM|total)' $o/p.log | awk '{$1=$1};1' | tr '\n' ';')" >> "$s"
done
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
[ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
timeout 200 $B/bellows conformance --backend wgpu --full --max-log-size 18 > $o/wgpu-conformance.log 2>&1; grep -E "^(PASS|FAIL)" $o/wgpu-conformance.log | sed 's/^/wgpu conformance: /' >> "$s"
for k in 20 22; do
  timeout 90 $B/bellows-wgpu-bench --backends wgpu,cuda --ntt 0 --msm $k --reps 5 >> $o/wgpu-bench.log 2>&1
done
grep -hE "^RESULT|MISMATCH|SKIP" $o/wgpu-bench.log | sed 's/^/wgpu bench: /' >> "$s"
timeout 60 $B/bellows bench --backend wgpu -k 20 --reps 2 > $o/wgpu-prove.log 2>&1; echo "wgpu proof K=20: $(grep -hE '^  (G1 phase|G2 MSM|total)' $o/wgpu-prove.log | awk '{$1=$1};1' | tr '\n' ';')" >> "$s"
cat "$s"
