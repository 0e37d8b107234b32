// The service lifecycle with the real binaries: `fad daemon stop` returns only
// once fadd has exited and released its state dir (so a start right after it
// works, every time), `fad daemon restart`, `fad submit --wait` riding out a
// daemon restart, systemd readiness, a root fadd's OOM score, starting without
// a config file, and fadd.log rotation under `fad daemon start`.
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <poll.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "harness.h"

using namespace fad::test;

namespace {

std::vector<FakeUnit> units(int n, const char* fake) {
  std::vector<FakeUnit> out;
  for (int i = 0; i < n; ++i) out.push_back({"fwd_u" + std::to_string(i), fake});
  return out;
}

/// No such process, or only its zombie (fadd detached; whoever adopted it may be slow to reap).
bool process_gone(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  const auto paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

/// A fadd run the way users run it without systemd: `fad daemon start` (it
/// detaches, so it is not the test's child). Stopped, or killed, at the end.
class BackgroundDaemon {
 public:
  explicit BackgroundDaemon(Daemon& d) : d_(d) {}
  ~BackgroundDaemon() {
    fad({"daemon", "stop"}, 90);
    const long pid = lock_pid();
    if (pid <= 0 || process_gone(pid)) return;
    std::ifstream cmdline("/proc/" + std::to_string(pid) + "/cmdline");
    std::string program;
    std::getline(cmdline, program, '\0');
    if (program == FAD_FADD_BIN) ::kill(static_cast<pid_t>(pid), SIGKILL);
  }
  std::map<std::string, std::string> env() const {
    return {{"FAD_SOCKET", d_.socket()},
            {"FAD_STATE_DIR", d_.state_dir()},
            {"FAD_CONFIG", (d_.dir() / "test-config.json").string()},
            {"FAD_FAKE_LOG", d_.fake_log_path()}};
  }
  CommandResult fad(std::vector<std::string> args, int timeout_s = 120) const {
    args.insert(args.begin(), FAD_FAD_BIN);
    return run(args, env(), timeout_s);
  }
  std::vector<std::string> fadd_args() const {
    return {"--", "--kernels-dir", d_.kernels_dir(), "--nvcc", FAD_FAKE_NVCC_BIN};
  }
  CommandResult start() const {
    std::vector<std::string> args = {"daemon", "start"};
    for (const auto& a : fadd_args()) args.push_back(a);
    return fad(args);
  }
  long lock_pid() const {
    std::ifstream in(d_.state_dir() + "/fadd.lock");
    long pid = 0;
    return in >> pid ? pid : 0;
  }
  json status() const { return json::parse(fad({"status", "--json"}).out); }

 private:
  Daemon& d_;
};

int running_units(const json& status) {
  int n = 0;
  for (const auto& b : status.at("builds")) n += b.at("units").at("running").get<int>();
  return n;
}

}  // namespace

TEST_CASE("daemon stop, then start, with units running: the start succeeds every time", "[integration][lifecycle]") {
  Daemon d;
  d.write_kernels(units(4, "peak_mb=5 duration_s=60"));
  BackgroundDaemon bg(d);
  auto started = bg.start();
  REQUIRE(started.exit_code == 0);
  const auto submitted = bg.fad({"submit", "--arch", "9.0", "--json"});
  REQUIRE(submitted.exit_code == 0);
  for (int round = 0; round < 8; ++round) {
    INFO("round " << round);
    REQUIRE(wait_for([&] { return running_units(bg.status()) >= 1; }, std::chrono::seconds(30)));
    const long pid = bg.lock_pid();
    auto stop = bg.fad({"daemon", "stop"});
    REQUIRE(stop.exit_code == 0);
    CHECK(stop.out.find("fadd stopped (pid " + std::to_string(pid) + ")") != std::string::npos);
    // Stopped means gone: the process and its lock, at the moment stop returns.
    CHECK(process_gone(pid));
    auto again = bg.start();
    INFO(again.out << again.err);
    REQUIRE(again.exit_code == 0);
    CHECK(again.out.find("fadd started") != std::string::npos);
  }
  // The build was requeued, never lost.
  CHECK(bg.status().at("builds").at(0).at("units").at("total") == 5);
}

TEST_CASE("daemon start passes on fadd's usage error as exit 2, and a startup failure with fadd's last lines",
          "[integration][lifecycle]") {
  Daemon d;
  d.write_kernels({});
  BackgroundDaemon bg(d);
  auto bad = bg.fad({"daemon", "start", "--", "--no-such-flag"});
  INFO(bad.err);
  CHECK(bad.exit_code == 2);
  CHECK(bad.err == "fad: fadd would not start: unknown option --no-such-flag (see 'fadd --help')\n");
  CHECK_FALSE(fs::exists(d.state_dir()));  // asked first: nothing made for a fadd that would not start
  // What only the start finds (a database that is not fad's) is reported
  // with the lines fadd wrote before it exited.
  fs::create_directories(d.state_dir());
  fs::permissions(d.state_dir(), fs::perms::owner_all, fs::perm_options::replace);
  std::ofstream(d.state_dir() + "/fad.db") << "not a database, and not empty\n";
  // fadd.out, emptied at each start, as a second name of another file: that
  // file is left alone (O_TRUNC emptied it).
  const auto precious = d.dir() / "precious.txt";
  std::ofstream(precious) << "precious\n";
  fs::create_hard_link(precious, d.state_dir() + "/fadd.out");
  auto refused = bg.start();
  CHECK(slurp_file(precious) == "precious\n");
  INFO(refused.err);
  CHECK(refused.exit_code == 1);
  CHECK(refused.err.find("fadd exited during startup (status 1)") != std::string::npos);
  CHECK(refused.err.find("is not an SQLite database") != std::string::npos);
}

TEST_CASE("daemon restart and start check new arguments first: a bad one leaves the running fadd running",
          "[integration][lifecycle]") {
  Daemon d;
  d.write_kernels({});
  BackgroundDaemon bg(d);
  REQUIRE(bg.start().exit_code == 0);
  const long first = bg.lock_pid();
  auto with = [&](const std::string& verb, std::vector<std::string> extra) {
    std::vector<std::string> args = {"daemon", verb};
    for (const auto& a : bg.fadd_args()) args.push_back(a);
    args.insert(args.end(), extra.begin(), extra.end());
    return bg.fad(args);
  };
  // A typo once stopped fadd, then failed to start the new one: no daemon.
  auto bad = with("restart", {"--cores", "0"});
  INFO(bad.out << bad.err);
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("fad: a new fadd would not start: --cores: expected a whole number") == 0);
  CHECK(bad.err.find("fadd (pid " + std::to_string(first) + ") keeps running") != std::string::npos);
  CHECK(bad.out.find("stopped") == std::string::npos);
  CHECK(bg.lock_pid() == first);
  CHECK(bg.fad({"status"}).exit_code == 0);
  // The check's own flag never shows: the start would say "needs a value".
  auto missing = with("restart", {"--cores"});
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("--cores: needs a value") != std::string::npos);
  CHECK(missing.err.find("--check") == std::string::npos);
  // A log file fadd could not write is not a usage error, and stops nothing either.
  auto unwritable = with("restart", {"--log-file", "/proc/fad-no-such-dir/fadd.log"});
  INFO(unwritable.err);
  CHECK(unwritable.exit_code == 1);
  CHECK(unwritable.err.find("a new fadd would not start") != std::string::npos);
  CHECK(bg.lock_pid() == first);
  // Start while running: bad arguments are said, good ones said not to apply.
  auto bad_start = with("start", {"--bogus"});
  CHECK(bad_start.exit_code == 2);
  CHECK(bad_start.err.find("unknown option --bogus") != std::string::npos);
  CHECK(bad_start.err.find("keeps running as it was") != std::string::npos);
  auto good_start = with("start", {"--cores", "1"});
  CHECK(good_start.exit_code == 0);
  CHECK(good_start.out.find("already running (pid " + std::to_string(first) +
                            "); the arguments after -- apply at a start") != std::string::npos);
  CHECK(bg.lock_pid() == first);
}

