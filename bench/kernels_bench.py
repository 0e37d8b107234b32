#!/usr/bin/env python3
"""The bundled kernels built for real, under fixed job counts and under fad.

Compiles the library's compile units (kernels/manifest.json; the GLOB of
--units, plus the dispatch unit the library needs) with the installed nvcc,
inside a fresh memory cgroup (v1 or v2) whose limit is the budget, once per policy:

  jN   N compiles at a time (ninja -j / MAX_JOBS); a compile the kernel's OOM
       killer ends goes to the back of the queue, at most --max-reruns times
       per unit (then the run did not finish); then the link.
  fad  fadd started inside the cgroup (it reads the limit as its budget) with a
       fresh state dir, `fad submit` of the same units; fad picks how many run
       and with how many nvcc threads. Its unit list gives every unit's peak
       (per-unit cgroup) and duration: the bundled build's profile.

Figures per policy: makespan, cgroup peak / budget, OOM kills (the kernel's
own count in /proc/vmstat, the same for every policy: keep the machine
otherwise quiet), limit hits, mean usage, units finished; plus every unit's
peak and duration (from fad, and each fixed-N compile's duration). Raw JSON
with --json, rewritten after each policy. --deadline S stops the whole run S
seconds after it began: a policy still running is stopped and marked as not
finished, later ones are skipped.

Needs root, a memory cgroup controller (v1 at /sys/fs/cgroup/memory, or v2),
nvcc, and fad built (fadd, fad in --build-dir). A few units validate the
script in minutes:

  sudo python3 bench/kernels_bench.py --units 'fwd_hdim32_fp16_causal' --policies j1,j2,fad --budget 6G

The full library (84 units; hours on 2 cores):

  sudo python3 bench/kernels_bench.py --units '*' --budget 12G --policies j1,j2,j4,fad \\
      --json bench/results/kernels_bench-$(date +%F).json
"""
import argparse
import fnmatch
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from trace_bench import (CG_ROOT, CG_V2, GIB, MIB, Cgroup, Sampler, oom_kill_count, parse_size, stop_daemon,  # noqa: E402
                         wait_socket)


def units_of(manifest, glob):
    chosen = [u for u in manifest["units"] if fnmatch.fnmatchcase(u["name"], glob) and not u.get("required")]
    if not chosen:
        sys.exit(f"kernels_bench: no unit matches {glob!r}")
    return chosen + [u for u in manifest["units"] if u.get("required")]


def arch_gencode(arch):
    major, _, minor = arch.partition(".")
    cc = f"{major}{minor or '0'}"
    return ["-gencode", f"arch=compute_{cc},code=sm_{cc}"]


def compile_argv(nvcc, manifest, kdir, unit, obj, arch, threads):
    argv = [nvcc, "-c", os.path.join(kdir, unit["source"]), "-o", obj, *manifest["flags"], *unit.get("flags", [])]
    argv += [f"-I{os.path.join(kdir, d)}" for d in manifest["include_dirs"]]
    return argv + arch_gencode(arch) + ["--threads", str(threads)]


