#!/usr/bin/env bash
# Fails (listing the files) when a C++ file of fad's own is not formatted as
# .clang-format says; `scripts/check-format.sh --fix` formats them in place.
# The kernels keep their own layout (CUDA fragments line up by hand).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check-format: clang-format not installed" >&2; exit 1; }
mapfile -t files < <(git ls-files '*.cc' '*.h' | grep -v '^kernels/')
if [[ "${1:-}" == --fix ]]; then
  clang-format -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  echo "check-format: not formatted (run scripts/check-format.sh --fix):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files formatted"
