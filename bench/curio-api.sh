#!/usr/bin/env bash
# Runs on the GPU machine (the device tool, kind nvidia-h200), from the repository root: the cuzk
# API (`bellows serve --cuzk`, docs/curio.md) measured through a gRPC client, as Curio calls it.
# Needs in $BIN (default .carry/bin) `bellows` (feature filecoin, bench/filecoin-build.sh), its
# CUDA plugin and `cuzk_client` (serve/examples/cuzk_client.rs; bench/README.md, "curio-api.sh",
# builds and stages it), `kinds_bench` (integrations/filecoin/examples/kinds_bench.rs: the PoSt
# inputs and filecoin-proofs' PoSt prover), and filecoin-proofs' own C2 built with SupraSeal in
# $PEER (default .carry/fc2/filecoin-c2-cuda-supraseal, ../shared/peers/filecoin-c2/build.sh).
# No Rust there.
#
# One daemon (CUDA, unix socket, curve-only parameter checks of the test parameters made here)
# serves every step. Steps (STEPS, default "porep post during"):
#   porep   for each size in SIZES (default "2KiB 8MiB"): a synthetic C1 (`porep synth-c1`),
#           Bellows' setup of its parameters (once per WORK), then REPS Prove calls through the
#           API (each its own request id; one JSON line each), the last proof checked by
#           filecoin-proofs' verify_seal, the same request id sent again (must answer at once
#           with the same job), then filecoin-proofs' C2 (SupraSeal) on the same C1 and files.
#   post    WinningPoSt and one WindowPoSt partition from request files in POST_DIR (below),
#           REPS Prove calls each, the last proof checked by filecoin-proofs' verify_*_post;
#           beside them POST_PEER, filecoin-proofs' PoSt prover on the same request.
#   during  DURING_JOBS PoRep jobs of the C1 DURING_C1 (default the 8 MiB one of `porep`)
#           submitted at once, then, once one runs, WIN_REPS WinningPoSt Prove calls one after
#           the other: each one's latency, and how many PoRep jobs were still queued or running
#           when it came back (goal: at most 2 s while PoRep runs).
#
# POST_DIR (default $WORK/post-$POST_SIZE) holds what Curio would send for a PoSt: winning.json
# and window.json, request files of cuzk_client (`kind`, `registered_proof`, `miner_id`,
# `randomness` in hex, `partition_index`, `vanilla`: files of one bincode FallbackPoStSectorProof
# each, as filecoin-proofs-api's generate_single_vanilla_proof makes them), and params/, the
# PoSt circuits' parameters under filecoin-proofs' names. When `post` or `during` runs and
# POST_DIR has no winning.json, `kinds_bench post-requests` makes it before the daemon starts: a
# sector of POST_SIZE (2KiB, or 8MiB) sealed by filecoin-proofs on the CPU, its vanilla
# proofs, Bellows' setup of the two circuits (seconds at 2 KiB). POST_PEER (default
# `$BIN/kinds_bench post-peer`: filecoin-proofs-api's generate_*_post_with_vanilla, bellperson
# on the CPU; POST_PEER=none skips it) is run as `POST_PEER --request FILE --reps N --check
# PROOF` with FIL_PROOFS_PARAMETER_CACHE=POST_DIR/params: it prints `RESULT … prove_s=S` per
# repetition, then checks its own last proof and Bellows' (PROOF) with verify_*_post.
#
# Knobs: REPS (3; the first pays for loading and recording, the summary reports the median of
# the others), SIZES, POST_SIZE (2KiB), BACKEND (cuda), DAEMON_OPTS (more `bellows serve` flags), DURING_JOBS (4),
# DURING_C1 and DURING_PROOF (its RegisteredSealProof number) and DURING_PARAMS (its parameter
# folder) for another PoRep, e.g. the 32 GiB one of bench/filecoin-porep.sh, WIN_REPS (5).
#   STEPS="porep during" bash bench/curio-api.sh
# $WORK (default /root/bellows-curio: parameters, C1 files, the daemon's state) is kept between
# calls while the machine stays warm; $OUT gets summary.txt and logs.tgz.
set -u -o pipefail
out=${OUT:-/tmp/bellows-curio-out}
work=${WORK:-/root/bellows-curio}
logs="$work/logs"
mkdir -p "$out" "$work" "$logs"
B=$(cd "${BIN:-.carry/bin}" && pwd) || { echo "no folder ${BIN:-.carry/bin}"; exit 1; }
C="$B/cuzk_client"
PEER=${PEER:-.carry/fc2/filecoin-c2-cuda-supraseal}
steps=${STEPS:-porep post during}
reps=${REPS:-3}
backend=${BACKEND:-cuda}
post_size=${POST_SIZE:-2KiB}
post=${POST_DIR:-$work/post-$post_size}
post_peer=${POST_PEER:-$B/kinds_bench post-peer}
params=${PARAMS:-$work/params}   # shared with bench/filecoin-porep.sh when both are given one
sock="$work/cuzk.sock"
summary="$out/summary.txt"
: > "$summary"
fail=0
has() { case " $steps " in *" $1 "*) return 0;; *) return 1;; esac; }
note() { echo "$*" | tee -a "$summary"; }
for f in bellows cuzk_client; do [ -x "$B/$f" ] || { note "no $f in $B"; exit 1; }; done
export BELLOWS_PLUGIN_PATH="$B" RUST_BACKTRACE=1 RUST_LOG=${RUST_LOG:-info}
export FIL_PROOFS_PARENT_CACHE="$work/parents" FIL_PROOFS_VERIFY_PRODUCTION_PARAMS=false
export FIL_PROOFS_USE_MULTICORE_SDR=false
mkdir -p "$FIL_PROOFS_PARENT_CACHE" "$params"
seal_number() { # SIZE: the network's RegisteredSealProof number of StackedDrg<SIZE>V1_1
  case $1 in 2KiB) echo 5;; 8MiB) echo 6;; 512MiB) echo 7;; 32GiB) echo 8;; 64GiB) echo 9;; *) return 1;; esac
}

