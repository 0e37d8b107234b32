// The integration-test harness: a real fadd in a temp dir, driven by the real
// fad client, with the fake compiler (or real nvcc) as its compiler. Waiting is
// always for a condition with a deadline, never a bare sleep.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <thread>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/temp_dir.h"

namespace fad::test {

using nlohmann::json;
namespace fs = std::filesystem;

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// Runs argv (no shell; argv[0] searched on PATH) with extra environment
/// variables; output captured via files. Exit code 127 when it cannot start.
CommandResult run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {},
                  int timeout_s = 300);

/// Starts argv in the background (stdout/stderr appended to files); -1 on failure.
pid_t start_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                    const fs::path& out, const fs::path& err);
/// Waits for a started process; its exit code (128 + signal), -1 after `timeout_s` (then killed).
int wait_process(pid_t pid, int timeout_s);
/// Non-blocking: the exit code once it ended, nullopt while it runs.
std::optional<int> poll_process(pid_t pid);
/// A process's state letter from /proc/PID/stat ('T' stopped, 'Z' zombie), 'X' once gone.
char process_state(pid_t pid);
/// Resident bytes summed over processes whose program (argv[0]) contains
/// `needle` and that run in directory `cwd` (a test's own: other tests may run
/// the same program at the same time).
std::uint64_t rss_of_processes_matching(const std::string& needle, const fs::path& cwd);

/// Runs argv as another user (uid, gid, the supplementary `groups`, none by
/// default): forks, drops to them, execs. Needs root. Output captured like run().
CommandResult run_as_user(uid_t uid, gid_t gid, const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env = {}, int timeout_s = 120,
                          const std::vector<gid_t>& groups = {});

/// Processes whose environment holds `entry` (e.g. "FAD_FAKE_LOG=/tmp/x"): a
/// test's own compilers, wherever they were reparented.
std::vector<pid_t> processes_with_env(const std::string& entry);

/// Resident bytes of process `pid` (0 when gone).
std::uint64_t rss_of(pid_t pid);

/// A Unix socket connection speaking raw bytes, for hostile-input tests.
class RawClient {
 public:
  /// Connects to `socket_path`; ok() is false when it could not.
  explicit RawClient(const std::string& socket_path);
  ~RawClient();
  RawClient(RawClient&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  bool ok() const { return fd_ >= 0; }
  /// Sends all of `bytes` (false when the peer closed).
  bool send(const std::string& bytes);
  /// One line (without the newline) or what arrived before EOF; nullopt after `timeout` with nothing complete.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout);

 private:
  int fd_ = -1;
  std::string pending_;
};

/// The whole content of a file; empty when it cannot be read.
std::string slurp_file(const fs::path& path);

/// The whole content of a file ("" when it cannot be read).
std::string slurp(const fs::path& path);

/// The first of `candidates` that is an executable file; empty when none is.
std::string find_tool(const std::vector<std::string>& candidates);

/// Writes a ninja project of `n` compile edges (u100.cu ...) run by the fake
/// compiler through `launcher` (may be empty), each source carrying
/// `// fake-nvcc: <fake_line>`. Returns `dir`.
fs::path write_ninja_project(const fs::path& dir, int n, const std::string& fake_line, const std::string& launcher);

/// The newest build named `name` in a `fad status --json` object; null when none is.
json find_build(const json& status, const std::string& name);

/// Polls `done` every 20 ms until it holds or `timeout` passes.
bool wait_for(const std::function<bool()>& done, std::chrono::milliseconds timeout);

/// One unit of a test kernels dir: its name and an optional fake-nvcc override line.
struct FakeUnit {
  std::string name;
  std::string fake;  ///< e.g. "peak_mb=50 duration_s=2"; empty for an instant unit
};

class Daemon {
 public:
  Daemon();
  ~Daemon();

  /// Writes a kernels dir (manifest + one .cu per unit) for the fake compiler.
  void write_kernels(const std::vector<FakeUnit>& units);
  /// Runs fadd under a wrapper command from the next start() on (e.g. one that
  /// joins a cgroup and execs the rest), so fadd keeps the wrapper's pid.
  void set_wrapper(std::vector<std::string> wrapper) { wrapper_ = std::move(wrapper); }
  /// Starts fadd with the fake compiler (unless args name --nvcc) and waits until it answers.
  void start(std::vector<std::string> extra_args = {}, std::map<std::string, std::string> env = {});
  /// Writes `text` as the daemon's config file (FAD_CONFIG) for the next start.
  void write_config(const std::string& text) { std::ofstream(dir() / "test-config.json") << text; }
  /// Starts fadd and returns its exit code (for refusals); `log`: what it wrote to stderr.
  int start_expect_exit(std::vector<std::string> extra_args, std::string* log);
  void kill9();
  /// SIGTERM and wait; returns fadd's exit code.
  int terminate();
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  CommandResult fad(std::vector<std::string> args, int timeout_s = 300);
  json status(std::int64_t id);
  json status_all();
  /// Waits for a build named `name` to appear (a `fad run` opening its
  /// build); returns the newest so named, or null when none came in time.
  json wait_for_build(const std::string& name, int timeout_s = 30);
  /// Waits for a build to reach a final state; returns its status object.
  json wait_final(std::int64_t id, int timeout_s = 120);
  std::int64_t submit(std::vector<std::string> args);

  /// Invocation lines of the fake compiler.
  std::vector<std::string> fake_log();
  /// The pids of the fake compilers run so far, from their log lines.
  std::vector<pid_t> fake_pids();
  std::string daemon_log();
  /// How many times `text` occurs in the daemon's log.
  std::size_t daemon_log_count(const std::string& text);

  const fs::path& dir() const { return tmp_.path(); }
  std::string socket() const { return (tmp_.path() / "run" / "fad.sock").string(); }
  std::string state_dir() const { return (tmp_.path() / "state").string(); }
  std::string kernels_dir() const { return (tmp_.path() / "kernels").string(); }
  std::string fake_log_path() const { return (tmp_.path() / "fake.log").string(); }

 private:
  TempDir tmp_;
  pid_t pid_ = -1;
  std::vector<std::string> wrapper_;
};

}  // namespace fad::test
