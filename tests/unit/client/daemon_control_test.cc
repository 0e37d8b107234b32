// The pure parts of daemon start/stop, and stop against a scripted daemon.
#include <catch2/catch.hpp>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "client/daemon_control.h"
#include "client/exit_codes.h"
#include "client/gpu_archs.h"

using namespace fad::client;
namespace fs = std::filesystem;

TEST_CASE("fadd argv passes the resolved locations, then the user's args") {
  Locations loc{"/run/s.sock", "/st", std::nullopt};
  CHECK(fadd_argv("/bin/fadd", loc, {"--log-level", "debug"}) ==
        std::vector<std::string>{"/bin/fadd", "--socket", "/run/s.sock", "--state-dir", "/st", "--log-file",
                                 "/st/fadd.log", "--log-level", "debug"});
  loc.config = "/c.json";
  auto argv = fadd_argv("/bin/fadd", loc, {});
  CHECK(argv.size() == 9);
  CHECK(argv[5] == "--config");
  CHECK(argv[6] == "/c.json");
  // A log file of the user's own replaces the rotated STATE/fadd.log.
  CHECK(fadd_argv("/bin/fadd", loc, {"--log-file=/l"}) ==
        std::vector<std::string>{"/bin/fadd", "--socket", "/run/s.sock", "--state-dir", "/st", "--config", "/c.json",
                                 "--log-file=/l"});
}

TEST_CASE("the log fad names and reads back is the one fadd writes") {
  Locations loc{"/run/s.sock", "/st", std::nullopt};
  CHECK(fadd_log_path(loc, {}) == "/st/fadd.log");
  CHECK(fadd_log_path(loc, {"--log-level", "debug"}) == "/st/fadd.log");
  CHECK(fadd_log_path(loc, {"--log-file", "/var/log/fadd.log"}) == "/var/log/fadd.log");
  CHECK(fadd_log_path(loc, {"--log-file=/l"}) == "/l");
  CHECK(fadd_log_path(loc, {"--log-file", "own.log"}) == (fs::current_path() / "own.log").string());
}

TEST_CASE("last_lines") {
  CHECK(last_lines("a\nb\nc\n", 2) == "b\nc\n");
  CHECK(last_lines("a\nb\nc", 2) == "b\nc\n");
  CHECK(last_lines("a\nb\n", 5) == "a\nb\n");
  CHECK(last_lines("", 3) == "");
  CHECK(last_lines("only", 1) == "only\n");
}

TEST_CASE("find_fadd prefers the one beside fad, then PATH") {
  fs::path dir = fs::temp_directory_path() / ("fad-client-test-" + std::to_string(::getpid()));
  fs::create_directories(dir / "bin");
  fs::create_directories(dir / "path");
  auto make_exe = [](const fs::path& p) {
    std::ofstream(p) << "#!/bin/sh\n";
    fs::permissions(p, fs::perms::owner_all);
  };
  CHECK_FALSE(find_fadd((dir / "bin" / "fad").string(), (dir / "path").string()));
  make_exe(dir / "path" / "fadd");
  CHECK(find_fadd((dir / "bin" / "fad").string(), "/nonexistent:" + (dir / "path").string()) ==
        (dir / "path" / "fadd").string());
  make_exe(dir / "bin" / "fadd");
  CHECK(find_fadd((dir / "bin" / "fad").string(), (dir / "path").string()) == (dir / "bin" / "fadd").string());
  fs::remove_all(dir);
}

namespace {
// A scripted daemon for stop: answers from a queue, a fake clock advanced by
// its sleeps, and a fake process table and lock.
struct StopScript {
  std::ostringstream out, err;
  std::deque<CallResult> answers;
  std::vector<std::string> types;
  std::chrono::steady_clock::time_point now{};
  int alive_checks_left = 0;   ///< the process exits after this many checks
  int locked_checks_left = 0;  ///< the lock is freed after this many checks
  std::vector<long> pids_checked;
  std::vector<std::string> locks_checked;

