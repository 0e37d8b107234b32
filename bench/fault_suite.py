#!/usr/bin/env python3
"""Fault and hostile-input suite: the real fadd and fad under load, crashes,
stops, a full disk, databases that are not fad's, a protocol fuzzer, idle
connection floods and a second user, each probe reported pass/fail with its
figures.

Every probe starts its own fadd (build/fadd) in a scratch directory, with
tests/fad-fake-nvcc as its compiler: the fake really allocates memory and logs
every invocation, so "no finished unit compiled twice" is counted, not assumed.

Probes (--probes, comma list; default all):
  status_load   50 clients x 10 Hz `status` over the socket during a build:
                latency p50/p99/max, errors.
  kill9         100 kill -9 restarts mid-build: each restart answers at once,
                PRAGMA integrity_check ok, no unit the database called
                succeeded is compiled again, every build succeeds.
  stop_start    `fad daemon stop` then `fad daemon start` with units running,
                20 times: every start succeeds.
  sigstop       fadd SIGSTOPped for 6 s: `fad status` times out with exit 3
                and a clear line; `fad submit --wait` rides it out; after
                SIGCONT all is well.
  disk_full     the state dir on a small tmpfs, filled mid-build: fadd stays
                up and answers, no unit is left "running" without a process,
                the build finishes once space returns.
  databases     another application's SQLite file, a damaged fad.db and a
                file that is not SQLite at STATE/fad.db: refused with a clear
                line, the file byte for byte unchanged.
  fuzz          thousands of mutated protocol messages, deep nesting, huge
                numbers, FIFOs and devices as paths: fadd never dies or stalls.
  idle_flood    2000 idle connections: a client still gets an answer or a
                clear "too many connections".
  other_user    as user nobody, against root's fadd on a shared socket:
                cancel, pause, retry, stop, submit with a chosen nvcc, adopt a
                root process with launch_started: all refused, nothing runs as
                root.
  prune         retention: fad prune removes an old build's outputs, keeps
                its record.

Needs root (mounts, a second user, cgroups) and Python 3's standard library.
Prints a table; writes every figure as JSON (--json, default
bench/results/fault_suite-DATE.json).
"""
import argparse
import datetime
import hashlib
import json
import os
import random
import resource
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOBODY = 65534


def percentile(values, p):
    if not values:
        return None
    s = sorted(values)
    k = min(len(s) - 1, max(0, int(round(p / 100.0 * (len(s) - 1)))))
    return s[k]


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def raw_exchange(path, payload, timeout=5.0):
    """Sends bytes on a fresh connection; returns ("answer", line) or
    ("closed"|"timeout"|"refused", detail)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(path)
    except OSError as e:
        s.close()
        return "refused", str(e)
    try:
        try:
            s.sendall(payload)
        except OSError:
            pass  # fadd may close early on a message it rejects; read its answer
        buf = b""
        while b"\n" not in buf:
            chunk = s.recv(65536)
            if not chunk:
                return ("answer", buf.decode(errors="replace")) if buf else ("closed", "")
            buf += chunk
        return "answer", buf.split(b"\n", 1)[0].decode(errors="replace")
    except socket.timeout:
        return "timeout", ""
    except OSError as e:
        return "closed", str(e)
    finally:
        s.close()


def request(path, type_, body=None, timeout=5.0):
    """One protocol request; the parsed answer, or None when none came."""
    line = json.dumps({"v": 1, "type": type_, "body": body or {}}) + "\n"
    kind, text = raw_exchange(path, line.encode(), timeout)
    if kind != "answer":
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def write_kernels(kdir, units):
    """A kernels tree of fake units: [(name, fake_line)]."""
    os.makedirs(os.path.join(kdir, "src"), exist_ok=True)
    os.makedirs(os.path.join(kdir, "include"), exist_ok=True)
    with open(os.path.join(kdir, "include", "common.cuh"), "w") as f:
        f.write("#pragma once\n")
    manifest = {"version": 1, "library": "fad_fault", "include_dirs": ["include"], "flags": ["-O2"],
                "link_flags": [], "units": []}
    for name, fake in units:
        with open(os.path.join(kdir, "src", name + ".cu"), "w") as f:
            f.write('#include "common.cuh"\n')
            if fake:
                f.write("// fake-nvcc: " + fake + "\n")
            f.write("__global__ void %s_kernel() {}\n" % name)
        manifest["units"].append({"name": name, "source": "src/%s.cu" % name, "family": name.split("_")[0],
                                  "flags": []})
    with open(os.path.join(kdir, "manifest.json"), "w") as f:
        json.dump(manifest, f)


def proc_state(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            line = f.read()
        return line[line.rindex(")") + 2]
    except (OSError, ValueError):
        return None


def cpu_seconds(pid):
    """User + system CPU seconds of a process so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fake_processes(fake, kdir):
    """Live fake compilers of this probe (program is the fake, argv names kdir)."""
    n = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].decode(errors="replace") == fake and any(kdir.encode() in a for a in argv):
            if proc_state(int(entry)) not in (None, "Z"):
                n += 1
    return n


