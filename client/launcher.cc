// The compiler launcher; see launcher.h.
#include "client/launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "client/compiler_identity.h"
#include "client/compiler_process.h"
#include "client/connection.h"
#include "client/exit_codes.h"
#include "client/launch_cache.h"
#include "client/launch_settings.h"
#include "client/memory_claim.h"
#include "client/nvcc_args.h"
#include "client/orphan_watch.h"
#include "client/source_digest.h"
#include "common/hash.h"
#include "client/progress.h"
#include "common/launch_protocol.h"

namespace fad::client {

namespace fs = std::filesystem;

namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(200);
constexpr auto kTellWaitAfter = std::chrono::seconds(5);
// How long a launcher keeps asking a fadd that refuses connections as busy
// (other clients hold too many): idle ones close within 10 s.
constexpr auto kBusyPatience = std::chrono::seconds(30);
// A compile waiting for admission waits out a busy fadd far longer: fadd is
// there, and compiling around it would run outside its accounting, beside
// the admission fadd may hold for it.
constexpr auto kBusyPollPatience = std::chrono::minutes(10);
/// Launches again after fadd dropped the waiting compile unasked (see run_launch).
constexpr int kMaxRelaunches = 3;
pid_t g_child_group = 0;
/// The signal (SIGINT, SIGTERM, SIGHUP) passed on to the compiler; 0 if none.
volatile sig_atomic_t g_interrupted = 0;

void forward_signal(int sig) {
  g_interrupted = sig;
  if (g_child_group > 0) ::kill(-g_child_group, sig);
}

/// Ctrl-Z reaches the build tool's process group, not the compiler's own
/// (fadd measures and stops that group): the compiler stops with its
/// launcher, as it would under plain make, and goes on when it does.
void stop_with_child(int) {
  const int saved = errno;
  if (g_child_group > 0) ::kill(-g_child_group, SIGSTOP);
  ::kill(::getpid(), SIGSTOP);  // here until SIGCONT (fg, bg)
  if (g_child_group > 0) ::kill(-g_child_group, SIGCONT);
  errno = saved;
}

/// A launcher stopped by SIGSTOP (not catchable) and continued: its
/// compiler, stopped by whoever stopped the launcher's group, goes on too.
void continue_child(int) {
  const int saved = errno;
  if (g_child_group > 0) ::kill(-g_child_group, SIGCONT);
  errno = saved;
}

bool file_exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

/// /tmp/fad-$UID when it is the user's own private directory (created if
/// missing); empty when someone else made it.
std::string warning_dir() {
  const std::string dir = "/tmp/fad-" + std::to_string(::getuid());
  ::mkdir(dir.c_str(), 0700);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid() || (st.st_mode & 022))
    return "";
  return dir;
}

// "fadd is not running" once per terminal session, not once per compile.
void warn_unreachable_once(const std::string& reason) {
  const std::string dir = warning_dir();
  if (dir.empty()) {
    std::cerr << "fad: " << reason << "; compiling without fad\n";
    return;
  }
  const std::string marker = dir + "/launch-warned-" + std::to_string(::getsid(0));
  int fd = ::open(marker.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) return;
  ::close(fd);
  std::cerr << "fad: " << reason
            << "; compiling without fadd: one compile at a time, more as memory allows (said once per session)\n";
}

void forget_warning() {
  const std::string dir = warning_dir();
  if (dir.empty()) return;
  const std::string marker = dir + "/launch-warned-" + std::to_string(::getsid(0));
  ::unlink(marker.c_str());
}

/// Sends one request; nullopt (with `why`) when fadd cannot be reached or refuses.
/// A fadd too busy to take the connection is asked again for a while: given
/// up on at once, a waiting compile would run outside its accounting, and a
/// finished one would go unrecorded and count as failed.
std::optional<json> ask(const std::string& socket, const std::string& type, const json& body, std::string* why,
                        bool* refused = nullptr, std::optional<Peer>* answered_by = nullptr,
                        std::chrono::seconds patience = kBusyPatience) {
  const auto give_up = std::chrono::steady_clock::now() + patience;
  auto result = call_daemon(socket, Request{type, body}, std::chrono::seconds(60), answered_by);
  for (auto pause = std::chrono::milliseconds(100);
       std::holds_alternative<CallFailure>(result) && std::get<CallFailure>(result).busy &&
       std::chrono::steady_clock::now() < give_up;
       pause = std::min(pause * 2, std::chrono::milliseconds(2000))) {
    std::this_thread::sleep_for(pause);
    result = call_daemon(socket, Request{type, body}, std::chrono::seconds(60), answered_by);
  }
  if (const auto* failure = std::get_if<CallFailure>(&result)) {
    *why = failure->busy ? failure->message : "fadd is not reachable at " + socket;
    // Busy is an answer: fadd is there and may still hold this compile's
    // admission, so a compiler started for it waits again, not runs unseen.
    if (failure->busy && refused) *refused = true;
    return std::nullopt;
  }
  const auto& r = std::get<Response>(result);
  if (!r.ok) {
    *why = "fadd refused the compile: " + r.message;
    if (refused) *refused = true;
    return std::nullopt;
  }
  return r.result;
}

}  // namespace