TEST_CASE("fad doctor checks the compiler the running fadd builds with, not the one on PATH",
          "[integration][lifecycle]") {
  Daemon d;
  d.write_kernels({});
  d.start();
  auto doctor = run({FAD_FAD_BIN, "doctor", "--json"}, {{"FAD_SOCKET", d.socket()}, {"FAD_STATE_DIR", d.state_dir()}});
  INFO(doctor.out << doctor.err);
  const json findings = json::parse(doctor.out).at("findings");
  REQUIRE(findings.at(0).at("name") == "nvcc");
  CHECK(findings.at(0).at("detail").get<std::string>().rfind(std::string(FAD_FAKE_NVCC_BIN) + ", CUDA ", 0) == 0);
  CHECK(findings.at(0).at("detail").get<std::string>().find("fadd's default compiler") != std::string::npos);
  CHECK(d.status_all().at("daemon").at("nvcc") == FAD_FAKE_NVCC_BIN);
}

TEST_CASE("daemon restart: a new fadd with the same state, the build goes on", "[integration][lifecycle]") {
  Daemon d;
  d.write_kernels(units(2, "peak_mb=5 duration_s=1"));
  BackgroundDaemon bg(d);
  REQUIRE(bg.start().exit_code == 0);
  const long first = bg.lock_pid();
  const auto id = json::parse(bg.fad({"submit", "--arch", "9.0", "--json"}).out).at("id").get<int>();
  std::vector<std::string> args = {"daemon", "restart"};
  for (const auto& a : bg.fadd_args()) args.push_back(a);
  auto restarted = bg.fad(args);
  INFO(restarted.out << restarted.err);
  REQUIRE(restarted.exit_code == 0);
  CHECK(restarted.out.find("fadd stopped (pid " + std::to_string(first) + ")") != std::string::npos);
  CHECK(restarted.out.find("fadd started") != std::string::npos);
  CHECK(bg.lock_pid() != first);
  // Restarted without naming its state dir, it keeps the running one's: on
  // the default (here under HOME), it came back with none of its builds.
  const auto home = d.dir() / "home";
  fs::create_directories(home);
  auto env = bg.env();
  env.erase("FAD_STATE_DIR");
  env["HOME"] = home.string();
  env["XDG_STATE_HOME"] = (home / "state").string();
  std::vector<std::string> unnamed = {FAD_FAD_BIN, "daemon", "restart"};
  for (const auto& a : bg.fadd_args()) unnamed.push_back(a);
  auto kept = run(unnamed, env);
  INFO(kept.out << kept.err);
  REQUIRE(kept.exit_code == 0);
  CHECK(kept.out.find("log " + d.state_dir() + "/fadd.log") != std::string::npos);
  CHECK_FALSE(fs::exists(home / "state" / "fad"));
  CHECK(bg.fad({"status", std::to_string(id), "--json"}).exit_code == 0);  // it still knows the build
  auto waited = bg.fad({"submit", "--arch", "9.0", "--wait"});
  CHECK(waited.exit_code == 0);
  json b;
  REQUIRE(wait_for(
      [&] {
        b = json::parse(bg.fad({"status", std::to_string(id), "--json"}).out).at("builds").at(0);
        return b.at("state") == "succeeded";
      },
      std::chrono::seconds(60)));
}

