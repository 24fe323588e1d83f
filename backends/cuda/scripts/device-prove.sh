#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, after build-device.sh has put the binaries
# in .carry/bin (and, for the side-by-side numbers, the peers in .carry/peers and .carry/sppark):
# correctness first (conformance of the CUDA plugin against the CPU reference, MSM checks
# against blst), then the measurements, each peer in the same command as ours. Logs and a
# summary go to $OUT (or /tmp/bellows-cuda-out). Steps are chosen with STEPS (default: all):
#   check conformance msm tiers prove peers pce batch gpus sched overhead streams k27 hostmem
#   g2 window firstuse
#   STEPS="conformance prove" K="20 22" BITS="0 90" backends/cuda/scripts/device-prove.sh
# check: the device check program (every kernel against blst; the test kernels' fatbin too);
# pce: cli/scripts/pce-h200-bench.sh (direct vs pre-compiled synthesis, PCE_BENCH_BIG, default 24);
# batch: BATCH proofs a call (default 8) at K=BATCH_K (default 22), ours then the peers';
# gpus: BATCH proofs at K=GPUS_K (default 22) on every GPU (--devices all) against GPU 0 alone.
# sched: the pipeline scheduler in process (`bench --count SCHED_COUNT --concurrency J`), every
#   GPU against GPU 0 (K=SCHED_K, bits SCHED_BITS); prove: PROVE_TIMEOUT (default 200 s) a size.
# overhead: the CUDA backend linked in against the same backend through its .so, proofs
#   alternating (K=OVERHEAD_K, default 22; OVERHEAD_ROUNDS, default 15; issue 7 §6, within 2 %).
# k27: one proof of a PoRep partition's size (2^27, K27_BITS default 90 % bits; issue 7 §6: GPU
#   phase ≤ 1.5 s), benchmark-only parameters made on the host first (K27_TIMEOUT, default 500 s).
# hostmem: pinned host memory lent by the backend against the previous build in .carry/old
#   (proofs at HOSTMEM_K, synthesis alone at HOSTMEM_SYN_K into heap and pinned memory).
# g2: the G2 MSM at G2_LOG_N with its phase profile (default window, then each of G2_C), then
#   dense proofs at G2_K, this build against PREV_BIN (default .carry/prev), alternating.
# window: the G1 MSM at WINDOW_LOG_N for each window width in WINDOW_C (BELLOWS_MSM_WINDOW).
# firstuse: a process's first batch (heap buffers) against warmed ones (pinned), BATCH at BATCH_K.
# conformance: CONF_MAX (default 20) is the --full suite's largest log size (CONF_TIMEOUT s);
#   CONF_ONLY="msm_g2|proof" runs only the checks whose names contain one of those texts.
#   CONF_PART=1|2 (when CONF_ONLY is unset) runs one half of the suite, for sizes whose whole
#   suite outlasts a 600 s call: at CONF_MAX=24 part 1 (checks 1-27: NTTs, h_poly, G1 edge
#   cases) took 377 s and part 2 (28-51) 445 s on the H200 (run 72).
# streams: calls in flight per GPU (--backend-opt streams=S for S in STREAMS, default "1 2"):
#   conformance with the last S, then the in-process scheduler on GPU 0 (K=SCHED_K, SCHED_BITS,
#   SCHED_COUNT proofs, concurrency SCHED_CONC) at each S.
set -u -o pipefail
out=${OUT:-/tmp/bellows-cuda-out}
mkdir -p "$out"
B=.carry/bin
steps=${STEPS:-conformance msm tiers prove peers}
ks=${K:-20 22 24}
bits=${BITS:-0 90}
summary="$out/summary.txt"
: > "$summary"
fail=0
has() { case " $steps " in *" $1 "*) return 0;; *) return 1;; esac; }
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv > "$out/machine.txt" 2>&1
"$B/bellows" backends >> "$out/machine.txt" 2>&1
if has check; then
  timeout 300 "$B/bellows-cuda-check" ${CHECK_ARGS:-} > "$out/check.log" 2>&1 || fail=1
  grep -hE "checks passed|FAIL|passed|failed" "$out/check.log" | tail -n 3 | sed 's/^/check: /' >> "$summary"
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
  timeout "${CONF_TIMEOUT:-240}" "$B/bellows" conformance --backend cuda --full --max-log-size "${CONF_MAX:-20}" "${only[@]}" > "$out/conformance.log" 2>&1 || fail=1
  timeout 90 "$B/bellows" conformance --backend cuda --max-log-size 16 --backend-opt gpu-memory-limit=4MiB > "$out/conformance-streaming.log" 2>&1 || fail=1
  grep -hE "^(PASS|FAIL)" "$out"/conformance*.log | sed 's/^/conformance: /' >> "$summary"
