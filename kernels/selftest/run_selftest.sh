#!/usr/bin/env bash
# Runs a built GPU self-test the full way: the self-test itself (correctness and
# TFLOP/s); then, on a GPU, again under compute-sanitizer's racecheck,
# synccheck and initcheck (quick case set, no benchmark); then, when torch with
# CUDA is importable, compare_sdpa.py (correctness and TFLOP/s against
# PyTorch's scaled_dot_product_attention).
#
# Usage: kernels/selftest/run_selftest.sh SELFTEST LIBRARY [PYTHON]
#   SELFTEST  the built fad_attention_selftest
#   LIBRARY   the libfad_attention.so it links against (for compare_sdpa.py)
#   PYTHON    interpreter with torch (default: python3); FAD_TORCH_VENV=DIR uses DIR/bin/python
# Exit: 0 passed (or no GPU on this machine: every GPU step says SKIP);
# 1 a failure, including a GPU that is present but unusable, and a GPU
# machine without compute-sanitizer.
set -uo pipefail
selftest=$1
library=$2
python=${3:-python3}
[[ -n "${FAD_TORCH_VENV:-}" && -x "$FAD_TORCH_VENV/bin/python" ]] && python="$FAD_TORCH_VENV/bin/python"
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"

# shellcheck disable=SC2086  # FAD_SELFTEST_ARGS holds words, e.g. "--bench-seqlen 4096"
out=$("$selftest" ${FAD_SELFTEST_ARGS:-} 2>&1)
rc=$?
echo "$out"
if [[ $rc -ne 0 ]]; then
  echo "selftest: FAILED (exit $rc)"
  exit 1
fi
if grep -q '^SKIP: no CUDA device' <<<"$out"; then
  echo "selftest: SKIP compute-sanitizer and the PyTorch comparison: no GPU"
  exit 0
fi

sanitizer=""
for c in compute-sanitizer /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer \
         "$root/.tools/bin/compute-sanitizer"; do
  if command -v "$c" >/dev/null 2>&1; then sanitizer=$(command -v "$c"); break; fi
done
if [[ -z "$sanitizer" ]]; then
  echo "selftest: FAILED: a GPU is present but compute-sanitizer is not (scripts/setup.sh installs it on GPU machines)"
  exit 1
fi
for tool in racecheck synccheck initcheck; do
  echo "== compute-sanitizer --tool $tool"
  if ! "$sanitizer" --tool "$tool" --error-exitcode 3 "$selftest" --no-bench --quick; then
    echo "selftest: FAILED under compute-sanitizer --tool $tool"
    exit 1
  fi
done

if "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "== PyTorch scaled_dot_product_attention"
  "$python" "$here/compare_sdpa.py" "$library" || { echo "selftest: FAILED against PyTorch SDPA"; exit 1; }
else
  echo "selftest: SKIP the PyTorch comparison: no torch with CUDA for $python"
fi
echo "selftest: PASSED"
