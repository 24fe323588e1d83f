#!/usr/bin/env bash
# Runs on the GPU machine (the device tool, kind nvidia-h200), from the repository root, with the
# binaries bench/filecoin-build.sh put in .carry/bin (carry [".carry/bin"]). No Rust needed there.
#
# The device allows 10 minutes per command and starts bare after each idle release, so the work
# is split into STEPS, each redoing what it needs (sealing a 2 KiB sector takes a second, a setup
# seconds on 16 cores). Every program runs under a timeout, and none runs past BUDGET seconds
# (default 570) from the start of the script: what would is cut short or skipped, and named in
# the summary, so the call always returns inside the limit with its logs. One step per call is
# safe; "load setup" may fit one call.
#
#   c2    (about 3-5 min) for each sector size in SECTORS (default "2KiB 8MiB"): seal the sector
#         on the CPU (filecoin-proofs), make its circuit's parameters with Bellows' setup, then
#         in one run: Bellows on the CUDA backend, partition by partition (synthesis and proving
#         apart) and through the pipeline, direct and pre-compiled synthesis (--pce), and
#         filecoin-proofs' own seal_commit_phase2 (bellperson;
#         CPU, these binaries have no GPU features) on the same files; then Bellows on the CPU
#         backend. Every proof is checked by filecoin-proofs' verify_seal.
#   load  (about 3-4 min) parameter loading with each of Bellows' checks: the 2 KiB PoRep file
#         (10.9 M points, made here by `bellows porep setup`) and a synthetic 2^22 file (2^24 G1 +
#         2^22 G2 points, 2.4 GB, benchmark-only points).
#   bellperson-load (about 5-9 min) bellperson's checked read (one thread) of the 2 KiB file.
#   setup (about 3-6 min) Bellows' setup against bellperson's generate_parameters on the 2 KiB
#         PoRep circuit and a synthetic 2^18 one, same toxic waste, files compared byte for byte.
#
#   STEPS=c2 bash bench/filecoin-c2.sh   # the default step; then, each in a call of its own:
#                                        # load, bellperson-load, setup
#
# summary.txt (written as the steps go) and logs.tar.gz (every program's output, at the end) go to
# $OUT (default /tmp/bellows-filecoin-out): two files, as the device tool brings back at most 8.
# The exit status is 1 if any program failed or ran out of time (named in the summary).
set -u -o pipefail
out=${OUT:-/tmp/bellows-filecoin-out}
work=${WORK:-/tmp/bellows-filecoin-work}
logs="$work/logs"
mkdir -p "$out" "$work" "$logs"
B=$(cd "${BIN:-.carry/bin}" && pwd) || { echo "no folder ${BIN:-.carry/bin}"; exit 1; }
steps=${STEPS:-c2}
sectors=${SECTORS:-2KiB 8MiB}
summary="$out/summary.txt"
: > "$summary"
fail=0
has() { case " $steps " in *" $1 "*) return 0;; *) return 1;; esac; }
# run NAME SECONDS CMD...: runs CMD under a timeout, stdout to $logs/NAME.log, stderr to
# $logs/NAME.err; a failure or timeout is noted in the summary.
run() {
  local name=$1 secs=$2; shift 2
  local t0=$SECONDS left=$(( ${BUDGET:-570} - SECONDS ))
  if [ "$left" -lt 20 ]; then
    echo "$name: SKIPPED (the call's time budget is spent; run it in a call of its own)" >> "$summary"
    fail=1; : > "$logs/$name.log"; return 1
  fi
  [ "$secs" -gt "$left" ] && secs=$left
  timeout "$secs" "$@" > "$logs/$name.log" 2> "$logs/$name.err"
  local rc=$?
  if [ $rc -ne 0 ]; then
    fail=1
    if [ $rc -eq 124 ]; then echo "$name: TIMED OUT after $secs s" >> "$summary"
    else
      # The panic's message (the line after "panicked at"), else the last lines.
      local why; why=$(grep -m1 -A1 'panicked at' "$logs/$name.err" | tail -n1)
      [ -n "$why" ] || why=$(tail -n 3 "$logs/$name.err" | tr '\n' ' ')
      echo "$name: FAILED (exit $rc): $why" >> "$summary"
    fi
  fi
  echo "$name: $((SECONDS - t0)) s" >> "$logs/step-times.txt"
  return $rc
}
for f in bellows libbellows_backend_cuda.so libbellows_backend_cpu.so c2_bench load_bench setup_bench; do
  [ -e "$B/$f" ] || { echo "missing $B/$f: run bench/filecoin-build.sh here first and carry .carry/bin" | tee -a "$summary"; exit 1; }
