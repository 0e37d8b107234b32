#!/usr/bin/env bash
# README command (1): set up, build, start the daemon, submit a real build of the
# bundled attention kernels and follow it to the end with fad's progress line,
# then sum up the library (archs, SASS, units, time, peak) and write its memory
# report. Arch: the local GPU's, else $FAD_DEMO_ARCH (default 9.0).
# FAD_DEMO_KERNELS is a glob of unit names: by default one forward unit (under a
# minute); FAD_DEMO_KERNELS='*' builds the whole library (84 units, about 80
# CPU-minutes).
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
id=$("$fad" submit "${arch_args[@]}" --kernels "${FAD_DEMO_KERNELS:-fwd_hdim64_fp16_causal}" --name demo --json |
     sed -n 's/.*"id": *\([0-9]*\).*/\1/p')
echo "demo: build $id queued; following it (Ctrl-C stops following, the build goes on)"
# One progress line redrawn in place on a terminal; its failed unit's last lines if it fails.
if ! "$fad" watch "$id"; then
  echo "demo: build $id did not succeed; '$fad logs $id' has its log" >&2
  exit 1
fi

# A short summary of the library instead of cuobjdump's list of every cubin.
report=build/demo-report.html
"$fad" report "$id" -o "$report" >/dev/null
"$fad" status "$id" --json >build/demo-status.json
elf=$(cuobjdump --list-elf "$(sed -n 's/.*"artifact": *"\([^"]*\)".*/\1/p' build/demo-status.json | head -n1)")
python3 - build/demo-status.json "$report" "$elf" <<'PY'
import json, os, sys, re
from datetime import datetime
status, report, elf = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
b = status["builds"][0]
t = lambda s: datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ")
secs = int((t(b["finished_at"]) - t(b["created_at"])).total_seconds())
gib = lambda n: f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"
reruns = sum(max(0, u["attempts"] - 1) for u in b["unit_list"])
sass = sorted(set(re.findall(r"\.(sm_\d+a?)\.cubin", elf)), key=lambda a: int(re.sub(r"\D", "", a)))
print(f"demo: built {b['artifact']} ({gib(os.path.getsize(b['artifact']))})")
print(f"demo: archs {', '.join(b['archs'])}; SASS for {', '.join(sass)} in {elf.count('.cubin')} cubins")
print(f"demo: {b['units']['total']} units in {secs // 60}m {secs % 60:02d}s, peak {gib(b['peak_bytes'])}, "
      f"{reruns} rerun(s)")
print(f"demo: memory timeline and unit chart: {report}")
PY
echo "demo: fadd keeps running; 'build/fad status' shows it, 'build/fad daemon stop' stops it"
