#!/usr/bin/env bash
# Direct against pre-compiled synthesis: `bellows bench --compare-synthesis` (the same circuits
# and witnesses both ways, checked bit for bit) for synthetic circuits (0 and 90 % bits) and
# sha256 at 2^PCE_BENCH_BIG (default 24) and 2^PCE_BENCH_SMALL (default 20; `none` skips them),
# each log in $OUT (default /tmp/bellows-pce-out), and a summary of the `ratio pce/direct` lines.
# Runs anywhere with a release `bellows` (BELLOWS_BIN, default .carry/bin/bellows, as
# bench/cuda-build.sh leaves it; no GPU needed); bench/cuda-prove.sh's `pce` step calls it.
#   bench/pce-synthesis.sh [REPS]        (default 3 timed reps after 1 warm-up)
# Takes about 5 minutes on a 16-core host (most of it direct synthesis at 2^24); exits non-zero
# if any run fails (e.g. the two syntheses disagree).
set -u -o pipefail
out=${OUT:-/tmp/bellows-pce-out}
mkdir -p "$out"
bin=${BELLOWS_BIN:-.carry/bin/bellows}
reps=${1:-3}
export BELLOWS_NO_PROGRESS=1
{ date -u; uname -a; nproc; free -g; lscpu | grep -E "Model name|^CPU\(s\)"; } > "$out/machine.txt" 2>&1
status=0
run() {
  local name=$1; shift
  echo "== $name: bellows bench --compare-synthesis $*" | tee "$out/$name.log"
  "$bin" bench --compare-synthesis --reps "$reps" --warmup 1 "$@" 2>&1 | tee -a "$out/$name.log"
  local rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] || { echo "!! $name exited $rc" | tee -a "$out/$name.log"; status=1; }
}
big=${PCE_BENCH_BIG:-24}      # PCE_BENCH_BIG=12 PCE_BENCH_SMALL=10 for a quick check of this script
small=${PCE_BENCH_SMALL:-20}
run "synthetic-k$big-b0"    --circuit synthetic --log-size "$big" --bits-pct 0
run "synthetic-k$big-b90"   --circuit synthetic --log-size "$big" --bits-pct 90
run "sha256-k$big"          --circuit sha256 --log-size "$big"
if [ "$small" != none ]; then   # PCE_BENCH_SMALL=none skips the small sizes
  run "synthetic-k$small-b0"  --circuit synthetic --log-size "$small" --bits-pct 0
  run "synthetic-k$small-b90" --circuit synthetic --log-size "$small" --bits-pct 90
fi
echo "== summary" | tee "$out/summary.txt"
for f in "$out"/*.log; do
  printf '%-22s %s | %s\n' "$(basename "$f" .log)" \
    "$(grep -E '^  (direct|pce) ' "$f" | awk '{printf "%s %s %s  ", $1, $2, $3}')" \
    "$(tail -n 1 "$f")"
done | tee -a "$out/summary.txt"
exit "$status"