done
export BELLOWS_PLUGIN_PATH="$B" RUST_BACKTRACE=0
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; free -g; } > "$logs/machine.txt" 2>&1
"$B/bellows" backends >> "$logs/machine.txt" 2>&1
echo "steps: $steps; $(nproc) cores; $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n1)" >> "$summary"

if has c2; then
  for s in $sectors; do
    case $s in 2KiB) t_cuda=150; t_cpu=90;; *) t_cuda=210; t_cpu=120;; esac
    # The CUDA run seals, sets up (kept in $work/params) and runs filecoin-proofs' prover too;
    # the CPU run reseals (seconds) and reuses the parameters.
    run "c2-$s-cuda" $t_cuda "$B/c2_bench" --sector "$s" --work "$work" --backend cuda --reps "${REPS:-2}" --pce
    run "c2-$s-cpu" $t_cpu "$B/c2_bench" --sector "$s" --work "$work" --backend cpu --reps 1 --skip-bellperson
    { echo "== $s, Bellows on cuda, and filecoin-proofs (bellperson, CPU)"; grep -v '^{' "$logs/c2-$s-cuda.log"; grep -h '^{' "$logs/c2-$s-cuda.log";
      grep -h '^setup\|^sealed' "$logs/c2-$s-cuda.err";
      echo "== $s, Bellows on cpu"; grep -v '^{' "$logs/c2-$s-cpu.log"; } >> "$summary"
  done
fi

# The 2 KiB PoRep parameters file (the smallest PoRep file in $work/params), made if missing.
params_2kib() {
  p=$(ls -S "$work"/params/v28-stacked-proof-of-replication-*.params 2>/dev/null | tail -n1)
  if [ -z "$p" ] || [ "$(stat -c %s "$p")" -gt 1200000000 ]; then
    run params-2kib 120 "$B/bellows" porep setup --proof StackedDrg2KiBV1_1 --params-dir "$work/params" --force
    p=$(ls -S "$work"/params/v28-stacked-proof-of-replication-*.params 2>/dev/null | tail -n1)
  fi
}

if has load; then
  params_2kib
  if [ -n "$p" ]; then
    # A manifest that lists this (locally made) file, so the digest mode can run on it.
    d=$(python3 -c 'import hashlib,sys; h=hashlib.blake2b(); f=open(sys.argv[1],"rb")
for c in iter(lambda: f.read(1<<24), b""): h.update(c)
print(h.hexdigest()[:32])' "$p")
    printf '{"%s": {"cid": "local", "digest": "%s", "sector_size": 2048}}\n' "$(basename "$p")" "$d" > "$work/manifest.json"
    run load-2kib 120 "$B/load_bench" "$p" curve-only digest "$work/manifest.json" batched full
    sed 's/^/load 2KiB: /' "$logs/load-2kib.log" >> "$summary"
  else
    echo "load: no 2 KiB parameters file" >> "$summary"; fail=1
  fi
  run load-2p24 200 "$B/load_bench" --synthetic 22 "$work/synthetic-22.params" curve-only batched full
  sed 's/^/load 2^24: /' "$logs/load-2p24.log" >> "$summary"
  rm -f "$work/synthetic-22.params"
fi

if has bellperson-load; then
  params_2kib
  if [ -n "$p" ]; then
    run load-2kib-bellperson 540 "$B/load_bench" "$p" curve-only bellperson
    sed 's/^/load 2KiB: /' "$logs/load-2kib-bellperson.log" >> "$summary"
  else
    echo "bellperson-load: no 2 KiB parameters file" >> "$summary"; fail=1
  fi
fi

if has setup; then
  run setup 540 "$B/setup_bench" --synthetic 18 --porep-2kib
  sed 's/^/setup: /' "$logs/setup.log" >> "$summary"
fi
cat "$logs/step-times.txt" >> "$summary" 2>/dev/null
tar czf "$out/logs.tar.gz" -C "$logs" . 2>/dev/null
cat "$summary"
echo "exit status $fail"
exit "$fail"