fi
if has msm; then
  timeout 240 "$B/bellows-cuda-msm" --log-n "${MSM_LOG_N:-20,22,24}" --g2-log-n "${MSM_G2_LOG_N:-20,22}" --check 10,16,20 --iters 5 > "$out/msm.log" 2>&1 || fail=1
  [ -x .carry/sppark/run.sh ] && timeout 200 .carry/sppark/run.sh --log-n "${MSM_LOG_N:-20,22,24}" --check none --iters 5 --modes resident,dscalars --pin off > "$out/sppark.log" 2>&1
  grep -hE "^RESULT|checks passed|FAILED" "$out/msm.log" "$out/sppark.log" 2>/dev/null >> "$summary"
fi
if has tiers; then
  timeout 120 "$B/bellows-cuda-msm" --log-n 20 --check 10 --iters 3 --tiers 22 > "$out/tiers-msm.log" 2>&1 || fail=1
  grep -h "RESULT tier" "$out/tiers-msm.log" >> "$summary"
  for lim in none 2GiB 1GiB; do
    o=(); [ "$lim" != none ] && o=(--backend-opt "gpu-memory-limit=$lim")
    timeout 120 "$B/bellows" bench --backend cuda -k 22 --reps 2 "${o[@]}" > "$out/tiers-bench-$lim.log" 2>&1 || fail=1
    echo "tier bench K=22 limit=$lim: $(grep -hE '^  (G1 phase|G2 MSM|total)' "$out/tiers-bench-$lim.log" | awk '{$1=$1};1' | tr '\n' ';')" >> "$summary"
  done
fi
if has prove; then
  for k in $ks; do for p in $bits; do
    timeout "${PROVE_TIMEOUT:-200}" "$B/bellows" bench --backend cuda -k "$k" --bits-pct "$p" --reps "${REPS:-3}" --json > "$out/bench-k$k-b$p.json" 2> "$out/bench-k$k-b$p.err" || fail=1
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); ph=d["phases"]; print("bellows K=%d bits=%d count=%d: total %.3f s (synthesis %.3f, G1 phase %.3f, G2 %.3f on %s)" % (d["log_size"], d["bits_pct"], d["count"], ph["total"]["median_s"], ph["synthesis"]["median_s"], ph["g1_phase"]["median_s"], ph["msm_g2"]["median_s"], d["g2_on"]))' "$out/bench-k$k-b$p.json" >> "$summary" 2>&1
  done; done
fi
if has peers && [ -x .carry/peers/run.sh ]; then
  timeout "${PEERS_TIMEOUT:-300}" .carry/peers/run.sh --log-n "$(echo $ks | tr ' ' ,)" --bits-pct "$(echo $bits | tr ' ' ,)" --iters "${PEER_ITERS:-2}" --variants "${PEERS:-supraseal,cuda}" > "$out/peers.log" 2>&1
  grep -h "^RESULT" "$out/peers.log" >> "$summary"
fi
if has pce; then
  BELLOWS_BIN="$B/bellows" OUT="$out/pce" PCE_BENCH_SMALL=${PCE_BENCH_SMALL:-none} timeout 420 bash cli/scripts/pce-h200-bench.sh "${PCE_REPS:-2}" > "$out/pce.log" 2>&1 || fail=1
  sed -n '/== summary/,$p' "$out/pce.log" >> "$summary"