class Fadd:
    """One fadd in a scratch dir: its socket, state dir, kernels and fake-compiler log."""

    def __init__(self, suite, name, units, config=None, extra=None):
        self.suite = suite
        self.root = os.path.join(suite.workdir, name)
        os.makedirs(self.root, exist_ok=True)
        self.run_dir = os.path.join(self.root, "run")
        self.sock = os.path.join(self.run_dir, "fad.sock")
        self.state = os.path.join(self.root, "state")
        self.kernels = os.path.join(self.root, "kernels")
        self.fake_log = os.path.join(self.root, "fake.log")
        self.log = os.path.join(self.root, "fadd.log")
        self.config = os.path.join(self.root, "config.json")
        cfg = {"poll_interval_ms": 100, "unit_memory_prior": "64M"}
        cfg.update(config or {})
        with open(self.config, "w") as f:
            json.dump(cfg, f)
        self.extra = list(extra or [])
        self.proc = None
        write_kernels(self.kernels, units)

    def env(self):
        e = dict(os.environ)
        e.update({"FAD_CONFIG": self.config, "FAD_FAKE_LOG": self.fake_log, "FAD_SOCKET": self.sock,
                  "FAD_STATE_DIR": self.state})
        return e

    def argv(self):
        return [self.suite.fadd, "--socket", self.sock, "--state-dir", self.state, "--kernels-dir", self.kernels,
                "--nvcc", self.suite.fake] + self.extra

    def start(self, timeout=20.0):
        """Starts fadd; (True, seconds to answer) or (False, why)."""
        t0 = time.monotonic()
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(self.argv(), env=self.env(), stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=log, start_new_session=True)
        while time.monotonic() - t0 < timeout:
            if self.proc.poll() is not None:
                return False, "exited %d: %s" % (self.proc.returncode, self.log_tail(1))
            if request(self.sock, "status", timeout=1.0) is not None:
                return True, time.monotonic() - t0
            time.sleep(0.02)
        return False, "no answer within %.0f s" % timeout

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill9(self):
        if self.alive():
            self.proc.kill()
        if self.proc:
            self.proc.wait()

    def stop(self, timeout=60):
        if not self.alive():
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None

    def log_tail(self, n=3):
        try:
            with open(self.log, errors="replace") as f:
                lines = [l.rstrip() for l in f if l.strip()]
            return " | ".join(lines[-n:])
        except OSError:
            return ""

    def fad(self, args, timeout=120, extra_env=None, preexec=None):
        env = self.env()
        env.update(extra_env or {})
        t0 = time.monotonic()
        try:
            r = subprocess.run([self.suite.fad] + args, env=env, capture_output=True, text=True, timeout=timeout,
                               preexec_fn=preexec)
            return r.returncode, r.stdout, r.stderr, time.monotonic() - t0
        except subprocess.TimeoutExpired:
            return None, "", "(no exit within %d s)" % timeout, time.monotonic() - t0

    def submit(self, name=""):
        r = request(self.sock, "submit", {"archs": ["9.0"], "kernels": "*", "name": name}, timeout=30)
        if not r or not r.get("ok"):
            raise RuntimeError("submit failed: %r" % (r,))
        return r["result"]["id"]

    def build(self, build_id, timeout=5.0):
        r = request(self.sock, "status", {"id": build_id}, timeout=timeout)
        if not r or not r.get("ok"):
            return None
        return r["result"]["builds"][0]

    def wait_final(self, build_id, timeout=120):
        deadline = time.monotonic() + timeout
        b = None
        while time.monotonic() < deadline:
            b = self.build(build_id)
            if b and b["state"] in ("succeeded", "failed", "cancelled"):
                return b
            time.sleep(0.2)
        return b

    def compiles(self):
        """Compiles per output file (one per build and unit), from the fake compiler's log."""
        counts = {}
        try:
            with open(self.fake_log) as f:
                for line in f:
                    for field in line.split():
                        if field.startswith("out="):
                            counts[field[4:]] = counts.get(field[4:], 0) + 1
        except OSError:
            pass
        return counts

    def db_succeeded_outputs(self):
        """Output files of compile units the database calls succeeded (read-only)."""
        path = os.path.join(self.state, "fad.db")
        try:
            db = sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=5)
            try:
                rows = db.execute("SELECT output_path FROM units WHERE state = 'succeeded' AND kind = 'compile'")
                return {out for (out,) in rows}
            finally:
                db.close()
        except sqlite3.Error:
            return set()

    def close(self):
        self.kill9()


# ---------------------------------------------------------------- probes


def _load_worker(sock, clients, hz, stop_at, seed, conn):
    """One process of the status load: `clients` threads, each `hz` requests a second."""
    lat, errors = [], 0
    lock = threading.Lock()

    def client(k):
        nonlocal errors
        period = 1.0 / hz
        nxt = time.monotonic() + random.Random(seed * 1000 + k).uniform(0, period)
        while True:
            now = time.monotonic()
            if now >= stop_at:
                return
            if nxt > now:
                time.sleep(nxt - now)
            nxt += period
            t0 = time.monotonic()
            r = request(sock, "status", timeout=5.0)
            dt = time.monotonic() - t0
            with lock:
                if r and r.get("ok"):
                    lat.append(dt)
                else:
                    errors += 1

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    conn.send((lat, errors))
    conn.close()


