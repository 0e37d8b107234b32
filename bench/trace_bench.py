#!/usr/bin/env python3
"""Real-process benchmark: fadd driving the fake compiler on recorded nvcc traces.

Every policy builds the same workload (N units, each replaying one of the
recorded memory traces in bench/traces/ with tests/fad-fake-nvcc, sped up by
--time-scale and scaled by --mem-scale) inside one memory cgroup whose
memory.limit_in_bytes is the budget: an overrun is an OOM kill, as on a WSL VM.

Policies:
  j1..j8     fixed job count N (as ninja -j / MAX_JOBS): N compiles at a time; an
             OOM-killed compile is counted and rerun later, as a user would.
             j1 is computed from the sum of unit durations unless asked for.
  fa         FlashAttention's setup.py heuristic:
             max_jobs = max(1, min(cpus // 2, int(free_GiB / (5 * nvcc_threads))))
             with free = the budget (unscaled to real-nvcc GiB) and cpus = --cores.
  fad-cold   fadd with an empty state dir, same budget and cores.
  fad-warm   a second build of the same sources in the same state dir.

Figures per policy: makespan, peak memory / budget (memory.max_usage_in_bytes),
OOM kills (memory.oom_control oom_kill), limit hits (memory.failcnt), mean memory
utilisation (memory.usage_in_bytes sampled every 100 ms, over the makespan),
units finished. Needs root and a cgroup v1 memory controller.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CG_ROOT = "/sys/fs/cgroup/memory"
GIB = 1 << 30
MIB = 1 << 20

TRACES = {
    "t1": os.path.join(REPO, "bench/traces/fwd128_fp16_sm90_t1.tsv"),
    "t2": os.path.join(REPO, "bench/traces/fwd64_bf16_sm80sm90_t2.tsv"),
}
FAMILIES = {"t1": "fwd128", "t2": "fwd64"}


def parse_size(text):
    t = text.strip().upper().rstrip("B").rstrip("I")
    mult = {"K": 1 << 10, "M": MIB, "G": GIB, "T": 1 << 40}
    if t and t[-1] in mult:
        return int(float(t[:-1]) * mult[t[-1]])
    return int(float(t))


def load_trace(path):
    samples = [(0.0, 0.0)]
    with open(path) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                s, m = line.split()[:2]
                samples.append((float(s), float(m)))
    return samples


# ---------------------------------------------------------------- cgroup


class Cgroup:
    def __init__(self, name, limit):
        self.path = os.path.join(CG_ROOT, name)
        os.mkdir(self.path)
        self.limit = limit
        self.write("memory.limit_in_bytes", limit)
        try:
            self.write("memory.swappiness", 0)
        except OSError:
            pass

    def write(self, name, value):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(str(value))

    def read(self, name):
        with open(os.path.join(self.path, name)) as f:
            return f.read()

    def usage(self):
        return int(self.read("memory.usage_in_bytes"))

    def max_usage(self):
        return int(self.read("memory.max_usage_in_bytes"))

    def oom_kills(self):
        for line in self.read("memory.oom_control").splitlines():
            k, _, v = line.partition(" ")
            if k == "oom_kill":
                return int(v)
        return 0

    def failcnt(self):
        return int(self.read("memory.failcnt"))

    def reset(self):
        self.write("memory.max_usage_in_bytes", 0)
        self.write("memory.failcnt", 0)

    def wrap(self, argv):
        """argv run inside the cgroup: a shell joins it, then execs argv."""
        return ["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', self.path] + list(argv)

    def tasks(self):
        out = []
        for d, _, _ in os.walk(self.path):
            with open(os.path.join(d, "cgroup.procs")) as f:
                out += [int(x) for x in f.read().split()]
        return out

    def remove(self):
        for pid in self.tasks():  # only processes this benchmark started can be here
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for _ in range(50):
            if not self.tasks():
                break
            time.sleep(0.1)
        for d, _, _ in sorted(os.walk(self.path), key=lambda e: -len(e[0])):
            try:
                os.rmdir(d)
            except OSError as e:
                print(f"warning: cannot remove {d}: {e}", file=sys.stderr)


class Sampler(threading.Thread):
    """Samples the cgroup's usage every `period` s between start() and stop()."""

    def __init__(self, cg, period=0.1):
        super().__init__(daemon=True)
        self.cg, self.period, self.samples = cg, period, []
        self._halt = threading.Event()

    def run(self):
        t0 = time.monotonic()
        while not self._halt.is_set():
            self.samples.append((time.monotonic() - t0, self.cg.usage()))
            self._halt.wait(self.period)

    def stop(self):
        self._halt.set()
        self.join()

    def series(self, step=0.5):
        """(seconds, MiB) about every `step` s, for the JSON output."""
        out, last = [], -step
        for t, u in self.samples:
            if t - last >= step:
                out.append((round(t, 2), u // MIB))
                last = t
        return out

    def mean(self):
        return sum(u for _, u in self.samples) / max(1, len(self.samples))


# ---------------------------------------------------------------- workload


def make_workload(spec, order):
    """'16:t1,8:t2' -> ['t1', 't1', 't2', ...] in the given order."""
    counts = []
    for part in spec.split(","):
        n, _, kind = part.partition(":")
        if kind not in TRACES:
            sys.exit(f"unknown trace '{kind}' (known: {', '.join(TRACES)})")
        counts.append([kind, int(n)])
    units = []
    if order == "grouped":
        for kind, n in counts:
            units += [kind] * n
        return units
    # interleaved: spread each kind evenly over the sequence
    total = sum(n for _, n in counts)
    placed = {k: 0 for k, _ in counts}
    for i in range(total):
        best = max(counts, key=lambda c: (c[1] * (i + 1) / total - placed[c[0]]) if placed[c[0]] < c[1] else -1e9)
        units.append(best[0])
        placed[best[0]] += 1
    return units


def write_kernels(workdir, units):
    kdir = os.path.join(workdir, "kernels")
    os.makedirs(os.path.join(kdir, "src"), exist_ok=True)
    entries = []
    for i, kind in enumerate(units, 1):
        name = f"u{i:02d}_{FAMILIES[kind]}"
        src = f"src/{name}.cu"
        with open(os.path.join(kdir, src), "w") as f:
            f.write(f"// bench unit {name}: replays {os.path.basename(TRACES[kind])}\n"
                    f"// fake-nvcc: profile={TRACES[kind]}\n")
        entries.append({"name": name, "source": src, "family": FAMILIES[kind], "flags": []})
    manifest = {"version": 1, "library": "bench", "include_dirs": [], "flags": [], "link_flags": [],
                "units": entries}
    with open(os.path.join(kdir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    return kdir, entries


# ---------------------------------------------------------------- policies


def run_fixed(args, cg, fake, kdir, entries, jobs, fake_env):
    """N compiles at a time in the cgroup; OOM-killed ones go to the back of the queue."""
    objdir = tempfile.mkdtemp(prefix=f"j{jobs}-", dir=args.workdir)
    queue = list(range(len(entries)))
    tries = [0] * len(entries)
    running = {}  # Popen -> (index, start)
    oom_killed = failed = finished = 0
    starts = []
    oom0 = cg.oom_kills()
    cg.reset()
    sampler = Sampler(cg)
    t0 = time.monotonic()
    sampler.start()
    gave_up = False
    while queue or running:
        while queue and len(running) < jobs:
            i = queue.pop(0)
            tries[i] += 1
            e = entries[i]
            argv = [fake, "-c", os.path.join(kdir, e["source"]), "-o", os.path.join(objdir, e["name"] + ".o"),
                    "-gencode", "arch=compute_90,code=sm_90", "--threads", str(args.nvcc_threads)]
            p = subprocess.Popen(cg.wrap(argv), env=fake_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            running[p] = (i, time.monotonic() - t0)
            starts.append({"unit": e["name"], "start": round(time.monotonic() - t0, 2), "try": tries[i]})
        time.sleep(0.02)
        for p in [p for p in running if p.poll() is not None]:
            i, _ = running.pop(p)
            if p.returncode == 0:
                finished += 1
            elif p.returncode == -signal.SIGKILL:
                oom_killed += 1
                if tries[i] <= args.max_reruns:
                    queue.append(i)
                else:
                    gave_up = True
            else:
                failed += 1
    makespan = time.monotonic() - t0
    sampler.stop()
    shutil.rmtree(objdir, ignore_errors=True)
    return {
        "makespan_s": makespan, "peak_bytes": cg.max_usage(), "oom_kills": oom_killed,
        "oom_kills_cgroup": cg.oom_kills() - oom0, "limit_hits": cg.failcnt(),
        "mean_usage_bytes": sampler.mean(), "units_finished": finished, "units_failed": failed,
        "did_not_finish": gave_up or finished < len(entries), "starts": starts, "usage_mib": sampler.series(),
    }


def wait_socket(path, proc, timeout=20):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            sys.exit(f"fadd exited with {proc.returncode}")
        if os.path.exists(path):
            try:
                s = socket.socket(socket.AF_UNIX)
                s.connect(path)
                s.close()
                return
            except OSError:
                pass
        time.sleep(0.1)
    sys.exit("fadd did not open its socket")


def stop_daemon(proc, timeout=15):
    """SIGTERM, then SIGKILL if fadd has not exited within `timeout` s."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run_fad_build(args, cg, client, sock, nunits, label):
    oom0 = cg.oom_kills()
    cg.reset()
    sampler = Sampler(cg)
    sampler.start()
    t0 = time.monotonic()
    # submit, then poll status ourselves: `fad submit --wait` gives up when one status
    # call goes unanswered for 60 s, which fadd's event loop can exceed (see README).
    out = subprocess.run([client, "submit", "--socket", sock, "--arch", "9.0", "--json"],
                         capture_output=True, text=True)
    build, units, stalls = {}, [], 0
    try:
        bid = json.loads(out.stdout)["id"]
    except (ValueError, KeyError):
        bid = None
        print(f"{label}: submit failed (rc {out.returncode}): {out.stdout[-300:]} {out.stderr[-300:]}", file=sys.stderr)
    while bid is not None:
        c0 = time.monotonic()
        st = subprocess.run([client, "status", "--socket", sock, str(bid), "--json"], capture_output=True, text=True)
        if time.monotonic() - c0 > 2:
            stalls += 1
        try:
            build = json.loads(st.stdout)["builds"][0]
        except (ValueError, KeyError, IndexError):
            time.sleep(0.2)
            continue
        if build.get("state") in ("succeeded", "failed", "cancelled", "canceled"):
            break
        if time.monotonic() - t0 > args.fad_timeout_s:
            print(f"{label}: gave up after {args.fad_timeout_s:.0f} s", file=sys.stderr)
            break
        time.sleep(0.2)
    makespan = time.monotonic() - t0
    sampler.stop()
    units = build.get("unit_list", [])
    compiles = [u for u in units if u.get("kind", "compile") == "compile" and u.get("name") != "link"]
    finished = sum(1 for u in compiles if u.get("state") in ("done", "succeeded", "success", "finished"))
    attempts = sum(max(0, int(u.get("attempts", 1) or 1) - 1) for u in compiles)
    return {
        "makespan_s": makespan, "peak_bytes": cg.max_usage(), "oom_kills": cg.oom_kills() - oom0,
        "oom_kills_cgroup": cg.oom_kills() - oom0, "limit_hits": cg.failcnt(),
        "mean_usage_bytes": sampler.mean(), "units_finished": finished, "reruns": attempts,
        "build_state": build.get("state"), "status_stalls_over_2s": stalls,
        "did_not_finish": build.get("state") != "succeeded" or finished < nunits,
        "build": {k: v for k, v in build.items() if k != "unit_list"}, "units": units,
        "usage_mib": sampler.series(),
    }


def run_fad(args, cg, kdir, entries, fake, fake_env, which):
    client = os.path.join(args.build_dir, "fad")
    daemon = os.path.join(args.build_dir, "fadd")
    state = os.path.join(args.workdir, "fad-state")
    shutil.rmtree(state, ignore_errors=True)
    os.makedirs(state)
    sock = os.path.join(state, "fadd.sock")
    # fad's default prior for a never-seen unit (5 GiB per nvcc thread) is scaled like the traces' memory.
    config = {"poll_interval_ms": args.poll_ms, "log_level": "debug", "nvcc_threads": args.nvcc_threads,
              "unit_memory_prior": int(5 * GIB * args.mem_scale)}
    if args.reserve is not None:
        config["reserve"] = args.reserve
    cfg_path = os.path.join(args.workdir, "fadd.json")
    with open(cfg_path, "w") as f:
        json.dump(config, f)
    argv = [daemon, "--config", cfg_path, "--socket", sock, "--state-dir", state, "--kernels-dir", kdir,
            "--nvcc", fake, "--memory-budget", str(args.budget_bytes), "--cores", str(args.cores)]
    log = open(os.path.join(args.workdir, "fadd.stderr"), "w")
    proc = subprocess.Popen(cg.wrap(argv), env=fake_env, stdout=log, stderr=subprocess.STDOUT)
    results = {}
    try:
        wait_socket(sock, proc)
        time.sleep(1.0)  # let fadd take its first memory samples
        cold = run_fad_build(args, cg, client, sock, len(entries), "fad-cold")
        if "fad-cold" in which:
            results["fad-cold"] = cold
        if "fad-warm" in which:
            time.sleep(1.0)
            results["fad-warm"] = run_fad_build(args, cg, client, sock, len(entries), "fad-warm")
    finally:
        stop_daemon(proc)
        log.close()
        for name in ("fadd.log",):
            if os.path.exists(os.path.join(state, name)):
                shutil.copy(os.path.join(state, name), os.path.join(args.workdir, name))
    return results


def fa_jobs(args):
    free_gib = args.budget_bytes / args.mem_scale / GIB  # what a real build would see as free
    return max(1, min(args.cores // 2, int(free_gib / (5 * args.fa_nvcc_threads)))), free_gib


# ---------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(REPO, "build-bench"),
                    help="CMake build dir holding fadd, fad, tests/fad-fake-nvcc (default: build-bench)")
    ap.add_argument("--time-scale", type=float, default=0.05, help="FAD_FAKE_TIME_SCALE (default 0.05)")
    ap.add_argument("--mem-scale", type=float, default=0.5, help="FAD_FAKE_MEM_SCALE (default 0.5)")
    ap.add_argument("--budget", default="6G", help="cgroup limit and fad --memory-budget (default 6G)")
    ap.add_argument("--reserve", default=None, help="fad reserve (config key; default: fad's own default)")
    ap.add_argument("--units", default="16:t1,8:t2", help="workload, COUNT:TRACE,... (traces: t1, t2)")
    ap.add_argument("--order", choices=["interleaved", "grouped"], default="interleaved")
    ap.add_argument("--policies", default="j2,j3,j4,j5,j6,j7,j8,fa,fad-cold,fad-warm",
                    help="comma list of j1..jN, fa, fad-cold, fad-warm (j1 is computed when not listed)")
    ap.add_argument("--cores", type=int, default=16, help="cores given to fad --cores and to the FA heuristic")
    ap.add_argument("--nvcc-threads", type=int, default=1,
                    help="--threads for every compile (the traces already hold their threads x archs)")
    ap.add_argument("--fa-nvcc-threads", type=int, default=2, help="NVCC_THREADS in the FA heuristic (default 2)")
    ap.add_argument("--poll-ms", type=int, default=100, help="fad poll_interval_ms (default 100)")
    ap.add_argument("--max-reruns", type=int, default=3, help="reruns per OOM-killed unit before giving up")
    ap.add_argument("--workdir", default=None, help="scratch dir (default: a new temp dir)")
    ap.add_argument("--json", dest="out", default=None, help="write all results (with per-unit data) here")
    args = ap.parse_args()

    if os.geteuid() != 0 or not os.path.isdir(CG_ROOT):
        sys.exit(f"needs root and a cgroup v1 memory controller at {CG_ROOT}")
    args.budget_bytes = parse_size(args.budget)
    args.workdir = os.path.abspath(args.workdir or tempfile.mkdtemp(prefix="fad-trace-bench-"))
    os.makedirs(args.workdir, exist_ok=True)
    fake = os.path.join(args.build_dir, "tests", "fad-fake-nvcc")
    for exe in (fake, os.path.join(args.build_dir, "fadd"), os.path.join(args.build_dir, "fad")):
        if not os.access(exe, os.X_OK):
            sys.exit(f"missing {exe}: build the targets fadd fad fad-fake-nvcc first")

    units = make_workload(args.units, args.order)
    kdir, entries = write_kernels(args.workdir, units)
    durations = {k: load_trace(p)[-1][0] * args.time_scale for k, p in TRACES.items()}
    peaks = {k: max(m for _, m in load_trace(p)) * MIB * args.mem_scale for k, p in TRACES.items()}
    serial = sum(durations[k] for k in units)
    args.fad_timeout_s = 2 * serial + 120
    fake_env = dict(os.environ, FAD_FAKE_TIME_SCALE=str(args.time_scale), FAD_FAKE_MEM_SCALE=str(args.mem_scale))
    for k in ("FAD_FAKE_PROFILE", "FAD_FAKE_PEAK_MB", "FAD_FAKE_DURATION_S", "FAD_FAKE_EXIT", "FAD_FAKE_FAIL_MATCH"):
        fake_env.pop(k, None)

    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    nfa, free_gib = fa_jobs(args)
    print(f"workload: {len(units)} units ({args.units}, {args.order}); time x{args.time_scale}, memory x{args.mem_scale};"
          f" budget {args.budget_bytes / GIB:.2f} GiB (= {args.budget_bytes / args.mem_scale / GIB:.1f} GiB unscaled)")
    print("  " + "; ".join(f"{k}: {durations[k]:.1f} s, peak {peaks[k] / GIB:.2f} GiB" for k in TRACES)
          + f"; serial sum {serial:.1f} s")
    print(f"  FA heuristic: max(1, min({args.cores}//2, int({free_gib:.1f} GiB / (5*{args.fa_nvcc_threads})))) = {nfa}")
    print(f"  workdir {args.workdir}", flush=True)

    cg = Cgroup(f"fad-bench-{os.getpid()}", args.budget_bytes)
    results = {}
    try:
        if "j1" not in policies:
            results["j1"] = {"makespan_s": serial, "peak_bytes": int(max(peaks[k] for k in units)), "oom_kills": 0,
                             "limit_hits": 0, "mean_usage_bytes": 0.0, "units_finished": len(units), "computed": True, "did_not_finish": False}
            # mean utilisation of j1: the traces' time-average memory, one at a time
            area = 0.0
            for k in units:
                tr = load_trace(TRACES[k])
                area += sum((b[0] - a[0]) * (a[1] + b[1]) / 2 for a, b in zip(tr, tr[1:])) * MIB * args.mem_scale \
                    * args.time_scale
            results["j1"]["mean_usage_bytes"] = area / serial
        for p in policies:
            if p.startswith("j"):
                n = int(p[1:])
                print(f"running {p} ...", flush=True)
                results[p] = run_fixed(args, cg, fake, kdir, entries, n, fake_env)
            elif p == "fa":
                key = f"j{nfa}"
                if key in results:
                    results["fa"] = dict(results[key], same_as=key)
                else:
                    print(f"running fa (j{nfa}) ...", flush=True)
                    results["fa"] = run_fixed(args, cg, fake, kdir, entries, nfa, fake_env)
                results["fa"]["jobs"] = nfa
        which = [p for p in policies if p.startswith("fad-")]
        if which:
            print(f"running {', '.join(which)} ...", flush=True)
            results.update(run_fad(args, cg, kdir, entries, fake, fake_env, which))
    finally:
        cg.remove()

    # ------------------------------------------------------------ table
    budget = args.budget_bytes
    order = ["j1"] + [p for p in policies if p != "j1"]
    print()
    print(f"{'policy':<10} {'makespan s':>10} {'peak/budget':>11} {'OOM kills':>9} {'limit hits':>10}"
          f" {'mean util':>9} {'finished':>9}")
    for p in order:
        r = results.get(p)
        if not r:
            continue
        name = p + ("*" if r.get("computed") else "") + (f"(j{r['jobs']})" if p == "fa" else "")
        fin = f"{r['units_finished']}/{len(units)}" + (" DNF" if r.get("did_not_finish") else "")
        print(f"{name:<10} {r['makespan_s']:>10.1f} {r['peak_bytes'] / budget:>11.2f} {r['oom_kills']:>9}"
              f" {r.get('limit_hits', 0):>10} {r['mean_usage_bytes'] / budget:>9.2f} {fin:>9}")
    if "j1" not in policies:
        print("* j1 computed: sum of the units' trace durations, one at a time (not run)")
    fixed = {p: r for p, r in results.items() if p.startswith("j") and not r.get("did_not_finish")}
    surviving = {p: r for p, r in fixed.items() if r["oom_kills"] == 0}
    summary = {}
    if surviving:
        oracle = min(surviving, key=lambda p: surviving[p]["makespan_s"])
        om = surviving[oracle]["makespan_s"]
        summary["oracle"] = oracle
        print(f"oracle: {oracle} ({om:.1f} s), the fastest fixed job count with no OOM kill")
        if fixed:
            fastest = min(fixed, key=lambda p: fixed[p]["makespan_s"])
            if fastest != oracle:
                print(f"  (fastest fixed job count counting OOM reruns: {fastest}, "
                      f"{fixed[fastest]['makespan_s']:.1f} s, {fixed[fastest]['oom_kills']} OOM kills)")
        for p in ("fad-cold", "fad-warm"):
            if p in results and not results[p].get("did_not_finish"):
                r = results[p]
                summary[p + "_speedup"] = om / r["makespan_s"]
                print(f"{p}: {om / r['makespan_s']:.2f}x the oracle's speed"
                      f" ({r['makespan_s']:.1f} s vs {om:.1f} s), {r['oom_kills']} OOM kills,"
                      f" peak {r['peak_bytes'] / budget:.2f} of budget")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"config": {k: v for k, v in vars(args).items()}, "units": units, "fa_jobs": nfa,
                       "durations_s": durations, "peaks_bytes": peaks, "results": results, "summary": summary},
                      f, indent=1, default=str)
        print(f"results: {args.out}")


if __name__ == "__main__":
    main()
