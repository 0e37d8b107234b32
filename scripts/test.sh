#!/usr/bin/env bash
# README command (2): set up, build and run every test; then the same suite again
# under AddressSanitizer + UndefinedBehaviorSanitizer. GPU-only checks skip (and
# say so) when no GPU is present.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/cuda/bin:$PWD/.tools/bin"

scripts/setup.sh

echo "== format =="
scripts/check-format.sh

echo "== build and test (RelWithDebInfo) =="
BUILD_DIR=build BUILD_TYPE=RelWithDebInfo scripts/build.sh
(cd build && ctest --output-on-failure -j2 --timeout 900)

if [[ "${FAD_SKIP_SANITIZERS:-0}" != 1 ]]; then
  echo "== build and test (ASan + UBSan) =="
  BUILD_DIR=build-asan BUILD_TYPE=Debug scripts/build.sh -DFAD_SANITIZE=ON
  # The real-nvcc builds already ran above; under sanitizers they only add time.
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
     FAD_SKIP_REAL_NVCC=1 ctest --output-on-failure -j2 --timeout 900 -E kernels_emulation)
fi
