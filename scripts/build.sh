#!/usr/bin/env bash
# Configures and builds fad into BUILD_DIR (default build/). Extra arguments go
# to CMake's configure step, e.g. -DFAD_SANITIZE=ON; BUILD_TARGETS limits what
# is built (default: everything); BUILD_JOBS the parallel jobs (default: all cores).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
build_type=${BUILD_TYPE:-RelWithDebInfo}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="$build_type" -DFAD_WERROR=ON "$@" >/dev/null
targets=()
for t in ${BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j"${BUILD_JOBS:-$(nproc)}" "${targets[@]}"
