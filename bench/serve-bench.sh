#!/usr/bin/env bash
# The `bellows serve` benchmarks on the GPU machine, from the repository root, with the release
# binaries that bench/cuda-build.sh puts in .carry/bin (the CLI includes the daemon; no Rust on
# the device). Each step starts its own daemon(s) on loopback, drives them with `bellows bench
# --daemon`, and keeps the JSON reports, the daemons' logs, their /metrics and their peak resident
# memory in WORK (default /tmp/bellows-serve-work); $OUT (default /tmp/bellows-serve-out) gets
# summary.txt and logs.tgz (the parameters and state folders left out); the summary is printed
# last. Steps (STEPS, default all; each fits the device tool's 10-minute limit except
# porep, which may need a run of its own):
#   k22     K=22 (90 % bits), --count 20: --concurrency 1 against 4, one H200: proofs/s ratio
#           (goal ≥ 1.5) and the GPU busy fraction in steady state (goal ≥ 90 %)
#   sweep   concurrency 1..8 at K=22 under a 24 GiB budget: peak reserved bytes and peak RSS
#   two     two GPUs (nvidia-h200-x2): --devices 0,1 against --devices 0 (goal ≥ 1.8×)
#   porep   10-partition jobs of 2^27, 90 % bits (PoRep-shaped), steady state per job
#           (goal ≤ 15 s; host memory decides how many partitions fit at once)
#   STEPS="k22 sweep" bench/serve-bench.sh
# Knobs (defaults are the H200 run's): BIN (folder of the bellows binary, default .carry/bin),
# BACKEND (cuda), K (22) and BITS (90) for the k22/sweep/two steps, SWEEP_BUDGET (24GiB),
# SWEEP_JOBS (16), SWEEP_MAX (8), TWO_JOBS (64). A dry run of the logic on any machine, with the
# CPU backend at a tiny size (each "device" of --devices 0,1 is then the same CPU):
#   BIN=$PWD/target/release BACKEND=cpu K=10 SWEEP_BUDGET=400KiB STEPS="sweep two" \
#     bench/serve-bench.sh
set -u -o pipefail
dest=${OUT:-/tmp/bellows-serve-out}
out=${WORK:-/tmp/bellows-serve-work}
mkdir -p "$dest" "$out"
B=${BIN:-$PWD/.carry/bin}
B=$(cd "$B" && pwd) || { echo "no folder $BIN"; exit 1; }
[ -x "$B/bellows" ] || { echo "no bellows binary in $B"; exit 1; }
backend=${BACKEND:-cuda}
K=${K:-22}
BITS=${BITS:-90}
steps=${STEPS:-k22 sweep two porep}
summary="$out/summary.txt"
: > "$summary"
fail=0
has() { case " $steps " in *" $1 "*) return 0;; *) return 1;; esac; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$out/machine.txt" 2>&1
free -g >> "$out/machine.txt"; nproc >> "$out/machine.txt"

params() { # K BITS: sets $p, the path of benchmark-only parameters (made once)
  p="$out/s$1-b$2.params"
  [ -f "$p" ] && return
  timeout 400 "$B/bellows" setup --fast --circuit synthetic -k "$1" --bits-pct "$2" --out "$p" > "$out/setup-k$1.log" 2>&1 \
    || { echo "setup of K=$1 failed: $(grep -m1 -i error "$out/setup-k$1.log")" >> "$summary"; fail=1; rm -f "$p"; }
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
  [ -n "$addr" ] || { echo "daemon $name did not start: $(grep -m1 -i error "$out/daemon-$name.log")" >> "$summary"; fail=1; }
}
stop_daemon() { # NAME
  [ -n "$daemon_pid" ] || return
  if [ -z "$addr" ]; then kill "$daemon_pid" 2>/dev/null; wait "$daemon_pid" 2>/dev/null; daemon_pid=""; return; fi
  curl -s "$maddr" > "$out/metrics-$1.txt" 2>/dev/null || python3 -c 'import urllib.request,sys; print(urllib.request.urlopen(sys.argv[1]).read().decode())' "$maddr" > "$out/metrics-$1.txt" 2>&1
  grep VmHWM "/proc/$daemon_pid/status" > "$out/rss-$1.txt" 2>/dev/null
  "$B/bellows" status --daemon "$addr" --json > "$out/status-$1.json" 2> "$out/status-$1.err" || rm -f "$out/status-$1.json"
  kill -TERM "$daemon_pid"; wait "$daemon_pid" 2>/dev/null; daemon_pid=""
}
bench() { # NAME PARAMS K BITS COUNT CONC [PARTITIONS]
  if [ -z "$addr" ]; then echo "$1: not run (no daemon)" >> "$summary"; fail=1; return; fi
  if ! timeout 560 "$B/bellows" bench --daemon "$addr" --params "$2" --circuit synthetic -k "$3" --bits-pct "$4" \
    --count "$5" --concurrency "$6" --partitions "${7:-1}" --json > "$out/bench-$1.json" 2> "$out/bench-$1.err"; then
    echo "$1: bench failed: $(grep -m1 -i error "$out/bench-$1.err" || tail -n1 "$out/bench-$1.err")" >> "$summary"
    rm -f "$out/bench-$1.json"; fail=1; return
  fi
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
  [ -s "$out/bench-$1.json" ] && [ -s "$out/bench-$2.json" ] || { echo "$3: not computed (a bench failed)" >> "$summary"; return; }
  python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["proofs_per_sec"]; b=json.load(open(sys.argv[2]))["proofs_per_sec"]; print("%s: %.2fx" % (sys.argv[3], b/a))' "$out/bench-$1.json" "$out/bench-$2.json" "$3" >> "$summary" 2>&1
}

