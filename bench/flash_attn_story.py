#!/usr/bin/env python3
"""The user's story: `pip install flash-attn --no-build-isolation` on a small VM.

Builds FlashAttention-2 from its PyPI source distribution inside one memory
cgroup whose limit stands in for a WSL VM (default 12 GiB), once per policy,
for the same wall-clock window each (a full build is hours on a small machine),
and compares what got done. With --units, setup.py's source list is cut down
to flash_api.cpp and those units, and with a window long enough every policy
builds them to the end: the time to finish is then the figure.

  fad       `fad run --name flash-attn -- pip install ...` with a fresh fadd
            running inside the same cgroup (it reads the cgroup's limit as its
            budget; nothing is tuned): fad picks how many units run and with
            how many nvcc threads.
  fad-warm  the same, after `fad history import FILE` (--history): profiles
            learnt elsewhere, e.g. by a fad build for another arch
            (--export-history FILE after a `fad` run writes such a file).
  jN-tT     MAX_JOBS=N NVCC_THREADS=T.
  safe      j1-t1, what users fall back to.
  j4        MAX_JOBS=4 (flash-attn's own NVCC_THREADS default of 4).
  fa        setup.py's own rule, untouched: MAX_JOBS from cpu_count // 2 and
            free memory / 9 GiB, NVCC_THREADS 4.

Figures per policy: compile units finished in the window (object files the
build wrote), units per hour of the window, peak and mean anonymous memory of
the cgroup (memory.stat total_rss + total_shmem every 0.5 s; usage_in_bytes
also counts page cache, which fills any limit in a long build), OOM kills (the
kernel's oom_kill counter in /proc/vmstat and the kernel log), and whether pip was still
running, succeeded or failed when the window closed. Every run starts from
pip's fresh unpacking of the source distribution.

Needs root, a cgroup v1 memory controller, nvcc, and PyPI. It makes a
virtualenv with torch (whose CUDA major must match nvcc's and whose headers
must still compile as C++17: torch 2.11-2.13 for CUDA 13), ninja, packaging
and psutil, unless --venv names one. Examples (about 2 hours each):

  sudo python3 bench/flash_attn_story.py --window 2400 --limit 12G --archs 90
  sudo python3 bench/flash_attn_story.py --units flash_fwd_hdim64_fp16_sm80,... \
      --window 7200 --policies fad,j1-t1,j2-t1 --json results.json
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trace_bench import CG_ROOT, GIB, Cgroup, oom_kill_count, parse_size, stop_daemon, wait_socket  # noqa: E402

from cache_bench import make_subset  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMED = ("fad", "fad-warm", "safe", "j4", "fa")
FIXED = re.compile(r"j([1-9][0-9]*)-t([1-9][0-9]*)$")


def policy_env(policy):
    """MAX_JOBS and NVCC_THREADS for a launcher policy ({} for fa: setup.py decides)."""
    if policy == "safe":
        return {"MAX_JOBS": "1", "NVCC_THREADS": "1"}
    if policy == "j4":
        return {"MAX_JOBS": "4"}
    m = FIXED.match(policy)
    return {"MAX_JOBS": m.group(1), "NVCC_THREADS": m.group(2)} if m else {}


def sh(argv, **kw):
    print("+ " + " ".join(argv), flush=True)
    return subprocess.run(argv, check=True, **kw)


def nvcc_major(nvcc):
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"release (\d+)\.(\d+)", out)
    if not m:
        sys.exit(f"cannot read the CUDA version from `{nvcc} --version`")
    return int(m.group(1))


def ensure_venv(args):
    py = os.path.join(args.venv, "bin", "python")
    if not os.path.exists(py):
        sh([sys.executable, "-m", "venv", args.venv])
        sh([py, "-m", "pip", "install", "--quiet", args.torch, "ninja", "packaging", "psutil", "wheel",
            "setuptools", "einops"])
    cuda = subprocess.run([py, "-c", "import torch; print(torch.version.cuda or '')"],
                          capture_output=True, text=True).stdout.strip()
    major = nvcc_major(args.nvcc)
    if not cuda or int(cuda.split(".")[0]) != major:
        sys.exit(f"torch in {args.venv} is built for CUDA '{cuda}', nvcc is CUDA {major}: "
                 f"install a torch whose CUDA major is {major} (--torch)")
    return py


def ensure_sdist(args, py):
    found = glob.glob(os.path.join(args.workdir, "sdist", f"flash_attn-{args.version}.tar.gz"))
    if found:
        return found[0]
    # The sdist's setup.py imports torch to write its metadata, hence no isolation.
    sh([py, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "--no-build-isolation",
        "-d", os.path.join(args.workdir, "sdist"), f"flash-attn=={args.version}"])
    return glob.glob(os.path.join(args.workdir, "sdist", f"flash_attn-{args.version}.tar.gz"))[0]


def kernel_oom_kills(cg):
    """The kernel log's OOM kills charged to this cgroup or one below it: v1
    counts a kill in the victim's own cgroup, and fadd's unit cgroups are gone
    by the end of the window, so the cgroup's counter alone misses them."""
    out = subprocess.run(["dmesg"], capture_output=True, text=True).stdout
    name = "/" + os.path.relpath(cg.path, CG_ROOT)
    return sum(1 for line in out.splitlines()
               if "oom-kill:" in line and re.search(r"oom_memcg=" + re.escape(name) + r"[,/]", line))


