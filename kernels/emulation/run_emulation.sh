#!/usr/bin/env bash
# Builds the CPU emulation of the kernels with g++ and runs it: the real C ABI,
# launchers and device code against the emulator in cuda_shim/ and the fp32
# reference. No GPU needed. The CMake build makes the same program
# (fad-kernels-emulation); this script serves mutations.sh and builds from
# any copy of the sources.
#
# Usage: kernels/emulation/run_emulation.sh [--src DIR] [--units "a b ..."] [--keep DIR] [-- TEST ARGS]
#   --src    kernels directory to build from (default: the one holding this script)
#   --units  unit names to compile (default: emulation/units.txt)
#   --keep   build in DIR and keep it (default: a temporary directory)
#   TEST ARGS go to the test program (--filter TEXT, --list, --require-all).
# Exit status: the test program's (0 = every case passed).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
src="$(cd "$here/.." && pwd)"
units=""
out=""
while (($#)); do
  case "$1" in
    --src) src="$(cd "$2" && pwd)"; shift 2 ;;
    --units) units="$2"; shift 2 ;;
    --keep) out="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "run_emulation.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ -n "$units" ]] || units=$(grep -v '^#' "$src/emulation/units.txt" | tr '\n' ' ')
if [[ -z "$out" ]]; then
  out="$(mktemp -d "${TMPDIR:-/tmp}/fad_emulation.XXXXXX")"
  trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"
jobs=${EMULATION_JOBS:-$(nproc)}
inc=(-I"$src/emulation/cuda_shim" -I"$src/src" -I"$src/include" -I"$src/reference" -I"$src/selftest")
kflags=(-std=c++17 -x c++ -DFAD_EMULATION -O0 -w "${inc[@]}")
compile() {  # name source flags...
  local name=$1 source=$2; shift 2
  g++ "$@" -c "$source" -o "$out/$name.o"
}
export -f compile
export out
{
  for u in $units; do echo "$u $src/src/$u.cu ${kflags[*]}"; done
  echo "dispatch $src/src/dispatch.cu ${kflags[*]/-O0/-O1}"
  echo "emu_runtime $src/emulation/emu_runtime.cc -std=c++17 -O2 -w ${inc[*]}"
  echo "reference $src/reference/reference_attention.cc -std=c++17 -O2 -w ${inc[*]}"
  echo "emulation_test $src/emulation/emulation_test.cc -std=c++17 -O1 -w -DFAD_EMULATION ${inc[*]}"
  echo "attention_cases $src/selftest/attention_cases.cc -std=c++17 -O1 -w -DFAD_EMULATION ${inc[*]}"
} | xargs -P "$jobs" -L 1 bash -c 'compile "$@"' _
g++ -rdynamic -o "$out/fad-kernels-emulation" "$out"/*.o -ldl
"$out/fad-kernels-emulation" "$@"