  Context context() {
    Context ctx{[this](const fad::Request& r) -> CallResult {
                  types.push_back(r.type);
                  if (answers.empty()) return CallFailure{kExitUnreachable, "gone"};
                  CallResult a = answers.front();
                  answers.pop_front();
                  return a;
                },
                "/s",
                out,
                err,
                [this](std::chrono::milliseconds d) { now += d; },
                nullptr};
    ctx.now = [this] { return now; };
    return ctx;
  }
  DaemonWatch watch() {
    return DaemonWatch{[this](long pid) {
                         pids_checked.push_back(pid);
                         return alive_checks_left-- > 0;
                       },
                       [this](const std::string& lock) {
                         locks_checked.push_back(lock);
                         return locked_checks_left-- > 0;
                       },
                       nullptr,
                       nullptr,
                       nullptr,
                       nullptr,
                       nullptr};
  }
};
fad::Response status_answer(int pid, const std::string& state_dir) {
  return fad::Response{true, {{"daemon", {{"pid", pid}, {"state_dir", state_dir}}}}, fad::ErrorCode::internal, ""};
}
}  // namespace

TEST_CASE("daemon stop: not running and no lock held is fine") {
  StopScript s;
  Context ctx = s.context();
  CHECK(run_daemon_stop(Locations{"/s", "/st", std::nullopt}, ctx, s.watch()) == 0);
  CHECK(s.out.str() == "fadd is not running (nothing answers at /s)\n");
  CHECK(s.locks_checked == std::vector<std::string>{"/st/fadd.lock"});
}

TEST_CASE("daemon stop returns only once the process has exited and the lock is free") {
  StopScript s;
  s.answers = {status_answer(99, "/daemon-state"), fad::Response{}};  // status, shutdown; then nothing answers
  s.alive_checks_left = 3;   // still exiting for a while after the socket closed
  s.locked_checks_left = 5;  // and the lock outlives the check of the pid
  Context ctx = s.context();
  CHECK(run_daemon_stop(Locations{"/s", "/st", std::nullopt}, ctx, s.watch()) == 0);
  CHECK(s.out.str() == "fadd stopped (pid 99)\n");
  CHECK(s.types == std::vector<std::string>{"status", "shutdown"});
  // The lock of the state dir fadd reported, not the client's own idea of it.
  REQUIRE(s.locks_checked.size() == 6);
  CHECK(s.locks_checked.front() == "/daemon-state/fadd.lock");
  CHECK(s.pids_checked.front() == 99);
}

TEST_CASE("daemon stop: a fadd that does not exit is reported after the deadline, exit 1") {
  StopScript s;
  s.answers = {status_answer(99, "/st"), fad::Response{}};
  s.alive_checks_left = 1 << 30;
  s.locked_checks_left = 1 << 30;
  Context ctx = s.context();
  CHECK(run_daemon_stop(Locations{"/s", "/st", std::nullopt}, ctx, s.watch()) == 1);
  CHECK(s.err.str() ==
        "fad: fadd (pid 99) has not exited 60 s after being asked to stop (the process is still running, "
        "/st/fadd.lock is still locked); see /st/fadd.log\n");
  StopScript lock_only;
  lock_only.answers = {status_answer(99, "/st"), fad::Response{}};
  lock_only.locked_checks_left = 1 << 30;
  Context lctx = lock_only.context();
  CHECK(run_daemon_stop(Locations{"/s", "/st", std::nullopt}, lctx, lock_only.watch()) == 1);
  CHECK(s.now >= std::chrono::steady_clock::time_point{} + std::chrono::seconds(60));
  // Exited, and something else holds its lock file: said as that, 5 s on,
  // not 60 s of waiting and "has not exited". Bug found by a probe.
  CHECK(lock_only.err.str() ==
        "fad: fadd (pid 99) has exited, but /st/fadd.lock is still locked by another process ('fuser "
        "/st/fadd.lock' names it); a start fails while it holds on\n");
  CHECK(lock_only.now < std::chrono::steady_clock::time_point{} + std::chrono::seconds(6));
  CHECK(lock_only.now >= std::chrono::steady_clock::time_point{} + std::chrono::seconds(5));
}

TEST_CASE("daemon stop: a fadd gone while another took its lock is stopped, not waited for") {
  // Bug: a restart beside another waited 60 s for "fadd (pid 99)", long
  // gone, because the lock it watched was the new fadd's.
  StopScript s;
  s.answers = {status_answer(99, "/st"), fad::Response{}};
  s.locked_checks_left = 1 << 30;
  Context ctx = s.context();
  DaemonWatch w = s.watch();
  w.alive = [](long pid) { return pid == 120; };
  w.holder = [](const std::string&) { return 120L; };
  CHECK(run_daemon_stop(Locations{"/s", "/st", std::nullopt}, ctx, w) == 0);
  CHECK(s.out.str() == "fadd stopped (pid 99); another fadd (pid 120) has since started on /st\n");
  CHECK(s.now < std::chrono::steady_clock::time_point{} + std::chrono::seconds(1));
}

