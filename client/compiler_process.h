// One compiler run by the launcher: forked into its own process group (so
// fadd can measure, suspend and stop the whole tree: nvcc, cicc, ptxas, the
// host compiler), held before exec until the launcher lets it go, and, when
// its outputs are to be cached, its stdout and stderr passed through to the
// caller as they come and kept for the cache (a hit replays them).
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace fad::client {

struct CompilerExit {
  int code = 0;  ///< exit code, or 128 + signal
  bool signaled = false;
  std::string stdout_text;  ///< what it printed, when captured
  std::string stderr_text;
  bool complete = false;  ///< captured, and all of it (not past the size limit)
};

class CompilerProcess {
 public:
  /// Forks `argv` (searched on PATH) in its own process group with
  /// FAD_LAUNCH_ACTIVE set; it execs once go() is called. nullopt when fork fails.
  static std::optional<CompilerProcess> start(const std::vector<std::string>& argv, bool capture);
  CompilerProcess(CompilerProcess&& other) noexcept;
  CompilerProcess& operator=(CompilerProcess&&) = delete;
  ~CompilerProcess();

  pid_t pid() const { return pid_; }
  /// Lets the held compiler exec. `oom_victim`: as the kernel's first choice
  /// when memory runs out, as fadd's own units are (common/oom_victim.h);
  /// only when fadd has accepted it, since fadd then reruns it and without
  /// fadd nothing would.
  void go(bool oom_victim = false);
  /// Kills a compiler that must not run after all, and reaps it.
  void abandon();
  /// Passes its output through (when captured) until it ends; reaps it.
  /// `now_and_then`, when given, is called every couple of seconds while it
  /// runs, stopped or not, printing or silent.
  CompilerExit wait(const std::function<void()>& now_and_then = {});
  /// Whether it is stopped now: its process group got SIGSTOP (from fadd, or
  /// from whoever else may signal it).
  bool stopped() const;

 private:
  CompilerProcess() = default;
  pid_t pid_ = -1;
  int go_fd_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
};

}  // namespace fad::client
