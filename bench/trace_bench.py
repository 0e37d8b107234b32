#!/usr/bin/env python3
"""Real-process benchmark: fad against the settings a user could pick instead.

Every policy builds the same workload inside one memory cgroup whose limit is
the machine's memory (a small VM stand-in): an overrun is an OOM kill. Each
unit is tests/fad-fake-nvcc replaying a recorded nvcc trace (bench/traces/):
it really allocates the trace's memory and, with FAD_FAKE_CPU=1, burns CPU as
the real compiler would (a unit compiling e archs at once keeps e cores busy
and advances with the CPU time it gets, so oversubscription slows everyone).
t1 units compile one arch, t2 units two; with fewer threads than archs the
fake compiles them in turns (one spike each), slower, as nvcc does.

Policies:
  jN-tT      N compiles at a time with nvcc --threads T (ninja -j N, MAX_JOBS N,
             NVCC_THREADS T). An OOM-killed compile is rerun later, at most
             --max-reruns times per unit; beyond, the run did not finish (DNF).
  fa         FlashAttention's setup.py rule, untouched: NVCC_THREADS=4 and
             max(1, min(cpus // 2, int(free_GiB / (5 * 4)))) jobs.
  pool-tT    a ninja pool sized memory / peak: floor(0.9 * limit / biggest unit's peak at T).
  memavail-tT  a launcher that starts the next compile (T threads) while the
             cgroup's free memory exceeds 5 GiB per thread (scaled), or when
             nothing runs, checking once a second.
  fad-cold   fadd (started inside the cgroup, the machine's real core count, the
             cgroup limit as its budget) with an empty state dir and an empty
             compile cache of its own; the workload is
             a ninja project whose compiles go through `fad run` / `fad launch`.
  fad-warm   the same with history imported (`fad history import`) from a fad
             build of the previous version of the sources (other content, same
             kernels), never from the same build.

The best safe fixed setting (the oracle) is the jN-tT with the lowest median
makespan among those that finished every repetition with no OOM kill.

OOM kills are counted the same way for every policy: the kernel's oom_kill
counter (/proc/vmstat) before and after each run, so the machine should be
otherwise quiet. Repetitions are
interleaved (every policy once per round, in a rotated order) so that the
noise of a shared machine hits every policy alike. Needs root and a cgroup v1
memory controller; the raw results go to --json.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# cgroup v1's memory hierarchy where it is mounted (this project's CI machine),
# else the unified v2 hierarchy (current distributions, VMs without systemd).
CG_V2 = not os.path.isdir("/sys/fs/cgroup/memory") and os.path.exists("/sys/fs/cgroup/cgroup.controllers")
CG_ROOT = "/sys/fs/cgroup" if CG_V2 else "/sys/fs/cgroup/memory"
GIB = 1 << 30
MIB = 1 << 20

TRACES = {
    "t1": os.path.join(REPO, "bench/traces/fwd128_fp16_sm90_t1.tsv"),
    "t2": os.path.join(REPO, "bench/traces/fwd64_bf16_sm80sm90_t2.tsv"),
}
# Archs each kind compiles, and the archs its trace was recorded with at once.
ARCHS = {"t1": ["90"], "t2": ["80", "90"]}
REF_PARALLEL = {"t1": 1, "t2": 2}
# Unit names whose digit-free form (fad's family for launched compiles) differs by kind.
STEMS = {"t1": "flash_fwd_hdimA_fp_sm_s", "t2": "flash_fwd_hdimB_bf_sm_s"}


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


def machine_cores():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


# ---------------------------------------------------------------- cgroup


class Cgroup:
    """One memory cgroup with a hard limit, v1 or v2. The figures a benchmark
    reads (usage, peak, limit hits) mean the same under both; under v2 the
    peak and the limit-hit count start from reset() as under v1."""

    def __init__(self, name, limit):
        self.path = os.path.join(CG_ROOT, name)
        if CG_V2:
            # A child may use memory only if its parent delegates it; the root
            # cgroup may delegate while it holds processes.
            with open(os.path.join(CG_ROOT, "cgroup.subtree_control")) as f:
                if "memory" not in f.read().split():
                    self._write_at(CG_ROOT, "cgroup.subtree_control", "+memory")
        os.mkdir(self.path)
        self.limit = limit
        self._peak_fd, self._hits0 = None, 0
        if CG_V2:
            self.write("memory.max", limit)
            try:
                self.write("memory.swap.max", 0)
            except OSError:
                pass
        else:
            self.write("memory.limit_in_bytes", limit)
            try:
                self.write("memory.swappiness", 0)
            except OSError:
                pass

    @staticmethod
    def _write_at(directory, name, value):
        with open(os.path.join(directory, name), "w") as f:
            f.write(str(value))

    def write(self, name, value):
        self._write_at(self.path, name, value)

    def read(self, name):
        with open(os.path.join(self.path, name)) as f:
            return f.read()

    def _keyed(self, name, key):
        for line in self.read(name).splitlines():
            k, _, v = line.partition(" ")
            if k == key:
                return int(v)
        return 0

    def usage(self):
        return int(self.read("memory.current" if CG_V2 else "memory.usage_in_bytes"))

    def stat(self, key):
        """A memory.stat figure by its v1 hierarchical name (total_*); v2's are hierarchical already."""
        return self._keyed("memory.stat", key[len("total_"):] if CG_V2 and key.startswith("total_") else key)

    def anon(self):
        """What processes hold (no page cache): what an overrun is made of."""
        return (self.stat("total_anon") if CG_V2 else self.stat("total_rss")) + self.stat("total_shmem")

    def free(self):
        """The limit less what is held, as a MemAvailable-style launcher would read it."""
        return self.limit - (self.usage() - self.stat("total_inactive_file"))

    def max_usage(self):
        if not CG_V2:
            return int(self.read("memory.max_usage_in_bytes"))
        if self._peak_fd is not None:
            return int(os.pread(self._peak_fd, 64, 0))
        return int(self.read("memory.peak"))

    def failcnt(self):
        if not CG_V2:
            return int(self.read("memory.failcnt"))
        return self._keyed("memory.events", "max") - self._hits0

    def reset(self):
        if not CG_V2:
            self.write("memory.max_usage_in_bytes", 0)
            self.write("memory.failcnt", 0)
            return
        self._hits0 = self._keyed("memory.events", "max")
        # v2's peak resets only for the file descriptor that asks (Linux 6.12+);
        # on older kernels the peak counts from the cgroup's creation.
        if self._peak_fd is None:
            self._peak_fd = os.open(os.path.join(self.path, "memory.peak"), os.O_RDWR)
        try:
            os.write(self._peak_fd, b"reset\n")
        except OSError:
            os.close(self._peak_fd)
            self._peak_fd = None

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
        if self._peak_fd is not None:
            os.close(self._peak_fd)
            self._peak_fd = None
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