if has k22; then
  params "$K" "$BITS"
  start_daemon k22 --backend "$backend" --devices 0 --workers 2
  bench k22-warm "$p" "$K" "$BITS" 4 4
  bench k22-c1 "$p" "$K" "$BITS" 20 1
  bench k22-c4 "$p" "$K" "$BITS" 20 4
  stop_daemon k22
  ratio k22-c1 k22-c4 "K=$K concurrency 4 over 1 (goal >= 1.5)"
fi
if has sweep; then
  params "$K" "$BITS"
  for j in $(seq "${SWEEP_MAX:-8}"); do
    # No --preload (full subgroup checks before listening: over a minute at 2^22); the first
    # job loads the parameters with the curve checks `bench --daemon` asks for.
    start_daemon "sweep$j" --backend "$backend" --devices 0 --workers 2 --memory-budget "${SWEEP_BUDGET:-24GiB}"
    bench "sweep-c$j" "$p" "$K" "$BITS" "${SWEEP_JOBS:-16}" "$j"
    stop_daemon "sweep$j"
    [ -s "$out/status-sweep$j.json" ] || continue
    python3 - "$out/status-sweep$j.json" "$j" "$out/rss-sweep$j.txt" >> "$summary" 2>&1 <<'PY'
import json, sys
def size(b):
    return "%.2f GB" % (b / 1e9) if b >= 1e8 else "%.1f MB" % (b / 1e6)
s = json.load(open(sys.argv[1]))
m = s["memory"]
ok = m["peak_reserved_bytes"] <= m["budget_bytes"]
devs = []
for d in s["devices"]:
    b = d.get("memory_budget_bytes")
    peak = d.get("memory_peak_bytes", 0)
    ok = ok and (b is None or peak <= b)
    devs.append("%s %s of %s" % (d["name"], size(peak), "unlimited" if b is None else size(b)))
try:
    rss = open(sys.argv[3]).read().strip() or "VmHWM not read"
except OSError:
    rss = "VmHWM not read"
print("sweep c=%s: host peak reserved %s of budget %s; device peaks %s; %s; daemon %s"
      % (sys.argv[2], size(m["peak_reserved_bytes"]), size(m["budget_bytes"]), ", ".join(devs),
         "OK" if ok else "OVER", rss))
PY
  done
fi
if has two; then
  # No --preload: it decodes with full subgroup checks before listening (minutes at 2^22); the
  # warm-up jobs load the parameters (curve checks, as `bench --daemon` asks) and warm the GPUs.
  # TWO_JOBS (or TWO_COUNT, its older name) jobs each; 64 keeps the ramp up and down small.
  params "$K" "$BITS"
  tj=${TWO_JOBS:-${TWO_COUNT:-64}}
  start_daemon one --backend "$backend" --devices 0 --workers 2
  bench one-warm "$p" "$K" "$BITS" 4 4
  bench one "$p" "$K" "$BITS" "$tj" 4; stop_daemon one
  start_daemon two --backend "$backend" --devices 0,1 --workers 2
  bench two-warm "$p" "$K" "$BITS" 8 8
  bench two "$p" "$K" "$BITS" "$tj" 8; stop_daemon two
  ratio one two "two devices over one, K=$K, $BITS % bits (goal >= 1.8)"
fi
if has porep; then
  params 27 90
  # No --preload (full checks of 2^27 parameters before listening); the first job loads them, so
  # the steady state is the median job, not the first.
  start_daemon porep --backend "$backend" --devices 0 --workers 2 --memory-budget "${POREP_BUDGET:-40GiB}"
  bench porep "$p" 27 90 "${POREP_JOBS:-3}" 1 10
  stop_daemon porep
fi
echo "exit status $fail" >> "$summary"
cp "$summary" "$dest/summary.txt"
tar czf "$dest/logs.tgz" -C "$out" --exclude='*.params' --exclude='state-*' . 2>/dev/null
cat "$summary"
exit "$fail"
