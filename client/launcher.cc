// The compiler launcher; see launcher.h.
#include "client/launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <thread>

#include "client/connection.h"
#include "client/nvcc_args.h"
#include "common/launch_protocol.h"

namespace fad::client {

namespace fs = std::filesystem;

namespace {

constexpr auto kPollInterval = std::chrono::milliseconds(200);
pid_t g_child_group = 0;
volatile sig_atomic_t g_interrupted = 0;

void forward_signal(int sig) {
  g_interrupted = 1;
  if (g_child_group > 0) ::kill(-g_child_group, sig);
}

bool file_exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

// "fadd is not running" once per terminal session, not once per compile.
void warn_unreachable_once(const std::string& reason) {
  const std::string dir = "/tmp/fad-" + std::to_string(::getuid());
  ::mkdir(dir.c_str(), 0700);
  const std::string marker = dir + "/launch-warned-" + std::to_string(::getsid(0));
  int fd = ::open(marker.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) return;
  ::close(fd);
  std::cerr << "fad: " << reason << "; compiling without fad (this is said once per session)\n";
}

void forget_warning() {
  const std::string marker = "/tmp/fad-" + std::to_string(::getuid()) + "/launch-warned-" + std::to_string(::getsid(0));
  ::unlink(marker.c_str());
}

/// Sends one request; nullopt (with `why`) when fadd cannot be reached or refuses.
std::optional<json> ask(const std::string& socket, const std::string& type, const json& body, std::string* why,
                        bool* refused = nullptr) {
  auto result = call_daemon(socket, Request{type, body});
  if (std::holds_alternative<CallFailure>(result)) {
    *why = "fadd is not reachable at " + socket;
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

struct ChildExit {
  int code = 0;
  bool signaled = false;
};

ChildExit wait_child(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  g_child_group = 0;
  if (WIFSIGNALED(status)) return {128 + WTERMSIG(status), true};
  return {WEXITSTATUS(status), false};
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

int run_launch(const std::string& compiler, const std::vector<std::string>& args, const std::string& socket) {
  std::vector<std::string> argv{compiler};
  argv.insert(argv.end(), args.begin(), args.end());
  // The compiler fad starts may itself call a shim (nvcc found on PATH): run it straight.
  if (std::getenv("FAD_LAUNCH_ACTIVE")) return exec_direct(argv);
  const NvccCall call = parse_nvcc_call(args, file_exists);
  if (!call.compile) return exec_direct(argv);  // --version, links, -M: quick, not scheduled

  std::error_code ec;
  const auto cwd = fs::current_path(ec).string();
  LaunchRequest req;
  if (const char* id = std::getenv("FAD_BUILD_ID"); id && *id) req.build_id = std::atoll(id);
  req.session = ::getsid(0);
  req.cwd = cwd;
  req.argv = argv;
  req.source = fs::absolute(call.source, ec).lexically_normal().string();
  req.output = call.output.empty() ? "" : fs::absolute(call.output, ec).lexically_normal().string();
  req.archs = call.archs;
  std::string why;
  auto launched = ask(socket, "launch", req.to_json(), &why);
  if (!launched) {
    warn_unreachable_once(why);
    return exec_direct(argv);
  }
  forget_warning();
  const std::int64_t unit = launched->at("unit_id").get<std::int64_t>();

  for (;;) {
    // 1. Wait for admission.
    int threads = 1;
    std::vector<std::string> step;  // fadd runs units on a cluster: the step to run the compiler in
    for (;;) {
      auto poll = ask(socket, "launch_poll", UnitRequest{unit}.to_json(), &why);
      if (!poll) {
        std::cerr << "fad: " << why << "; compiling without fad\n";
        return exec_direct(argv);
      }
      const auto state = poll->at("state").get<std::string>();
      if (state == "admitted") {
        threads = poll->value("threads", 1);
        if (auto it = poll->find("step"); it != poll->end() && it->is_array())
          for (const auto& a : *it)
            if (a.is_string()) step.push_back(a.get<std::string>());
        break;
      }
      if (state != "queued") {
        std::cerr << "fad: " << fs::path(req.source).filename().string() << " was " << state << " in fadd\n";
        return 1;
      }
      std::this_thread::sleep_for(kPollInterval);
    }

    // 2. Start the compiler in its own process group, held before exec until
    //    fadd has it under accounting (its cgroup then holds the whole tree).
    auto run_argv = with_threads(argv, threads);
    // On a cluster the compiler runs as a Slurm step on the node fadd chose
    // (srun ... fad-step ... -- COMPILER ARGS); srun is the child fadd watches.
    run_argv.insert(run_argv.begin(), step.begin(), step.end());
    int go[2];
    if (::pipe2(go, O_CLOEXEC) != 0) return exec_direct(argv);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, 0);
      ::close(go[1]);
      char byte;
      while (::read(go[0], &byte, 1) < 0 && errno == EINTR) {}
      ::setenv("FAD_LAUNCH_ACTIVE", "1", 1);
      ::_exit(exec_direct(run_argv));
    }
    ::close(go[0]);
    if (pid < 0) {
      ::close(go[1]);
      return exec_direct(argv);
    }
    ::setpgid(pid, pid);
    g_child_group = pid;
    struct sigaction sa {};
    sa.sa_handler = forward_signal;
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
    bool refused = false;
    const bool accepted =
        ask(socket, "launch_started", LaunchStartedRequest{unit, pid}.to_json(), &why, &refused).has_value();
    if (!accepted && refused) {
      // Requeued between admission and start: drop this child and wait again.
      ::kill(-pid, SIGKILL);
      ::close(go[1]);
      wait_child(pid);
      continue;
    }
    // Not accepted because fadd vanished: run anyway, a build never fails for fad.
    [[maybe_unused]] auto w = ::write(go[1], "g", 1);
    ::close(go[1]);

    // 3. Report the end; under memory pressure fadd may have stopped it to run it later.
    const ChildExit exit = wait_child(pid);
    if (!accepted) return exit.code;
    auto done = ask(socket, "launch_finished", LaunchFinishedRequest{unit, exit.code, exit.signaled}.to_json(), &why);
    if (done && done->value("requeue", false) && !g_interrupted) {
      std::cerr << "fad: " << fs::path(req.source).filename().string()
                << " was stopped to relieve memory pressure or killed when memory ran out; it runs again when "
                   "memory allows\n";
      continue;
    }
    return exit.code;
  }
}

}  // namespace fad::client