# med FILE.jsonl: the median wall and daemon timings of the completed calls after the first.
med() {
  python3 - "$1" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
done = [r for r in rows if r.get("status") == "COMPLETED"]
steady = done[1:] or done
if not steady:
    print("no completed call"); sys.exit(1)
m = lambda k: statistics.median(r[k] for r in steady)
print("%d of %d completed; median of %d: wall %.0f ms (daemon: total %.0f, queue %.0f, params %.0f, synthesis %.0f, device %.0f ms), proof %d bytes"
      % (len(done), len(rows), len(steady), m("wall_ms"), m("total_ms"), m("queue_wait_ms"), m("srs_load_ms"),
         m("synthesis_ms"), m("gpu_compute_ms"), steady[-1]["proof_bytes"]))
PY
}
# peer_med LOG KEY: the median of KEY=S over RESULT lines after the first, in ms.
peer_med() {
  grep -o "$2=[0-9.]*" "$1" | cut -d= -f2 | python3 -c '
import statistics, sys
v = [float(x) for x in sys.stdin.read().split()]
v = v[1:] or v
print("%.0f" % (1000 * statistics.median(v)) if v else "")'
}
ratio() { # LABEL PEER_MS BELLOWS_JSONL
  local b; b=$(python3 -c '
import json, statistics, sys
d = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
d = [r["wall_ms"] for r in d if r.get("status") == "COMPLETED"]
d = d[1:] or d
print("%.0f" % statistics.median(d) if d else "")' "$3")
  if [ -n "$2" ] && [ -n "$b" ]; then
    note "$1: filecoin-proofs $2 ms, Bellows through the cuzk API $b ms: $(python3 -c "print('%.2f' % ($2 / $b))")x"
  else
    note "$1: ratio not computed (a side did not complete)"
  fi
}

daemon_pid=""
start_daemon() {
  local extra=()
  [ -d "$post/params" ] && extra+=(--params-dir "$post/params")
  [ -n "${DURING_PARAMS:-}" ] && extra+=(--params-dir "$DURING_PARAMS")
  rm -f "$sock"
  # shellcheck disable=SC2086
  "$B/bellows" -v serve --state-dir "$work/state" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
    --cuzk "unix:$sock" --backend "$backend" --params-dir "$params" "${extra[@]}" \
    --params-check curve-only ${DAEMON_OPTS:-} > "$logs/daemon.stdout" 2> "$logs/daemon.log" &
  daemon_pid=$!
  for _ in $(seq 600); do
    grep -q '^cuzk on' "$logs/daemon.stdout" 2>/dev/null && break
    kill -0 "$daemon_pid" 2>/dev/null || break
    sleep 0.1
  done
  grep -q '^cuzk on' "$logs/daemon.stdout" 2>/dev/null || {
    note "daemon did not start: $(grep -m1 -i error "$logs/daemon.log")"; exit 1; }
  note "daemon: $(tr '\n' ' ' < "$logs/daemon.stdout")"
}
stop_daemon() {
  [ -n "$daemon_pid" ] || return
  "$C" --addr "unix:$sock" status > "$logs/status-end.json" 2>&1
  "$C" --addr "unix:$sock" metrics > "$logs/metrics-end.txt" 2>&1
  grep VmHWM "/proc/$daemon_pid/status" | tee -a "$summary"
  kill -TERM "$daemon_pid"; wait "$daemon_pid" 2>/dev/null; daemon_pid=""
}
trap stop_daemon EXIT
client() { timeout "${CALL_TIMEOUT:-500}" "$C" --addr "unix:$sock" "$@"; }

{ nvidia-smi; nproc; free -g; df -h "$work"; } > "$logs/machine.txt" 2>&1
note "steps: $steps; $(nproc) cores; $(free -g | awk '/Mem/ {print $2}') GiB"
# The PoSt inputs, before the daemon starts (it is given POST_DIR/params when that exists).
if { has post || has during; } && [ ! -f "$post/winning.json" ]; then
  if [ -x "$B/kinds_bench" ]; then
    if timeout 500 "$B/kinds_bench" post-requests --out "$post" --sector "$post_size" --work "$work/kinds" \
      > "$logs/post-requests.log" 2>&1; then note "PoSt inputs ($post_size) made in $post: $(grep -c registered_proof "$logs/post-requests.log") request files"
    else note "PoSt inputs not made: $(tail -n1 "$logs/post-requests.log")"; fail=1; fi
  else
    note "no kinds_bench in $B: the PoSt inputs are not made"
  fi
fi
start_daemon

if has porep; then
  for s in ${SIZES:-2KiB 8MiB}; do
    n=$(seal_number "$s") || { note "porep $s: unknown size"; fail=1; continue; }
    c1="$work/c1-$s.json"
    "$B/bellows" porep synth-c1 --sector-size "$s" --seed 7 --out "$c1" --force > "$logs/synth-$s.log" 2>&1 \
      || { note "porep $s: synth-c1 failed"; fail=1; continue; }
    if [ ! -e "$params/made-$s" ]; then
      "$B/bellows" porep setup --proof "StackedDrg${s}V1_1" --params-dir "$params" --force > "$logs/setup-$s.log" 2>&1 \
        && touch "$params/made-$s" || { note "porep $s: setup failed"; fail=1; continue; }
    fi
    j="$logs/cuzk-porep-$s.jsonl"
    client prove --kind porep --registered-proof "$n" --vanilla "$c1" --miner 1000 --sector 1 \
      --reps "$reps" --request-id "porep-$s-$$" --out "$work/cuzk-$s.proof" > "$j" 2> "$logs/cuzk-porep-$s.err" || fail=1
    note "cuzk porep $s: $(med "$j")"
    if "$B/bellows" porep verify --c1 "$c1" --proof "$work/cuzk-$s.proof" --params-dir "$params" --miner 1000 \
      > "$logs/verify-$s.log" 2>&1; then note "  verify_seal of the last proof: $(tail -n1 "$logs/verify-$s.log")"
    else note "  verify_seal of the last proof FAILED: $(tail -n1 "$logs/verify-$s.log")"; fail=1; fi
    client prove --kind porep --registered-proof "$n" --vanilla "$c1" --miner 1000 --sector 1 \
      --request-id "porep-$s-$$-$((reps - 1))" --same-id > "$logs/cuzk-porep-$s-again.jsonl" 2>&1 || fail=1
    note "  same request id again: $(python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).readline()); print("job %s, %s, %.1f ms" % (r.get("job_id"), r.get("status"), r["wall_ms"]))' "$logs/cuzk-porep-$s-again.jsonl" 2>&1)"
    if [ -x "$PEER" ]; then
      FIL_PROOFS_PARAMETER_CACHE="$params" timeout 500 "$PEER" --c1 "$c1" --reps "$reps" --out "$work/s-$s.proof" \
        > "$logs/peer-porep-$s.log" 2>&1 || { fail=1; note "  filecoin-proofs failed: $(tail -n1 "$logs/peer-porep-$s.log")"; }
      grep -h "RESULT\|verify_seal" "$logs/peer-porep-$s.log" | sed "s/^/  /" | tee -a "$summary"
      ratio "porep $s" "$(peer_med "$logs/peer-porep-$s.log" c2_s)" "$j"
    else
      note "  no filecoin-proofs peer at $PEER"
    fi
  done
fi

if has post; then
  for k in winning window; do
    r="$post/$k.json"
    [ -f "$r" ] || { note "post $k: not run, no $r"; continue; }
    j="$logs/cuzk-$k.jsonl"
    pf="$work/cuzk-$k.proof"
    rm -f "$pf"
    client prove --request "$r" --reps "$reps" --request-id "$k-$$" --out "$pf" > "$j" 2> "$logs/cuzk-$k.err" || fail=1
    note "cuzk $k: $(med "$j")"
    if [ "$post_peer" != none ]; then
      # shellcheck disable=SC2086
      FIL_PROOFS_PARAMETER_CACHE="$post/params" timeout 500 $post_peer --request "$r" --reps "$reps" --check "$pf" \
        > "$logs/peer-$k.log" 2>&1 || { fail=1; note "  the PoSt peer or a check failed: $(tail -n1 "$logs/peer-$k.log")"; }
      grep -h "^verify" "$logs/peer-$k.log" | sed "s/^/  /" | tee -a "$summary"
      ratio "$k" "$(peer_med "$logs/peer-$k.log" prove_s)" "$j"
    else
      note "  no PoSt peer (POST_PEER=none)"
    fi
  done
fi

if has during; then
  dc1=${DURING_C1:-$work/c1-8MiB.json}
  dn=${DURING_PROOF:-6}
  if [ ! -f "$post/winning.json" ]; then
    note "during: not run, no $post/winning.json"
  elif [ ! -f "$dc1" ]; then
    note "during: not run, no $dc1 (run the porep step first, or give DURING_C1)"
  else
    # One WinningPoSt first, not counted: its parameters loaded and its circuit recorded.
    client prove --request "$post/winning.json" --request-id "during-warm-$$" --same-id > "$logs/during-warm.jsonl" 2>&1 || fail=1
    client submit --kind porep --registered-proof "$dn" --vanilla "$dc1" --miner 1000 --sector 1 \
      --reps "${DURING_JOBS:-4}" --request-id "during-$$" > "$logs/during-submit.jsonl" 2>&1 || fail=1
    jobs=$(python3 -c 'import json,sys; print(" ".join(json.loads(l)["job_id"] for l in open(sys.argv[1]) if "job_id" in l))' "$logs/during-submit.jsonl")
    running=0
    for _ in $(seq 600); do   # until a PoRep job runs (its first partition started), at most 60 s
      running=$(client status | python3 -c 'import json,sys; print(sum(q["in_progress"] for q in json.load(sys.stdin)["queues"] if q["proof_kind"] == "porep-c2"))')
      [ "${running:-0}" -gt 0 ] && break
      sleep 0.1
    done
    note "during: ${DURING_JOBS:-4} PoRep jobs ($dc1) submitted: $jobs; running: $running"
    : > "$logs/during-winning.jsonl"
    for i in $(seq "${WIN_REPS:-5}"); do
      client prove --request "$post/winning.json" --request-id "during-win-$$-$i" --same-id >> "$logs/during-winning.jsonl" 2>&1 || fail=1
      client status | python3 -c 'import json,sys; q=[q for q in json.load(sys.stdin)["queues"] if q["proof_kind"]=="porep-c2"]; print("porep-c2 pending %d, in progress %d" % (sum(x["pending"] for x in q), sum(x["in_progress"] for x in q)))' >> "$logs/during-load.txt"
    done
    python3 - "$logs/during-winning.jsonl" "$logs/during-load.txt" <<'PY' | tee -a "$summary"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
load = open(sys.argv[2]).read().splitlines()[-len(rows):] if rows else []
for r, l in zip(rows, load):
    print("  WinningPoSt during PoRep: %s, wall %.0f ms (daemon: queue %s, synthesis %s, device %s ms); after it: %s"
          % (r.get("status"), r["wall_ms"], r.get("queue_wait_ms"), r.get("synthesis_ms"), r.get("gpu_compute_ms"), l))
ok = [r["wall_ms"] for r in rows if r.get("status") == "COMPLETED"]
if ok:
    print("during: WinningPoSt latency max %.0f ms over %d calls (goal <= 2000 ms while PoRep runs)" % (max(ok), len(ok)))
PY
    # shellcheck disable=SC2086
    client await $jobs > "$logs/during-porep.jsonl" 2>&1 || fail=1
    note "during: PoRep jobs: $(grep -c COMPLETED "$logs/during-porep.jsonl") of $(wc -w <<< "$jobs") completed"
  fi
fi

stop_daemon
trap - EXIT
tar czf "$out/logs.tgz" -C "$work" logs 2>/dev/null
exit $fail