fi
bk=${BATCH_K:-22}; bn=${BATCH:-8}
if has batch; then
  for p in $bits; do
    timeout 200 "$B/bellows" bench --backend cuda -k "$bk" --bits-pct "$p" --count "$bn" --reps "${REPS:-2}" > "$out/batch-k$bk-b$p.log" 2>&1 || fail=1
    echo "bellows K=$bk bits=$p count=$bn: $(grep -hE '^(  (synthesis|G1 phase|G2 MSM|total)|proofs/s)' "$out/batch-k$bk-b$p.log" | awk '{$1=$1};1' | tr '\n' ';')" >> "$summary"
  done
  if [ -x .carry/peers/run.sh ]; then
    timeout "${PEERS_TIMEOUT:-400}" .carry/peers/run.sh --log-n "$bk" --bits-pct "$(echo $bits | tr ' ' ,)" --batch "$bn" --iters "${PEER_ITERS:-1}" --variants "${PEERS:-supraseal,cuda}" > "$out/peers-batch.log" 2>&1
    grep -h "^RESULT" "$out/peers-batch.log" >> "$summary"
  fi
fi
if has gpus; then
  gk=${GPUS_K:-22}
  for d in 0 all; do
    timeout 200 "$B/bellows" bench --backend cuda --devices "$d" -k "$gk" --count "$bn" --reps "${REPS:-2}" > "$out/gpus-$d.log" 2>&1 || fail=1
    echo "bellows K=$gk count=$bn devices=$d: $(grep -hE '^(  (synthesis|G1 phase|G2 MSM|total)|proofs/s)' "$out/gpus-$d.log" | awk '{$1=$1};1' | tr '\n' ';')" >> "$summary"
  done
fi
if has sched; then
  # The pipeline scheduler in process (the daemon's engine, `bench --concurrency`): proofs/s on
  # one GPU against every GPU, synthesis overlapping the device work (issue 7 §6: two GPUs ≥ 1.8×).
  sk=${SCHED_K:-22}; sb=${SCHED_BITS:-0}; sn=${SCHED_COUNT:-24}
  for d in 0 all; do
    j=${SCHED_CONC:-4}; [ "$d" = all ] && j=${SCHED_CONC_ALL:-8}
    timeout 280 "$B/bellows" bench --backend cuda --devices "$d" -k "$sk" --bits-pct "$sb" --count "$sn" --concurrency "$j" --json > "$out/sched-$d.json" 2> "$out/sched-$d.err" || fail=1
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); p=d["phases"]; print("sched K=%s bits=%s devices=%s concurrency %d: %.3f proofs/s (wall %.1f s; per partition median synthesis %.2f, device %.2f, G2 %.2f s; %s)" % (sys.argv[2], sys.argv[3], sys.argv[4], d["concurrency"], d["proofs_per_sec"], d["wall_s"], p["synthesis"]["median_s"], p["g1_phase"]["median_s"], p["msm_g2"]["median_s"], ", ".join("%s busy %.1f%%" % (x["name"], 100*x["busy_fraction"]) for x in d["devices"])))' "$out/sched-$d.json" "$sk" "$sb" "$d" >> "$summary" 2>&1
  done
  python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))["proofs_per_sec"]; b=json.load(open(sys.argv[2]))["proofs_per_sec"]; print("sched: every GPU over one: %.2fx" % (b/a))' "$out/sched-0.json" "$out/sched-all.json" >> "$summary" 2>&1
fi
if has streams; then
  sk=${SCHED_K:-22}; sb=${SCHED_BITS:-0}; sn=${SCHED_COUNT:-24}; j=${SCHED_CONC:-4}
  for st in ${STREAMS:-1 2}; do last=$st; done
  timeout 240 "$B/bellows" conformance --backend cuda --full --max-log-size 18 --backend-opt "streams=$last" > "$out/conformance-streams.log" 2>&1 || fail=1
  grep -hE "^(PASS|FAIL)" "$out/conformance-streams.log" | sed "s/^/conformance streams=$last: /" >> "$summary"
  for st in ${STREAMS:-1 2}; do
    timeout 280 "$B/bellows" bench --backend cuda --devices 0 --backend-opt "streams=$st" -k "$sk" --bits-pct "$sb" --count "$sn" --concurrency "$j" --json > "$out/streams-$st.json" 2> "$out/streams-$st.err" || fail=1
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); p=d["phases"]; print("streams=%s K=%s bits=%s concurrency %d: %.3f proofs/s (wall %.1f s; per partition median synthesis %.2f, device %.2f, G2 %.2f s; %s)" % (sys.argv[2], sys.argv[3], sys.argv[4], d["concurrency"], d["proofs_per_sec"], d["wall_s"], p["synthesis"]["median_s"], p["g1_phase"]["median_s"], p["msm_g2"]["median_s"], ", ".join("%s busy %.1f%%" % (x["name"], 100*x["busy_fraction"]) for x in d["devices"])))' "$out/streams-$st.json" "$st" "$sk" "$sb" >> "$summary" 2>&1
  done
