#!/usr/bin/env bash
# Runs on the GPU machine (the device tool, kind nvidia-h200), from the repository root, with the
# `bellows` CLI (feature filecoin) and its CUDA plugin in $BIN (default .carry/bin, from
# bench/filecoin-build.sh) and filecoin-proofs' own C2 built with SupraSeal in $PEER (default
# .carry/fc2/filecoin-c2-cuda-supraseal, from ../shared/peers/filecoin-c2/build.sh). No Rust there.
#
# The real PoRep C2 on synthetic C1 outputs (`bellows porep synth-c1`: consistent, made without
# sealing; they prove nothing about stored data), in STEPS:
#   small   for each size in SMALL (default "2KiB 8MiB"): synth-c1, Bellows' setup, then in one
#           run Bellows' C2 on CUDA (REPS proofs in one process) and filecoin-proofs' C2 with
#           SupraSeal on the same C1 and parameters (REPS proofs); both checked by verify_seal.
#   setup32 synth-c1 of a 32 GiB sector, then Bellows' setup of the 32 GiB partition circuit in
#           the background (setsid: it outlives the call; its log is $WORK/setup32.log), its peak
#           memory polled. A 10-minute call may end before it does: the next step waits for it.
#   c2-32   waits for setup32, then `porep c2 --reps REPS32` on the 32 GiB C1 (all ten
#           partitions, each proof verified), with its peak RSS and the GPU's busy share, and
#           filecoin-proofs' verify_seal on the proof written.
#           RUNS32="new base new-cold new+pin-method=alloc" adds the binaries in BASE_BIN
#           side by side, a run from an empty page cache and one with a backend option (see
#           the step).
#   peer32  filecoin-proofs' C2 with SupraSeal on the same 32 GiB C1 and parameters (its memory
#           polled; the host may be too small for it).
#   daemon32 several sectors in a row through the daemon: `bellows serve --backend cuda` on the
#           32 GiB parameters (its recordings the ones c2-32 made), SECTORS32 (default 3)
#           synthetic C1 outputs of different sector numbers submitted at once (`porep c2
#           --daemon --submit`), each awaited; the seconds between consecutive proofs (the
#           steady state), the daemon's peak RSS, GPU busy. Then the daemon is restarted on the
#           same state folder and proves one sector: the first proof after a restart.
# BIG=64GiB runs setup32, c2-32 and daemon32 on a 64 GiB sector instead (files under
# $WORK/params-64GiB; the single-GPU host's disk holds one size's parameters and recording:
# remove $WORK/params-32GiB and $WORK/pce first).
# c2-32 also reads 8 GiB of the parameters file past the page cache (the disk's rate, the floor
# of a load from disk); DROP_CACHES=1 empties the page cache before its proofs, and LOAD32=1
# times the load's host side alone first (`porep load`: read and decode). Every step's
# log has a .mem file beside it: a line a second of the process's memory split and the GPU's
# busy share, and of the host's free memory, page cache, disk reads and CPU busy share.
#
#   STEPS="small setup32" bash bench/filecoin-porep.sh     # then, in the next call (the machine
#   STEPS=c2-32 bash bench/filecoin-porep.sh               # must still be warm: $WORK survives)
#
# DETACH=1 runs the whole STEPS list in a session of its own (it outlives the call; $WORK/run.log,
# its summary in $WORK/run-out) and returns at once; STEPS=wait then waits for it up to WAIT_S
# seconds (default 560), printing progress each minute, and copies its summary and logs to $OUT.
# A 32 GiB session is then one list and a few waiting calls, each made as soon as the last
# returns (the machine stays warm only 30 s between calls):
#   DETACH=1 STEPS="setup32 c2-32 daemon32 peer32" REPS32=2 bash bench/filecoin-porep.sh; STEPS=wait bash bench/filecoin-porep.sh
#   STEPS=wait bash bench/filecoin-porep.sh                # again, until it prints "run: done"
#
# $WORK (default /root/bellows-porep; parameters, C1 files, the PCE folder) is kept between
# calls while the machine stays warm; $OUT gets summary.txt and logs.tgz. The small sizes' test
# parameters go to $PARAMS (default $WORK/params), made once there (a `made-SIZE` mark):
# bench/curio-api.sh takes the same variable, so one setup serves both scripts in one session.
set -u -o pipefail
out=${OUT:-/tmp/bellows-porep-out}
work=${WORK:-/root/bellows-porep}
logs="$work/logs"
params=${PARAMS:-$work/params}
mkdir -p "$out" "$work" "$logs" "$params"
B=$(cd "${BIN:-.carry/bin}" && pwd) || { echo "no folder ${BIN:-.carry/bin}"; exit 1; }
PEER=${PEER:-.carry/fc2/filecoin-c2-cuda-supraseal}
steps=${STEPS:-small}
reps=${REPS:-3}
reps32=${REPS32:-3}
backend=${BACKEND:-cuda}
summary="$out/summary.txt"
touch "$summary"
if [ -n "${DETACH:-}" ]; then
  rm -f "$work/run.done"; rm -rf "$work/run-out"
  setsid bash -c "cd '$PWD'; DETACH= OUT='$work/run-out' STEPS='$steps' bash bench/filecoin-porep.sh; echo \$? > '$work/run.done'" > "$work/run.log" 2>&1 < /dev/null &
  echo "run: started in the background ($steps; $work/run.log)" | tee -a "$summary"
  exit 0