TEST_CASE("four daemon starts, then four restarts, at once on one state dir: each exits 0, and one fadd serves",
          "[integration][lifecycle]") {
  Daemon d;
  d.write_kernels({});
  BackgroundDaemon bg(d);
  // Each command at once, as from four terminals (or `apart` from each
  // other: a later restart then stops the fadd an earlier one started, as the
  // earlier ones wait for it); what each said.
  int round = 0;
  auto at_once = [&](const std::string& verb, std::chrono::milliseconds apart = {}) {
    std::vector<pid_t> pids;
    std::vector<fs::path> outs;
    ++round;
    for (int i = 0; i < 4; ++i) {
      std::vector<std::string> argv = {FAD_FAD_BIN, "daemon", verb};
      for (const auto& a : bg.fadd_args()) argv.push_back(a);
      outs.push_back(d.dir() / (verb + std::to_string(round) + "-" + std::to_string(i) + ".out"));
      pids.push_back(start_process(argv, bg.env(), outs.back(), outs.back()));
      std::this_thread::sleep_for(apart);
    }
    std::vector<std::string> said;
    for (int i = 0; i < 4; ++i) {
      const int code = wait_process(pids[i], 120);
      said.push_back(slurp_file(outs[i]));
      INFO(said.back());
      CHECK(code == 0);
      CHECK(said.back().find("fad:") == std::string::npos);  // no error, nor fadd's log tail
    }
    return said;
  };
  auto count = [](const std::vector<std::string>& said, const std::string& text) {
    int n = 0;
    for (const auto& s : said) n += s.find(text) != std::string::npos;
    return n;
  };
  const auto starts = at_once("start");
  // One fadd started; the others found it, or lost the state dir to it by moments.
  CHECK(count(starts, "fadd started (pid ") == 1);
  CHECK(count(starts, "fadd is already running (pid ") == 3);
  const long first = bg.lock_pid();
  REQUIRE(first > 0);
  for (const auto& s : starts)
    if (s.find("already running") != std::string::npos)
      CHECK(s.find("(pid " + std::to_string(first)) != std::string::npos);

  // No fadd left over: only the one holding the lock runs this state dir.
  auto fadds = [&] {
    int n = 0;
    for (const auto& e : fs::directory_iterator("/proc")) {
      const std::string name = e.path().filename();
      if (name.find_first_not_of("0123456789") != std::string::npos || process_gone(std::stol(name))) continue;
      std::ifstream cmdline(e.path() / "cmdline");
      std::string arg;
      bool ours = false;
      for (bool program = true; std::getline(cmdline, arg, '\0'); program = false) {
        if (program && arg != FAD_FADD_BIN) break;
        ours = ours || arg == d.state_dir();
      }
      n += ours;
    }
    return n;
  };
  long before = first;
  // At once, then 150 ms apart: a later restart then stops the fadd an
  // earlier one started, and may find it holding the lock before it listens.
  for (const auto apart : {std::chrono::milliseconds(0), std::chrono::milliseconds(150)}) {
    INFO("restarts " << apart.count() << " ms apart");
    const auto restarts = at_once("restart", apart);
    CHECK(count(restarts, "fadd started (pid ") >= 1);
    const long last = bg.lock_pid();
    CHECK(last != before);
    CHECK(process_gone(before));
    CHECK(bg.status().at("daemon").at("pid").get<long>() == last);
    CHECK(fadds() == 1);
    before = last;
  }
}

