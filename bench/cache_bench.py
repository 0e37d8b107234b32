#!/usr/bin/env python3
"""The compile cache on real FlashAttention units: the same build twice.

Builds a subset of FlashAttention 2's CUDA extension (flash_api.cpp plus the
chosen .cu units; the rest of setup.py's source list is dropped) with
`pip wheel --no-build-isolation` from a source archive, under `fad run`, twice
against one compile cache: a cold build (empty cache), then a warm one. pip
unpacks the archive into a fresh temporary directory each time, exactly as
`pip install flash-attn` does, so the second build sees the same sources at
other paths: the cache must relabel them to hit. Everything is real: torch's
cpp_extension writes the ninja file, nvcc runs with
--generate-dependencies-with-compile, fadd schedules the misses.

Figures per build: wall time of the whole pip run, the nvcc units (cached or
compiled) with their compile time from `fad status`, and the cache's hits,
misses and stores (`fad cache stats`, before and after). flash_api.cpp is
compiled by the host compiler through torch's own rule, not nvcc: fad does
not cache it, and it is part of both builds' wall time.

Needs nvcc, a virtualenv with torch whose CUDA major is nvcc's (and whose
headers compile as C++17: torch 2.11-2.13 for CUDA 13), ninja and packaging,
and the flash-attn source distribution (downloaded into WORKDIR/sdist from
PyPI when missing). Example (about 20 minutes on 2 cores):

  python3 bench/cache_bench.py --venv build/torch-venv --json bench/results/cache_bench.json
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trace_bench import stop_daemon, wait_socket  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_UNITS = "flash_fwd_hdim64_fp16_sm80,flash_fwd_hdim64_bf16_sm80"


def sh(argv, **kw):
    print("+ " + " ".join(argv), flush=True)
    return subprocess.run(argv, check=True, **kw)


def ensure_sdist(args, py):
    found = glob.glob(os.path.join(args.workdir, "sdist", f"flash_attn-{args.version}.tar.gz"))
    if found:
        return found[0]
    # The sdist's setup.py imports torch to write its metadata, hence no isolation.
    sh([py, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "--no-build-isolation", "--no-cache-dir",
        "-d", os.path.join(args.workdir, "sdist"), f"flash-attn=={args.version}"])
    return glob.glob(os.path.join(args.workdir, "sdist", f"flash_attn-{args.version}.tar.gz"))[0]


def make_subset(args, sdist):
    """A source archive whose setup.py builds flash_api.cpp and `units` only."""
    out = os.path.join(args.workdir, f"flash_attn_subset-{args.version}.tar.gz")
    tree = os.path.join(args.workdir, "subset")
    shutil.rmtree(tree, ignore_errors=True)
    with tarfile.open(sdist) as tar:
        tar.extractall(tree)
    top = os.path.join(tree, os.listdir(tree)[0])
    keep = {u + ".cu" for u in args.units}
    lines, dropped = [], 0
    for line in open(os.path.join(top, "setup.py")).read().splitlines(keepends=True):
        s = line.strip().strip('",')
        if s.startswith("csrc/flash_attn/src/") and s.endswith(".cu") and os.path.basename(s) not in keep:
            dropped += 1
            continue
        lines.append(line)
    kept = sum(1 for line in lines if line.strip().strip('",').startswith("csrc/flash_attn/src/"))
    if kept != len(keep):
        sys.exit(f"setup.py lists {kept} of the units {sorted(keep)}; check --units against csrc/flash_attn/src")
    open(os.path.join(top, "setup.py"), "w").write("".join(lines))
    with tarfile.open(out, "w:gz") as tar:
        tar.add(top, arcname=os.path.basename(top))
    print(f"subset: {len(keep)} units kept, {dropped} dropped -> {out}", flush=True)
    return out


def fad(args, *argv, **kw):
    return subprocess.run([os.path.join(args.build_dir, "fad")] + list(argv), capture_output=True, text=True, **kw)


def cache_stats(args, env):
    r = fad(args, "cache", "stats", "--json", env=env)
    return json.loads(r.stdout)


def one_build(args, label, archive, py, sock, env):
    tmpdir = os.path.join(args.workdir, f"tmp-{label}")
    wheels = os.path.join(args.workdir, f"wheels-{label}")
    for d in (tmpdir, wheels):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    env = dict(env, TMPDIR=tmpdir)
    before = cache_stats(args, env)
    log = open(os.path.join(args.workdir, f"{label}.log"), "w")
    argv = [os.path.join(args.build_dir, "fad"), "run", "--socket", sock, "--name", f"fa-subset-{label}", "--",
            py, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-v", "-w", wheels, archive]
    print(f"== {label}: " + " ".join(argv), flush=True)
    t0 = time.time()
    rc = subprocess.run(argv, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
    wall = time.time() - t0
    after = cache_stats(args, env)
    status = json.loads(fad(args, "status", "--socket", sock, "--json", env=env).stdout)
    build = max((b for b in status["builds"] if b["name"] == f"fa-subset-{label}"), key=lambda b: b["id"])
    units = json.loads(fad(args, "status", str(build["id"]), "--socket", sock, "--json", env=env).stdout)
    unit_list = units["builds"][0]["unit_list"]
    return {
        "build": label, "exit_code": rc, "wall_s": round(wall, 1),
        "wheel": [os.path.basename(w) for w in glob.glob(os.path.join(wheels, "*.whl"))],
        "nvcc_units": len(unit_list), "cached_units": sum(1 for u in unit_list if u["cached"]),
        "nvcc_compile_s": round(sum(u["duration_s"] for u in unit_list if not u["cached"]), 1),
        "units": [{k: u[k] for k in ("name", "state", "cached", "duration_s", "peak_bytes", "threads")}
                  for u in unit_list],
        "cache": {k: after[k] - before[k] for k in ("hits", "misses", "stored", "uncacheable", "corrupt")},
        "cache_size_bytes": after["size_bytes"],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--units", default=DEFAULT_UNITS, help=f"comma list of .cu stems (default {DEFAULT_UNITS})")
    ap.add_argument("--archs", default="80", help="FLASH_ATTN_CUDA_ARCHS (default 80)")
    ap.add_argument("--version", default="2.8.3.post2", help="flash-attn version (default 2.8.3.post2)")
    ap.add_argument("--workdir", default=os.path.join(REPO, "build-cache-bench"), help="scratch dir")
    ap.add_argument("--venv", default=os.path.join(REPO, "build", "torch-venv"), help="virtualenv with torch")
    ap.add_argument("--build-dir", default=os.path.join(REPO, "build"), help="holds fadd and fad (default build/)")
    ap.add_argument("--nvcc", default=shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    ap.add_argument("--json", help="write every figure here")
    args = ap.parse_args()
    args.units = [u for u in args.units.split(",") if u]
    args.workdir = os.path.abspath(args.workdir)
    os.makedirs(args.workdir, exist_ok=True)
    py = os.path.join(os.path.abspath(args.venv), "bin", "python")
    if not os.path.exists(py):
        sys.exit(f"no python in {args.venv}: make a virtualenv with torch (see bench/flash_attn_story.py)")
    archive = make_subset(args, ensure_sdist(args, py))

    state = os.path.join(args.workdir, "fad-state")
    shutil.rmtree(state, ignore_errors=True)
    cache = os.path.join(args.workdir, "cache")
    shutil.rmtree(cache, ignore_errors=True)
    os.makedirs(state)
    sock = os.path.join(state, "fadd.sock")
    env = dict(os.environ)
    for k in ("MAX_JOBS", "NVCC_THREADS", "FAD_SOCKET", "PYTORCH_NVCC", "CMAKE_CUDA_COMPILER_LAUNCHER"):
        env.pop(k, None)
    env.update({
        "PATH": os.path.join(os.path.abspath(args.venv), "bin") + ":" + os.path.dirname(args.nvcc) + ":" +
                env.get("PATH", ""),
        "CUDA_HOME": os.path.dirname(os.path.dirname(args.nvcc)),
        "FLASH_ATTN_CUDA_ARCHS": args.archs,
        "FLASH_ATTENTION_FORCE_BUILD": "TRUE",
        "PIP_NO_CACHE_DIR": "1",
        "FAD_CACHE_DIR": cache,
    })
    fadd_log = open(os.path.join(args.workdir, "fadd.log"), "w")
    fadd = subprocess.Popen([os.path.join(args.build_dir, "fadd"), "--socket", sock, "--state-dir", state,
                             "--nvcc", args.nvcc], env=env, stdout=fadd_log, stderr=subprocess.STDOUT)
    try:
        wait_socket(sock, fadd)
        runs = [one_build(args, label, archive, py, sock, env) for label in ("cold", "warm")]
    finally:
        stop_daemon(fadd, timeout=20)
    torch_version = subprocess.run([py, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                                   text=True).stdout.strip()
    nvcc_version = subprocess.run([args.nvcc, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    result = {"bench": "cache_bench", "flash_attn": args.version, "units": args.units, "archs": args.archs,
              "cores": os.cpu_count(), "torch": torch_version, "nvcc": nvcc_version[-1] if nvcc_version else "",
              "runs": runs}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    print(f"\n{'build':<6} {'wall s':>8} {'nvcc units':>10} {'cached':>6} {'compile s':>9} {'hits':>4} "
          f"{'misses':>6}  exit")
    for r in runs:
        print(f"{r['build']:<6} {r['wall_s']:>8.1f} {r['nvcc_units']:>10} {r['cached_units']:>6} "
              f"{r['nvcc_compile_s']:>9.1f} {r['cache']['hits']:>4} {r['cache']['misses']:>6}  {r['exit_code']}")


if __name__ == "__main__":
    main()