fi
if has k27; then
  timeout "${K27_TIMEOUT:-500}" "$B/bellows" bench --backend cuda -k 27 --bits-pct "${K27_BITS:-90}" --reps 1 --json > "$out/bench-k27.json" 2> "$out/bench-k27.err" || fail=1
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); ph=d["phases"]; print("bellows K=27 bits=%d: total %.3f s (synthesis %.3f, G1 phase %.3f, G2 %.3f on %s)" % (d["bits_pct"], ph["total"]["median_s"], ph["synthesis"]["median_s"], ph["g1_phase"]["median_s"], ph["msm_g2"]["median_s"], d["g2_on"]))' "$out/bench-k27.json" >> "$summary" 2>&1 || tail -n 3 "$out/bench-k27.err" | sed 's/^/k27: /' >> "$summary"
fi
if has hostmem; then
  # Pinned host memory lent by the backend (issue 7 §2, issue 8 §2) against the previous build
  # (OLD_BIN, default .carry/old: bellows and its plugins, made before the change), side by side
  # in this run: whole proofs (HOSTMEM_K, default "22 24"; dense), then synthesis alone at
  # HOSTMEM_SYN_K (default 24) into heap memory (--backend cpu) and into the CUDA backend's
  # pinned memory, and the conformance suite (its G1 phase check runs on the lent memory).
  ob=${OLD_BIN:-.carry/old}
  for k in ${HOSTMEM_K:-22 24}; do
    for which in old new old new; do
      bin="$B/bellows"; [ "$which" = old ] && bin="$ob/bellows"
      f="$out/hostmem-k$k-$which-$RANDOM.json"
      timeout 200 "$bin" bench --backend cuda -k "$k" --bits-pct 0 --warmup 1 --reps "${REPS:-3}" --json > "$f" 2> "${f%.json}.err" || fail=1
      python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); ph=d["phases"]; print("hostmem %s K=%d: total %.3f s (synthesis %.3f, G1 phase %.3f, G2 %.3f)" % (sys.argv[2], d["log_size"], ph["total"]["median_s"], ph["synthesis"]["median_s"], ph["g1_phase"]["median_s"], ph["msm_g2"]["median_s"]))' "$f" "$which" >> "$summary" 2>&1
      [ "$k" -ge 24 ] && [ "$which" = new ] && break
    done
  done
  sk=${HOSTMEM_SYN_K:-24}
  for be in cpu cuda cpu cuda; do
    timeout 150 "$B/bellows" bench --compare-synthesis -k "$sk" --bits-pct 0 --warmup 1 --reps "${REPS:-3}" --backend "$be" > "$out/hostmem-syn-$be.log" 2>&1 || fail=1
    echo "hostmem synthesis 2^$sk into $be memory: $(grep -hE '^(buffers|  (direct|pce|pre-compiled))' "$out/hostmem-syn-$be.log" | awk '{$1=$1};1' | tr '\n' ';')" >> "$summary"
  done
  timeout "${CONF_TIMEOUT:-200}" "$B/bellows" conformance --backend cuda --max-log-size 18 > "$out/hostmem-conformance.log" 2>&1 || fail=1
  grep -hE "^(PASS|FAIL)|host memory|groth16_g1" "$out/hostmem-conformance.log" | sed 's/^/conformance: /' >> "$summary"
