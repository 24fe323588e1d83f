#!/usr/bin/env bash
# Builds the bellows binary here (x86-64, release) and puts a stripped copy in .carry/ (git-ignored)
# for the GPU machine, which has no Rust. Run from anywhere inside the repository.
#   cli/scripts/pce-build-carry.sh
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
nice -n 19 cargo build --release -p bellows-cli --bin bellows
mkdir -p .carry
objcopy --strip-debug target/release/bellows .carry/bellows
ls -la .carry/bellows
