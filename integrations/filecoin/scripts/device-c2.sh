#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, after build-device.sh has put the binaries
# in .carry/bin. No Rust needed there. Seals 2 KiB and 8 MiB sectors on the CPU (filecoin-proofs),
# makes their circuits' parameters with Bellows' setup, then in one run each:
#   - C2: Bellows on the CUDA backend, Bellows on the CPU backend, and filecoin-proofs'
#     seal_commit_phase2 (bellperson, CPU: the filecoin-proofs in these binaries has no GPU
#     features), with synthesis and proving shown apart for Bellows; every proof verified by
#     filecoin-proofs' verify_seal;
#   - parameter loading on the 2 KiB file: bellperson's checked read against Bellows' batched,
#     full, digest and curve-only loads (all cores);
#   - setup: Bellows' against bellperson's generate_parameters on the 2 KiB PoRep circuit and a
#     2^18 synthetic one (same toxic waste; the files compared byte for byte).
# Logs and a summary go to $OUT (default /tmp/bellows-filecoin-out). Steps: STEPS="c2 load
# setup" (default all), sectors: SECTORS="2KiB 8MiB".
set -u -o pipefail
out=${OUT:-/tmp/bellows-filecoin-out}
work=${WORK:-/tmp/bellows-filecoin-work}
mkdir -p "$out" "$work"
B=.carry/bin
steps=${STEPS:-c2 load setup}
sectors=${SECTORS:-2KiB 8MiB}
summary="$out/summary.txt"
: > "$summary"
fail=0
has() { case " $steps " in *" $1 "*) return 0;; *) return 1;; esac; }
export BELLOWS_PLUGIN_PATH="$PWD/$B"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc; free -g; } > "$out/machine.txt" 2>&1
"$B/bellows" backends >> "$out/machine.txt" 2>&1
if has c2; then
  for s in $sectors; do
    # The first run seals and sets up (kept in $work); the later ones reuse both.
    timeout 3000 "$B/c2_bench" --sector "$s" --work "$work" --backend cuda --reps "${REPS:-2}" \
      > "$out/c2-$s-cuda.log" 2> "$out/c2-$s-cuda.err" || fail=1
    timeout 3000 "$B/c2_bench" --sector "$s" --work "$work" --backend cpu --reps 1 --skip-bellperson \
      > "$out/c2-$s-cpu.log" 2> "$out/c2-$s-cpu.err" || fail=1
    { echo "== $s, cuda (and filecoin-proofs CPU)"; grep -v '^{' "$out/c2-$s-cuda.log"; tail -n1 "$out/c2-$s-cuda.log";
      echo "== $s, cpu"; grep -v '^{' "$out/c2-$s-cpu.log"; } >> "$summary"
  done
fi
if has load; then
  # The smallest PoRep parameters file: the 2 KiB circuit's.
  p=$(ls -S "$work"/params/v28-stacked-proof-of-replication-*.params 2>/dev/null | tail -n1)
  if [ -n "$p" ]; then
    # A manifest that lists this (locally made) file, so the digest mode can run on it.
    d=$(python3 -c 'import hashlib,sys; h=hashlib.blake2b(); f=open(sys.argv[1],"rb")
for c in iter(lambda: f.read(1<<24), b""): h.update(c)
print(h.hexdigest()[:32])' "$p")
    printf '{"%s": {"cid": "local", "digest": "%s", "sector_size": 2048}}\n' "$(basename "$p")" "$d" > "$work/manifest.json"
    timeout 3000 "$B/load_bench" "$p" curve-only digest "$work/manifest.json" batched full bellperson \
      > "$out/load.log" 2>&1 || fail=1
    sed 's/^/load: /' "$out/load.log" >> "$summary"
  else
    echo "load: no parameters file in $work/params (run the c2 step first)" >> "$summary"; fail=1
  fi
fi
if has setup; then
  timeout 3000 "$B/setup_bench" --synthetic 18 --porep-2kib > "$out/setup.log" 2>&1 || fail=1
  sed 's/^/setup: /' "$out/setup.log" >> "$summary"
fi
cat "$summary"
echo "exit status $fail"
exit "$fail"
