#!/usr/bin/env bash
# The CUDA backend's checks and measurements on the GPU machine, run from the repository root with
# the binaries of bench/cuda-build.sh carried (and, for the side-by-side numbers, the peers built by
# ../shared/peers/bellperson-bench/build.sh and ../shared/peers/sppark-msm/build.sh). Correctness
# first, then the measurements, each peer in the same command as ours. The summary goes to
# $OUT/summary.txt and every log to $OUT/logs.tgz (rewritten after each step, so that a call cut
# short still brings back what ran). Steps, chosen with STEPS (default "conformance msm prove"):
#   check        bellows-cuda-check: every kernel against blst and the CPU backend (CHECK_ARGS)
#   conformance  `bellows conformance --backend cuda --full --max-log-size CONF_MAX` (default 20;
#                CONF_TIMEOUT s), then the streaming tier (a 4 MiB device budget) at 2^16.
#                CONF_ONLY="msm_g2|proof" runs only the checks whose names contain one of those
#                texts; CONF_PART=1|2 runs one half of the suite, for a CONF_MAX whose whole suite
#                outlasts a 600 s call (at 24: part 1 about 380 s, part 2 about 450 s on an H200)
#   msm          bellows-cuda-msm: checks against blst (MSM_CHECK), then G1 MSMs at MSM_LOG_N and
#                G2 at MSM_G2_LOG_N, scalars on the device (MSM_SCALARS), extra arguments in
#                MSM_ARGS (e.g. "--precompute 20", "--sweep BELLOWS_MSM_WINDOW=16,20",
#                "--bits-pct 90"); sppark's MSM beside it when SPPARK (default .carry/sppark) holds it
#   tiers        the memory tiers: MSMs and K=22 proofs under device budgets of 2 and 1 GiB
#   prove        one proof a call, `bellows bench --backend cuda` for each K in K and bits in BITS
#                (REPS timed after WARMUP), with BENCH_OPTS (e.g. "--backend-opt msm-precompute=on")
#   peers        SupraSeal C2 and bellperson's CUDA prover at the same K and BITS (PEERS dir,
#                default .carry/peers; PEER_VARIANTS, PEER_ITERS)
#   batch        BATCH proofs a call (default 8) at BATCH_K (default 22), ours then the peers'
#   k27          a PoRep partition's size: K=27 at K27_BITS (default 90) %, K27_REPS after K27_WARMUP
#   pce          bench/pce-synthesis.sh: direct against pre-compiled synthesis (PCE_BENCH_BIG, 24)
#   gpus         BATCH proofs at GPUS_K (22) on every GPU (--devices all) against GPU 0 alone
#   sched        the pipeline scheduler in process (`bench --count SCHED_COUNT --concurrency J`),
#                every GPU against GPU 0 (K=SCHED_K, bits SCHED_BITS)
#   streams      calls in flight per GPU (--backend-opt streams=S for S in STREAMS, default "1 2"):
#                conformance with the last S, then the scheduler on GPU 0 at each S
#   overhead     the CUDA backend linked in against the same backend through its .so, proofs
#                alternating (OVERHEAD_K, default 22; OVERHEAD_ROUNDS, default 15)
#   pin          page-locking PIN_GIB (default 32) GiB of host memory by each method (driver
#                allocation, or memory backed on every core then registered) alone and beside a
#                parameter load (its host side, and the key loaded onto the GPU: bellows-cuda-pin,
#                PIN_LOG default 24, 2 rounds)
# Comparisons in one command:
#   ALT_ENV="NAME=V1,V2"  a backend knob read at every call (the BELLOWS_MSM_* variables of
#                docs/cuda.md): prove, batch and k27 pass it as `bench --alternate-env`, so the
#                values alternate rep by rep in one process and the summary has a line per value.
#   BASE_BIN=DIR|FILE.tar.xz  a second build (e.g. before a change): prove runs it and BIN
#                alternately, base, new, base, new.
#   BIN (default .carry/bin) may also be a .tar.xz made by `PACK=NAME bench/cuda-build.sh`.
# A knob set for the whole script (e.g. BELLOWS_MSM_SCATTER=bins bench/cuda-prove.sh) reaches
# every program, the checks and conformance included.
#   STEPS="conformance msm prove" K="22 24" BITS="0 90" bench/cuda-prove.sh
set -u -o pipefail
out=${OUT:-/tmp/bellows-cuda-out}
work=${WORK:-/tmp/bellows-cuda-work}
mkdir -p "$out" "$work"
# A folder of binaries, or a .tar.xz holding bin/ (unpacked once under /tmp).
bin_dir() {
  case $1 in
    *.tar.xz)
      local d; d=/tmp/bellows-bins/$(basename "$1" .tar.xz)
      [ -x "$d/bin/bellows" ] || { mkdir -p "$d" && xz -dc "$1" | tar xf - -C "$d"; }
      echo "$d/bin" ;;
    *) echo "$1" ;;
  esac
}
B=$(bin_dir "${BIN:-.carry/bin}")
base=""; [ -n "${BASE_BIN:-}" ] && base=$(bin_dir "$BASE_BIN")
peers=${PEERS:-.carry/peers}
sppark=${SPPARK:-.carry/sppark}
steps=${STEPS:-conformance msm prove}
ks=${K:-22 24}
bits=${BITS:-0 90}
reps=${REPS:-3}
warmup=${WARMUP:-1}
read -r -a bench_opts <<< "${BENCH_OPTS:-}"
alt=(); [ -n "${ALT_ENV:-}" ] && alt=(--alternate-env "$ALT_ENV")
summary="$work/summary.txt"
: > "$summary"
fail=0
has() { case " $steps " in *" $1 "*) return 0;; *) return 1;; esac; }
save() { cp "$summary" "$out/summary.txt"; tar czf "$out/logs.tgz" -C "$work" . 2>/dev/null; }
# One summary line for a `bellows bench --json` report, and one per --alternate-env value.
summ() { # FILE LABEL
  python3 - "$1" "$2" >> "$summary" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); ph = d["phases"]