def oom_kill_count():
    """OOM kills so far, counted the same way for every policy: the kernel's
    own oom_kill counter in /proc/vmstat. It is machine-wide and monotonic, so
    the benchmark wants an otherwise quiet machine; the kernel log cannot be
    used, because its ring buffer drops old lines during an OOM storm (a
    difference of counts then goes wrong), and under cgroup v1 a parent's
    oom_kill counter does not see kills in the cgroups below it."""
    with open("/proc/vmstat") as f:
        for line in f:
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
    sys.exit("this kernel's /proc/vmstat has no oom_kill counter (Linux 4.13 or later needed)")


class Sampler(threading.Thread):
    """The cgroup's anonymous memory every `period` s between start() and stop()."""

    def __init__(self, cg, period=0.1):
        super().__init__(daemon=True)
        self.cg, self.period, self.samples = cg, period, []
        self._halt = threading.Event()

    def run(self):
        t0 = time.monotonic()
        while not self._halt.is_set():
            self.samples.append((time.monotonic() - t0, self.cg.anon()))
            self._halt.wait(self.period)

    def stop(self):
        self._halt.set()
        self.join()

    def series(self, step=0.5):
        out, last = [], -step
        for t, u in self.samples:
            if t - last >= step:
                out.append((round(t, 2), u // MIB))
                last = t
        return out

    def mean(self):
        return sum(u for _, u in self.samples) / max(1, len(self.samples))

    def peak(self):
        return max((u for _, u in self.samples), default=0)


# ---------------------------------------------------------------- workload


def make_workload(spec):
    """'8:t1,4:t2' -> kinds, interleaved evenly."""
    counts = []
    for part in spec.split(","):
        n, _, kind = part.partition(":")
        if kind not in TRACES:
            sys.exit(f"unknown trace '{kind}' (known: {', '.join(TRACES)})")
        counts.append([kind, int(n)])
    total = sum(n for _, n in counts)
    placed = {k: 0 for k, _ in counts}
    units = []
    for i in range(total):
        best = max(counts, key=lambda c: (c[1] * (i + 1) / total - placed[c[0]]) if placed[c[0]] < c[1] else -1e9)
        units.append(best[0])
        placed[best[0]] += 1
    return units


def write_sources(workdir, units, version):
    """One .cu per unit, at the same paths for every version; `version`
    changes every source's content (another release of the same kernels)
    without changing how it compiles."""
    sdir = os.path.join(workdir, "src")
    os.makedirs(sdir, exist_ok=True)
    entries = []
    for i, kind in enumerate(units):
        name = f"{STEMS[kind]}{i:02d}"
        src = os.path.join(sdir, name + ".cu")
        with open(src, "w") as f:
            f.write(f"// bench unit {name}, sources version {version}\n// fake-nvcc: profile={TRACES[kind]}\n")
        entries.append({"name": name, "kind": kind, "src": src})
    return entries


def compile_argv(fake, entry, out, threads):
    argv = [fake, "-c", entry["src"], "-o", out, "-O3", "--use_fast_math"]
    for a in ARCHS[entry["kind"]]:
        argv += ["-gencode", f"arch=compute_{a},code=sm_{a}"]
    return argv + ["--threads", str(threads)]


def model(kind, threads, time_scale, mem_scale):
    """(peak bytes, CPU-seconds per thread) of a unit at `threads`, as the fake plays it."""
    trace = load_trace(TRACES[kind])
    ref = REF_PARALLEL[kind]
    e = max(1, min(threads, len(ARCHS[kind])))
    mem = (0.3 + 0.7 * e / ref) * mem_scale
    dur = trace[-1][0] * (ref / e) ** 0.85 * time_scale
    return max(m for _, m in trace) * MIB * mem, dur


def write_ninja(workdir, entries, fad_bin, fake):
    pdir = os.path.join(workdir, "project")
    shutil.rmtree(pdir, ignore_errors=True)
    os.makedirs(pdir)
    lines = [f"rule cc\n  command = {fad_bin} launch -- $cmd\n  description = CC $out\n"]
    for e in entries:
        out = os.path.join(pdir, e["name"] + ".o")
        # fad chooses --threads; the 1 here is only what it replaces.
        cmd = " ".join(compile_argv(fake, e, out, 1))
        lines.append(f"build {out}: cc {e['src']}\n  cmd = {cmd}\n")
    with open(os.path.join(pdir, "build.ninja"), "w") as f:
        f.write("\n".join(lines))
    return pdir


# ---------------------------------------------------------------- launchers


def run_launcher(args, cg, entries, threads, may_start, label):
    """Starts compiles while may_start(running count) holds; OOM-killed ones are rerun."""
    write_sources(args.workdir, args.kinds, 1)
    objdir = tempfile.mkdtemp(prefix=label + "-", dir=args.workdir)
    queue = list(range(len(entries)))
    tries = [0] * len(entries)
    running = {}
    sigkills = failed = finished = 0
    oom0 = oom_kill_count()
    cg.reset()
    sampler = Sampler(cg)
    t0 = time.monotonic()
    sampler.start()
    gave_up = False
    while (queue or running) and not gave_up:
        while queue and may_start(len(running)):
            i = queue.pop(0)
            tries[i] += 1
            e = entries[i]
            argv = compile_argv(args.fake, e, os.path.join(objdir, e["name"] + ".o"), threads)
            p = subprocess.Popen(cg.wrap(argv), env=args.fake_env, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
            running[p] = i
        time.sleep(0.02)
        for p in [p for p in running if p.poll() is not None]:
            i = running.pop(p)
            if p.returncode == 0:
                finished += 1
            elif p.returncode == -signal.SIGKILL:
                sigkills += 1
                if tries[i] <= args.max_reruns:
                    queue.append(i)
                else:
                    gave_up = True
            else:
                failed += 1
    for p in running:
        p.kill()
        p.wait()
    makespan = time.monotonic() - t0
    sampler.stop()
    shutil.rmtree(objdir, ignore_errors=True)
    return {
        "makespan_s": makespan, "peak_anon_bytes": sampler.peak(), "peak_usage_bytes": cg.max_usage(),
        "oom_kills": oom_kill_count() - oom0, "sigkills": sigkills, "limit_hits": cg.failcnt(),
        "mean_anon_bytes": sampler.mean(), "units_finished": finished, "units_failed": failed,
        "did_not_finish": gave_up or finished < len(entries), "anon_mib": sampler.series(),
    }


def fixed(args, cg, entries, jobs, threads, label):
    return run_launcher(args, cg, entries, threads, lambda n: n < jobs, label)


def memavail(args, cg, entries, threads, label):
    threshold = 5 * GIB * threads * args.mem_scale
    state = {"next": 0.0}

    def may_start(n):
        now = time.monotonic()
        if now < state["next"]:
            return False
        state["next"] = now + 1.0  # a launcher script that checks once a second
        # With nothing running it starts one whatever is free: where the
        # threshold exceeds the machine (t2 here), it would otherwise never start.
        return n == 0 or cg.free() > threshold

    return run_launcher(args, cg, entries, threads, may_start, label)


# ---------------------------------------------------------------- fad


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


def run_fad(args, cg, entries, version, label, history_in=None, history_out=None):
    """One fad build of the workload's `version` with a fresh fadd; with
    history_in, that history is imported first; with history_out, the
    history is exported after the build."""
    client = os.path.join(args.build_dir, "fad")
    state = os.path.join(args.workdir, f"state-{label}")
    shutil.rmtree(state, ignore_errors=True)
    os.makedirs(state)
    sock = os.path.join(state, "fadd.sock")
    config = {"poll_interval_ms": args.poll_ms, "log_level": "info",
              "unit_memory_prior": int(5 * GIB * args.mem_scale)}
    cfg = os.path.join(state, "fadd.json")
    with open(cfg, "w") as f:
        json.dump(config, f)
    daemon = [os.path.join(args.build_dir, "fadd"), "--config", cfg, "--socket", sock, "--state-dir", state,
              "--cores", str(args.cores)]
    log = open(os.path.join(state, "fadd.stderr"), "w")
    # A compile cache of its own, empty: a cache shared between runs would
    # serve every later round's units without compiling them.
    fad_env = dict(args.fake_env, FAD_CACHE_DIR=os.path.join(state, "cache"))
    proc = subprocess.Popen(cg.wrap(daemon), env=fad_env, stdout=log, stderr=subprocess.STDOUT)
    result = {}
    try:
        wait_socket(sock, proc)
        if history_in:
            subprocess.run([client, "history", "import", history_in, "--socket", sock], check=True,
                           capture_output=True)
        write_sources(args.workdir, args.kinds, version)
        project = write_ninja(args.workdir, entries, client, args.fake)
        oom0 = oom_kill_count()
        cg.reset()
        sampler = Sampler(cg)
        sampler.start()
        t0 = time.monotonic()
        env = dict(fad_env, FAD_SOCKET=sock)
        run = subprocess.run(cg.wrap([client, "run", "--socket", sock, "--name", label, "--",
                                      "ninja", "-C", project, "-j", str(args.ninja_jobs)]),
                             env=env, capture_output=True, text=True)
        makespan = time.monotonic() - t0
        sampler.stop()
        st = subprocess.run([client, "status", "--socket", sock, "--json"], capture_output=True, text=True)
        builds = json.loads(st.stdout).get("builds", []) if st.returncode == 0 else []
        build = next((b for b in builds if b.get("name") == label), {})
        units = []
        if build:
            one = subprocess.run([client, "status", "--socket", sock, str(build["id"]), "--json"],
                                 capture_output=True, text=True)
            if one.returncode == 0:
                units = json.loads(one.stdout)["builds"][0].get("unit_list", [])
        done = sum(1 for u in units if u.get("state") == "succeeded")
        result = {
            "makespan_s": makespan, "peak_anon_bytes": sampler.peak(), "peak_usage_bytes": cg.max_usage(),
            "oom_kills": oom_kill_count() - oom0, "limit_hits": cg.failcnt(),
            "mean_anon_bytes": sampler.mean(), "units_finished": done,
            "reruns": sum(max(0, int(u.get("attempts", 1)) - 1) for u in units),
            "cache_hits": sum(1 for u in units if u.get("cached")),
            "did_not_finish": run.returncode != 0 or done < len(entries), "exit_code": run.returncode,
            "estimate_sources": sorted({u.get("estimate_source") or "-" for u in units}),
            "units": units, "anon_mib": sampler.series(),
        }
        if run.returncode != 0:
            result["output_tail"] = (run.stdout + run.stderr)[-2000:]
        if history_out:
            subprocess.run([client, "history", "export", history_out, "--socket", sock], check=True,
                           capture_output=True)
    finally:
        stop_daemon(proc)
        log.close()
    return result


# ---------------------------------------------------------------- main


def summarize(name, runs):
    ok = [r for r in runs if not r.get("did_not_finish")]
    times = [r["makespan_s"] for r in ok]
    return {
        "policy": name, "runs": len(runs), "finished": len(ok),
        "median_s": statistics.median(times) if times else None,
        "min_s": min(times) if times else None, "max_s": max(times) if times else None,
        "oom_kills": sum(r["oom_kills"] for r in runs),
        # Bytes (the table prints it as a fraction of the limit). Tables before
        # 2026-11-30 called this "peak_anon_fraction", though it held bytes too.
        "median_peak_anon_bytes": statistics.median(r["peak_anon_bytes"] for r in runs),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(REPO, "build"),
                    help="CMake build dir holding fadd, fad, tests/fad-fake-nvcc (default: build)")
    ap.add_argument("--time-scale", type=float, default=0.03, help="FAD_FAKE_TIME_SCALE (default 0.03)")
    ap.add_argument("--mem-scale", type=float, default=0.5, help="FAD_FAKE_MEM_SCALE (default 0.5)")
    ap.add_argument("--limit", default="4G", help="the cgroup's memory limit: the machine (default 4G)")
    ap.add_argument("--units", default="8:t1,4:t2", help="workload, COUNT:TRACE,... (traces: t1, t2)")
    ap.add_argument("--jobs", default="1,2,3,4", help="fixed job counts swept (default 1,2,3,4)")
    ap.add_argument("--threads", default="1,2", help="nvcc threads swept (default 1,2)")
    ap.add_argument("--policies", default=None,
                    help="comma list (default: every jN-tT swept, fa, pool-t1, pool-t2, memavail-t1, "
                         "memavail-t2, fad-cold, fad-warm)")
    ap.add_argument("--repetitions", type=int, default=5, help="rounds, every policy once per round (default 5)")
    ap.add_argument("--cores", type=int, default=machine_cores(),
                    help="cores for fad and the FA rule (default: this machine's)")
    ap.add_argument("--poll-ms", type=int, default=100, help="fad poll_interval_ms (default 100)")
    ap.add_argument("--ninja-jobs", type=int, default=16, help="ninja -j under fad run (default 16)")
    ap.add_argument("--max-reruns", type=int, default=3, help="reruns per OOM-killed unit before DNF")
    ap.add_argument("--workdir", default=None, help="scratch dir (default: a new temp dir)")
    ap.add_argument("--json", dest="out", default=None, help="write every run's figures here")
    args = ap.parse_args()

    if os.geteuid() != 0 or not os.path.isdir(CG_ROOT):
        sys.exit(f"needs root and a memory cgroup controller (v1 or v2) at {CG_ROOT}")
    args.limit_bytes = parse_size(args.limit)
    args.workdir = os.path.abspath(args.workdir or tempfile.mkdtemp(prefix="fad-trace-bench-"))
    os.makedirs(args.workdir, exist_ok=True)
    # Absolute: the generated build.ninja runs its commands from the project dir.
    args.build_dir = os.path.abspath(args.build_dir)
    args.fake = os.path.join(args.build_dir, "tests", "fad-fake-nvcc")
    for exe in (args.fake, os.path.join(args.build_dir, "fadd"), os.path.join(args.build_dir, "fad")):
        if not os.access(exe, os.X_OK):
            sys.exit(f"missing {exe}: build the targets fadd fad fad-fake-nvcc first")
    if not shutil.which("ninja"):
        sys.exit("needs ninja on PATH")
    args.fake_env = dict(os.environ, FAD_FAKE_TIME_SCALE=str(args.time_scale),
                         FAD_FAKE_MEM_SCALE=str(args.mem_scale), FAD_FAKE_CPU="1",
                         FAD_REAL_NVCC=args.fake)
    for k in ("FAD_FAKE_PROFILE", "FAD_FAKE_PEAK_MB", "FAD_FAKE_DURATION_S", "FAD_FAKE_EXIT",
              "FAD_FAKE_FAIL_MATCH", "FAD_SOCKET", "MAX_JOBS", "NVCC_THREADS"):
        args.fake_env.pop(k, None)

    kinds = make_workload(args.units)
    args.kinds = kinds
    jobs = [int(x) for x in args.jobs.split(",")]
    threads = [int(x) for x in args.threads.split(",")]
    fixed_names = [f"j{j}-t{t}" for t in threads for j in jobs]
    peaks = {t: max(model(k, t, args.time_scale, args.mem_scale)[0] for k in set(kinds)) for t in (1, 2, 4)}
    fa_jobs = max(1, min(args.cores // 2, int(args.limit_bytes / args.mem_scale / GIB / (5 * 4))))
    pools = {t: max(1, int(0.9 * args.limit_bytes / peaks[t])) for t in threads}
    policies = ([p.strip() for p in args.policies.split(",")] if args.policies else
                fixed_names + ["fa"] + [f"pool-t{t}" for t in threads] + [f"memavail-t{t}" for t in threads] +
                ["fad-cold", "fad-warm"])
    cpu = sum(model(k, 1, args.time_scale, 1)[1] for k in kinds)
    print(f"workload: {len(kinds)} units ({args.units}); time x{args.time_scale}, memory x{args.mem_scale}; "
          f"limit {args.limit_bytes / GIB:.2f} GiB; {args.cores} cores; CPU work at 1 thread {cpu:.0f} s "
          f"(lower bound {cpu / args.cores:.0f} s)")
    print("  peaks (GiB) by threads: " + ", ".join(f"t{t} {p / GIB:.2f}" for t, p in peaks.items()) +
          f"; FA rule: {fa_jobs} job(s) x 4 threads; pools: " +
          ", ".join(f"t{t} {n} jobs" for t, n in pools.items()))
    print(f"  workdir {args.workdir}", flush=True)

    # Workload versions: fixed policies and fad-cold build v1; fad-warm builds v2
    # with the history of a fad build of v1 (the previous version).
    v1 = write_sources(args.workdir, kinds, 1)
    v2 = write_sources(args.workdir, kinds, 2)
    cg = Cgroup(f"fad-bench-{os.getpid()}", args.limit_bytes)
    history = os.path.join(args.workdir, "history-v1.json")
    runs = {p: [] for p in policies}
    # SIGUSR1 ends the benchmark after the round in progress, so a long run can
    # be cut short on a busy machine and still report whole rounds only.
    stop = []
    signal.signal(signal.SIGUSR1, lambda *_: stop.append(True))
    rounds_done = 0
    try:
        for rnd in range(args.repetitions):
            if stop:
                print(f"stopped by SIGUSR1 after {rnd} round(s)", flush=True)
                break
            k = (rnd * 3) % len(policies)
            order = policies[k:] + policies[:k]
            if "fad-warm" in order and not os.path.exists(history):
                # The first warm run needs a cold run's history first.
                if "fad-cold" in order:
                    order.remove("fad-cold")
                order.insert(order.index("fad-warm"), "fad-cold")
            for p in order:
                label = f"{p}-r{rnd + 1}"
                print(f"round {rnd + 1}: {p} ...", end=" ", flush=True)
                if re.fullmatch(r"j\d+-t\d+", p):
                    j, t = (int(x) for x in p[1:].split("-t"))
                    r = fixed(args, cg, v1, j, t, label)
                elif p == "fa":
                    r = fixed(args, cg, v1, fa_jobs, 4, label)
                elif p.startswith("pool-t"):
                    t = int(p[6:])
                    r = fixed(args, cg, v1, pools[t], t, label)
                elif p.startswith("memavail-t"):
                    r = memavail(args, cg, v1, int(p[10:]), label)
                elif p == "fad-cold":
                    r = run_fad(args, cg, v1, 1, label, history_out=history)
                elif p == "fad-warm":
                    r = run_fad(args, cg, v2, 2, label, history_in=history)
                else:
                    sys.exit(f"unknown policy '{p}'")
                r["round"] = rnd + 1
                runs.setdefault(p, []).append(r)
                print(f"{r['makespan_s']:.1f} s, {r['oom_kills']} OOM kills"
                      + (" DNF" if r.get("did_not_finish") else ""), flush=True)
            rounds_done = rnd + 1
    finally:
        cg.remove()

    # ------------------------------------------------------------ table
    table = [summarize(p, runs[p]) for p in policies if runs.get(p)]
    print(f"\n{'policy':<12} {'median s':>9} {'min-max s':>15} {'finished':>8} {'OOM kills':>9} {'peak anon':>9}")
    for s in table:
        med = f"{s['median_s']:.1f}" if s["median_s"] is not None else "DNF"
        spread = f"{s['min_s']:.1f}-{s['max_s']:.1f}" if s["median_s"] is not None else "-"
        print(f"{s['policy']:<12} {med:>9} {spread:>15} {s['finished']:>4}/{s['runs']:<3} {s['oom_kills']:>9}"
              f" {s['median_peak_anon_bytes'] / args.limit_bytes:>9.2f}")
    safe = [s for s in table if s["policy"] in fixed_names and s["finished"] == s["runs"] and s["oom_kills"] == 0]
    summary = {}
    if safe:
        oracle = min(safe, key=lambda s: s["median_s"])
        summary["oracle"] = oracle["policy"]
        print(f"oracle (best safe fixed setting): {oracle['policy']}, median {oracle['median_s']:.1f} s")
        for s in table:
            if s["policy"].startswith("fad-") and s["median_s"]:
                summary[s["policy"] + "_speedup"] = oracle["median_s"] / s["median_s"]
                print(f"{s['policy']}: {oracle['median_s'] / s['median_s']:.2f}x the oracle "
                      f"(median {s['median_s']:.1f} s), {s['oom_kills']} OOM kills over {s['runs']} runs")
    else:
        print("no fixed setting was safe in every round")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"config": {k: v for k, v in vars(args).items() if k != "fake_env"}, "units": kinds,
                       "fa_jobs": fa_jobs, "pools": pools, "peaks_bytes": peaks, "table": table,
                       "summary": summary, "rounds_completed": rounds_done, "runs": runs},
                      f, indent=1, default=str)
        print(f"results: {args.out}")


if __name__ == "__main__":
    main()
