#!/usr/bin/env bash
# README command (1): set up, build, start the daemon, submit a real build of the
# bundled attention kernels and follow it to the end, then show the SASS the
# library holds. Arch: the local GPU's, else $FAD_DEMO_ARCH (default 9.0).
# FAD_DEMO_KERNELS is a glob of unit names: by default one forward unit (a couple
# of minutes); FAD_DEMO_KERNELS='*' builds the whole library (84 units, hours on
# a small machine).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/cuda/bin:$PWD/.tools/bin"

scripts/setup.sh
command -v nvcc >/dev/null || { echo "demo: nvcc not found; install the CUDA toolkit" >&2; exit 1; }
BUILD_DIR=build BUILD_TARGETS="fad fadd" scripts/build.sh

fad=build/fad
arch_args=()
if ! nvidia-smi --query-gpu=compute_cap --format=csv,noheader >/dev/null 2>&1; then
  arch_args=(--arch "${FAD_DEMO_ARCH:-9.0}")
  echo "demo: no GPU here; building for ${arch_args[1]}"
fi

"$fad" daemon start
result=$("$fad" submit "${arch_args[@]}" --kernels "${FAD_DEMO_KERNELS:-fwd_hdim64_fp16_causal}" --name demo --wait --json)
artifact=$(sed -n 's/.*"artifact": *"\([^"]*\)".*/\1/p' <<<"$result" | head -n1)
"$fad" status
if [[ -z "$artifact" ]]; then
  echo "demo: the build did not produce a library:" >&2
  echo "$result" >&2
  exit 1
fi
echo "demo: built $artifact"
cuobjdump --list-elf "$artifact"
echo "demo: fadd keeps running; 'build/fad status' shows it, 'build/fad daemon stop' stops it"