m = lambda k: ph[k]["median_s"]
print("%s: K=%d bits=%s count=%d: total %.3f s (synthesis %.3f, G1 phase %.3f, G2 %.3f on %s), %.3f proofs/s"
      % (sys.argv[2], d["log_size"], d["bits_pct"], d["count"], m("total"), m("synthesis"), m("g1_phase"),
         m("msm_g2"), d["g2_on"], d["proofs_per_sec"]))
for v in (d.get("alternate") or {}).get("values", []):
    print("%s:   %s=%s (%d reps): G1 phase median %.4f s, min %.4f s; total median %.3f s"
          % (sys.argv[2], d["alternate"]["name"], v["value"], v["reps"], v["g1_phase"]["median_s"],
             v["g1_phase"]["min_s"], v["total"]["median_s"]))
PY
}
# One summary line for a throughput report (`bench --count N --concurrency J --json`).
summ_rate() { # FILE LABEL
  python3 - "$1" "$2" >> "$summary" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); p = d["phases"]
busy = ", ".join("%s busy %.1f%%" % (x["name"], 100 * x["busy_fraction"]) for x in d["devices"])
print("%s: concurrency %d: %.3f proofs/s (wall %.1f s; per partition median synthesis %.2f, device %.2f, G2 %.2f s; %s)"
      % (sys.argv[2], d["concurrency"], d["proofs_per_sec"], d["wall_s"], p["synthesis"]["median_s"],
         p["g1_phase"]["median_s"], p["msm_g2"]["median_s"], busy))
PY
}
# bench NAME SECONDS BIN ARGS...: `bellows bench --backend cuda ARGS --json` into NAME.json.
bench() {
  local name=$1 secs=$2 bin=$3; shift 3
  timeout "$secs" "$bin/bellows" bench --backend cuda "$@" --json > "$work/$name.json" 2> "$work/$name.err" || fail=1
  summ "$work/$name.json" "$name"
}
{ nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv; nproc; free -g; } > "$work/machine.txt" 2>&1
"$B/bellows" backends >> "$work/machine.txt" 2>&1
echo "steps: $steps; bin $B${base:+; base $base}; $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1)" >> "$summary"

if has check; then
  read -r -a check_args <<< "${CHECK_ARGS:-}"
  timeout 300 "$B/bellows-cuda-check" "${check_args[@]}" > "$work/check.log" 2>&1 || fail=1
  grep -hE "checks passed|FAIL|passed|failed" "$work/check.log" | tail -n 3 | sed 's/^/check: /' >> "$summary"
  save