fi
if has g2; then
  # The G2 MSM (issue 7 §6: 2^24 ≤ 350 ms): alone, with its phase profile, at G2_LOG_N (default
  # 22,24) for the default window and each width in G2_C (default 20); then whole dense proofs at
  # G2_K (default 24) with this build against the previous one (PREV_BIN, default .carry/prev:
  # bellows and its plugins), alternating, in this run.
  for c in auto ${G2_C:-20}; do
    e=(); [ "$c" != auto ] && e=(env BELLOWS_MSM_WINDOW="$c")
    BELLOWS_MSM_PROFILE=1 timeout 300 "${e[@]}" "$B/bellows-cuda-msm" --log-n 10 --check 10 --g2-log-n "${G2_LOG_N:-22,24}" --iters 3 > "$out/g2-msm.log" 2>&1 || fail=1
    grep -hE "^RESULT msm=G2|^check .*G2|FAILED" "$out/g2-msm.log" | sed "s/^/g2 c=$c: /" >> "$summary"
    for n in 4194304 16777216; do grep -h "msm-profile G2 n=$n " "$out/g2-msm.log" | tail -n 1 | sed "s/^/g2 c=$c: /" >> "$summary"; done
  done
  pb=${PREV_BIN:-.carry/prev}
  for k in ${G2_K:-24}; do
    for which in ${G2_ORDER:-prev new prev new}; do
      bin="$B/bellows"; [ "$which" = prev ] && bin="$pb/bellows"
      f="$out/g2-k$k.json"
      timeout 200 "$bin" bench --backend cuda -k "$k" --bits-pct "${G2_BITS:-0}" --warmup 1 --reps "${REPS:-3}" --json > "$f" 2> "$out/g2-k$k.err" || fail=1
      python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); ph=d["phases"]; print("g2 proof %s K=%d bits=%d: total %.3f s (synthesis %.3f, G1 phase %.3f, G2 %.3f)" % (sys.argv[2], d["log_size"], d["bits_pct"], ph["total"]["median_s"], ph["synthesis"]["median_s"], ph["g1_phase"]["median_s"], ph["msm_g2"]["median_s"]))' "$f" "$which" >> "$summary" 2>&1
    done
  done
fi
if has window; then
  # The MSM's window width: G1 at WINDOW_LOG_N (default 20,22,24) for each c in WINDOW_C
  # (BELLOWS_MSM_WINDOW), one process per c, against the default choice (c=auto).
  for c in auto ${WINDOW_C:-15 16 17 18 19 20 21 22}; do
    e=(); [ "$c" != auto ] && e=(env BELLOWS_MSM_WINDOW="$c")
    timeout 150 "${e[@]}" "$B/bellows-cuda-msm" --log-n "${WINDOW_LOG_N:-20,22,24}" --check 10 --iters "${WINDOW_ITERS:-5}" > "$out/window.log" 2>&1 || fail=1
    echo "window c=$c: $(grep -hE '^RESULT msm=G1|MISMATCH|FAILED' "$out/window.log" | awk '{$1=$1};1' | tr '\n' ';')" >> "$summary"
  done
fi
if has firstuse; then
  # Pinned host memory lent from a shape's second request on: a process's first batch (heap
  # buffers), then warmed batches (pinned), K=BATCH_K, BATCH proofs a call.
  for p in $bits; do
    for w in "--warmup 0 --reps 1" "--warmup 1 --reps 3"; do
      timeout 200 "$B/bellows" bench --backend cuda -k "$bk" --bits-pct "$p" --count "$bn" $w > "$out/firstuse.log" 2>&1 || fail=1
      echo "firstuse K=$bk bits=$p count=$bn $w: $(grep -hE '^(  (synthesis|G1 phase|G2 MSM|total)|proofs/s)' "$out/firstuse.log" | awk '{$1=$1};1' | tr '\n' ';')" >> "$summary"
    done
  done
fi
if has overhead; then
  timeout 300 "$B/bellows-cuda-overhead" --log "${OVERHEAD_K:-22}" --rounds "${OVERHEAD_ROUNDS:-15}" > "$out/overhead.log" 2>&1 || fail=1
  grep -h "^RESULT\|differ\|error" "$out/overhead.log" >> "$summary"
fi
cat "$summary"
echo "exit status $fail"
exit "$fail"