fi
if [ "$steps" = wait ]; then
  t0=$SECONDS
  while [ ! -e "$work/run.done" ] && [ $((SECONDS - t0)) -lt "${WAIT_S:-560}" ]; do
    sleep 10
    [ $(((SECONDS - t0) % 60)) -lt 10 ] && echo "$(date +%T) host memory used $(free -g | awk '/Mem/ {print $3}') GiB, disk used $(df -BG --output=used "$work" | tail -n1 | tr -d ' '); $(tail -n 1 "$work/run-out/summary.txt" 2>/dev/null | cut -c1-160)"
  done
  cp "$work/run-out/summary.txt" "$out/run-summary.txt" 2>/dev/null
  tar czf "$out/logs.tgz" -C "$work" logs run.log 2>/dev/null
  if [ -e "$work/run.done" ]; then echo "run: done, exit $(cat "$work/run.done")"; else echo "run: still running"; fi
  cat "$out/run-summary.txt" 2>/dev/null
  exit 0
fi
fail=0
has() { case " $steps " in *" $1 "*) return 0;; *) return 1;; esac; }
note() { echo "$*" | tee -a "$summary"; }
export BELLOWS_PLUGIN_PATH="$B" RUST_BACKTRACE=1 RUST_LOG=${RUST_LOG:-info}
export FIL_PROOFS_PARENT_CACHE="$work/parents" FIL_PROOFS_VERIFY_PRODUCTION_PARAMS=false
export FIL_PROOFS_USE_MULTICORE_SDR=false BELLOWS_PCE_DIR="$work/pce"
# The 32 GiB steps' log filter: every partition's synthesis and device phase, and the pinned
# memory pool's decisions.
log32=${RUST_LOG32:-info,bellows_core::pipeline=debug,bellows_cuda::host_pool=debug}
mkdir -p "$FIL_PROOFS_PARENT_CACHE" "$BELLOWS_PCE_DIR"

# Sectors read by the whole-disk devices so far, and the CPUs' total and idle(+iowait) ticks.
host_read_sectors() { awk '$3 ~ /^(sd[a-z]+|vd[a-z]+|nvme[0-9]+n[0-9]+|xvd[a-z]+)$/ {s+=$6} END {print s+0}' /proc/diskstats; }
host_cpu_ticks() { awk '/^cpu / {t=0; for (i=2; i<=NF; i++) t+=$i; print t, $5+$6}' /proc/stat; }