fi
if has conformance; then
  conf_only=${CONF_ONLY:-}
  if [ -z "$conf_only" ]; then
    case "${CONF_PART:-}" in
      1) conf_only="ntt|h_poly|msm_g1 empty|msm_g1 one|msm_g1 zero|msm_g1 identity|msm_g1 repeated|msm_g1 scalar|msm_g1 all-equal|msm_g1 small" ;;
      2) conf_only="msm_g1 random|msm_g1 batched|msm_g2|density|bases|host memory|groth16_g1|proof|concurrent" ;;
      "") ;;
      *) echo "CONF_PART must be 1 or 2" >&2; exit 2 ;;
    esac
  fi
  only=(); IFS='|' read -r -a parts <<< "$conf_only"; for o in "${parts[@]}"; do [ -n "$o" ] && only+=(--only "$o"); done
  timeout "${CONF_TIMEOUT:-240}" "$B/bellows" conformance --backend cuda --full --max-log-size "${CONF_MAX:-20}" "${only[@]}" > "$work/conformance.log" 2>&1 || fail=1
  timeout 120 "$B/bellows" conformance --backend cuda --max-log-size 16 --backend-opt gpu-memory-limit=4MiB > "$work/conformance-streaming.log" 2>&1 || fail=1
  for f in conformance conformance-streaming; do
    grep -hE "^(PASS|FAIL)" "$work/$f.log" | sed "s/^/$f: /" >> "$summary"
  done
  save
fi
if has msm; then
  read -r -a msm_args <<< "${MSM_ARGS:-}"
  timeout "${MSM_TIMEOUT:-280}" "$B/bellows-cuda-msm" --log-n "${MSM_LOG_N:-20,22,24}" --g2-log-n "${MSM_G2_LOG_N:-22,24}" \
    --check "${MSM_CHECK:-10,16,20}" --iters "${MSM_ITERS:-5}" --scalars "${MSM_SCALARS:-device}" "${msm_args[@]}" > "$work/msm.log" 2>&1 || fail=1
  if [ -x "$sppark/run.sh" ]; then
    timeout 200 "$sppark/run.sh" --log-n "${MSM_LOG_N:-20,22,24}" --check none --iters "${MSM_ITERS:-5}" --modes resident,dscalars --pin off > "$work/sppark.log" 2>&1
  fi
  grep -hE "^RESULT|checks passed|FAILED|MISMATCH" "$work/msm.log" "$work/sppark.log" 2>/dev/null >> "$summary"
  save
fi
if has tiers; then
  timeout 120 "$B/bellows-cuda-msm" --log-n 20 --check 10 --iters 3 --tiers 22 > "$work/tiers-msm.log" 2>&1 || fail=1
  grep -h "RESULT tier" "$work/tiers-msm.log" >> "$summary"
  for lim in none 2GiB 1GiB; do
    o=(); [ "$lim" != none ] && o=(--backend-opt "gpu-memory-limit=$lim")
    bench "tier-$lim" 150 "$B" -k 22 --reps 2 "${o[@]}"
  done
  save
fi
if has prove; then
  for k in $ks; do for p in $bits; do
    builds=new; [ -n "$base" ] && builds="base new base new"
    i=0
    for which in $builds; do
      i=$((i + 1)); bin=$B; name="prove-k$k-b$p"
      [ -n "$base" ] && name="$name-$which-$i"
      [ "$which" = base ] && bin=$base
      bench "$name" "${PROVE_TIMEOUT:-240}" "$bin" -k "$k" --bits-pct "$p" --reps "$reps" --warmup "$warmup" "${bench_opts[@]}" "${alt[@]}"
      save
    done
  done; done
fi
if has peers && [ -x "$peers/run.sh" ]; then
  timeout "${PEERS_TIMEOUT:-300}" "$peers/run.sh" --log-n "$(echo $ks | tr ' ' ,)" --bits-pct "$(echo $bits | tr ' ' ,)" --iters "${PEER_ITERS:-2}" --variants "${PEER_VARIANTS:-supraseal,cuda}" > "$work/peers.log" 2>&1
  grep -h "^RESULT" "$work/peers.log" >> "$summary"
  save
fi
bk=${BATCH_K:-22}; bn=${BATCH:-8}
if has batch; then
  for p in $bits; do
    bench "batch-k$bk-b$p" 400 "$B" -k "$bk" --bits-pct "$p" --count "$bn" --reps "${BATCH_REPS:-2}" --warmup "$warmup" "${bench_opts[@]}" "${alt[@]}"
    save
  done
  if [ -x "$peers/run.sh" ]; then
    timeout "${PEERS_TIMEOUT:-400}" "$peers/run.sh" --log-n "$bk" --bits-pct "$(echo $bits | tr ' ' ,)" --batch "$bn" --iters "${PEER_ITERS:-1}" --variants "${PEER_VARIANTS:-supraseal,cuda}" > "$work/peers-batch.log" 2>&1
    grep -h "^RESULT" "$work/peers-batch.log" >> "$summary"
    save
  fi
