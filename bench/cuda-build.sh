#!/usr/bin/env bash
# Builds, here (x86-64, release, CUDA kernels required, no GPU needed), everything a CUDA run on
# the GPU machine needs, and puts stripped copies in DEST (default .carry/bin, git-ignored): the
# `bellows` CLI with the CUDA and CPU plugins beside it (so `--backend cuda` finds the plugin in
# the executable's folder), the CUDA tool programs (bellows-cuda-check, bellows-cuda-msm,
# bellows-cuda-overhead, bellows-cuda-pin) and the kernels' fatbins (for cuobjdump there).
#   bench/cuda-build.sh [DEST]
# FILECOIN=1 builds the CLI with `bellows porep` (feature bellows-cli/filecoin), for
# bench/filecoin-porep.sh.
# PACK=NAME also writes .carry/NAME.tar.xz with the folder inside as bin/, so that two builds
# (say, before and after a change) travel side by side under the device tool's 64 MiB carry
# limit; bench/cuda-prove.sh unpacks one with CARRY_TAR=.carry/NAME.tar.xz.
# TOOLCHAIN (default .cuda-toolchain, git-ignored) receives nvcc from
# ../shared/tools/cuda-toolchain.sh.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
dest=${1:-.carry/bin}
eval "$(bash "$root/../shared/tools/cuda-toolchain.sh" "${TOOLCHAIN:-$root/.cuda-toolchain}")"
export BELLOWS_REQUIRE_KERNELS=1
# The production plugin first, in a cargo call of its own: built together with the tools, the
# tools' features (the test kernels) would be unified into it.
cli_features=(); [ -n "${FILECOIN:-}" ] && cli_features=(--features bellows-cli/filecoin)
cargo build --release -p bellows-cli "${cli_features[@]}" -p bellows-backend-cuda -p bellows-backend-cpu
# The tool programs, wherever the workspace keeps them: package and required features of each
# binary from `cargo metadata`.
tools=(bellows-cuda-check bellows-cuda-msm bellows-cuda-overhead bellows-cuda-pin)
read -r -a tool_args <<< "$(cargo metadata --no-deps --format-version 1 | python3 -c '
import json, sys
want, args = set(sys.argv[1:]), []
for p in json.load(sys.stdin)["packages"]:
    for t in p["targets"]:
        if "bin" in t["kind"] and t["name"] in want:
            args += ["-p", p["name"], "--bin", t["name"]]
            feats = t.get("required-features") or []
            if feats:
                args += ["--features", ",".join(p["name"] + "/" + f for f in feats)]
print(" ".join(args))' "${tools[@]}")"
cargo build --release "${tool_args[@]}"
mkdir -p "$dest"
for f in bellows libbellows_backend_cuda.so libbellows_backend_cpu.so "${tools[@]}"; do
  objcopy --strip-debug "target/release/$f" "$dest/$f"
done
# The newest copy of each fatbin the CUDA crate's build script wrote.
ls -t target/release/build/bellows-cuda-*/out/*.fatbin 2>/dev/null | awk -F/ '!seen[$NF]++' \
  | while read -r f; do cp "$f" "$dest/"; done
ls -la "$dest"
if [ -n "${PACK:-}" ]; then
  tmp=$(mktemp -d)
  cp -r "$dest" "$tmp/bin"
  tar cf - -C "$tmp" bin | xz -T0 -6 > ".carry/$PACK.tar.xz"
  rm -rf "$tmp"
  ls -la ".carry/$PACK.tar.xz"
fi
total=$(du -cb "$dest" | tail -n1 | cut -f1)
echo "carry: $((total / 1048576)) MiB in $dest (the device tool carries 64 MiB with the working tree)"