def probe_status_load(suite):
    import multiprocessing

    clients, hz, seconds, procs = 50, 10, suite.args.load_seconds, 10
    f = Fadd(suite, "status_load", [("fwd_u%02d" % i, "peak_mb=20 duration_s=2") for i in range(40)])
    ok, why = f.start()
    if not ok:
        return {"pass": False, "notes": ["fadd did not start: " + why]}
    build = f.submit()
    time.sleep(1.0)  # the build is running
    # Clients in several processes, so that the measuring side is not one
    # interpreter's lock.
    stop_at = time.monotonic() + seconds
    workers, pipes = [], []
    cpu0 = cpu_seconds(f.proc.pid)
    load0 = os.getloadavg()[0]
    t0 = time.monotonic()
    for w in range(procs):
        parent, child = multiprocessing.Pipe(duplex=False)
        p = multiprocessing.Process(target=_load_worker, args=(f.sock, clients // procs, hz, stop_at, w, child))
        p.start()
        workers.append(p)
        pipes.append(parent)
    lat, errors = [], 0
    for parent, p in zip(pipes, workers):
        got, errs = parent.recv()
        lat += got
        errors += errs
        p.join()
    wall = time.monotonic() - t0
    cpu = cpu_seconds(f.proc.pid) - cpu0
    b = f.build(build)
    running_after = b["state"] if b else None
    request(f.sock, "cancel", {"id": build})
    alive = f.alive()
    f.close()
    figures = {"clients": clients, "hz_per_client": hz, "seconds": round(wall, 1), "requests": len(lat) + errors,
               "errors": errors, "achieved_rps": round((len(lat) + errors) / wall, 1),
               "p50_ms": round(1000 * percentile(lat, 50), 2) if lat else None,
               "p99_ms": round(1000 * percentile(lat, 99), 2) if lat else None,
               "max_ms": round(1000 * max(lat), 2) if lat else None,
               "fadd_cpu_share": round(cpu / wall, 2), "loadavg_1m_before": round(load0, 2),
               "build_state_at_end": running_after, "fadd_alive": alive}
    return {"pass": errors == 0 and alive, "figures": figures,
            "notes": ["latency: connect + one status request + its answer, seen by the client; clients are %d "
                      "processes of %d threads, each waiting for its answer before its next request" %
                      (procs, clients // procs)]}


def probe_kill9(suite):
    rounds = suite.args.kill_rounds
    f = Fadd(suite, "kill9", [("fwd_u%02d" % i, "peak_mb=5 duration_s=0.5") for i in range(30)])
    ok, why = f.start()
    if not ok:
        return {"pass": False, "notes": ["fadd did not start: " + why]}
    builds = [f.submit("k0")]
    rng = random.Random(suite.args.seed)
    at_once, restart_s, refusals = 0, [], []
    finished_at_count = {}  # output -> compiles when the database first called its unit succeeded
    for i in range(rounds):
        time.sleep(rng.uniform(0.0, 0.6))
        counts = f.compiles()
        for out in f.db_succeeded_outputs():
            finished_at_count.setdefault(out, counts.get(out, 0))
        f.kill9()
        ok, took = f.start(timeout=10)
        if ok and took < 5.0:
            at_once += 1
            restart_s.append(took)
        else:
            refusals.append("round %d: %s" % (i, took))
            for _ in range(5):  # let the probe go on: try again after a pause
                time.sleep(1.0)
                ok, took = f.start(timeout=10)
                if ok:
                    break
            if not ok:
                f.close()
                return {"pass": False, "figures": {"rounds_done": i + 1, "restarts_at_once": at_once},
                        "notes": ["fadd could not be restarted: " + str(took)] + refusals[:3]}
        b = f.build(builds[-1])
        if b and b["state"] in ("succeeded", "failed", "cancelled"):
            builds.append(f.submit("k%d" % len(builds)))
    finals = [f.wait_final(b, timeout=180) for b in builds]
    f.stop()
    counts = f.compiles()
    recompiled = sorted(out for out, n in finished_at_count.items() if counts.get(out, 0) != n)
    try:
        db = sqlite3.connect("file:%s?mode=ro" % os.path.join(f.state, "fad.db"), uri=True)
        integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
        units = db.execute("SELECT count(*) FROM units WHERE kind = 'compile'").fetchone()[0]
        db.close()
    except sqlite3.Error as e:
        integrity, units = "error: %s" % e, None
    figures = {"restarts": rounds, "restarts_at_once": at_once, "refused_restarts": len(refusals),
               "restart_p50_s": round(percentile(restart_s, 50), 3) if restart_s else None,
               "restart_p99_s": round(percentile(restart_s, 99), 3) if restart_s else None,
               "restart_max_s": round(max(restart_s), 3) if restart_s else None,
               "builds": len(builds), "builds_succeeded": sum(1 for b in finals if b and b["state"] == "succeeded"),
               "integrity_check": integrity, "compile_units": units, "compiles_logged": sum(counts.values()),
               "units_seen_finished_before_a_crash": len(finished_at_count),
               "finished_units_recompiled": len(recompiled)}
    passed = (at_once == rounds and integrity == "ok" and figures["builds_succeeded"] == len(builds)
              and not recompiled)
    notes = ["recompiled: a unit the database called succeeded before a crash, compiled again after it"]
    notes += refusals[:3]
    notes += ["recompiled " + r for r in recompiled[:3]]
    return {"pass": passed, "figures": figures, "notes": notes}


def probe_stop_start(suite):
    rounds = suite.args.stop_rounds
    f = Fadd(suite, "stop_start", [("fwd_u%d" % i, "peak_mb=5 duration_s=60") for i in range(4)])
    start_args = ["daemon", "start", "--", "--kernels-dir", f.kernels, "--nvcc", suite.fake]
    code, out, err, _ = f.fad(start_args)
    if code != 0:
        return {"pass": False, "notes": ["fad daemon start failed: " + err.strip()]}
    f.fad(["submit", "--arch", "9.0"])
    ok_rounds, failures, stop_s = 0, [], []
    for i in range(rounds):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            r = request(f.sock, "status", timeout=2)
            if r and r.get("ok") and r["result"]["daemon"]["running_units"] > 0:
                break
            time.sleep(0.1)
        code, out, err, took = f.fad(["daemon", "stop"])
        stop_s.append(took)
        code2, out2, err2, _ = f.fad(start_args)
        if code == 0 and code2 == 0:
            ok_rounds += 1
        else:
            failures.append("round %d: stop %s, start %s: %s" % (i, code, code2, (err + err2).strip()[:300]))
            if code2 != 0:
                f.fad(start_args)
    f.fad(["daemon", "stop"])
    figures = {"rounds": rounds, "starts_ok": ok_rounds, "stop_p50_s": round(percentile(stop_s, 50), 2),
               "stop_max_s": round(max(stop_s), 2)}
    return {"pass": ok_rounds == rounds, "figures": figures, "notes": failures[:3]}


def probe_sigstop(suite):
    f = Fadd(suite, "sigstop", [("fwd_u%d" % i, "peak_mb=5 duration_s=1") for i in range(6)])
    ok, why = f.start()
    if not ok:
        return {"pass": False, "notes": ["fadd did not start: " + why]}
    out_path = os.path.join(f.root, "wait.out")
    with open(out_path, "w") as out:
        follower = subprocess.Popen([suite.fad, "submit", "--arch", "9.0", "--wait"], env=f.env(), stdout=out,
                                    stderr=subprocess.STDOUT)
    time.sleep(1.0)
    f.proc.send_signal(signal.SIGSTOP)
    code, _, err, took = f.fad(["status"], timeout=90, extra_env={"FAD_TIMEOUT": "2"})
    time.sleep(max(0.0, 6.0 - took))
    f.proc.send_signal(signal.SIGCONT)
    after = request(f.sock, "status", timeout=5)
    try:
        follower_code = follower.wait(120)
    except subprocess.TimeoutExpired:
        follower.kill()
        follower_code = None
    f.close()
    figures = {"stopped_s": 6, "status_exit": code, "status_s": round(took, 2), "status_message": err.strip(),
               "answers_after_sigcont": bool(after and after.get("ok")), "submit_wait_exit": follower_code}
    passed = (code == 3 and "did not answer" in err and took < 10 and figures["answers_after_sigcont"]
              and follower_code == 0)
    return {"pass": passed, "figures": figures}


def probe_disk_full(suite):
    f = Fadd(suite, "disk_full", [("fwd_u%02d" % i, "peak_mb=5 duration_s=0.3") for i in range(60)])
    os.makedirs(f.state, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m,mode=0700", "tmpfs", f.state],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        return {"pass": None, "notes": ["SKIP: cannot mount a tmpfs: " + mounted.stderr.strip()]}
    try:
        ok, why = f.start()
        if not ok:
            return {"pass": False, "notes": ["fadd did not start: " + why]}
        build = f.submit()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            b = f.build(build)
            if b and b["units"]["succeeded"] >= 5:
                break
            time.sleep(0.1)
        filler = os.path.join(f.state, "filler")
        with open(filler, "wb") as out:
            try:
                while True:
                    out.write(b"\0" * (1 << 16))
                    out.flush()
            except OSError:
                pass
        full_at = time.monotonic()
        ghosts, answered, samples, disk_note = 0, 0, 0, None
        while time.monotonic() - full_at < 8:
            r = request(f.sock, "status", {"id": build}, timeout=5)
            samples += 1
            if r and r.get("ok"):
                answered += 1
                b = r["result"]["builds"][0]
                daemon = r["result"]["daemon"]
                for key in ("disk", "disk_full", "state_dir_full", "admitting"):
                    if key in daemon:
                        disk_note = "%s=%s" % (key, daemon[key])
                ghosts = max(ghosts, b["units"]["running"] - fake_processes(suite.fake, f.kernels))
            time.sleep(0.5)
        alive_full = f.alive()
        os.unlink(filler)
        freed_at = time.monotonic()
        final = f.wait_final(build, timeout=90)
        recovered_s = time.monotonic() - freed_at
        figures = {"tmpfs": "16M", "fadd_alive_while_full": alive_full,
                   "status_answered_while_full": "%d/%d" % (answered, samples),
                   "ghost_running_units_max": ghosts, "status_reports_disk": disk_note,
                   "build_after_space_returned": final["state"] if final else None,
                   "units_succeeded": "%d/%d" % (final["units"]["succeeded"], final["units"]["total"]) if final else None,
                   "recovered_s": round(recovered_s, 1)}
        passed = (alive_full and answered == samples and ghosts <= 0 and final is not None
                  and final["state"] == "succeeded")
        return {"pass": passed, "figures": figures,
                "notes": ["ghost: a unit the daemon calls running with no compiler process left"]}
    finally:
        f.close()
        subprocess.run(["umount", "-l", f.state], capture_output=True)


def probe_databases(suite):
    cases = {}

    def attempt(name, prepare):
        f = Fadd(suite, "db_" + name, [("fwd_x", "")])
        os.makedirs(f.state, exist_ok=True)
        path = os.path.join(f.state, "fad.db")
        prepare(f, path)
        before = sha(path)
        ok, why = f.start(timeout=15)
        code = f.proc.returncode if not ok else None
        f.close()
        cases[name] = {"started": ok, "exit": code, "message": f.log_tail(1)[-300:],
                       "file_unchanged": sha(path) == before}

    def foreign_with_id(f, path):
        db = sqlite3.connect(path)
        db.executescript("PRAGMA application_id = 1095782483; CREATE TABLE moz_places(id INTEGER PRIMARY KEY, url TEXT);"
                         "INSERT INTO moz_places(url) VALUES('https://example.org');")
        db.close()

    def foreign_without_id(f, path):
        db = sqlite3.connect(path)
        db.executescript("PRAGMA user_version = 7; CREATE TABLE builds(id INTEGER PRIMARY KEY, log TEXT);"
                         "INSERT INTO builds(log) VALUES('a CI server''s own builds table');")
        db.close()

    def damaged(f, path):
        ok, why = f.start()
        if ok:
            b = f.submit()
            f.wait_final(b, 30)
        f.stop()
        db = sqlite3.connect(path)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
        size = os.path.getsize(path)
        with open(path, "r+b") as out:
            out.seek(4096)
            out.write(b"\x5a" * (size - 4096))

    def not_sqlite(f, path):
        with open(path, "w") as out:
            out.write("not a database, just a file called fad.db\n" * 10)

    attempt("foreign_with_application_id", foreign_with_id)
    attempt("foreign_without_application_id", foreign_without_id)
    attempt("damaged_fad_db", damaged)
    attempt("not_sqlite", not_sqlite)
    passed = all(not c["started"] and c["exit"] not in (0, None) and c["file_unchanged"] for c in cases.values())
    return {"pass": passed, "figures": cases}


def fuzz_corpus(f, fifo, rng):
    """Valid requests to mutate, as (label, line): the protocol fixtures and launches of odd sources."""
    with open(os.path.join(REPO, "tests/fixtures/protocol_v1_requests.jsonl")) as src:
        corpus = [(json.loads(l)["type"], l.strip()) for l in src if l.strip() and '"shutdown"' not in l]
    src_file = os.path.join(f.kernels, "src", "fwd_x.cu")
    for label, path in (("source", src_file), ("FIFO", fifo), ("/dev/zero", "/dev/zero"),
                        ("/dev/urandom", "/dev/urandom"), ("a directory", f.kernels), ("/proc/self/mem", "/proc/self/mem")):
        corpus.append(("launch of " + label, json.dumps({"v": 1, "type": "launch", "body": {
            "session": 4242, "cwd": f.root, "argv": [f.suite.fake, "-c", path, "-o", os.path.join(f.root, "x.o")],
            "source": path, "output": os.path.join(f.root, "x.o"), "archs": ["sm_90"]}})))
    corpus.append(("open_build", json.dumps({"v": 1, "type": "open_build", "body": {"name": "fz", "command": "x"}})))
    corpus.append(("launch_poll", json.dumps({"v": 1, "type": "launch_poll", "body": {"unit_id": 1}})))
    corpus.append(("launch_finished", json.dumps({"v": 1, "type": "launch_finished", "body": {
        "unit_id": 1, "exit_code": 0, "signaled": False}})))
    return corpus


def mutate(line, rng):
    b = bytearray(line.encode())
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(10)
        if op == 0 and b:
            b[rng.randrange(len(b))] = rng.randrange(256)
        elif op == 1:
            b[rng.randrange(len(b) + 1):0] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif op == 2 and len(b) > 2:
            i = rng.randrange(len(b))
            del b[i:i + rng.randint(1, 10)]
        elif op == 3 and b:
            i = rng.randrange(len(b))
            b[i:i] = b[i:i + rng.randint(1, 40)] * rng.randint(1, 20)
        elif op == 4:
            b = b[:rng.randrange(len(b) + 1)]
        elif op == 5:
            for num in (b"1e400", b"-1", b"9223372036854775808", b"99999999999999999999999999", b"-0.0", b"1e-400",
                        b"NaN", b"true", b"null", b"[]", b"{}"):
                if rng.random() < 0.2:
                    break
            digits = [i for i, c in enumerate(b) if 48 <= c <= 57]
            if digits:
                i = rng.choice(digits)
                b[i:i + 1] = num
        elif op == 6:
            q = [i for i, c in enumerate(b) if c == 34]
            if len(q) >= 2:
                i = rng.choice(q)
                b[i + 1:i + 1] = b"A" * rng.choice((100, 10000, 300000))
        elif op == 7:
            depth = rng.choice((10, 1000, 5000))
            i = b.find(b'"body":')
            if i >= 0:
                i += len(b'"body":')
                b[i:i] = b"[" * depth
                b += b"]" * depth
        elif op == 8:
            b[rng.randrange(len(b) + 1):0] = rng.choice((b"\0", b"\xff\xfe", b"\xc3\x28", b"\\u0000", b"\\ud800"))
        else:
            b[rng.randrange(len(b) + 1):0] = b"\n"
    return bytes(b)


def fixed_hostile(f, fifo):
    deep = 100000
    return [
        ("deep nesting 100k (array)", b'{"v":1,"type":"status","body":' + b"[" * deep + b"]" * deep + b"}\n"),
        ("deep nesting 100k (v)", b'{"v":' + b"[" * deep + b"]" * deep + b',"type":"status","body":{}}\n'),
        ("deep nesting 100k (bare)", b"[" * deep + b"\n"),
        ("huge number v", b'{"v":1e400,"type":"status","body":{}}\n'),
        ("huge number id", b'{"v":1,"type":"status","body":{"id":1e400}}\n'),
        ("huge integer id", b'{"v":1,"type":"logs","body":{"id":99999999999999999999999999999}}\n'),
        ("int64 overflow offset", b'{"v":1,"type":"logs","body":{"id":1,"offset":18446744073709551616}}\n'),
        ("history limit huge", b'{"v":1,"type":"history","body":{"limit":2147483648}}\n'),
        ("type not a string", b'{"v":1,"type":7,"body":{}}\n'),
        ("body array", b'{"v":1,"type":"status","body":[]}\n'),
        ("nul bytes", b'{"v":1,"type":"sta\0tus","body":{}}\n'),
        ("lone surrogate", b'{"v":1,"type":"\\ud800","body":{}}\n'),
        ("over 1 MiB line", b'{"v":1,"type":"status","body":{"x":"' + b"A" * (1 << 21) + b'"}}\n'),
        ("launch source FIFO", (json.dumps({"v": 1, "type": "launch", "body": {
            "session": 1, "cwd": "/", "argv": ["nvcc", "-c", fifo, "-o", "/tmp/x.o"], "source": fifo,
            "output": "/tmp/x.o", "archs": ["sm_90"]}}) + "\n").encode()),
        ("launch source /dev/zero", (json.dumps({"v": 1, "type": "launch", "body": {
            "session": 1, "cwd": "/", "argv": ["nvcc", "-c", "/dev/zero", "-o", "/tmp/x.o"], "source": "/dev/zero",
            "output": "/tmp/x.o", "archs": ["sm_90"]}}) + "\n").encode()),
        ("launch source /dev/urandom", (json.dumps({"v": 1, "type": "launch", "body": {
            "session": 1, "cwd": "/", "argv": ["nvcc", "-c", "/dev/urandom", "-o", "/tmp/x.o"],
            "source": "/dev/urandom", "output": "/tmp/x.o", "archs": ["sm_90"]}}) + "\n").encode()),
        ("submit nvcc FIFO", (json.dumps({"v": 1, "type": "submit", "body": {"archs": ["9.0"], "nvcc": fifo}})
                              + "\n").encode()),
        ("submit nvcc /dev/zero", b'{"v":1,"type":"submit","body":{"archs":["9.0"],"nvcc":"/dev/zero"}}\n'),
        ("logs unit path traversal", b'{"v":1,"type":"logs","body":{"id":1,"unit":"../../../../etc/shadow"}}\n'),
    ]


def count_by(events):
    counts = {}
    for e in events:
        counts[e["message"]] = counts.get(e["message"], 0) + 1
    return counts


def probe_fuzz(suite):
    rng = random.Random(suite.args.seed)
    f = Fadd(suite, "fuzz", [("fwd_x", ""), ("fwd_y", "")])
    fifo = os.path.join(f.root, "fifo")
    os.mkfifo(fifo)
    ok, why = f.start()
    if not ok:
        return {"pass": False, "notes": ["fadd did not start: " + why]}
    corpus = fuzz_corpus(f, fifo, rng)
    outcomes = {"ok": 0, "error": 0, "closed": 0, "timeout": 0, "refused": 0, "garbled": 0}
    crashes, stalls, restarts = [], [], 0
    t0 = time.monotonic()

    def check_health(label):
        nonlocal restarts
        if not f.alive():
            crashes.append({"message": label, "exit": f.proc.returncode, "log": f.log_tail(1)[-200:]})
        else:
            s0 = time.monotonic()
            r = request(f.sock, "status", timeout=3.0)
            if r is not None and r.get("ok"):
                return
            # Stalled (or refusing): give it a while, then count it and restart.
            while time.monotonic() - s0 < 10:
                if request(f.sock, "status", timeout=2.0):
                    stalls.append({"message": label, "stalled_s": round(time.monotonic() - s0, 1), "recovered": True})
                    return
            stalls.append({"message": label, "stalled_s": round(time.monotonic() - s0, 1), "recovered": False})
            f.kill9()
        restarts += 1
        ok, why = f.start()
        if not ok:
            raise RuntimeError("fadd could not be restarted: " + why)

    messages = [(label, payload, False) for label, payload in fixed_hostile(f, fifo)]
    for _ in range(suite.args.fuzz_messages):
        base, line = rng.choice(corpus)
        messages.append(("mutated " + base, mutate(line, rng) + b"\n", True))
    for i, (label, payload, mutated) in enumerate(messages):
        kind, text = raw_exchange(f.sock, payload, timeout=2.0)
        if kind == "answer":
            try:
                outcomes["ok" if json.loads(text).get("ok") else "error"] += 1
            except ValueError:
                outcomes["garbled"] += 1
        else:
            outcomes[kind] += 1
        if not mutated or kind != "answer" or i % 25 == 0:
            check_health(label)
    check_health("end")
    f.close()
    figures = {"messages": len(messages), "seconds": round(time.monotonic() - t0, 1), "answers_ok": outcomes["ok"],
               "answers_error": outcomes["error"], "closed_without_answer": outcomes["closed"],
               "no_answer_2s": outcomes["timeout"], "refused": outcomes["refused"], "garbled": outcomes["garbled"],
               "fadd_crashes": len(crashes), "fadd_stalls": len(stalls), "restarts": restarts,
               "crashes_by_message": count_by(crashes), "stalls_by_message": count_by(stalls),
               "crashes": crashes[:10], "stalls": stalls[:10]}
    return {"pass": not crashes and not stalls, "figures": figures}


def probe_idle_flood(suite):
    n = suite.args.flood
    f = Fadd(suite, "idle_flood", [("fwd_x", "")])
    ok, why = f.start()
    if not ok:
        return {"pass": False, "notes": ["fadd did not start: " + why]}
    conns, refused = [], 0
    for _ in range(n):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(2)
        try:
            s.connect(f.sock)
            conns.append(s)
        except OSError:
            refused += 1
            s.close()
    time.sleep(1.0)
    code, out, err, took = f.fad(["status"], timeout=90, extra_env={"FAD_TIMEOUT": "5"})
    kind, text = raw_exchange(f.sock, b'{"v":1,"type":"status","body":{}}\n', timeout=5)
    for s in conns:
        s.close()
    time.sleep(0.5)
    after = request(f.sock, "status", timeout=5)
    alive = f.alive()
    f.close()
    clear = code == 0 or "too many" in (err + text).lower()
    figures = {"idle_connections": len(conns), "connects_refused": refused, "fad_status_exit": code,
               "fad_status_s": round(took, 2), "fad_status_message": (err.strip() or out.strip().splitlines()[0])[:200],
               "raw_client": kind + (": " + text[:160] if text else ""), "answers_after_close": bool(after),
               "fadd_alive": alive}
    return {"pass": clear and alive and bool(after), "figures": figures,
            "notes": ["pass: the client is answered, or told 'too many connections'"]}


def drop_to_nobody():
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


def probe_other_user(suite):
    # Cores to spare, so that the second user's compile is admitted beside root's.
    f = Fadd(suite, "other_user", [("fwd_u%d" % i, "peak_mb=5 duration_s=60") for i in range(3)],
             config={"socket_mode": "0666"}, extra=["--cores", "16"])
    os.makedirs(f.run_dir, mode=0o755, exist_ok=True)
    os.chmod(f.root, 0o755)
    os.chmod(f.run_dir, 0o755)
    ok, why = f.start()
    how_shared = "config socket_mode 0666"
    if not ok:
        # A fadd without the multi-user keys: share the socket as an admin
        # would have, by its mode.
        with open(f.config, "w") as out:
            json.dump({"poll_interval_ms": 100, "unit_memory_prior": "64M"}, out)
        ok, why = f.start()
        if not ok:
            return {"pass": False, "notes": ["fadd did not start: " + why]}
        os.chmod(f.sock, 0o666)
        how_shared = "chmod 0666 on the socket (no socket_mode key)"
    build = f.submit("root's build")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and f.build(build)["units"]["running"] < 1:
        time.sleep(0.1)
    actions = {}

    def as_nobody(name, args):
        code, out, err, _ = f.fad(args, timeout=90, preexec=drop_to_nobody)
        actions[name] = {"exit": code, "message": (err.strip() or out.strip())[:200]}

    as_nobody("status", ["status"])
    # launch_started naming a root process: fadd must not adopt (and later signal) it.
    victim = subprocess.Popen(["sleep", "600"], start_new_session=True)
    r = subprocess.run([sys.executable, "-c", "import fault_suite as s; s._child()"], capture_output=True, text=True,
                       timeout=90, env=dict(os.environ, FAULT_CHILD=json.dumps({"sock": f.sock, "victim": victim.pid})),
                       cwd=os.path.dirname(os.path.abspath(__file__)))
    try:
        raw = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raw = {"error": (r.stdout + r.stderr)[-300:]}
    time.sleep(1.0)
    victim_alive = victim.poll() is None
    victim.kill()
    victim.wait()
    # A compiler of the caller's choosing must never run as root.
    probe_dir = tempfile.mkdtemp(dir=f.root)
    os.chmod(probe_dir, 0o1777)
    marker = os.path.join(probe_dir, "ran-as")
    script = os.path.join(probe_dir, "evil-nvcc")
    with open(script, "w") as out:
        out.write("#!/bin/sh\nid -u >> %s\ncase \"$1\" in --version) echo 'Cuda compilation tools, release 13.0, "
                  "V13.0.48';; --list-gpu-arch) echo compute_90;; esac\nexit 0\n" % marker)
    os.chmod(script, 0o755)
    as_nobody("submit --nvcc (own program)", ["submit", "--arch", "9.0", "--nvcc", script])
    for verb in ("pause", "cancel", "retry"):
        as_nobody(verb, [verb, str(build)])
        actions[verb]["build_state_after"] = (f.build(build) or {}).get("state")
    as_nobody("daemon stop", ["daemon", "stop"])
    time.sleep(1.0)
    alive = f.alive()
    b = f.build(build)
    ran_as = []
    if os.path.exists(marker):
        with open(marker) as m:
            ran_as = sorted({int(x) for x in m.read().split()})
    f.close()
    refused = {k: v["exit"] not in (0, None) for k, v in actions.items() if k in ("pause", "cancel", "retry",
                                                                                    "daemon stop")}
    figures = {"shared_by": how_shared, "actions": actions, "raw": raw, "root_process_alive": victim_alive,
               "fadd_alive_after_stop_attempt": alive, "root_build_state": b["state"] if b else None,
               "client_program_ran_as_uids": ran_as}
    passed = (all(refused.values()) and alive and victim_alive and b is not None and b["state"] == "running"
              and 0 not in ran_as)
    return {"pass": passed, "figures": figures}


def _child():
    """As nobody: open an external build, launch, claim a root process's pid, cancel the build."""
    cfg = json.loads(os.environ["FAULT_CHILD"])
    drop_to_nobody()
    sock = cfg["sock"]
    out = {}
    opened = request(sock, "open_build", {"name": "adopt", "command": "x"})
    out["open_build"] = opened
    bid = opened["result"]["id"] if opened and opened.get("ok") else None
    launch = request(sock, "launch", {"build_id": bid, "session": 777, "cwd": "/tmp",
                                      "argv": ["nvcc", "-c", "/etc/hostname", "-o", "/tmp/x.o"],
                                      "source": "/etc/hostname", "output": "/tmp/x.o", "archs": ["sm_90"]})
    uid = launch["result"]["unit_id"] if launch and launch.get("ok") else None
    for _ in range(200):
        if uid is None:
            break
        p = request(sock, "launch_poll", {"unit_id": uid})
        if p and p.get("ok") and p["result"].get("state") == "admitted":
            break
        time.sleep(0.1)
    out["launch_started_with_root_pid"] = request(sock, "launch_started", {"unit_id": uid, "pid": cfg["victim"]})
    out["cancel_own_build"] = request(sock, "cancel", {"id": bid}) if bid else None
    print(json.dumps(out))


def probe_prune(suite):
    f = Fadd(suite, "prune", [("fwd_a", ""), ("fwd_b", "")])
    ok, why = f.start()
    if not ok:
        return {"pass": False, "notes": ["fadd did not start: " + why]}
    b = f.submit()
    final = f.wait_final(b, 60)
    d = os.path.join(f.state, "builds", str(b))
    existed = os.path.isdir(d)
    code, out, err, _ = f.fad(["prune", "--older-than", "0s", "--json"])
    gone = not os.path.exists(d)
    history = request(f.sock, "history", {"limit": 5})
    rows = history["result"]["builds"] if history and history.get("ok") else []
    f.close()
    db = sqlite3.connect("file:%s?mode=ro" % os.path.join(f.state, "fad.db"), uri=True)
    learned = db.execute("SELECT count(*) FROM unit_history").fetchone()[0]
    db.close()
    figures = {"build": final["state"] if final else None, "prune_exit": code, "dir_existed": existed,
               "dir_removed": gone, "history_rows": len(rows),
               "history_marks_pruned": bool(rows and rows[0].get("pruned_at")), "unit_history_rows": learned}
    passed = existed and gone and code == 0 and figures["history_marks_pruned"] and learned == 2
    return {"pass": passed, "figures": figures}


PROBES = {
    "status_load": probe_status_load,
    "kill9": probe_kill9,
    "stop_start": probe_stop_start,
    "sigstop": probe_sigstop,
    "disk_full": probe_disk_full,
    "databases": probe_databases,
    "fuzz": probe_fuzz,
    "idle_flood": probe_idle_flood,
    "other_user": probe_other_user,
    "prune": probe_prune,
}


def headline(name, res):
    fig = res.get("figures") or {}
    if name == "status_load" and fig:
        return "%d req (%s/s), %d errors, p50 %s ms, p99 %s ms, max %s ms, fadd CPU %s" % (
            fig["requests"], fig["achieved_rps"], fig["errors"], fig["p50_ms"], fig["p99_ms"], fig["max_ms"],
            fig["fadd_cpu_share"])
    if name == "kill9" and fig:
        return "%d/%d restarts at once (p50 %s s, max %s s), integrity %s, %d finished units recompiled" % (
            fig.get("restarts_at_once", 0), fig.get("restarts", 0), fig.get("restart_p50_s"),
            fig.get("restart_max_s"), fig.get("integrity_check"), fig.get("finished_units_recompiled", -1))
    if name == "stop_start" and fig:
        return "%d/%d starts ok, stop p50 %s s, max %s s" % (fig["starts_ok"], fig["rounds"], fig["stop_p50_s"],
                                                           fig["stop_max_s"])
    if name == "sigstop" and fig:
        return "status exit %s in %s s, after SIGCONT %s, submit --wait exit %s" % (
            fig["status_exit"], fig["status_s"], "ok" if fig["answers_after_sigcont"] else "NO ANSWER",
            fig["submit_wait_exit"])
    if name == "disk_full" and fig:
        return "alive %s, answered %s, ghosts %s, after space: %s %s" % (
            fig["fadd_alive_while_full"], fig["status_answered_while_full"], fig["ghost_running_units_max"],
            fig["build_after_space_returned"], fig["units_succeeded"])
    if name == "databases" and fig:
        short = {"foreign_with_application_id": "foreign (app id)", "foreign_without_application_id":
                 "foreign (tables)", "damaged_fad_db": "damaged", "not_sqlite": "not SQLite"}
        return ", ".join("%s: %s, %s" % (short.get(k, k), "refused" if not v["started"] else "ADOPTED",
                                         "unchanged" if v["file_unchanged"] else "MODIFIED") for k, v in fig.items())
    if name == "fuzz" and fig:
        return "%d msgs in %s s: %d crashes, %d stalls, %d no answer" % (
            fig["messages"], fig["seconds"], fig["fadd_crashes"], fig["fadd_stalls"], fig["no_answer_2s"])
    if name == "idle_flood" and fig:
        return "%d idle conns: fad status exit %s in %s s (%s)" % (fig["idle_connections"], fig["fad_status_exit"],
                                                                   fig["fad_status_s"], fig["fad_status_message"][:60])
    if name == "other_user" and fig:
        acts = fig["actions"]
        return "; ".join("%s exit %s" % (k, acts[k]["exit"]) for k in ("pause", "cancel", "retry", "daemon stop")
                         if k in acts) + "; client nvcc ran as %s; root pid alive %s" % (
            fig["client_program_ran_as_uids"] or "-", fig["root_process_alive"])
    if name == "prune" and fig:
        return "dir removed %s, history keeps it %s, unit_history %s" % (fig["dir_removed"],
                                                                          fig["history_marks_pruned"],
                                                                          fig["unit_history_rows"])
    return "; ".join(res.get("notes", []))[:120]


class Suite:
    def __init__(self, args):
        self.args = args
        b = os.path.abspath(args.build)
        self.fadd, self.fad = os.path.join(b, "fadd"), os.path.join(b, "fad")
        self.fake = os.path.join(b, "tests", "fad-fake-nvcc")
        for p in (self.fadd, self.fad, self.fake):
            if not os.access(p, os.X_OK):
                sys.exit("fault_suite: %s is missing; build first (scripts/build.sh)" % p)
        self.workdir = args.workdir or tempfile.mkdtemp(prefix="fad-fault-")
        os.chmod(self.workdir, 0o755)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(REPO, "build"), help="build dir with fadd, fad, tests/fad-fake-nvcc")
    ap.add_argument("--probes", default=",".join(PROBES), help="comma list of " + ", ".join(PROBES))
    ap.add_argument("--workdir", help="scratch dir (kept); default a temp dir, removed")
    ap.add_argument("--json", help="write every figure here (default bench/results/fault_suite-DATE.json)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kill-rounds", type=int, default=100)
    ap.add_argument("--stop-rounds", type=int, default=20)
    ap.add_argument("--fuzz-messages", type=int, default=3000)
    ap.add_argument("--flood", type=int, default=2000)
    ap.add_argument("--load-seconds", type=float, default=20)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("fault_suite: run as root (tmpfs mounts, a second user, cgroups)")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 8192)), hard))
    suite = Suite(args)
    results = {}
    names = [p.strip() for p in args.probes.split(",") if p.strip()]
    for name in names:
        if name not in PROBES:
            sys.exit("fault_suite: unknown probe %r (known: %s)" % (name, ", ".join(PROBES)))
    started = datetime.datetime.now(datetime.timezone.utc)
    for name in names:
        print("== %s" % name, flush=True)
        t0 = time.monotonic()
        try:
            res = PROBES[name](suite)
        except Exception as e:  # a probe that breaks is a result too
            res = {"pass": False, "notes": ["probe error: %r" % (e,)]}
        res["seconds"] = round(time.monotonic() - t0, 1)
        results[name] = res
        verdict = "SKIP" if res["pass"] is None else ("PASS" if res["pass"] else "FAIL")
        print("   %s  %s" % (verdict, headline(name, res)), flush=True)
    print()
    print("%-12s %-5s %s" % ("probe", "", "figures"))
    for name, res in results.items():
        verdict = "SKIP" if res["pass"] is None else ("PASS" if res["pass"] else "FAIL")
        print("%-12s %-5s %s" % (name, verdict, headline(name, res)))
    git = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    doc = {"suite": "fault_suite", "started": started.isoformat(timespec="seconds"),
           "commit": git.stdout.strip(), "host": {"cores": os.cpu_count(), "kernel": os.uname().release},
           "args": vars(args), "results": results}
    out = args.json or os.path.join(REPO, "bench", "results", "fault_suite-%s.json" % started.date().isoformat())
    with open(out, "w") as f:
        json.dump(doc, f, indent=2, default=str)
    print("\nraw figures: %s" % out)
    if not args.workdir:
        subprocess.run(["rm", "-rf", suite.workdir])
    return 0 if all(r["pass"] is not False for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