fi
if has k27; then
  # Benchmark-only parameters of 2^27 are generated on the host first (about 2 minutes).
  read -r -a k27_opts <<< "${K27_OPTS:-}"
  bench k27 "${K27_TIMEOUT:-540}" "$B" -k 27 --bits-pct "${K27_BITS:-90}" --reps "${K27_REPS:-2}" --warmup "${K27_WARMUP:-1}" "${k27_opts[@]}" "${alt[@]}"
  save
fi
if has pce; then
  BELLOWS_BIN="$B/bellows" OUT="$work/pce" PCE_BENCH_SMALL=${PCE_BENCH_SMALL:-none} timeout 420 bash bench/pce-synthesis.sh "${PCE_REPS:-2}" > "$work/pce.log" 2>&1 || fail=1
  sed -n '/== summary/,$p' "$work/pce.log" >> "$summary"
  save
fi
if has gpus; then
  for d in 0 all; do
    bench "gpus-$d" 300 "$B" --devices "$d" -k "${GPUS_K:-22}" --count "$bn" --reps "${BATCH_REPS:-2}"
  done
  save
fi
if has sched; then
  # The daemon's engine in process: synthesis overlapping the device work, one GPU against all.
  sk=${SCHED_K:-22}; sb=${SCHED_BITS:-0}; sn=${SCHED_COUNT:-24}
  for d in 0 all; do
    j=${SCHED_CONC:-4}; [ "$d" = all ] && j=${SCHED_CONC_ALL:-8}
    timeout 280 "$B/bellows" bench --backend cuda --devices "$d" -k "$sk" --bits-pct "$sb" --count "$sn" --concurrency "$j" --json > "$work/sched-$d.json" 2> "$work/sched-$d.err" || fail=1
    summ_rate "$work/sched-$d.json" "sched K=$sk bits=$sb devices=$d"
  done
  python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["proofs_per_sec"]; b=json.load(open(sys.argv[2]))["proofs_per_sec"]; print("sched: every GPU over one: %.2fx" % (b/a))' "$work/sched-0.json" "$work/sched-all.json" >> "$summary" 2>&1
  save
fi
if has streams; then
  sk=${SCHED_K:-22}; sb=${SCHED_BITS:-0}; sn=${SCHED_COUNT:-24}; j=${SCHED_CONC:-4}
  for st in ${STREAMS:-1 2}; do last=$st; done
  timeout 240 "$B/bellows" conformance --backend cuda --full --max-log-size 18 --backend-opt "streams=$last" > "$work/conformance-streams.log" 2>&1 || fail=1
  grep -hE "^(PASS|FAIL)" "$work/conformance-streams.log" | sed "s/^/conformance streams=$last: /" >> "$summary"
  for st in ${STREAMS:-1 2}; do
    timeout 280 "$B/bellows" bench --backend cuda --devices 0 --backend-opt "streams=$st" -k "$sk" --bits-pct "$sb" --count "$sn" --concurrency "$j" --json > "$work/streams-$st.json" 2> "$work/streams-$st.err" || fail=1
    summ_rate "$work/streams-$st.json" "streams=$st K=$sk bits=$sb"
  done
  save
fi
if has overhead; then
  timeout 300 "$B/bellows-cuda-overhead" --log "${OVERHEAD_K:-22}" --rounds "${OVERHEAD_ROUNDS:-15}" > "$work/overhead.log" 2>&1 || fail=1
  grep -h "^RESULT\|differ\|error" "$work/overhead.log" >> "$summary"
  save
fi
if has pin; then
  timeout 400 "$B/bellows-cuda-pin" --log "${PIN_LOG:-24}" --gib "${PIN_GIB:-32}" --rounds "${PIN_ROUNDS:-2}" > "$work/pin.log" 2>&1 || fail=1
  grep -h "^RESULT\|error\|written" "$work/pin.log" >> "$summary"
  save
fi
echo "exit status $fail" >> "$summary"
save
cat "$summary"
exit "$fail"