class Sampler(threading.Thread):
    """Every `period` s the cgroup's anonymous memory; every 10 periods the
    objects the build has written so far with their finish times (nvcc writes
    its .o last), watched during the run because pip deletes its build tree
    when the build fails."""

    def __init__(self, cg, tmpdir, t0, period=0.5):
        super().__init__(daemon=True)
        self.cg, self.tmpdir, self.t0, self.period = cg, tmpdir, t0, period
        self.samples, self.objects, self.done = [], {}, threading.Event()

    def scan(self):
        pattern = os.path.join(self.tmpdir, "**", "build", "temp.*", "**", "*.o")
        for path in glob.glob(pattern, recursive=True):
            name = os.path.basename(path)
            if name not in self.objects:
                try:
                    self.objects[name] = os.path.getmtime(path) - self.t0
                except OSError:  # removed between glob and stat
                    pass

    def run(self):
        n = 0
        while not self.done.wait(self.period):
            self.samples.append(self.cg.anon())
            n += 1
            if n % 10 == 0:
                self.scan()

    def stop(self):
        self.done.set()
        self.join()
        self.scan()

    def units(self):
        return sorted((t, n) for n, t in self.objects.items())

    def mean(self):
        return sum(self.samples) / len(self.samples) if self.samples else 0

    def peak(self):
        return max(self.samples, default=0)


def fad_builds(args, sock, listing):
    """Each build of `listing` (`fad status --json`) with its units as fadd
    recorded them: peak, run time, threads, estimate source and reruns."""
    fad = os.path.join(args.build_dir, "fad")
    try:
        ids = [b["id"] for b in json.loads(listing).get("builds", [])]
    except (ValueError, AttributeError, KeyError, TypeError):
        return []
    builds = []
    for i in ids:
        one = subprocess.run([fad, "status", str(i), "--socket", sock, "--json"], capture_output=True, text=True)
        try:
            builds.append(json.loads(one.stdout))
        except ValueError:
            builds.append({"id": i, "error": one.stderr.strip()})
    return builds


def kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def run_policy(args, policy, sdist, py):
    pdir = os.path.join(args.workdir, policy)
    shutil.rmtree(pdir, ignore_errors=True)
    tmpdir = os.path.join(pdir, "tmp")
    os.makedirs(tmpdir)
    env = dict(os.environ)
    for k in ("MAX_JOBS", "NVCC_THREADS", "FAD_SOCKET", "PYTORCH_NVCC", "CMAKE_CUDA_COMPILER_LAUNCHER"):
        env.pop(k, None)
    env.update({
        "PATH": os.path.join(args.venv, "bin") + ":" + os.path.dirname(args.nvcc) + ":" + env.get("PATH", ""),
        "CUDA_HOME": os.path.dirname(os.path.dirname(args.nvcc)),
        "FLASH_ATTN_CUDA_ARCHS": args.archs,
        "FLASH_ATTENTION_FORCE_BUILD": "TRUE",  # never fetch a prebuilt wheel
        "TMPDIR": tmpdir,  # pip builds under it, so finished objects can be counted
        "PIP_NO_CACHE_DIR": "1",
    })
    pip = [py, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "-v", sdist]
    cg = Cgroup(f"fad-story-{policy}-{os.getpid()}", args.limit_bytes)
    fadd = None
    try:
        if not policy.startswith("fad"):
            env.update(policy_env(policy))
            argv = pip
        else:
            state = os.path.join(pdir, "fad-state")
            # An empty compile cache of its own: one shared with an earlier run
            # would hand fad that run's objects.
            env["FAD_CACHE_DIR"] = os.path.join(state, "cache")
            os.makedirs(env["FAD_CACHE_DIR"])
            sock = os.path.join(state, "fadd.sock")
            fadd_log = open(os.path.join(pdir, "fadd.stderr"), "w")
            fadd = subprocess.Popen(cg.wrap([os.path.join(args.build_dir, "fadd"), "--socket", sock,
                                             "--state-dir", state, "--nvcc", args.nvcc]),
                                    env=env, stdout=fadd_log, stderr=subprocess.STDOUT)
            wait_socket(sock, fadd)
            if policy == "fad-warm":
                sh([os.path.join(args.build_dir, "fad"), "history", "import", "--socket", sock, args.history])
            argv = [os.path.join(args.build_dir, "fad"), "run", "--socket", sock, "--name", "flash-attn",
                    "--"] + pip
        ooms_kernel0, ooms0 = kernel_oom_kills(cg), oom_kill_count()
        cg.reset()
        log = open(os.path.join(pdir, "build.log"), "w")
        t0 = time.time()
        sampler = Sampler(cg, tmpdir, t0)
        print(f"== {policy}: window {args.window:.0f} s, limit {args.limit_bytes / GIB:.1f} GiB", flush=True)
        proc = subprocess.Popen(cg.wrap(argv), env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        sampler.start()
        try:
            rc = proc.wait(timeout=args.window)
        except subprocess.TimeoutExpired:
            rc = None
        elapsed = time.time() - t0
        sampler.stop()
        units = sampler.units()
        # Per hour of the window, not of the run: a build that failed early makes no more progress.
        result = {
            "policy": policy, "window_s": args.window, "elapsed_s": round(elapsed, 1),
            "outcome": "running" if rc is None else ("succeeded" if rc == 0 else f"failed (exit {rc})"),
            "units_finished": len(units), "units_per_hour": round(len(units) * 3600 / max(elapsed, args.window), 2),
            "unit_finish_times_s": [[round(t, 1), n] for t, n in units],
            "peak_anon_bytes": sampler.peak(), "mean_anon_bytes": int(sampler.mean()),
            "peak_usage_bytes": cg.max_usage(), "limit_hits": cg.failcnt(),
            "oom_kills_vmstat": oom_kill_count() - ooms0, "oom_kills_kernel_log": kernel_oom_kills(cg) - ooms_kernel0,
            "limit_bytes": args.limit_bytes, "archs": args.archs, "version": args.version,
            "units": args.units or "all",
        }
        if fadd is not None:
            st = subprocess.run([os.path.join(args.build_dir, "fad"), "status", "--socket", sock, "--json"],
                                capture_output=True, text=True)
            with open(os.path.join(pdir, "fad-status.json"), "w") as f:
                f.write(st.stdout)
            result["fad_builds"] = fad_builds(args, sock, st.stdout)
            if args.export_history and policy == "fad":
                sh([os.path.join(args.build_dir, "fad"), "history", "export", "--socket", sock, args.export_history])
        if rc is None:
            kill_group(proc)
        log.close()
        return result
    finally:
        if fadd is not None:
            stop_daemon(fadd, timeout=20)
        cg.remove()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--policies", default="fad,safe,j4",
                    help="comma list of fad, fad-warm, jN-tT, safe, j4, fa (default fad,safe,j4)")
    ap.add_argument("--units", help="comma list of .cu units (no suffix) to build with flash_api.cpp; default: all")
    ap.add_argument("--history", help="for fad-warm: a file written by `fad history export`")
    ap.add_argument("--export-history", help="after a fad run, write its learnt profiles here")
    ap.add_argument("--json", help="also write every policy's results to this file")
    ap.add_argument("--window", type=float, default=2400, help="seconds each policy builds (default 2400)")
    ap.add_argument("--limit", default="12G", help="the cgroup's memory limit: the VM's RAM (default 12G)")
    ap.add_argument("--archs", default="90", help="FLASH_ATTN_CUDA_ARCHS (default 90)")
    ap.add_argument("--version", default="2.8.3.post2", help="flash-attn version (default 2.8.3.post2)")
    ap.add_argument("--workdir", default=os.path.join(REPO, "build-story"), help="scratch dir (default build-story/)")
    ap.add_argument("--venv", help="virtualenv with torch, ninja, packaging, psutil (default: WORKDIR/venv, made)")
    # flash-attn 2.8's setup.py compiles with -std=c++17; torch 2.14+ headers need C++20,
    # and torch before 2.11 is built for CUDA 12 on PyPI.
    ap.add_argument("--torch", default="torch==2.13.0",
                    help="pip requirement for torch: CUDA major as nvcc's, C++17 headers (default torch==2.13.0)")
    ap.add_argument("--build-dir", default=os.path.join(REPO, "build"), help="holds fadd and fad (default build/)")
    ap.add_argument("--nvcc", default=shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    args = ap.parse_args()
    if os.geteuid() != 0 or not os.path.isdir(CG_ROOT):
        sys.exit(f"needs root and a memory cgroup controller (v1 or v2) at {CG_ROOT}")
    policies = [p for p in args.policies.split(",") if p]
    for p in policies:
        if p not in NAMED and not FIXED.match(p):
            sys.exit(f"unknown policy '{p}' (known: {', '.join(NAMED)}, jN-tT)")
    if "fad-warm" in policies and not (args.history and os.path.isfile(args.history)):
        sys.exit("fad-warm needs --history FILE (written by `fad history export`)")
    if any(p.startswith("fad") for p in policies) and not all(os.access(os.path.join(args.build_dir, e), os.X_OK) for e in ("fad", "fadd")):
        sys.exit(f"missing fad/fadd in {args.build_dir}: run BUILD_TARGETS='fad fadd' scripts/build.sh")
    args.limit_bytes = parse_size(args.limit)
    args.workdir = os.path.abspath(args.workdir)
    args.venv = os.path.abspath(args.venv or os.path.join(args.workdir, "venv"))
    os.makedirs(args.workdir, exist_ok=True)
    py = ensure_venv(args)
    sdist = ensure_sdist(args, py)
    if args.units:
        args.units = [u.strip().removesuffix(".cu") for u in args.units.split(",") if u.strip()]
        sdist = make_subset(args, sdist)
    # Results of earlier invocations (other policies) are kept, so policies can be run one at a time.
    out = os.path.join(args.workdir, "results.json")
    results = json.load(open(out)) if os.path.exists(out) else []
    for p in policies:
        r = run_policy(args, p, sdist, py)
        results = [x for x in results if x["policy"] != p] + [r]
        print(json.dumps({k: v for k, v in r.items() if k != "unit_finish_times_s"}), flush=True)
        with open(out, "w") as f:
            json.dump(results, f, indent=1)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(results, f, indent=1)
    print(f"\n{'policy':<8} {'ran s':>8} {'units':>5} {'units/h':>7} {'peak GiB':>8} {'mean GiB':>8}"
          f" {'OOM kills':>9}  outcome   (memory: anonymous, sampled every 0.5 s)")
    for r in results:
        print(f"{r['policy']:<8} {r['elapsed_s']:>8.0f} {r['units_finished']:>5} {r['units_per_hour']:>7.1f}"
              f" {r.get('peak_anon_bytes', 0) / GIB:>8.2f} {r.get('mean_anon_bytes', 0) / GIB:>8.2f}"
              f" {max(r.get('oom_kills_vmstat', r.get('oom_kills_cgroup', 0)), r['oom_kills_kernel_log']):>9}  {r['outcome']}")


if __name__ == "__main__":
    main()
