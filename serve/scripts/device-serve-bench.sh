#!/usr/bin/env bash
# The `bellows serve` benchmarks of issue 10 §6 on the GPU machine, from the repository root, with
# the release binaries that backends/cuda/scripts/build-device.sh puts in .carry/bin (the CLI
# includes the daemon; no Rust on the device). Each step starts its own daemon(s) on loopback,
# drives them with `bellows bench --daemon`, and keeps the JSON reports, the daemons' logs, their
# /metrics and their peak resident memory in $OUT (default /tmp/bellows-serve-out); a summary is
# printed last. Steps (STEPS, default all; each fits the device tool's 10-minute limit except
# porep, which may need a run of its own):
#   k22     K=22 (90 % bits), --count 20: --concurrency 1 against 4, one H200: proofs/s ratio
#           (goal ≥ 1.5) and the GPU busy fraction in steady state (goal ≥ 90 %)
#   sweep   concurrency 1..8 at K=22 under a 24 GiB budget: peak reserved bytes and peak RSS
#   two     two GPUs (nvidia-h200-x2): --devices 0,1 against --devices 0 (goal ≥ 1.8×)
#   porep   10-partition jobs of 2^27, 90 % bits (PoRep-shaped), steady state per job
#           (goal ≤ 15 s; host memory decides how many partitions fit at once)
#   STEPS="k22 sweep" serve/scripts/device-serve-bench.sh
set -u -o pipefail
out=${OUT:-/tmp/bellows-serve-out}
mkdir -p "$out"
B=$PWD/.carry/bin
steps=${STEPS:-k22 sweep two porep}
summary="$out/summary.txt"
: > "$summary"
fail=0
has() { case " $steps " in *" $1 "*) return 0;; *) return 1;; esac; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$out/machine.txt" 2>&1
free -g >> "$out/machine.txt"; nproc >> "$out/machine.txt"

params() { # K BITS -> path of benchmark-only parameters (made once)
  local p="$out/s$1-b$2.params"
  [ -f "$p" ] || timeout 400 "$B/bellows" setup --fast --circuit synthetic -k "$1" --bits-pct "$2" --out "$p" > "$out/setup-k$1.log" 2>&1 || fail=1
  echo "$p"
}

daemon_pid=""
start_daemon() { # NAME ARGS... ; sets $addr and $maddr
  local name=$1; shift
  rm -rf "$out/state-$name"
  "$B/bellows" -v serve --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --state-dir "$out/state-$name" "$@" \
    > "$out/daemon-$name.stdout" 2> "$out/daemon-$name.log" &
  daemon_pid=$!
  for _ in $(seq 3000); do   # up to 300 s: --preload decodes and checks the parameters first
    [ "$(wc -l < "$out/daemon-$name.stdout")" -ge 2 ] && break
    kill -0 "$daemon_pid" 2>/dev/null || break
    sleep 0.1
  done
  addr=$(sed -n 's/^listening on //p' "$out/daemon-$name.stdout")
  maddr=$(sed -n 's/^metrics on //p' "$out/daemon-$name.stdout")
  [ -n "$addr" ] || { echo "daemon $name did not start" >> "$summary"; fail=1; }
}
stop_daemon() { # NAME
  [ -n "$daemon_pid" ] || return
  curl -s "$maddr" > "$out/metrics-$1.txt" 2>/dev/null || python3 -c 'import urllib.request,sys; print(urllib.request.urlopen(sys.argv[1]).read().decode())' "$maddr" > "$out/metrics-$1.txt" 2>&1
  grep VmHWM "/proc/$daemon_pid/status" > "$out/rss-$1.txt" 2>/dev/null
  "$B/bellows" status --daemon "$addr" --json > "$out/status-$1.json" 2>&1
  kill -TERM "$daemon_pid"; wait "$daemon_pid" 2>/dev/null; daemon_pid=""
}
bench() { # NAME PARAMS K BITS COUNT CONC [PARTITIONS]
  timeout 560 "$B/bellows" bench --daemon "$addr" --params "$2" --circuit synthetic -k "$3" --bits-pct "$4" \
    --count "$5" --concurrency "$6" --partitions "${7:-1}" --json > "$out/bench-$1.json" 2> "$out/bench-$1.err" || fail=1
  python3 - "$out/bench-$1.json" "$1" >> "$summary" <<'PY' 2>&1
import json, sys
d = json.load(open(sys.argv[1])); p = d["phases"]
dev = ", ".join("%s busy %.1f%% (%d)" % (x["name"], 100 * x["busy_fraction"], x["partitions"]) for x in d["devices"])
print("%s: %d jobs x %d partitions, concurrency %d: %.3f proofs/s, wall %.1f s, job latency median %.2f s; per partition median: synthesis %.2f, device %.2f, G2 %.2f, finalize %.2f s; %s"
      % (sys.argv[2], d["count"], d["partitions"], d["concurrency"], d["proofs_per_sec"], d["wall_s"], d["job_latency"]["median_s"],
         p["synthesis"]["median_s"], p["g1_phase"]["median_s"], p["msm_g2"]["median_s"], p["finalize"]["median_s"], dev))
PY
}
ratio() { # A B LABEL: proofs/s of B over A
  python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["proofs_per_sec"]; b=json.load(open(sys.argv[2]))["proofs_per_sec"]; print("%s: %.2fx" % (sys.argv[3], b/a))' "$out/bench-$1.json" "$out/bench-$2.json" "$3" >> "$summary" 2>&1
}

