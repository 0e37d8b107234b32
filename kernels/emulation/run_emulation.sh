#!/bin/bash
# Builds and runs the CPU emulation of the attention kernels (no GPU needed).
# Usage: kernels/emulation/run_emulation.sh [head_dim|0]   (0 = all head dims)
# Takes about 1-2 minutes on 2 cores. Exit status non-zero on any mismatch.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
K="$HERE/.."
OUT="${TMPDIR:-/tmp}/fad_emulation.$$"
mkdir -p "$OUT"
trap 'rm -rf "$OUT"' EXIT
for arch in 800 750; do
  g++ -std=c++17 -O1 -fno-strict-aliasing -w -D__CUDA_ARCH__=$arch \
    -I"$HERE/cuda_shim" -I"$K/src" -I"$K/include" -I"$K/reference" \
    "$HERE/emulate_kernels.cc" "$K/reference/reference_attention.cc" -o "$OUT/emu_$arch" -lpthread
  echo "== __CUDA_ARCH__=$arch ($([ $arch -ge 800 ] && echo WMMA || echo scalar) path)"
  "$OUT/emu_$arch" "${1:-0}"
done
