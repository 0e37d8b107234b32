// Background start uses a single fork + setsid (no double fork) so that fad
// can waitpid() the child and tell "fadd exited at startup" from "still
// starting". Once fad exits, fadd is reparented and keeps running.
#include "client/daemon_control.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>

#include "client/exit_codes.h"
#include "common/file_read.h"

namespace fad::client {
namespace {

namespace fs = std::filesystem;

constexpr auto kPollInterval = std::chrono::milliseconds(100);
constexpr auto kStartTimeout = std::chrono::seconds(15);
constexpr auto kStopTimeout = std::chrono::seconds(30);
constexpr std::size_t kLogTailLines = 20;

// The daemon's pid from a status answer, for messages; "?" if absent.
std::string pid_of(const Response& response) {
  const json& r = response.result;
  if (r.is_object() && r.contains("daemon") && r["daemon"].is_object() && r["daemon"].contains("pid"))
    return r["daemon"]["pid"].dump();
  return "?";
}

// A Response when something answers at the socket; nullopt when nothing does.
std::optional<Response> probe(Context& ctx) {
  CallResult reply = ctx.send(Request{"status", json::object()});
  if (auto* response = std::get_if<Response>(&reply)) return std::move(*response);
  return std::nullopt;
}

std::string read_from(const std::string& path, std::uintmax_t offset) {
  auto text = read_file_slice(path, offset, kSmallFileCap);
  return text ? std::move(*text) : std::string();
}

std::string self_exe() {
  std::error_code ec;
  auto path = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : path.string();
}

// Forks fadd into its own session with stdin from /dev/null and output to `log_fd`.
// Returns the child's pid, or -1 with errno set.
pid_t spawn_detached(const std::vector<std::string>& argv, int log_fd) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) return -1;
  pid_t pid = ::fork();
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    ::setsid();
    ::dup2(null_fd, STDIN_FILENO);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::execv(args[0], args.data());
    const char msg[] = "fad: cannot exec fadd\n";
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::close(null_fd);
  return pid;
}

}  // namespace

std::vector<std::string> fadd_argv(const std::string& fadd_path, const Locations& locations,
                                   const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {fadd_path, "--socket", locations.socket, "--state-dir", locations.state_dir};
  if (locations.config) {
    argv.push_back("--config");
    argv.push_back(*locations.config);
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

std::string last_lines(std::string_view text, std::size_t n) {
  if (text.empty() || n == 0) return "";
  std::string body(text);
  if (body.back() != '\n') body += '\n';
  std::size_t pos = body.size() - 1;  // the final newline
  for (std::size_t seen = 0; pos > 0; --pos)
    if (body[pos - 1] == '\n' && ++seen == n) break;
  return body.substr(pos);
}

std::optional<std::string> find_fadd(const std::string& self, const std::string& path_env) {
  auto executable = [](const fs::path& p) { return ::access(p.c_str(), X_OK) == 0 && !fs::is_directory(p); };
  if (!self.empty()) {
    fs::path beside = fs::path(self).parent_path() / "fadd";
    if (executable(beside)) return beside.string();
  }
  std::istringstream dirs(path_env);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    fs::path candidate = fs::path(dir) / "fadd";
    if (executable(candidate)) return candidate.string();
  }
  return std::nullopt;
}

int run_daemon_start(const Command& cmd, const Locations& locations, Context& ctx) {
  if (auto running = probe(ctx)) {
    ctx.out << "fadd is already running (pid " << pid_of(*running) << ")\n";
    return kExitOk;
  }
  const char* path_env = std::getenv("PATH");
  auto fadd = find_fadd(self_exe(), path_env ? path_env : "");
  if (!fadd) {
    ctx.err << "fad: cannot find fadd next to fad or on PATH\n";
    return kExitFailed;
  }
  std::error_code ec;
  fs::create_directories(locations.state_dir, ec);
  const std::string log_path = (fs::path(locations.state_dir) / "fadd.log").string();
  int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    ctx.err << "fad: cannot open " << log_path << ": " << std::strerror(errno) << "\n";
    return kExitFailed;
  }
  const auto log_start = fs::file_size(log_path, ec);  // show only this run's lines on failure
  pid_t pid = spawn_detached(fadd_argv(*fadd, locations, cmd.fadd_args), log_fd);
  const int spawn_errno = errno;
  ::close(log_fd);
  if (pid < 0) {
    ctx.err << "fad: cannot start " << *fadd << ": " << std::strerror(spawn_errno) << "\n";
    return kExitFailed;
  }

  const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      ctx.err << "fad: fadd exited during startup (status " << code << "); last lines of " << log_path << ":\n"
              << last_lines(read_from(log_path, ec ? 0 : log_start), kLogTailLines);
      return kExitFailed;
    }
    if (probe(ctx)) {
      ctx.out << "fadd started (pid " << pid << "), socket " << locations.socket << ", log " << log_path << "\n";
      return kExitOk;
    }
    ctx.sleep(kPollInterval);
  }
  ctx.err << "fad: fadd (pid " << pid << ") did not answer at " << locations.socket << " within "
          << kStartTimeout.count() << " s; see " << log_path << "\n";
  return kExitFailed;
}

int run_daemon_stop(Context& ctx) {
  auto running = probe(ctx);
  if (!running) {
    ctx.out << "fadd is not running (nothing answers at " << ctx.socket << ")\n";
    return kExitOk;
  }
  const std::string pid = pid_of(*running);
  int rc = kExitOk;
  if (!request(ctx, "shutdown", json::object(), rc)) return rc;
  const auto deadline = std::chrono::steady_clock::now() + kStopTimeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!probe(ctx)) {
      ctx.out << "fadd stopped (pid " << pid << ")\n";
      return kExitOk;
    }
    ctx.sleep(kPollInterval);
  }
  ctx.err << "fad: fadd (pid " << pid << ") still answers at " << ctx.socket << " after " << kStopTimeout.count()
          << " s\n";
  return kExitFailed;
}

}  // namespace fad::client