if has k22; then
  p=$(params 22 90)
  start_daemon k22 --backend cuda --devices 0 --workers 2
  bench k22-warm "$p" 22 90 4 4
  bench k22-c1 "$p" 22 90 20 1
  bench k22-c4 "$p" 22 90 20 4
  stop_daemon k22
  ratio k22-c1 k22-c4 "K=22 concurrency 4 over 1 (goal >= 1.5)"
fi
if has sweep; then
  p=$(params 22 90)
  for j in 1 2 3 4 5 6 7 8; do
    start_daemon "sweep$j" --backend cuda --devices 0 --workers 2 --memory-budget 24GiB
    bench "sweep-c$j" "$p" 22 90 16 "$j"
    stop_daemon "sweep$j"
    python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["memory"]; print("sweep c=%s: peak reserved %.2f GB of budget %.2f GB (%s); daemon %s" % (sys.argv[2], s["peak_reserved_bytes"]/1e9, s["budget_bytes"]/1e9, "OK" if s["peak_reserved_bytes"] <= s["budget_bytes"] else "OVER", open(sys.argv[3]).read().strip()))' \
      "$out/status-sweep$j.json" "$j" "$out/rss-sweep$j.txt" >> "$summary" 2>&1
  done
fi
if has two; then
  # No --preload: it decodes with full subgroup checks before listening (minutes at 2^22); the
  # warm-up jobs load the parameters (curve checks, as `bench --daemon` asks) and warm the GPUs.
  tb=${TWO_BITS:-90}
  p=$(params 22 "$tb")
  start_daemon one --backend cuda --devices 0 --workers 2
  bench one-warm "$p" 22 "$tb" 4 4
  bench one "$p" 22 "$tb" "${TWO_COUNT:-24}" 4; stop_daemon one
  start_daemon two --backend cuda --devices 0,1 --workers 2
  bench two-warm "$p" 22 "$tb" 8 8
  bench two "$p" 22 "$tb" "${TWO_COUNT:-24}" 8; stop_daemon two
  ratio one two "two GPUs over one, K=22, $tb % bits (goal >= 1.8)"
fi
if has porep; then
  p=$(params 27 90)
  # No --preload (full checks of 2^27 parameters before listening); the first job loads them, so
  # the steady state is the median job, not the first.
  start_daemon porep --backend cuda --devices 0 --workers 2 --memory-budget "${POREP_BUDGET:-40GiB}"
  bench porep "$p" 27 90 "${POREP_JOBS:-3}" 1 10
  stop_daemon porep
fi
cat "$summary"
echo "exit status $fail"
exit "$fail"
