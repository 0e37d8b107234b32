#!/usr/bin/env python3
"""Per-unit overhead of fad's Slurm step path: from admission (fadd starts
srun for a unit the scheduler just admitted) to the compiler's start on its
node (fad-step forks it), on a real single-node cluster started by
scripts/slurm-local.sh. fadd builds N tiny fake-compiler units through
`--executor slurm`; each step's times come from fadd's step journal
(STATE/slurm/steps.log). Prints median, p90 and max; --json FILE keeps them.

Needs root (slurmd), slurm-wlm and munge, and a build of fadd, fad, fad-step
and fad-fake-nvcc (default build/).
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLUSTER = {"FAD_SLURM_DIR": "/tmp/fad-slurm-bench", "FAD_SLURM_PORT": "18817", "FAD_SLURM_NODES": "1",
           "FAD_SLURM_NODE_CPUS": "2", "FAD_SLURM_NODE_MEM_MB": "4096"}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="build directory (default build/)")
    ap.add_argument("--units", type=int, default=40, help="units to build (default 40)")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--keep-cluster", action="store_true", help="leave the cluster running")
    args = ap.parse_args()

    env = dict(os.environ, **CLUSTER)
    script = os.path.join(ROOT, "scripts", "slurm-local.sh")
    subprocess.run(["bash", script, "start"], env=env, check=True)
    env["SLURM_CONF"] = CLUSTER["FAD_SLURM_DIR"] + "/etc/slurm.conf"
    work = tempfile.mkdtemp(prefix="fad-step-bench-")
    try:
        kernels = os.path.join(work, "kernels")
        os.makedirs(os.path.join(kernels, "src"))
        os.makedirs(os.path.join(kernels, "include"))
        open(os.path.join(kernels, "include", "common.cuh"), "w").write("#pragma once\n")
        units = []
        for i in range(args.units):
            name = f"u{i:03d}"
            with open(os.path.join(kernels, "src", name + ".cu"), "w") as f:
                f.write("// fake-nvcc: peak_mb=20 duration_s=0.3\n__global__ void k() {}\n")
            units.append({"name": name, "source": f"src/{name}.cu", "family": "u", "flags": []})
        json.dump({"version": 1, "library": "bench", "include_dirs": ["include"], "flags": [], "link_flags": [],
                   "units": units}, open(os.path.join(kernels, "manifest.json"), "w"))
        config = os.path.join(work, "fad.json")
        json.dump({"poll_interval_ms": 100, "unit_memory_prior": "100M", "executor": "slurm",
                   "slurm": {"nodes": 1, "time_limit": "30"}}, open(config, "w"))
        sock, state = os.path.join(work, "fad.sock"), os.path.join(work, "state")
        fadd = subprocess.Popen([os.path.join(args.build, "fadd"), "--config", config, "--socket", sock,
                                 "--state-dir", state, "--kernels-dir", kernels, "--nvcc",
                                 os.path.join(args.build, "tests", "fad-fake-nvcc")],
                                env=env, stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "fadd.log"), "w"))
        fad = os.path.join(args.build, "fad")
        for _ in range(200):
            if subprocess.run([fad, "status", "--socket", sock], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        start = time.monotonic()
        r = subprocess.run([fad, "submit", "--socket", sock, "--arch", "9.0", "--wait", "--json"], env=env, capture_output=True,
                           text=True, timeout=1800)
        wall = time.monotonic() - start
        fadd.terminate()
        fadd.wait(timeout=60)
        if r.returncode != 0:
            sys.exit("the build failed:\n" + r.stdout + r.stderr + open(os.path.join(work, "fadd.log")).read())
        delays = []
        for line in open(os.path.join(state, "slurm", "steps.log")):
            f = dict(re.findall(r"(\w+)=(\S*)", line))
            if int(f.get("launched_ms", 0)) > 0 and int(f.get("started_ms", 0)) > 0:
                delays.append(int(f["started_ms"]) - int(f["launched_ms"]))
        delays.sort()
        figures = {"units": len(delays), "median_ms": statistics.median(delays),
                   "p90_ms": delays[int(0.9 * (len(delays) - 1))], "max_ms": delays[-1], "min_ms": delays[0],
                   "build_wall_s": round(wall, 1), "delays_ms": delays}
        print(f"admission to compile start over {len(delays)} steps: median {figures['median_ms']} ms, "
              f"p90 {figures['p90_ms']} ms, min {figures['min_ms']} ms, max {figures['max_ms']} ms "
              f"(build {wall:.1f} s)")
        if args.json:
            json.dump(figures, open(args.json, "w"), indent=2)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if not args.keep_cluster:
            subprocess.run(["bash", script, "stop"], env=env)


if __name__ == "__main__":
    main()