TEST_CASE("submit --wait survives a kill -9 and restart of fadd and exits with the build's result",
          "[integration][lifecycle]") {
  Daemon d;
  d.write_kernels(units(4, "peak_mb=5 duration_s=1.5"));
  d.start();
  const auto out = d.dir() / "wait.out", err = d.dir() / "wait.err";
  const pid_t waiter = start_process({FAD_FAD_BIN, "submit", "--arch", "9.0", "--wait"},
                                     {{"FAD_SOCKET", d.socket()}, {"FAD_STATE_DIR", d.state_dir()}}, out, err);
  REQUIRE(waiter > 0);
  REQUIRE(wait_for([&] { return d.fake_log().size() >= 1; }, std::chrono::seconds(30)));
  d.kill9();
  // Down for a while: the waiter must keep trying, not give up.
  REQUIRE(wait_for([&] { return slurp_file(err).find("lost contact with fadd") != std::string::npos; },
                   std::chrono::seconds(10)));
  CHECK_FALSE(poll_process(waiter).has_value());
  d.start();
  const int code = wait_process(waiter, 120);
  INFO(slurp_file(out) << slurp_file(err));
  CHECK(code == 0);
  CHECK(slurp_file(out).find("succeeded") != std::string::npos);
  CHECK(slurp_file(err).find("fadd answers again") != std::string::npos);
}

TEST_CASE("SIGSTOP: clients time out with exit 3 and say why, and after SIGCONT all is well",
          "[integration][lifecycle]") {
  Daemon d;
  d.write_kernels(units(1, ""));
  d.start();
  REQUIRE(::kill(d.pid(), SIGSTOP) == 0);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run({FAD_FAD_BIN, "status"}, {{"FAD_SOCKET", d.socket()}, {"FAD_TIMEOUT", "2"}}, 60);
  const auto took = std::chrono::steady_clock::now() - t0;
  ::kill(d.pid(), SIGCONT);
  CHECK(r.exit_code == 3);
  CHECK(r.err ==
        "fad: fadd at " + d.socket() + " did not answer within 2 s (is it stopped, e.g. by SIGSTOP, or overloaded?)\n");
  CHECK(took < std::chrono::seconds(10));
  auto after = d.fad({"status"});
  CHECK(after.exit_code == 0);
  CHECK(d.wait_final(d.submit({"--arch", "9.0"}), 60).at("state") == "succeeded");
}

TEST_CASE("systemd: fadd sends READY=1 once its socket answers, STOPPING=1 on SIGTERM", "[integration][lifecycle]") {
  Daemon d;
  d.write_kernels(units(1, ""));
  const std::string notify = (d.dir() / "notify").string();
  const int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", notify.c_str());
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  auto receive = [&] {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 30000) != 1) return std::string("(none)");
    char buf[1024];
    const auto n = ::recv(fd, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string("(error)");
  };
  d.start({}, {{"NOTIFY_SOCKET", notify}});
  const std::string ready = receive();
  CHECK(ready.rfind("READY=1\n", 0) == 0);
  CHECK(ready.find("MAINPID=" + std::to_string(d.pid())) != std::string::npos);
  // Compilers do not inherit the notify socket.
  const auto id = d.submit({"--arch", "9.0"});
  CHECK(d.wait_final(id, 60).at("state") == "succeeded");
  CHECK(d.terminate() == 0);
  CHECK(receive() == "STOPPING=1");
  ::close(fd);
}