std::string self_exe() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("fad") : p.string();
}

std::string real_nvcc(const std::string& self_dir) {
  if (const char* env = std::getenv("FAD_REAL_NVCC"); env && *env) return env;
  std::stringstream path(std::getenv("PATH") ? std::getenv("PATH") : "");
  std::error_code ec;
  for (std::string dir; std::getline(path, dir, ':');) {
    if (dir.empty() || fs::equivalent(dir, self_dir, ec)) continue;
    auto candidate = fs::path(dir) / "nvcc";
    if (::access(candidate.c_str(), X_OK) == 0 && !fs::equivalent(fs::canonical(candidate, ec), self_exe(), ec))
      return candidate.string();
  }
  return ::access("/usr/local/cuda/bin/nvcc", X_OK) == 0 ? "/usr/local/cuda/bin/nvcc" : "";
}

int exec_direct(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  std::vector<std::string> copy = argv;
  for (auto& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  ::execvp(args[0], args.data());
  std::cerr << "fad: cannot run " << argv[0] << ": " << std::strerror(errno) << "\n";
  return 127;
}

namespace {

// ---- The compile cache and compiling without fadd (see launch_cache.h, memory_claim.h). ----

void forward_signals_to(pid_t group) {
  g_child_group = group;
  struct sigaction sa {};
  sa.sa_handler = forward_signal;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  sa.sa_flags = SA_RESTART;
  sa.sa_handler = stop_with_child;
  ::sigaction(SIGTSTP, &sa, nullptr);
  sa.sa_handler = continue_child;
  ::sigaction(SIGCONT, &sa, nullptr);
}

/// Memory a compile is expected to need when nothing better is known: the
/// per-thread prior times the archs nvcc compiles in parallel.
std::uint64_t prior_need(const NvccCall& call, const std::vector<std::string>& args, std::uint64_t prior) {
  const int archs = std::max<int>(1, static_cast<int>(call.archs.size()));
  const int threads = requested_threads(args);
  return prior * static_cast<std::uint64_t>(threads == 0 ? archs : std::max(1, std::min(threads, archs)));
}

/// Tells fadd (when it answers) that a compile was a cache hit, so its build records it.
void report_cached(const std::string& socket, LaunchRequest req) {
  req.cached = true;
  call_daemon(socket, Request{"launch", req.to_json()});
}

/// Without fadd: waits for the machine-wide fallback to admit the compile
/// (one at a time, more as memory allows), then runs it.
int compile_without_fadd(const std::vector<std::string>& argv, const std::vector<std::string>& extra,
                         std::uint64_t need, const LaunchSettings& settings, LaunchCache* cache) {
  auto claim = MemoryClaim::admit(
      claims_dir(), need, [&] { return read_fallback_memory(settings.reserve); },
      [](const std::string& why) { std::cerr << "fad: waiting for memory (fadd is not running): " << why << "\n"; });
  std::vector<std::string> run_argv = argv;
  run_argv.insert(run_argv.end(), extra.begin(), extra.end());
  auto proc = CompilerProcess::start(run_argv, cache != nullptr);
  if (!proc) return exec_direct(argv);
  forward_signals_to(proc->pid());
  const auto started = std::chrono::system_clock::now();
  proc->go();  // not the OOM killer's first choice: without fadd nothing reruns it
  const CompilerExit exit = proc->wait();
  g_child_group = 0;
  if (cache) cache->store(started, exit);
  return exit.code;
}

}  // namespace

int run_launch(const std::string& compiler, const std::vector<std::string>& args, const std::string& socket) {
  std::vector<std::string> argv{compiler};
  argv.insert(argv.end(), args.begin(), args.end());
  // The compiler fad starts may itself call a shim (nvcc found on PATH): run it straight.
  if (std::getenv("FAD_LAUNCH_ACTIVE")) return exec_direct(argv);
  const NvccCall call = parse_nvcc_call(args, file_exists);
  if (!call.compile) return exec_direct(argv);  // --version, links, -M: quick, not scheduled

  std::error_code ec;
  const auto cwd = fs::current_path(ec).string();
  const LaunchSettings settings = load_launch_settings(process_env());
  auto cache = LaunchCache::open(settings.cache, argv, cwd);
  LaunchRequest req;
  if (const char* id = std::getenv("FAD_BUILD_ID"); id && *id) req.build_id = std::atoll(id);
  req.session = ::getsid(0);
  req.cwd = cwd;
  req.argv = argv;
  req.source = fs::absolute(call.source, ec).lexically_normal().string();
  req.output = call.output.empty() ? "" : fs::absolute(call.output, ec).lexically_normal().string();
  req.archs = call.archs;
  // Computed here, with the user's rights: fadd never opens the source nor
  // runs the compiler a client names.
  if (cache && !cache->compiler_version().empty())
    req.compiler_version = cache->compiler_version();
  else
    req.compiler_version = compiler_version_line(compiler, private_runtime_dir());
  req.content_hash = source_digest(req.source, call.include_dirs, cwd);
  if (auto size = fs::file_size(req.source, ec); !ec) req.source_bytes = size;
  // A hit skips admission altogether: its outputs are restored, fadd only records it.
  if (cache && cache->restore()) {
    report_cached(socket, req);
    return 0;
  }
  const std::vector<std::string> extra = cache ? cache->extra_args() : std::vector<std::string>{};
  const std::uint64_t prior = prior_need(call, args, settings.unit_memory_prior);
  std::string why;
  auto launched = ask(socket, "launch", req.to_json(), &why);
  if (!launched) {
    warn_unreachable_once(why);
    return compile_without_fadd(argv, extra, prior, settings, cache.get());
  }
  forget_warning();
  std::int64_t unit = launched->at("unit_id").get<std::int64_t>();
  std::int64_t build = launched->value("build_id", std::int64_t{0});
  int relaunches = 0;
  // Under fad run, fad run itself tells the terminal about waits (a build tool
  // like ninja would show this compile's stderr only after it ended).
  const bool tell_waits = !std::getenv("FAD_BUILD_ID");
  pid_t fadd_pid = 0;  // the fadd that admitted the compile, where this pid namespace sees it

  for (;;) {
    // 1. Wait for admission; after a few seconds say once why.
    int threads = 1;
    std::uint64_t estimate = prior;
    const auto waiting_since = std::chrono::steady_clock::now();
    bool told = false;
    std::vector<std::string> step;  // fadd runs units on a cluster: the step to run the compiler in
    for (;;) {
      std::optional<Peer> answered_by;
      auto poll =
          ask(socket, "launch_poll", UnitRequest{unit}.to_json(), &why, nullptr, &answered_by, kBusyPollPatience);
      if (!poll) {
        // Every waiting launcher meets the same gone fadd: said once per session.
        warn_unreachable_once(why);
        return compile_without_fadd(argv, extra, prior, settings, cache.get());
      }
      const auto state = poll->at("state").get<std::string>();
      if (state == "admitted") {
        threads = poll->value("threads", 1);
        estimate = poll->value("estimate_bytes", estimate);
        if (auto it = poll->find("step"); it != poll->end() && it->is_array())
          for (const auto& a : *it)
            if (a.is_string()) step.push_back(a.get<std::string>());
        // A step is a program this launcher runs with its own rights. Only a
        // fadd of this very user sends one (a Slurm fadd runs as its user);
        // from anyone else, a socket in a directory they control (a team
        // fadd's owner, a planted socket) it would run their program as us.
        if (!step.empty() && (!answered_by || answered_by->uid != ::getuid())) {
          std::cerr << "fad: refusing the cluster step sent by the fadd at " << socket << ": it runs as "
                    << (answered_by ? "uid " + std::to_string(answered_by->uid) : std::string("an unknown user"))
                    << ", not as you (uid " << ::getuid() << "), and only your own fadd may choose what runs as you\n";
          return kExitFailed;
        }
        fadd_pid = answered_by ? answered_by->pid : 0;
        break;
      }
      if (state == "cancelled" && poll->value("relaunch", false)) {
        // fadd dropped this waiting compile unasked (it restarted, or could
        // not hear this launcher): nobody cancelled it, and failing it would
        // fail the build. fadd accounts for it once launched again; a fadd
        // dropping it without end is gone around.
        const std::string name = fs::path(req.source).filename().string();
        const std::string dropped = poll->value("why", std::string("fadd dropped it"));
        auto again = ++relaunches <= kMaxRelaunches ? ask(socket, "launch", req.to_json(), &why) : std::nullopt;
        if (!again) {
          if (relaunches > kMaxRelaunches)
            why = "fadd dropped " + name + " " + std::to_string(kMaxRelaunches + 1) + " times (" + dropped + ")";
          warn_unreachable_once(why);
          return compile_without_fadd(argv, extra, prior, settings, cache.get());
        }
        unit = again->at("unit_id").get<std::int64_t>();
        build = again->value("build_id", std::int64_t{0});
        std::cerr << "fad: " << name << ": " << dropped << "; it waits in fadd again\n";
        continue;
      }
      if (state != "queued") {
        std::cerr << "fad: " << fs::path(req.source).filename().string() << " was " << state << " in fadd\n";
        return 1;
      }
      if (tell_waits && !told && std::chrono::steady_clock::now() - waiting_since >= kTellWaitAfter) {
        std::cerr << "fad: " << fs::path(req.source).filename().string() << ": "
                  << wait_note(poll->value("wait_reason", std::string()), build) << "\n";
        told = true;
      }
      std::this_thread::sleep_for(kPollInterval);
    }

    // 2. Start the compiler in its own process group, held before exec until
    //    fadd has it under accounting (its cgroup then holds the whole tree).
    //    Its claim keeps launchers that lose fadd from overrunning it.
    auto claim = MemoryClaim::hold(claims_dir(), estimate);
    auto run_argv = with_threads(argv, threads);
    run_argv.insert(run_argv.end(), extra.begin(), extra.end());
    // On a cluster the compiler runs as a Slurm step on the node fadd chose
    // (srun ... fad-step ... -- COMPILER ARGS); srun is the child fadd watches.
    run_argv.insert(run_argv.begin(), step.begin(), step.end());
    auto proc = CompilerProcess::start(run_argv, cache != nullptr);
    if (!proc) return exec_direct(argv);
    forward_signals_to(proc->pid());
    bool refused = false;
    const bool accepted =
        ask(socket, "launch_started", LaunchStartedRequest{unit, proc->pid()}.to_json(), &why, &refused).has_value();
    if (!accepted && refused) {
      // Requeued between admission and start: drop this child and wait again.
      proc->abandon();
      g_child_group = 0;
      continue;
    }
    // Not accepted because fadd vanished: run anyway, a build never fails for fad.
    const auto started = std::chrono::system_clock::now();
    proc->go(/*oom_victim=*/accepted);  // fadd reruns it if the OOM killer ends it

    // 3. Report the end; under memory pressure fadd may have stopped it to run it later.
    // Watched even when fadd's answer to launch_started was lost: it may
    // have taken the compile all the same.
    OrphanWatch watch;
    const auto there = [&] { return fadd_there(fadd_pid, socket); };
    const CompilerExit exit = proc->wait([&] {
      if (!watch.orphaned(proc->stopped(), there, OrphanWatch::Clock::now())) return;
      std::cerr << "fad: " << fs::path(req.source).filename().string() << " has stayed stopped for "
                << kOrphanGrace.count() << " s with no fadd at " << socket
                << " to continue it (fadd was killed while it held the compile); continuing it\n";
      ::kill(-proc->pid(), SIGCONT);
    });
    g_child_group = 0;
    if (!accepted) {
      if (cache) cache->store(started, exit);
      return exit.code;
    }
    LaunchFinishedRequest finished{unit, exit.code, exit.signaled};
    finished.interrupt_signal = g_interrupted;
    auto done = ask(socket, "launch_finished", finished.to_json(), &why);
    if (done && done->value("requeue", false) && !g_interrupted) {
      std::cerr << "fad: " << fs::path(req.source).filename().string()
                << " was stopped to relieve memory pressure or killed when memory ran out; it runs again when "
                   "memory allows\n";
      continue;
    }
    if (cache) cache->store(started, exit);
    return exit.code;
  }
}

}  // namespace fad::client
