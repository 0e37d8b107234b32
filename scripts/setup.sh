#!/usr/bin/env bash
# Installs what fad needs to build and test on Debian 12, idempotently: a second
# run installs nothing. The CUDA toolkit itself (nvcc) is the user's: fad builds
# without it, and only the real-nvcc tests and the demo need it.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libboost1.81-dev libboost-filesystem1.81-dev
  libsqlite3-dev sqlite3 nlohmann-json3-dev libspdlog-dev libcli11-dev catch2 libssl-dev
  python3-venv clang-format
  systemd  # systemd-analyze, to verify the installed units
  # Test-time: the report is loaded in a real headless browser, completion
  # scripts run in their shells, and the manual pages are rendered by groff.
  chromium zsh fish groff-base
  # a filesystem that stops answering (FUSE), for the hung-compiler test
  libfuse3-dev fuse3
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

# cuobjdump shows which SASS a library holds and, with nvdisasm, the SASS the
# kernels' checks count (kernels/sass/); some toolkit installs lack them. Then
# take NVIDIA's own packages from PyPI for the same CUDA major into .tools/.
tools="$(cd "$(dirname "$0")/.." && pwd)/.tools"
major=$("$nvcc" --version | sed -n 's/.*release \([0-9]*\)\..*/\1/p')
for tool in cuobjdump nvdisasm; do
  if ! command -v "$tool" >/dev/null && [[ ! -x "$(dirname "$nvcc")/$tool" && ! -x "$tools/bin/$tool" ]]; then
    echo "setup: installing $tool for CUDA $major into $tools"
    python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --target "$tools/pip/$tool" \
      "nvidia-cuda-$tool==${major}.*"
    mkdir -p "$tools/bin"
    ln -sf "$(find "$tools/pip/$tool" -type f -name "$tool" -perm -u+x | head -n1)" "$tools/bin/$tool"
  fi
done