TEST_CASE("daemon stop: a fadd that goes away mid-request (asked by another stop) is waited for, not an error") {
  // Bug: of four restarts at once, one exited 3 with "lost connection to
  // fadd: Broken pipe": another had asked the same fadd to stop first.
  StopScript s;
  CallFailure lost{kExitUnreachable, "lost connection to fadd at /s: Broken pipe"};
  lost.gone = true;
  s.answers = {status_answer(99, "/st"), lost};
  s.alive_checks_left = 2;
  s.locked_checks_left = 3;
  Context ctx = s.context();
  CHECK(run_daemon_stop(Locations{"/s", "/st", std::nullopt}, ctx, s.watch()) == 0);
  CHECK(s.out.str() == "fadd stopped (pid 99)\n");
  CHECK(s.err.str().empty());
  // Refused, or answered with an error, it is the stop's failure: said, and its code.
  for (const bool busy : {true, false}) {
    StopScript r;
    CallFailure refused{kExitUnreachable, busy ? "fadd is busy" : "permission denied on /s", busy};
    refused.busy = busy;
    r.answers = {status_answer(99, "/st"), refused};
    r.alive_checks_left = 1 << 30;
    r.locked_checks_left = 1 << 30;
    Context rctx = r.context();
    CHECK(run_daemon_stop(Locations{"/s", "/st", std::nullopt}, rctx, r.watch()) == kExitUnreachable);
    CHECK(r.err.str() == "fad: " + refused.message + "\n");
    CHECK(r.now == std::chrono::steady_clock::time_point{});  // not waited for
  }
  StopScript denied;
  denied.answers = {status_answer(99, "/st"),
                    fad::Response{false, {}, fad::ErrorCode::failed, "only root may stop this fadd"}};
  Context dctx = denied.context();
  CHECK(run_daemon_stop(Locations{"/s", "/st", std::nullopt}, dctx, denied.watch()) == 1);
  CHECK(denied.err.str() == "fad: only root may stop this fadd\n");
}

TEST_CASE("daemon stop: a stopped (SIGSTOP) fadd is named as such, with how to continue it") {
  StopScript s;
  s.answers = {status_answer(99, "/st"), fad::Response{}};
  s.alive_checks_left = 1 << 30;
  s.locked_checks_left = 1 << 30;
  Context ctx = s.context();
  DaemonWatch w = s.watch();
  w.stopped = [](long pid) { return pid == 99; };
  CHECK(run_daemon_stop(Locations{"/s", "/st", std::nullopt}, ctx, w) == 1);
  CHECK(s.err.str() ==
        "fad: fadd (pid 99) is stopped (SIGSTOP, or a debugger) and cannot exit until continued: 'kill -CONT 99', "
        "then run this again\n");
}

TEST_CASE("daemon stop: a fadd that no longer answers but holds its lock is waited for") {
  StopScript s;
  s.locked_checks_left = 3;  // the first check (is it there?) and two while waiting
  Context ctx = s.context();
  CHECK(run_daemon_stop(Locations{"/s", "/st", std::nullopt}, ctx, s.watch()) == 0);
  CHECK(s.out.str().find("still holds /st/fadd.lock") != std::string::npos);
  CHECK(s.out.str().find("fadd stopped") != std::string::npos);
  // Nothing to send a shutdown to: only asked, while waiting, whether it answers yet.
  CHECK(std::count(s.types.begin(), s.types.end(), "shutdown") == 0);
}

