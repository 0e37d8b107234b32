#!/usr/bin/env bash
# Installs what fad needs to build and test on Debian 12, idempotently: a second
# run installs nothing. The CUDA toolkit itself (nvcc) is the user's: fad builds
# without it, and only the real-nvcc tests and the demo need it.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libboost1.81-dev libboost-filesystem1.81-dev
  libsqlite3-dev sqlite3 nlohmann-json3-dev libspdlog-dev libcli11-dev catch2
  python3-venv clang-format
  # a real single-host Slurm cluster for the Slurm executor's tests (scripts/slurm-local.sh)
  slurmctld slurmd slurm-client munge
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  echo "setup: installing ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

nvcc=$(command -v nvcc || true)
[[ -z "$nvcc" && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
if [[ -z "$nvcc" ]]; then
  echo "setup: note: no nvcc found (PATH or /usr/local/cuda/bin); real-compiler tests will be skipped"
  exit 0
fi

# cuobjdump shows which SASS a library holds; some toolkit installs lack it.
# Then take NVIDIA's own package from PyPI for the same CUDA major into .tools/.
tools="$(cd "$(dirname "$0")/.." && pwd)/.tools"
if ! command -v cuobjdump >/dev/null && [[ ! -x "$(dirname "$nvcc")/cuobjdump" && ! -x "$tools/bin/cuobjdump" ]]; then
  major=$("$nvcc" --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
  echo "setup: installing cuobjdump for CUDA $major into $tools"
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --target "$tools/pip" "nvidia-cuda-cuobjdump==${major}.*"
  mkdir -p "$tools/bin"
  ln -sf "$(find "$tools/pip" -type f -name cuobjdump -perm -u+x | head -n1)" "$tools/bin/cuobjdump"
fi