def run_fixed(args, cg, manifest, units, jobs):
    objdir = tempfile.mkdtemp(prefix=f"j{jobs}-", dir=args.workdir)
    queue, tries, running, per_unit = list(range(len(units))), [0] * len(units), {}, {}
    sigkilled = failed = finished = 0
    gave_up = stopped = False
    oom0 = oom_kill_count()
    cg.reset()
    sampler = Sampler(cg)
    t0 = time.monotonic()
    sampler.start()
    while queue or running:
        if past_deadline(args):
            for p in running:
                p.kill()
                p.wait()
            stopped = gave_up = True
            break
        while queue and len(running) < jobs:
            i = queue.pop(0)
            tries[i] += 1
            u = units[i]
            argv = compile_argv(args.nvcc, manifest, args.kernels, u, os.path.join(objdir, u["name"] + ".o"), args.arch,
                                args.nvcc_threads)
            p = subprocess.Popen(cg.wrap(argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            running[p] = (i, time.monotonic())
        time.sleep(0.05)
        for p in [p for p in running if p.poll() is not None]:
            i, start = running.pop(p)
            name = units[i]["name"]
            if p.returncode == 0:
                finished += 1
                per_unit[name] = {"started_s": round(start - t0, 1), "duration_s": round(time.monotonic() - start, 1),
                                  "tries": tries[i]}
            elif p.returncode == -signal.SIGKILL:
                sigkilled += 1
                if tries[i] <= args.max_reruns:
                    queue.append(i)
                else:
                    gave_up = True
            else:
                failed += 1
    linked = False
    if finished == len(units) and not stopped:
        objs = [os.path.join(objdir, u["name"] + ".o") for u in units]
        link = [args.nvcc, "-shared", "-o", os.path.join(objdir, "lib.so"), *objs, *arch_gencode(args.arch)]
        linked = subprocess.run(cg.wrap(link), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
    makespan = time.monotonic() - t0
    sampler.stop()
    shutil.rmtree(objdir, ignore_errors=True)
    return {"makespan_s": round(makespan, 1), "peak_bytes": cg.max_usage(), "oom_kills": oom_kill_count() - oom0,
            "compiles_sigkilled": sigkilled, "limit_hits": cg.failcnt(), "mean_usage_bytes": sampler.mean(),
            "units_finished": finished, "units_failed": failed, "linked": linked, "stopped_at_deadline": stopped,
            "did_not_finish": gave_up or not linked, "units": per_unit, "usage_mib": sampler.series()}


def run_fad(args, cg, units):
    client, daemon = os.path.join(args.build_dir, "fad"), os.path.join(args.build_dir, "fadd")
    state = tempfile.mkdtemp(prefix="fad-state-", dir=args.workdir)
    sock = os.path.join(state, "fadd.sock")
    cfg = os.path.join(state, "fadd.json")
    with open(cfg, "w") as f:
        json.dump({"poll_interval_ms": 200}, f)
    argv = [daemon, "--config", cfg, "--socket", sock, "--state-dir", state, "--kernels-dir", args.kernels, "--nvcc",
            args.nvcc, "--cores", str(args.cores)]
    log = open(os.path.join(args.workdir, "fadd.stderr"), "w")
    # A compile cache of its own, empty: the default one outlives the run and
    # would serve a second fad run every unit without compiling it.
    env = dict(os.environ, FAD_CACHE_DIR=os.path.join(state, "cache"))
    proc = subprocess.Popen(cg.wrap(argv), env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_socket(sock, proc)
        time.sleep(1.0)  # fadd's first memory samples
        oom0 = oom_kill_count()
        cg.reset()
        sampler = Sampler(cg)
        sampler.start()
        t0 = time.monotonic()
        out = subprocess.run([client, "submit", "--socket", sock, "--arch", args.arch, "--kernels", args.units,
                              "--json"], capture_output=True, text=True)
        bid = json.loads(out.stdout)["id"] if out.returncode == 0 else None
        if bid is None:
            print(f"fad: submit failed: {out.stdout}{out.stderr}", file=sys.stderr)
        build, stopped = {}, False
        while bid is not None:
            if past_deadline(args):
                stopped = True
                break
            st = subprocess.run([client, "status", "--socket", sock, str(bid), "--json"], capture_output=True,
                                text=True)
            try:
                build = json.loads(st.stdout)["builds"][0]
            except (ValueError, KeyError, IndexError):
                build = {}
            if build.get("state") in ("succeeded", "failed", "cancelled"):
                break
            time.sleep(1.0)
        makespan = time.monotonic() - t0
        sampler.stop()
    finally:
        stop_daemon(proc)
        log.close()
    unit_list = build.get("unit_list", [])
    compiles = [u for u in unit_list if u.get("kind") == "compile"]
    return {"makespan_s": round(makespan, 1), "peak_bytes": cg.max_usage(), "oom_kills": oom_kill_count() - oom0,
            "limit_hits": cg.failcnt(), "mean_usage_bytes": sampler.mean(),
            "units_finished": sum(1 for u in compiles if u.get("state") == "succeeded"),
            "build_state": build.get("state"), "stopped_at_deadline": stopped,
            "did_not_finish": build.get("state") != "succeeded",
            "cache_hits": sum(1 for u in compiles if u.get("cached")),
            "units": {u["name"]: {"peak_bytes": u.get("peak_bytes"), "started_at": u.get("started_at"),
                                  "duration_s": u.get("duration_s"),
                                  "threads": u.get("threads"), "attempts": u.get("attempts")} for u in unit_list},
            "usage_mib": sampler.series()}


def past_deadline(args):
    return args.deadline is not None and time.monotonic() >= args.deadline


def write_json(args, units, budget, results):
    if not args.json:
        return
    with open(args.json + ".tmp", "w") as f:
        json.dump({"units": [u["name"] for u in units], "glob": args.units, "budget_bytes": budget,
                   "arch": args.arch, "nvcc_threads": args.nvcc_threads, "cores": args.cores,
                   "cgroup": "v2" if CG_V2 else "v1", "results": results}, f, indent=1)
    os.replace(args.json + ".tmp", args.json)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--units", default="*", help="glob over unit names (default: all)")
    ap.add_argument("--budget", default="12G", help="the cgroup's memory limit (default 12G)")
    ap.add_argument("--policies", default="j1,j2,j4,fad", help="comma-separated: jN and fad (default j1,j2,j4,fad)")
    ap.add_argument("--arch", default="9.0", help="build arch (default 9.0)")
    ap.add_argument("--nvcc-threads", type=int, default=1, help="nvcc --threads for the fixed-N runs (default 1)")
    ap.add_argument("--cores", type=int, default=os.cpu_count(), help="fadd --cores (default: all)")
    ap.add_argument("--max-reruns", type=int, default=3)
    ap.add_argument("--deadline", type=float, help="stop everything this many seconds after the start")
    ap.add_argument("--nvcc", default=shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--kernels", default=os.path.join(ROOT, "kernels"))
    ap.add_argument("--workdir", help="keep objects and fadd's output here (default: a temp dir)")
    ap.add_argument("--json", help="write every figure here")
    args = ap.parse_args()
    if os.geteuid() != 0 or not os.path.isdir(CG_ROOT):
        sys.exit(f"kernels_bench: needs root and a memory cgroup controller (v1 or v2) at {CG_ROOT}")
    if args.deadline is not None:
        args.deadline += time.monotonic()
    budget = parse_size(args.budget)
    with open(os.path.join(args.kernels, "manifest.json")) as f:
        manifest = json.load(f)
    units = units_of(manifest, args.units)
    own_workdir = args.workdir is None
    args.workdir = args.workdir or tempfile.mkdtemp(prefix="fad-kbench-")
    os.makedirs(args.workdir, exist_ok=True)
    results = {}
    try:
        for policy in args.policies.split(","):
            if policy != "fad" and not (policy.startswith("j") and policy[1:].isdigit()):
                sys.exit(f"kernels_bench: unknown policy {policy!r}")
            if past_deadline(args):
                print(f"== {policy}: skipped, the deadline has passed", flush=True)
                continue
            print(f"== {policy}: {len(units)} units, budget {budget / GIB:.1f} GiB", flush=True)
            # A fresh cgroup per policy: nothing one run left (page cache, a
            # peak, a limit hit) is charged to the next.
            cg = Cgroup(f"fad-kbench-{os.getpid()}-{policy}", budget)
            try:
                if policy == "fad":
                    results[policy] = run_fad(args, cg, units)
                else:
                    results[policy] = run_fixed(args, cg, manifest, units, int(policy[1:]))
            finally:
                cg.remove()
            r = results[policy]
            print(f"   {r['makespan_s']:.0f} s, peak {r['peak_bytes'] / GIB:.2f} GiB, OOM kills {r['oom_kills']}, "
                  f"{r['units_finished']}/{len(units)} units{' DNF' if r['did_not_finish'] else ''}"
                  f"{' (stopped at the deadline)' if r['stopped_at_deadline'] else ''}", flush=True)
            write_json(args, units, budget, results)
    finally:
        if own_workdir:
            shutil.rmtree(args.workdir, ignore_errors=True)

    print(f"\n{'policy':8} {'makespan s':>10} {'peak/budget':>11} {'OOM kills':>9} {'limit hits':>10} "
          f"{'mean util':>9} {'finished':>9}")
    for p, r in results.items():
        print(f"{p:8} {r['makespan_s']:>10.0f} {r['peak_bytes'] / budget:>11.2f} {r['oom_kills']:>9} "
              f"{r['limit_hits']:>10} {r['mean_usage_bytes'] / budget:>9.2f} "
              f"{r['units_finished']:>4}/{len(units)}{' DNF' if r['did_not_finish'] else ''}")
    if "fad" in results:
        print(f"\n{'unit':34} {'peak MiB':>9} {'duration s':>10}")
        for name, u in sorted(results["fad"]["units"].items()):
            if u.get("peak_bytes"):
                print(f"{name:34} {u['peak_bytes'] / MIB:>9.0f} {u['duration_s'] or 0:>10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