# poll PID NAME: until PID ends, a line a second in $logs/NAME.mem: seconds since the start,
# then the RSS of PID's tree's largest member split as the kernel counts it (anon, file-backed,
# shared: pinned driver memory is among the last two), in MiB, then the GPU's busy % and memory
# used (MiB), then the host's free memory, page cache, disk reads and CPU busy share, so a peak
# can be put beside the phase (-vv logs) that made it; and in $logs/NAME.peak "PEAK_MiB
# MEAN_BUSY_% SECONDS" so far (the tree's largest VmHWM).
poll() {
  local pid=$1 name=$2 t0 peak=0 busy=0 samples=0 q
  t0=$(date +%s)
  echo "# s anon_MiB file_MiB shmem_MiB gpu_busy_% gpu_mem_MiB | host: free_MiB cache_MiB read_MiB/s cpu_busy_%" > "$logs/$name.mem"
  local last_rd last_cpu
  last_rd=$(host_read_sectors); last_cpu=$(host_cpu_ticks)
  while kill -0 "$pid" 2>/dev/null; do
    local big=0 split="0 0 0"
    for q in $pid $(pgrep -P "$pid" 2>/dev/null); do
      local hwm; hwm=$(awk '/VmHWM/ {print $2}' "/proc/$q/status" 2>/dev/null)
      [ -n "$hwm" ] && [ "$hwm" -gt "$peak" ] && peak=$hwm
      local rss; rss=$(awk '/VmRSS/ {print $2}' "/proc/$q/status" 2>/dev/null)
      if [ -n "$rss" ] && [ "$rss" -gt "$big" ]; then
        big=$rss
        split=$(awk '/RssAnon/ {a=$2} /RssFile/ {f=$2} /RssShmem/ {m=$2} END {print int(a/1024), int(f/1024), int(m/1024)}' "/proc/$q/status" 2>/dev/null)
      fi
    done
    local g; g=$(nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader,nounits 2>/dev/null | head -n1 | tr -d ' ')
    local u=${g%%,*}
    # The host beside the process: memory free and in the page cache, the disks' read rate
    # and the CPUs' busy share over the last second (what a load or a first synthesis waits on).
    local rd cpu host
    rd=$(host_read_sectors); cpu=$(host_cpu_ticks)
    host=$(awk -v rd=$((rd - last_rd)) -v c0="$last_cpu" -v c1="$cpu" '/^MemFree:/ {f=$2} /^Cached:/ {c=$2}
      END {split(c0, a, " "); split(c1, b, " "); busy = (b[1]-a[1]) - ((b[2]-a[2])); tot = b[1]-a[1];
           printf "%d %d %d %d", f/1024, c/1024, rd*512/1048576, (tot > 0 ? 100*busy/tot : 0)}' /proc/meminfo)
    last_rd=$rd; last_cpu=$cpu
    echo "$(( $(date +%s) - t0 )) $split ${u:--} ${g#*,} | $host" >> "$logs/$name.mem"
    [ -n "$u" ] && busy=$((busy + u)) && samples=$((samples + 1))
    echo "$((peak / 1024)) $([ $samples -gt 0 ] && echo $((busy / samples)) || echo -) $samples" > "$logs/$name.peak"
    sleep 1
  done
}

# watch NAME CMD...: runs CMD (output in $logs/NAME.{log,err}) under poll, and appends "NAME:
# rc, wall, peak RSS, GPU busy" to the summary.
watch() {
  local name=$1; shift
  local t0; t0=$(date +%s%N)
  "$@" > "$logs/$name.log" 2> "$logs/$name.err" &
  local pid=$!
  poll "$pid" "$name"
  wait "$pid"; local rc=$?
  local wall=$(( ($(date +%s%N) - t0) / 1000000 )) peak busy samples
  read -r peak busy samples < "$logs/$name.peak" || { peak=0; busy=-; samples=0; }
  [ "$rc" -ne 0 ] && fail=1
  note "$name: exit $rc, wall $((wall / 1000)).$(printf %03d $((wall % 1000))) s, peak RSS $peak MiB, GPU busy $busy % over $samples s"
  [ "$rc" -ne 0 ] && tail -n 5 "$logs/$name.err" | sed "s/^/  $name: /" | tee -a "$summary"
  return $rc
}

{ nvidia-smi; nproc; free -g; df -h "$work"; } > "$logs/machine.txt" 2>&1
note "steps: $steps; $(nproc) cores; $(free -g | awk '/Mem/ {print $2}') GiB; disk free $(df -BG --output=avail "$work" | tail -n1)"

if has small; then
  for s in ${SMALL:-2KiB 8MiB}; do
    p="$params"; c1="$work/c1-$s.json"
    "$B/bellows" porep synth-c1 --sector-size "$s" --seed 7 --out "$c1" --force > "$logs/synth-$s.log" 2>&1 || { note "synth-c1 $s failed"; fail=1; continue; }
    if [ ! -e "$p/made-$s" ]; then
      watch "setup-$s" "$B/bellows" porep setup --proof "StackedDrg${s}V1_1" --params-dir "$p" --force \
        && touch "$p/made-$s" || continue
    fi
    watch "bellows-c2-$s" "$B/bellows" porep c2 --backend "$backend" --c1 "$c1" --params-dir "$p" --out "$work/b-$s.proof" --force --reps "$reps" --check curve-only --json
    grep -h "steady state\|wrote" "$logs/bellows-c2-$s.err" | sed "s/^/  /" | tee -a "$summary"
    watch "verify-$s" "$B/bellows" porep verify --c1 "$c1" --proof "$work/b-$s.proof" --params-dir "$p" --miner 1000
    FIL_PROOFS_PARAMETER_CACHE="$p" watch "supraseal-c2-$s" "$PEER" --c1 "$c1" --reps "$reps" --out "$work/s-$s.proof"
    grep -h "RESULT\|verify_seal" "$logs/supraseal-c2-$s.log" | sed "s/^/  /" | tee -a "$summary"
  done
fi

big=${BIG:-32GiB}  # the large size (BIG=2KiB BACKEND=cpu dry-runs the 32 GiB steps anywhere)
p32="$work/params-$big"; c32="$work/c1-$big.json"
if has setup32; then
  mkdir -p "$p32"
  watch synth-32 "$B/bellows" porep synth-c1 --sector-size "$big" --seed 7 --out "$c32" --force
  ls -la "$c32" >> "$summary"
  # The mark of an earlier setup (another BIG) must not let c2-32 start before this one ends.
  rm -f "$work/setup32.done"
  # In the background, in a session of its own, so that it outlives this call.
  setsid bash -c "cd '$PWD'; OUT='$work/setup32-out' STEPS=setup32-run bash bench/filecoin-porep.sh" > "$work/setup32.log" 2>&1 < /dev/null &
  note "setup32: started in the background ($work/setup32.log)"
fi
if has setup32-run; then
  rm -f "$work/setup32.done"
  watch setup-32 "$B/bellows" porep setup --proof "StackedDrg${big}V1_1" --params-dir "$p32" --force
  echo $? > "$work/setup32.done"
  exit 0
fi

if has c2-32; then
  while [ ! -e "$work/setup32.done" ]; do sleep 5; done
  note "setup32: exit $(cat "$work/setup32.done")"; cat "$work/setup32-out/summary.txt" >> "$summary"
  grep -h "setup \|domain" "$logs/setup-32.err" | tail -n 3 | tee -a "$summary"
  ls -la "$p32" "$BELLOWS_PCE_DIR" >> "$summary"; df -h "$work" >> "$summary"
  # The disk's read rate of the parameters file, past the page cache (8 GiB of it): the floor
  # of a load from disk. DROP_CACHES=1 then empties the page cache, so the load below reads
  # from disk as a provider's first proof after boot does.
  f32=$(ls "$p32"/*.params | head -n1)
  note "disk read of $(basename "$f32"): $(dd if="$f32" of=/dev/null bs=64M count=128 iflag=direct 2>&1 | tail -n1)"
  [ -n "${DROP_CACHES:-}" ] && sync && echo 3 > /proc/sys/vm/drop_caches && note "page cache dropped"
  # LOAD32=1: the load alone first: its host side (read and decode, nothing on the GPU), then
  # the whole key load onto the GPU (`--onto`: the GPU decodes the file's bytes).
  if [ -n "${LOAD32:-}" ]; then
    watch load-32 "$B/bellows" porep load --params "$f32" --check curve-only
    tail -n 1 "$logs/load-32.log" | sed "s/^/  /" | tee -a "$summary"
    BELLOWS_PLUGIN_PATH=$B watch load-32-onto "$B/bellows" porep load --params "$f32" --check curve-only --onto "$backend"
    tail -n 1 "$logs/load-32-onto.log" | sed "s/^/  /" | tee -a "$summary"
  fi
  # -vv: each phase's span and every partition's synthesis and device phase, timestamped.
  # RUNS32 (default "new"): the proofs' runs in order; `base` runs the binaries in BASE_BIN
  # (same arguments, its own plugins) for a side-by-side, a `-cold` suffix empties the page
  # cache first (the load reads the file from disk), and a `+KEY=VALUE` suffix passes
  # `--backend-opt KEY=VALUE` (e.g. new+pin-method=alloc). Logs: bellows-c2-32 for the first
  # `new`, bellows-c2-32-WORD for the others (`+` and `=` written as `-`).
  first=1
  for r in ${RUNS32:-new}; do
    bin=$B name=bellows-c2-32 opt=()
    case $r in *+*=*) opt=(--backend-opt "${r#*+}") ;; esac
    case $r in base*) bin=$(cd "${BASE_BIN:?RUNS32 names base: set BASE_BIN}" && pwd) ;; esac
    { [ "$r" != new ] || [ $first = 0 ]; } && name="bellows-c2-32-$(echo "$r" | tr '+=' '--')"
    [ "$r" = new ] && first=0
    case ${r%%+*} in *-cold) sync && echo 3 > /proc/sys/vm/drop_caches && note "page cache dropped" ;; esac
    BELLOWS_PLUGIN_PATH=$bin RUST_LOG=$log32 watch "$name" "$bin/bellows" -vv porep c2 --backend "$backend" "${opt[@]}" --c1 "$c32" --params-dir "$p32" --out "$work/b-32.proof" --force --reps "$reps32" --check curve-only --json
    grep -h "steady state\|wrote\|^proving\|^pipeline" "$logs/$name.err" | tail -n 5 | sed "s/^/  $r: /" | tee -a "$summary"
    cat "$logs/$name.log" >> "$summary"
  done
  watch verify-32 "$B/bellows" porep verify --c1 "$c32" --proof "$work/b-32.proof" --params-dir "$p32" --miner 1000
  tail -n 2 "$logs/verify-32.log" | tee -a "$summary"
fi

if has peer32; then
  FIL_PROOFS_PARAMETER_CACHE="$p32" watch supraseal-c2-32 timeout "${PEER32_TIMEOUT:-500}" "$PEER" --c1 "$c32" --reps 1 --out "$work/s-32.proof"
  grep -h "RESULT\|verify_seal" "$logs/supraseal-c2-32.log" | tee -a "$summary"
fi

if has daemon32; then
  while [ ! -e "$work/setup32.done" ]; do sleep 5; done
  n=${SECTORS32:-3}; st="$work/serve32"; rm -rf "$st"; mkdir -p "$st"
  # The daemon's recordings are the ones `porep c2` made (a provider's daemon has its own from
  # its first job); the cold start below still hashes the 47 GB file once.
  ln -s "$BELLOWS_PCE_DIR" "$st/pce"
  for i in $(seq 1 "$n"); do
    [ -e "$work/c1-$big-$i.json" ] || "$B/bellows" porep synth-c1 --sector-size "$big" --seed 7 --sector "$i" --out "$work/c1-$big-$i.json" --force > "$logs/synth-32-$i.log" 2>&1
  done
  # Two starts on one state folder: "cold" (no digest of the file kept yet) proves n sectors
  # submitted at once (the steady state); "restart" proves one, the first after a restart
  # with the digest kept: a provider's first proof after start.
  for phase in cold restart; do
    m=$n; [ "$phase" = restart ] && m=1
    RUST_LOG=$log32 "$B/bellows" -vv serve ${SERVE_CONFIG:+--config "$SERVE_CONFIG"} --backend "$backend" --state-dir "$st" --params-dir "$p32" --listen "unix:$st/sock" --params-check curve-only > "$logs/serve32-$phase.log" 2> "$logs/serve32-$phase.err" &
    spid=$!
    for _ in $(seq 1 60); do [ -S "$st/sock" ] && break; sleep 1; done
    poll "$spid" "serve32-$phase" &
    t0=$(date +%s%N); jobs=()
    for i in $(seq 1 "$m"); do
      jobs+=("$("$B/bellows" porep c2 --daemon "unix:$st/sock" --submit --c1 "$work/c1-$big-$i.json" --params-dir "$p32" --out "$work/d-32-$i.proof" --force 2>> "$logs/daemon32.err" | tail -n1)")
    done
    prev=""
    for i in $(seq 1 "$m"); do
      "$B/bellows" await --force --daemon "unix:$st/sock" "${jobs[$((i - 1))]}" >> "$logs/daemon32.log" 2>> "$logs/daemon32.err"
      rc=$?; t=$(( ($(date +%s%N) - t0) / 1000000 ))
      [ "$rc" -ne 0 ] && fail=1
      note "daemon32 $phase sector $i (job ${jobs[$((i - 1))]}): exit $rc, done $((t / 1000)).$(printf %03d $((t % 1000))) s after the submission$([ -n "$prev" ] && echo ", $(( (t - prev) / 1000 )).$(printf %03d $(( (t - prev) % 1000 ))) s after the previous")"
      prev=$t
    done
    note "daemon32 $phase: peak RSS MiB, mean GPU busy %, seconds: $(cat "$logs/serve32-$phase.peak" 2>/dev/null)"
    kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
  done
  watch verify-d32 "$B/bellows" porep verify --c1 "$work/c1-$big-$n.json" --proof "$work/d-32-$n.proof" --params-dir "$p32" --miner 1000
fi

tar czf "$out/logs.tgz" -C "$work" logs 2>/dev/null
exit $fail