TEST_CASE("daemon stop: a fadd still starting up (its lock taken, not yet listening) is asked once it answers") {
  // Bug: a stop right after a start, or a restart beside another, found
  // the new fadd's lock before its socket, waited 60 s for that fadd to exit
  // (it never would: nobody had asked it), and failed.
  StopScript s;
  const CallFailure nothing{kExitUnreachable, "nothing listens at /s"};
  s.answers = {nothing, nothing, nothing, status_answer(120, "/st"), fad::Response{}};
  Context ctx = s.context();
  int lock_reads = 0;
  bool asked = false;
  int exit_checks = 3;
  DaemonWatch w = s.watch();
  w.holder = [&](const std::string&) { return ++lock_reads < 2 ? 0L : 120L; };  // the pid comes a moment later
  w.alive = [&](long pid) { return pid == 120 && !(asked && exit_checks-- <= 0); };
  w.locked = [&](const std::string&) { return !(asked && exit_checks <= 0); };
  Context asking = ctx;
  asking.send = [&](const fad::Request& r) {
    asked = asked || r.type == "shutdown";
    return ctx.send(r);
  };
  CHECK(run_daemon_stop(Locations{"/s", "/st", std::nullopt}, asking, w) == 0);
  CHECK(s.types == std::vector<std::string>{"status", "status", "status", "status", "shutdown"});
  CHECK(s.out.str() ==
        "fadd does not answer at /s but still holds /st/fadd.lock (pid ?); waiting for it to exit\n"
        "fadd (pid 120) now answers at /s: asking it to stop\n"
        "fadd stopped (pid 120)\n");
  CHECK(s.err.str().empty());
  CHECK(s.now < std::chrono::steady_clock::time_point{} + std::chrono::seconds(1));
}

namespace {
/// A fadd on /st that holds its lock, alive, up for an hour (not starting):
/// what a start beside a stop or restart finds once the old fadd's socket is
/// closed while its compilers end.
DaemonWatch old_fadd_holding_lock(bool stopping) {
  DaemonWatch w;
  w.alive = [](long pid) { return pid > 0; };
  w.locked = [](const std::string&) { return true; };
  w.holder = [](const std::string&) { return 4242L; };
  w.stopped = [](long) { return false; };
  w.age_s = [](long) { return 3600.0; };
  w.stopping = [stopping](const std::string&) { return stopping; };
  return w;
}
}  // namespace

TEST_CASE("daemon start beside a stop: a fadd that is stopping is waited for, then the fadd answering is taken") {
  // Bug: a start while another shell's stop or restart took down a fadd up
  // for over 15 s (its socket closed, its compilers ending) took the silent
  // lock holder for a stuck one: "serves another socket, or is stopped", exit 1.
  StopScript s;
  const CallFailure nothing{kExitUnreachable, "nothing listens at /s"};
  s.answers.assign(31, nothing);                   // the start's probe, then 30 polls (3 s) while it stops
  s.answers.push_back(status_answer(777, "/st"));  // the restart's new fadd answers, its pid in the lock
  s.answers.push_back(status_answer(777, "/st"));
  Context ctx = s.context();
  DaemonWatch w = old_fadd_holding_lock(true);
  const auto old_one = [&] { return s.now < std::chrono::steady_clock::time_point{} + std::chrono::seconds(3); };
  w.holder = [&](const std::string&) { return old_one() ? 4242L : 777L; };
  w.stopping = [&](const std::string&) { return old_one(); };
  CHECK(run_daemon_start(Command{}, Locations{"/s", "/st", std::nullopt}, ctx, w) == kExitOk);
  CHECK(s.out.str() == "fadd is already running (pid 777; another start got there first)\n");
  CHECK(s.err.str().empty());
  CHECK(s.now == std::chrono::steady_clock::time_point{} + std::chrono::seconds(3));
}

TEST_CASE("daemon start beside a stop: a stopping fadd that does not exit in 60 s is named, exit 1") {
  StopScript s;
  Context ctx = s.context();
  CHECK(run_daemon_start(Command{}, Locations{"/s", "/st", std::nullopt}, ctx, old_fadd_holding_lock(true)) ==
        kExitFailed);
  CHECK(s.err.str() ==
        "fad: fadd (pid 4242) holds state dir /st and is stopping, but has not exited in 60 s; see /st/fadd.log\n");
  CHECK(s.now == std::chrono::steady_clock::time_point{} + std::chrono::seconds(60));
  // One stopped (SIGSTOP) while stopping is named as such, as a stop does.
  StopScript frozen;
  Context fctx = frozen.context();
  DaemonWatch stopped = old_fadd_holding_lock(true);
  stopped.stopped = [](long pid) { return pid == 4242; };
  CHECK(run_daemon_start(Command{}, Locations{"/s", "/st", std::nullopt}, fctx, stopped) == kExitFailed);
  CHECK(frozen.err.str() ==
        "fad: fadd (pid 4242) holds state dir /st and is stopping, but has not exited in 60 s; it is stopped "
        "(SIGSTOP, or a debugger) and cannot exit until continued: 'kill -CONT 4242', then run this again\n");
  // Not stopping: refused at once, as one serving another socket.
  StopScript t;
  Context tctx = t.context();
  CHECK(run_daemon_start(Command{}, Locations{"/s", "/st", std::nullopt}, tctx, old_fadd_holding_lock(false)) ==
        kExitFailed);
  CHECK(t.err.str().find("it serves another socket, or is stopped)") != std::string::npos);
  CHECK(t.now == std::chrono::steady_clock::time_point{});
}

