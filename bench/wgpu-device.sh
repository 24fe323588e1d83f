#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with .carry/bin and .gl carried (see
# bench/wgpu-build.sh): the Vulkan loader unpacked, the NVIDIA Vulkan driver found, then
# correctness first (kernel compile times, `bellows conformance --backend wgpu --full`), then
# the measurements side by side with the CUDA and CPU backends in the same command: NTT 2^20
# and 2^24, G1 MSM 2^20 and 2^22 (bellows-wgpu-bench, each result checked against the CPU
# backend), and a whole proof at K = 20 (`bellows bench`) on wgpu, cuda and cpu. The summary and
# the logs (logs.tgz) go to $OUT (or /tmp/bellows-wgpu-out). Steps are chosen with STEPS
# (default: all): setup compile conformance primitives prove perf msm-sweep
# `perf` is the measurement of issue 12's two goals, one process per size (wgpu and cuda
# side by side, each result checked against the CPU first; then wgpu again with option
# int64=off, the portable 32-bit products), with the ratios in the summary:
#   STEPS="setup perf" OUT=$OUT bench/wgpu-device.sh
# `msm-sweep` is where the G1 MSM's time goes and which of its tunables are best, at 2^20 and
# 2^22: a baseline beside CUDA, a per-pass profile (option msm-profile: device timestamps, then
# host timing, and timestamps with msm-arith=straight), and sweeps of the options msm-segment,
# msm-window, msm-threads, msm-chunk, msm-wg, msm-reduce, msm-arith (bellows-wgpu-bench --set …, every variant checked against the CPU before
# it is timed); logs in msm-sweep.log / msm-sweep.err, a digest in the summary. It stops
# starting processes after MSM_SWEEP_BUDGET seconds (default 500), so that it fits one device
# command:
#   STEPS="setup msm-sweep" OUT=$OUT bench/wgpu-device.sh
set -u -o pipefail
# Logs gather in WORK; $OUT gets summary.txt and logs.tgz (the device tool brings back 8 files).
dest=${OUT:-/tmp/bellows-wgpu-out}
out=${WORK:-/tmp/bellows-wgpu-work}
mkdir -p "$dest" "$out"
B=${BIN:-.carry/bin}
steps=${STEPS:-setup compile conformance primitives prove perf msm-sweep}
summary="$out/summary.txt"
: > "$summary"
fail=0
has() { case " $steps " in *" $1 "*) return 0;; *) return 1;; esac; }
# The Vulkan loader (the machine has the NVIDIA driver's ICD but no libvulkan).
if [ -d .gl ]; then
  for f in .gl/*.deb; do dpkg -x "$f" /; done
  ldconfig
fi
if [ -z "${VK_DRIVER_FILES:-}" ] && [ -f /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] \
   && ! ls /usr/share/vulkan/icd.d/nvidia_icd*.json /etc/vulkan/icd.d/nvidia_icd*.json >/dev/null 2>&1; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  nproc
  "$B/bellows" backends
} > "$out/machine.txt" 2>&1
grep -A12 "^wgpu" "$out/machine.txt" | head -12 | sed 's/^/backends: /' >> "$summary"
if has compile; then
  # Every kernel once, timed (the driver compiles WGSL → SPIR-V → SASS at first use).
  timeout 400 "$B/wgpu-compile-times" ntt dif_stage ntt dit_stage ntt dif_block ntt dit_block ntt mul_powers ntt bit_reverse_permute \
    ntt quotient_pointwise scan scan_blocks msm-g1 digits msm-g1 accumulate msm-g1 fixup \
    msm-g1 window_segments msm-g1 reduce msm-g1 to_jacobian msm-g2 accumulate msm-g2 fixup \
    msm-g2 window_segments msm-g2 reduce msm-g2 to_jacobian > "$out/compile.log" 2>&1 || fail=1
  sed 's/^/compile: /' "$out/compile.log" >> "$summary"
fi
if has conformance; then
  timeout 500 "$B/bellows" conformance --backend wgpu --backend-opt g2=device --full --max-log-size "${CONF_MAX:-18}" > "$out/conformance.log" 2>&1 || fail=1
  grep -hE "^(PASS|FAIL)|passed|failed" "$out/conformance.log" | tail -3 | sed 's/^/conformance: /' >> "$summary"
fi
if has primitives; then
  # One process per size: a single process for every size once printed nothing in 500 s while
  # the same sizes one at a time finished in seconds (likely the driver compiling kernels on
  # first use), and a process per size shows where a slow one stood.
  : > "$out/primitives.log"
  for k in $(echo "${NTT:-20,24}" | tr , ' '); do
    timeout 120 "$B/bellows-wgpu-bench" --backends "${BACKENDS:-wgpu,cuda,cpu}" --ntt "$k" --msm 0 \
      --reps "${REPS:-5}" >> "$out/primitives.log" 2>> "$out/primitives.err" || { echo "ntt 2^$k: exit $?" >> "$summary"; fail=1; }
  done
  for k in $(echo "${MSM:-20,22}" | tr , ' '); do
    timeout 150 "$B/bellows-wgpu-bench" --backends "${BACKENDS:-wgpu,cuda,cpu}" --ntt 0 --msm "$k" \
      --reps "${REPS:-5}" >> "$out/primitives.log" 2>> "$out/primitives.err" || { echo "msm 2^$k: exit $?" >> "$summary"; fail=1; }
  done
  grep -hE "^(RESULT|MISMATCH|SKIP)" "$out/primitives.log" | grep -v "log=0 " >> "$summary"
fi
if has perf; then
  # Issue 12's goals: NTT 2^24 within 3x of CUDA, G1 MSM 2^20 within 5x; 2^20 and 2^22 beside
  # them. One process per size and variant (as in primitives); the bench writes progress lines
  # with timestamps to stderr (perf-*.err), so a process the timeout ends shows where it stood.
  : > "$out/perf.log"
  run_perf() { # name, then bench arguments
    local name=$1; shift
    timeout "${PERF_TIMEOUT:-150}" "$B/bellows-wgpu-bench" "$@" --reps "${REPS:-5}" \
      >> "$out/perf.log" 2> "$out/perf-$name.err" || { echo "perf $name: exit $?" >> "$summary"; fail=1; }
  }
  for k in $(echo "${NTT:-20,24}" | tr , ' '); do
    run_perf "ntt$k" --backends wgpu,cuda --ntt "$k" --msm 0
    run_perf "ntt$k-int64off" --backends wgpu --opt int64=off --ntt "$k" --msm 0
  done
  for k in $(echo "${MSM:-20,22}" | tr , ' '); do
    run_perf "msm$k" --backends wgpu,cuda --ntt 0 --msm "$k"
    run_perf "msm$k-int64off" --backends wgpu --opt int64=off --ntt 0 --msm "$k"
  done
  grep -hE "^(MISMATCH|SKIP)" "$out/perf.log" | sed 's/^/perf: /' >> "$summary"
  # Lines in order: per size the wgpu (int64 auto) and cuda results, then wgpu with int64=off
  # (the third RESULT of a size).
  awk '/^RESULT/ {
      for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
      key = f["op"] " 2^" f["log"]; n[key]++
      if (f["backend"] == "cuda") cuda[key] = f["median_ms"]
      else if (n[key] == 1) wg[key] = f["median_ms"]
      else off[key] = f["median_ms"]
      if (!(key in seen)) { seen[key] = 1; order[++m] = key }
    }
    END {
      for (j = 1; j <= m; j++) {
        k = order[j]
        goal = (k ~ /^ntt/) ? 3 : 5
        r = (cuda[k] > 0) ? wg[k] / cuda[k] : 0
        printf "perf: %-12s wgpu %9.2f ms  cuda %8.2f ms  ratio %5.2fx (goal <= %dx: %s)  wgpu int64=off %9.2f ms\n", \
          k, wg[k], cuda[k], r, goal, (r > 0 && r <= goal) ? "met" : "not met", off[k]
      }
    }' "$out/perf.log" >> "$summary"
fi
if has msm-sweep; then
  : > "$out/msm-sweep.log"
  : > "$out/msm-sweep.err"
  sweep_start=$SECONDS
  sweep() { # seconds, name, then bench arguments
    local limit=$1 name=$2; shift 2
    if [ $((SECONDS - sweep_start)) -ge "${MSM_SWEEP_BUDGET:-500}" ]; then
      echo "msm-sweep $name: not run (budget of ${MSM_SWEEP_BUDGET:-500} s spent)" >> "$summary"
      return
    fi
    echo "=== $name: $*" >> "$out/msm-sweep.log"
    echo "=== $name: $*" >> "$out/msm-sweep.err"
    local t=$SECONDS
    timeout "$limit" "$B/bellows-wgpu-bench" --ntt 0 "$@" >> "$out/msm-sweep.log" 2>> "$out/msm-sweep.err" \
      || { echo "msm-sweep $name: exit $? after $((SECONDS - t)) s" >> "$summary"; fail=1; }
  }
  for k in 20 22; do
    sweep 90 "base$k" --backends wgpu,cuda --msm "$k" --reps 5
    sweep 90 "profile$k" --backends wgpu --msm "$k" --reps 2 --set msm-profile=on --set msm-profile=host \
      --set msm-profile=on,msm-arith=straight
  done
  sweep 150 "sweep20a" --backends wgpu --msm 20 --reps 3 --set default \
    --set msm-segment=4 --set msm-segment=8 --set msm-segment=16 --set msm-segment=64 \
    --set msm-window=14 --set msm-window=15 --set msm-window=17 --set msm-window=18 \
    --set msm-segment=8,msm-window=17
  sweep 150 "sweep20b" --backends wgpu --msm 20 --reps 3 --set default \
    --set msm-threads=65536 --set msm-threads=262144 --set msm-threads=524288 \
    --set msm-chunk=32 --set msm-chunk=64 --set msm-chunk=512 \
    --set msm-wg=32 --set msm-wg=128 --set msm-wg=256 --set msm-reduce=8 \
    --set msm-arith=straight --set msm-arith=straight,msm-wg=128 --set msm-arith=straight,msm-segment=8
  sweep 150 "sweep22" --backends wgpu --msm 22 --reps 3 --set default \
    --set msm-segment=8 --set msm-segment=16 --set msm-window=15 --set msm-window=17 \
    --set msm-window=18 --set msm-threads=262144 --set msm-threads=524288 --set msm-wg=128 \
    --set msm-arith=straight --set msm-arith=straight,msm-segment=8
  grep -hE "^(MISMATCH|SKIP)" "$out/msm-sweep.log" | sed 's/^/msm-sweep: /' >> "$summary"
  # Baselines: wgpu against cuda.
  grep -hE "^RESULT" "$out/msm-sweep.log" | grep -v " opts=" | awk '{
      for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
      print "msm-sweep: base 2^" f["log"] " " f["backend"] " median " f["median_ms"] " ms (min " f["min_ms"] ")" }' >> "$summary"
  # The profiles: the last (warm) line of each size and timing, the phases only.
  grep -h "^msm-profile:" "$out/msm-sweep.err" | awk '{
      key = $2 " " $10 " " $11 " " $13; last[key] = $0; if (!(key in seen)) { seen[key] = 1; order[++m] = key } }
      END { for (j = 1; j <= m; j++) print last[order[j]] }' | sed 's/^/msm-sweep: /' >> "$summary"
  # The sweeps, fastest first per size, each against the default of its process.
  grep -hE "^(RESULT|===)" "$out/msm-sweep.log" | awk '
    /^===/ { proc = $2; sub(/:$/, "", proc); next }
    {
      delete f
      for (i = 2; i <= NF; i++) { j = index($i, "="); f[substr($i, 1, j - 1)] = substr($i, j + 1) }
      if (f["opts"] == "" || f["opts"] ~ /msm-profile/) next
      if (f["opts"] == "default") def[proc] = f["median_ms"]
      r = (def[proc] > 0) ? f["median_ms"] / def[proc] : 0
      print proc, f["log"], f["median_ms"], r, f["opts"]
    }' | sort -k2,2n -k3,3g | awk '{ printf "msm-sweep: %-8s 2^%s %9.2f ms  %5.2fx of default  %s\n", $1, $2, $3, $4, $5 }' >> "$summary"
fi
if has prove; then
  for b in ${PROVE_BACKENDS:-wgpu cuda cpu}; do
    timeout 150 "$B/bellows" bench --backend "$b" -k "${K:-20}" --reps "${PROVE_REPS:-3}" --json \
      > "$out/prove-$b.json" 2> "$out/prove-$b.err" || fail=1
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); ph=d["phases"]; print("prove backend=%s K=%d: total %.3f s (synthesis %.3f, G1 phase %.3f, G2 %.3f on %s)" % (sys.argv[2], d["log_size"], ph["total"]["median_s"], ph["synthesis"]["median_s"], ph["g1_phase"]["median_s"], ph["msm_g2"]["median_s"], d["g2_on"]))' "$out/prove-$b.json" "$b" >> "$summary" 2>&1
  done
fi
echo "exit status $fail" >> "$summary"
cp "$summary" "$dest/summary.txt"
tar czf "$dest/logs.tgz" -C "$out" . 2>/dev/null
cat "$summary"
exit "$fail"