TEST_CASE("a root fadd started by hand takes its unit's OOM score, unless one was chosen for it",
          "[integration][lifecycle]") {
  if (::geteuid() != 0) {
    WARN("SKIP: only root may lower its OOM score; the test did not run");
    return;
  }
  const auto score_of = [](const std::string& pid) {
    int score = 0;
    std::ifstream("/proc/" + pid + "/oom_score_adj") >> score;
    return score;
  };
  const int inherited = score_of("self");
  // A container's root may not lower it: the test asks the kernel first.
  const bool may_lower = run({"/bin/sh", "-c", "echo -500 > /proc/self/oom_score_adj"}).exit_code == 0;
  {
    Daemon d;
    d.write_kernels(units(1, ""));
    d.start();
    const bool lowers = inherited == 0 && may_lower;
    CHECK(score_of(std::to_string(d.pid())) == (lowers ? -500 : inherited));
    const bool noted =
        d.daemon_log().find("fadd keeps oom_score_adj 0: this root may not lower it to -500") != std::string::npos;
    CHECK(noted == (inherited == 0 && !may_lower));
  }
  Daemon d;
  d.write_kernels(units(1, ""));
  d.set_wrapper({"/bin/sh", "-c", "echo 100 > /proc/self/oom_score_adj && exec \"$@\"", "sh"});
  d.start();
  CHECK(score_of(std::to_string(d.pid())) == 100);
}

TEST_CASE("fadd starts on the defaults when no config file exists", "[integration][lifecycle]") {
  TempDir home;
  const auto state = home.path() / "state", sock = home.path() / "fad.sock";
  const pid_t pid = start_process({FAD_FADD_BIN, "--state-dir", state.string(), "--socket", sock.string()},
                                  {{"HOME", home.path().string()}, {"XDG_CONFIG_HOME", (home.path() / "cfg").string()}},
                                  home.path() / "out", home.path() / "out");
  REQUIRE(pid > 0);
  const bool up = wait_for(
      [&] {
        return run({FAD_FAD_BIN, "status"}, {{"FAD_SOCKET", sock.string()}}).exit_code == 0;
      },
      std::chrono::seconds(30));
  ::kill(pid, SIGTERM);
  CHECK(wait_process(pid, 60) == 0);
  INFO(slurp_file(home.path() / "out"));
  CHECK(up);
}

TEST_CASE("daemon start logs to a rotated fadd.log, private to fadd's user, and fadd.out stays small",
          "[integration][lifecycle]") {
  // The log names every user's builds and commands; under a shell's 022 the
  // first fadd.log was once 0644, its rotations 0600.
  struct Umask {
    mode_t before = ::umask(022);
    ~Umask() { ::umask(before); }
  } shell_like;
  Daemon d;
  d.write_kernels(units(10, ""));
  std::ofstream(d.dir() / "test-config.json")
      << R"({"poll_interval_ms": 100, "log_max_size": "4K", "log_max_files": 2, "cache_size": 0})";  // every build
                                                                                                     // compiles
  BackgroundDaemon bg(d);
  REQUIRE(bg.start().exit_code == 0);
  auto private_to_fadd = [](const fs::path& p) {
    return (fs::status(p).permissions() & (fs::perms::group_all | fs::perms::others_all)) == fs::perms::none;
  };
  CHECK(private_to_fadd(fs::path(d.state_dir()) / "fadd.log"));
  // About 2 KiB of log per build: enough for two rotations and more.
  for (int i = 0; i < 8; ++i) CHECK(bg.fad({"submit", "--arch", "9.0", "--wait"}).exit_code == 0);
  const fs::path state = d.state_dir();
  REQUIRE(wait_for([&] { return fs::exists(state / "fadd.1.log"); }, std::chrono::seconds(30)));
  CHECK(fs::file_size(state / "fadd.log") <= 4096 + 1024);
  CHECK(fs::file_size(state / "fadd.1.log") <= 4096 + 1024);
  CHECK(fs::exists(state / "fadd.2.log"));
  CHECK_FALSE(fs::exists(state / "fadd.3.log"));  // log_max_files: 2 old files kept
  CHECK(fs::file_size(state / "fadd.out") < 1024);
  CHECK(slurp_file(state / "fadd.log").find("succeeded") != std::string::npos);
  for (const auto* name : {"fadd.log", "fadd.1.log", "fadd.2.log"}) {
    INFO(name);
    CHECK(private_to_fadd(state / name));
  }
}