TEST_CASE("daemon start beside a stop: a fadd asked to stop that still answers is waited for, not taken") {
  // Bug: fadd closes its socket at its next tick after a shutdown request; a
  // start in between found it answering, said "fadd is already running",
  // exit 0, and then none ran.
  StopScript s;
  for (int i = 0; i < 21; ++i) s.answers.push_back(status_answer(4242, "/st"));  // 2 s of its stop
  s.answers.assign(s.answers.size() + 3, status_answer(777, "/st"));             // then another start's fadd
  Context ctx = s.context();
  const auto t0 = s.now;
  const auto old_one = [&] { return s.now - t0 < std::chrono::seconds(2); };
  DaemonWatch w = old_fadd_holding_lock(true);
  w.holder = [&](const std::string&) { return old_one() ? 4242L : 777L; };
  w.stopping = [&](const std::string&) { return old_one(); };
  w.age_s = [&](long pid) { return pid == 4242 ? 3600.0 : 0.2; };
  CHECK(run_daemon_start(Command{}, Locations{"/s", "/st", std::nullopt}, ctx, w) == kExitOk);
  CHECK(s.out.str() == "fadd is already running (pid 777; another start got there first)\n");
  CHECK(s.err.str().empty());
  CHECK(s.now - t0 >= std::chrono::seconds(2));
}

TEST_CASE("daemon start, stop and restart at a socket fad refuses or may not use say why at once, exit 3") {
  // Bugs: root's stop of a user's fadd (its socket in that user's directory)
  // took it for one that does not answer, waited 60 s on its lock and never
  // said the socket was refused; a user outside a group socket's group was
  // told by stop that no fadd runs, exit 0.
  for (const char* why : {"refusing to talk to the socket in /d: the directory is writable by others",
                          "permission denied on /s: ask the admin to add you to group g"}) {
    for (int which = 0; which < 3; ++which) {
      INFO(why << ", command " << which);
      StopScript s;
      s.answers.push_back(CallFailure{kExitUnreachable, why, false});
      s.answers.push_back(status_answer(4242, "/st"));
      Context ctx = s.context();
      const Locations at{"/s", "/st", std::nullopt};
      const int rc = which == 0   ? run_daemon_start(Command{}, at, ctx, old_fadd_holding_lock(false))
                     : which == 1 ? run_daemon_stop(at, ctx, old_fadd_holding_lock(false))
                                  : run_daemon_restart(Command{}, at, ctx);
      CHECK(rc == kExitUnreachable);
      CHECK(s.err.str() == "fad: " + std::string(why) + "\n");
      CHECK(s.out.str().empty());
      CHECK(s.types.size() == 1);
      CHECK(s.now == std::chrono::steady_clock::time_point{});
    }
  }
}

TEST_CASE("daemon start beside a lock that says stopping while its fadd goes on answering takes that fadd, in 5 s") {
  // A mark written by hand (or left by a fadd that crashed while stopping
  // and came back on the same pid) must not hold a start for 60 s.
  StopScript s;
  s.answers.assign(200, status_answer(4242, "/st"));
  Context ctx = s.context();
  CHECK(run_daemon_start(Command{}, Locations{"/s", "/st", std::nullopt}, ctx, old_fadd_holding_lock(true)) == kExitOk);
  CHECK(s.out.str() == "fadd is already running (pid 4242)\n");
  CHECK(s.err.str().empty());
  CHECK(s.now - std::chrono::steady_clock::time_point{} >= std::chrono::seconds(5));
  CHECK(s.now - std::chrono::steady_clock::time_point{} < std::chrono::seconds(6));
}

TEST_CASE("daemon start reads a stopping fadd's mark from its lock file") {
  char tmpl[] = "/tmp/fad-stopping-XXXXXX";
  REQUIRE(::mkdtemp(tmpl));
  const std::string lock = std::string(tmpl) + "/fadd.lock";
  const DaemonWatch w = real_daemon_watch();
  std::ofstream(lock) << "4242\n";
  CHECK_FALSE(w.stopping(lock));
  std::ofstream(lock) << "4242\nstopping\n";
  CHECK(w.stopping(lock));
  CHECK(w.holder(lock) == 4242);
  fs::remove_all(tmpl);
  CHECK_FALSE(w.stopping(lock));
}

