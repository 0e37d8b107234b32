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
# The Slurm tests share one local cluster and time Slurm's own step launch:
# they run on their own, one at a time, after the rest.
slurm_tests='fad_slurm_tests|slurm_local_stop'
(cd build && ctest --output-on-failure -j2 --timeout 900 -E "$slurm_tests")
(cd build && ctest --output-on-failure --timeout 900 -R "$slurm_tests")

if [[ "${FAD_SKIP_SANITIZERS:-0}" != 1 ]]; then
  echo "== build and test (ASan + UBSan) =="
  # The torch virtualenv (about 5 GiB, kept so that reruns skip the download)
  # serves only the PyTorch-extension test above; the sanitizer build needs
  # about 3 GiB more, and its tests some room. Where fewer than 5 GiB are left
  # beside the venv, the venv goes.
  free_kib=$(df -Pk . | awk 'NR == 2 {print $4}') || free_kib=
  if [[ -d build/torch-venv && $free_kib =~ ^[0-9]+$ ]] && ((free_kib < 5 * 1024 * 1024)); then
    echo "only $((free_kib / 1024 / 1024)) GiB free: removing build/torch-venv for the sanitizer build" \
      "(the next run downloads torch again)"
    rm -rf build/torch-venv
  fi
  BUILD_DIR=build-asan BUILD_TYPE=Debug scripts/build.sh -DFAD_SANITIZE=ON
  # The real-nvcc builds, the PyTorch build, the SASS check and the Slurm
  # cluster already ran above; under sanitizers they only add time (the code
  # they drive is the same fadd the other tests exercise). The fadd-killed
  # fallback test measures memory in a 1.2 GiB cgroup, which ASan's shadow
  # memory in 16 launchers fills by itself.
  (cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
     FAD_SKIP_REAL_NVCC=1 ctest --output-on-failure -j2 --timeout 900 \
     -E "kernels_emulation|kernels_sass|PyTorch CUDA extension|fadd killed in the middle|$slurm_tests")
fi
