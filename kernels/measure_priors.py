#!/usr/bin/env python3
"""Measure every unit's compile time and peak memory through fad itself and
record them as the manifest's priors (the scheduler's estimate for a unit it
has never seen).

Usage: python3 kernels/measure_priors.py [--build-dir build] [--arch 9.0] [--units GLOB]

Starts a private fadd (fresh state in a temp dir, one core so each unit is
measured alone, per-unit cgroups where the machine allows), builds the units
(default all; hours for the whole library) for one arch with nvcc --threads 1,
merges their figures into kernels/priors.json and regenerates manifest.json
from it (units never measured take their nearest measured sibling's figure).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--arch", default="9.0")
    ap.add_argument("--nvcc", default="nvcc")
    ap.add_argument("--units", default="*", help="glob over unit names (default: all)")
    args = ap.parse_args()
    fadd = os.path.join(args.build_dir, "fadd")
    fad = os.path.join(args.build_dir, "fad")
    with tempfile.TemporaryDirectory(prefix="fad-priors-") as tmp:
        sock = os.path.join(tmp, "fad.sock")
        config = os.path.join(tmp, "fad.json")
        with open(config, "w") as f:
            # No compile cache: a unit it served (built by an earlier run, a
            # demo, a test) would be recorded at the cache's cost, not nvcc's.
            json.dump({"nvcc_threads": 1, "poll_interval_ms": 100, "cache_size": 0}, f)
        env = dict(os.environ, PATH=os.environ.get("PATH", "") + ":/usr/local/cuda/bin", FAD_SOCKET=sock)
        for k in ("FAD_CACHE_SIZE", "FAD_CACHE_DIR"):
            env.pop(k, None)
        daemon = subprocess.Popen(
            [fadd, "--socket", sock, "--state-dir", os.path.join(tmp, "state"), "--config", config,
             "--kernels-dir", HERE, "--nvcc", args.nvcc, "--cores", "1", "--log-level", "warn"], env=env)
        try:
            for _ in range(100):
                if subprocess.run([fad, "status"], capture_output=True, env=env).returncode == 0:
                    break
                time.sleep(0.1)
            t0 = time.monotonic()
            done = subprocess.run([fad, "submit", "--arch", args.arch, "--kernels", args.units, "--wait", "--json"],
                                  capture_output=True, text=True, env=env)
            wall = time.monotonic() - t0
            if done.returncode != 0:
                sys.exit("measure_priors: the build failed:\n" + done.stdout + done.stderr)
            # --wait --json ends with the document `fad status ID --json` prints.
            units = json.loads(done.stdout)["builds"][0]["unit_list"]
        finally:
            daemon.terminate()
            daemon.wait()
    path = os.path.join(HERE, "priors.json")
    priors = {}
    if os.path.exists(path):
        with open(path) as f:
            priors = json.load(f)
    measured = {u["name"]: {"peak_bytes": u["peak_bytes"], "duration_s": round(u["duration_s"], 1)}
                for u in units if u["kind"] == "compile"}
    priors.update(measured)
    priors["_measured"] = {"arch": args.arch, "nvcc_threads": 1, "how": "fad per-unit cgroup peak, alone on one core"}
    with open(path, "w") as f:
        json.dump(priors, f, indent=1, sort_keys=True)
        f.write("\n")
    subprocess.run([sys.executable, os.path.join(HERE, "generate_units.py")], check=True)
    for name, m in sorted(measured.items()):
        print(f"{name:34} peak {m['peak_bytes'] / 2**20:7.0f} MiB  {m['duration_s']:7.1f} s")
    peaks = [m["peak_bytes"] for m in measured.values()]
    secs = [m["duration_s"] for m in measured.values()]
    print(f"measured {len(peaks)} units: peak {min(peaks) / 2**20:.0f}-{max(peaks) / 2**20:.0f} MiB, "
          f"{min(secs):.1f}-{max(secs):.1f} s each, {sum(secs):.0f} s in all ({wall:.0f} s wall)")


if __name__ == "__main__":
    main()