TEST_CASE("daemon start beside another start: a lock whose pid is not written yet is a fadd starting, waited for") {
  // Bug: the lock read between another start's fadd taking it and writing
  // its pid counted as let go; five such rounds in as many milliseconds, and
  // "another fadd (pid ?) holds state dir", exit 1.
  StopScript s;
  const CallFailure nothing{kExitUnreachable, "nothing listens at /s"};
  s.answers.assign(12, nothing);  // past five rounds of a probe and a poll each
  s.answers.push_back(status_answer(778, "/st"));
  s.answers.push_back(status_answer(778, "/st"));
  Context ctx = s.context();
  DaemonWatch w = old_fadd_holding_lock(false);
  int reads = 0;
  w.holder = [&](const std::string&) { return ++reads <= 4 ? 0L : 778L; };
  w.age_s = [](long) { return 0.2; };
  CHECK(run_daemon_start(Command{}, Locations{"/s", "/st", std::nullopt}, ctx, w) == kExitOk);
  CHECK(s.out.str() == "fadd is already running (pid 778; another start got there first)\n");
  CHECK(s.err.str().empty());
}

TEST_CASE("daemon stop: a fadd that answers at no named socket and keeps its lock was not asked, and is not said to") {
  // Bug: "has not exited 60 s after being asked to stop", though nothing was
  // sent: the fadd holding the state dir served another socket.
  StopScript s;
  s.locked_checks_left = 1 << 30;
  Context ctx = s.context();
  Locations named{"/s", "/st", std::nullopt, true};
  named.socket_named = true;
  CHECK(run_daemon_stop(named, ctx, s.watch()) == 1);
  CHECK(std::count(s.types.begin(), s.types.end(), "shutdown") == 0);
  CHECK_THAT(s.err.str(), Catch::StartsWith("fad: fadd (pid ") &&
                              Catch::Contains("has not exited in 60 s (/st/fadd.lock is still locked) and does not "
                                              "answer at /s: if it serves another socket, name that one with "
                                              "--socket; see /st/fadd.log") &&
                              !Catch::Contains("asked"));
}

TEST_CASE("daemon start --state-dir DIR is no success while the fadd at the socket keeps another state dir") {
  // Bug: "fadd is already running", exit 0, and the user believed DIR in use.
  StopScript s;
  s.answers = {status_answer(99, "/other")};
  Context ctx = s.context();
  Locations named{"/s", "/st", std::nullopt, true};
  CHECK(run_daemon_start(Command{}, named, ctx) == 1);
  CHECK(s.err.str() ==
        "fad: the fadd at /s (pid 99) uses state dir /other, not /st; give a second fadd its own socket with "
        "--socket\n");
  StopScript same;  // the same one: already running, fine
  same.answers = {status_answer(99, "/st/")};
  Context sctx = same.context();
  CHECK(run_daemon_start(Command{}, named, sctx) == 0);
  CHECK(same.out.str() == "fadd is already running (pid 99)\n");
}

TEST_CASE("daemon start on a state dir a fadd at another socket holds says so, and leaves its fadd.out alone") {
  // Bug: fadd refused to start, but fad had emptied the running fadd's
  // fadd.out (its crash report) first.
  char tmpl[] = "/tmp/fad-start-lock-XXXXXX";
  REQUIRE(::mkdtemp(tmpl));
  const std::string dir = tmpl;
  std::ofstream(dir + "/fadd.out") << "what the running fadd printed\n";
  std::ofstream(dir + "/fadd.lock") << ::getpid() << "\n";
  const int held = ::open((dir + "/fadd.lock").c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(held >= 0);
  REQUIRE(::flock(held, LOCK_EX | LOCK_NB) == 0);  // as the running fadd holds it
  StopScript s;
  Context ctx = s.context();
  CHECK(run_daemon_start(Command{}, Locations{"/s", dir, std::nullopt}, ctx) == kExitFailed);
  CHECK(s.err.str() == "fad: another fadd (pid " + std::to_string(::getpid()) + ") holds state dir " + dir +
                           " but does not answer at /s (nothing is at that path: if its socket was deleted, fadd "
                           "makes it again within 10 s; or it serves another socket, or is stopped); stop it first, "
                           "or give this one its own --state-dir\n");
  // A socket file there that nothing answers at.
  StopScript dead;
  Context dctx = dead.context();
  dctx.socket = dir + "/fadd.out";
  CHECK(run_daemon_start(Command{}, Locations{dctx.socket, dir, std::nullopt}, dctx) == kExitFailed);
  CHECK_THAT(dead.err.str(), Catch::EndsWith(" but does not answer at " + dctx.socket +
                                             " (it serves another socket, or is stopped); stop it first, or give this "
                                             "one its own --state-dir\n"));
  std::ifstream out(dir + "/fadd.out");
  std::string line;
  std::getline(out, line);
  CHECK(line == "what the running fadd printed");
  // One that wrote the socket it listens at is named with it.
  std::ofstream(dir + "/fadd.lock") << ::getpid() << "\nsocket /elsewhere.sock\n";
  StopScript told;
  Context tctx = told.context();
  CHECK(run_daemon_start(Command{}, Locations{"/s", dir, std::nullopt}, tctx) == kExitFailed);
  CHECK_THAT(told.err.str(), Catch::EndsWith(" but does not answer at /s (it listens at /elsewhere.sock); stop it "
                                             "first, or give this one its own --state-dir\n"));
  ::close(held);
  // Its lock file deleted (a cleaner of old files): the directory's lock still tells.
  std::filesystem::remove(dir + "/fadd.lock");
  const int dir_held = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(::flock(dir_held, LOCK_EX | LOCK_NB) == 0);
  StopScript again;
  Context actx = again.context();
  CHECK(run_daemon_start(Command{}, Locations{"/s", dir, std::nullopt}, actx) == kExitFailed);
  CHECK(again.err.str().find("holds state dir " + dir) != std::string::npos);
  ::close(dir_held);
  std::filesystem::remove_all(dir);
}

TEST_CASE("daemon stop --socket S with nothing there does not wait on the default state dir's fadd") {
  // Bug: a mistyped --socket waited 60 s for the fadd holding the default
  // state dir's lock (which serves another socket), then said it had not
  // exited after being asked to stop, though nothing had asked it.
  StopScript s;
  s.locked_checks_left = 1 << 30;
  Context ctx = s.context();
  Locations socket_only{"/s", "/st", std::nullopt};
  socket_only.socket_named = true;
  CHECK(run_daemon_stop(socket_only, ctx, s.watch()) == 0);
  CHECK_THAT(s.out.str(), Catch::StartsWith("fadd is not running at /s (nothing answers there); the fadd "
                                            "holding /st/fadd.lock"));
  CHECK(s.err.str().empty());
  CHECK(s.now == std::chrono::steady_clock::time_point{});  // no waiting
  CHECK(s.types == std::vector<std::string>{"status"});

  StopScript both;  // --state-dir too: the user means that fadd, on its way out
  both.locked_checks_left = 3;
  Context bctx = both.context();
  Locations named{"/s", "/st", std::nullopt, true, true};
  CHECK(run_daemon_stop(named, bctx, both.watch()) == 0);
  CHECK(both.out.str().find("fadd stopped") != std::string::npos);
}

TEST_CASE("daemon stop: the fadd holding the named state dir that listens at another socket is named at once") {
  // Bug: a mistyped socket with the right state dir waited 60 s for a fadd
  // nobody had asked to stop, then said it had not exited.
  Locations named{"/s", "/st", std::nullopt, true, true};
  StopScript s;
  s.locked_checks_left = 1 << 30;
  s.alive_checks_left = 1 << 30;
  Context ctx = s.context();
  DaemonWatch w = s.watch();
  w.holder = [](const std::string&) { return 77L; };
  w.serving = [](const std::string&) { return std::string("/run/fad/real.sock"); };
  CHECK(run_daemon_stop(named, ctx, w) == kExitFailed);
  CHECK(s.err.str() ==
        "fad: the fadd holding /st/fadd.lock (pid 77) listens at /run/fad/real.sock, not /s; to stop it: fad daemon "
        "stop --socket /run/fad/real.sock\n");
  CHECK(s.now == std::chrono::steady_clock::time_point{});  // no waiting
  CHECK(s.types == std::vector<std::string>{"status"});

  // What the lock file says is shown printable, the command quoted to paste.
  StopScript odd;
  odd.locked_checks_left = 1 << 30;
  odd.alive_checks_left = 1 << 30;
  Context octx = odd.context();
  DaemonWatch ow = odd.watch();
  ow.serving = [](const std::string&) { return std::string("/tmp/sp ace/\x1b]0;x\a.sock"); };
  CHECK(run_daemon_stop(named, octx, ow) == kExitFailed);
  CHECK_THAT(odd.err.str(), Catch::EndsWith("listens at /tmp/sp ace/?]0;x?.sock, not /s; to stop it: fad daemon stop "
                                            "--socket '/tmp/sp ace/?]0;x?.sock'\n"));

  // The same socket through a linked directory (/var/run and /run), even
  // while the socket itself is missing (fadd makes it again): not another.
  char tmpl[] = "/tmp/fad-sock-spelling-XXXXXX";
  REQUIRE(::mkdtemp(tmpl));
  const std::string top = tmpl;
  std::filesystem::create_directory(top + "/real");
  std::filesystem::create_directory_symlink(top + "/real", top + "/link");
  StopScript alias;
  alias.locked_checks_left = 3;
  Context actx = alias.context();
  actx.socket = top + "/real/f.sock";
  DaemonWatch aw = alias.watch();
  aw.serving = [&](const std::string&) { return top + "/link/f.sock"; };
  CHECK(run_daemon_stop(Locations{actx.socket, "/st", std::nullopt, true, true}, actx, aw) == kExitOk);
  CHECK(alias.err.str().empty());
  std::filesystem::remove_all(top);

  // Listening at the socket named (it stopped answering), or stopping: waited for, as before.
  for (const bool stopping : {false, true}) {
    StopScript wait;
    wait.locked_checks_left = 3;
    Context wctx = wait.context();
    DaemonWatch ww = wait.watch();
    ww.serving = [stopping](const std::string&) { return std::string(stopping ? "/run/fad/real.sock" : "/s/../s"); };
    ww.stopping = [stopping](const std::string&) { return stopping; };
    CHECK(run_daemon_stop(named, wctx, ww) == kExitOk);
    CHECK(wait.out.str().find("fadd stopped") != std::string::npos);
    CHECK(wait.err.str().empty());
  }
}

TEST_CASE("daemon stop --state-dir DIR does not stop a fadd of another state dir at the socket") {
  StopScript s;
  s.answers = {status_answer(99, "/other"), fad::Response{}};
  Context ctx = s.context();
  Locations named{"/s", "/st", std::nullopt, true};
  CHECK(run_daemon_stop(named, ctx, s.watch()) == 1);
  CHECK(s.err.str() ==
        "fad: the fadd at /s uses state dir /other, not /st; name the socket of the one to stop with --socket\n");
  CHECK(s.types == std::vector<std::string>{"status"});  // no shutdown sent

  StopScript same;  // the same directory spelled another way is the same fadd
  same.answers = {status_answer(99, "/st/"), fad::Response{}};
  Context sctx = same.context();
  CHECK(run_daemon_stop(named, sctx, same.watch()) == 0);
  CHECK(same.types == std::vector<std::string>{"status", "shutdown"});

  StopScript unnamed;  // without --state-dir, the socket decides (a system fadd's own state dir)
  unnamed.answers = {status_answer(99, "/other"), fad::Response{}};
  Context uctx = unnamed.context();
  CHECK(run_daemon_stop(Locations{"/s", "/st", std::nullopt}, uctx, unnamed.watch()) == 0);
  CHECK(unnamed.types == std::vector<std::string>{"status", "shutdown"});

  StopScript elsewhere;  // nothing at the socket, but the named state dir is locked
  elsewhere.locked_checks_left = 2;
  Context ectx = elsewhere.context();
  CHECK(run_daemon_stop(named, ectx, elsewhere.watch()) == 0);
  CHECK(elsewhere.out.str().find("(if it serves another socket, name it with --socket)") != std::string::npos);
}

TEST_CASE("nvidia-smi compute capabilities") {
  auto archs = parse_compute_caps("9.0\n9.0\n12.0\r\n\n");
  REQUIRE(archs.ok());
  REQUIRE(archs->size() == 2);
  CHECK((*archs)[0].display() == "9.0");
  CHECK((*archs)[1].display() == "12.0");
  CHECK_FALSE(parse_compute_caps("").ok());
  CHECK_FALSE(parse_compute_caps("No devices were found\n").ok());
}
