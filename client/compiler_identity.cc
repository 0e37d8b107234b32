// A compile's identity, computed by the launcher; see compiler_identity.h.
#include "client/compiler_identity.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <vector>

#include "common/compiler_identity.h"
#include "common/content_hash.h"
#include "common/file_read.h"
#include "common/launch_protocol.h"

extern char** environ;

namespace fad::client {

namespace {
constexpr auto kVersionTimeout = std::chrono::seconds(10);

/// stdout of `program --version`, or nullopt (cannot start, non-zero exit, too slow).
std::optional<std::string> run_version(const std::string& program) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return std::nullopt;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  // A shim that is fad itself must not come back here.
  std::vector<std::string> env_strings{"FAD_LAUNCH_ACTIVE=1"};
  for (char** e = environ; *e; ++e)
    if (std::string_view(*e).rfind("FAD_LAUNCH_ACTIVE=", 0) != 0) env_strings.emplace_back(*e);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string arg0 = program, arg1 = "--version";
  char* argv[] = {arg0.data(), arg1.data(), nullptr};
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, program.c_str(), &actions, &attr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    return std::nullopt;
  }
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + kVersionTimeout;
  bool timed_out = false;
  char buf[4096];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (out.size() < 64 * 1024) out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (timed_out || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return out;
}

/// The last non-empty line, cut to what the protocol accepts.
std::optional<std::string> last_line(const std::string& text) {
  std::string last;
  std::stringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) last = line;
  }
  std::string clean;
  for (unsigned char c : last)
    if (c >= 0x20 && c != 0x7f) clean += static_cast<char>(c);
  if (clean.size() > kMaxCompilerVersionBytes) clean.resize(kMaxCompilerVersionBytes);
  if (clean.empty()) return std::nullopt;
  return clean;
}
}  // namespace

std::optional<std::string> compiler_version_line(const std::string& compiler, const std::string& cache_dir) {
  std::error_code ec;
  const auto cwd = std::filesystem::current_path(ec);
  const char* path = std::getenv("PATH");
  const std::string program = ec ? std::string() : find_program(compiler, path ? path : "", cwd.string());
  if (program.empty()) return std::nullopt;
  struct stat st {};
  if (::stat(program.c_str(), &st) != 0) return std::nullopt;
  std::string cache_file;
  if (!cache_dir.empty()) {
    // A compiler replaced in place (an upgrade) has another mtime or size: another entry.
    const std::string key = program + '\0' + std::to_string(st.st_mtim.tv_sec) + "." +
                            std::to_string(st.st_mtim.tv_nsec) + '\0' + std::to_string(st.st_size);
    cache_file = cache_dir + "/compiler-" + content_hash(key);
    if (auto cached = read_regular_file(cache_file, kMaxCompilerVersionBytes + 1)) {
      if (auto line = last_line(*cached)) return line;
    }
  }
  auto out = run_version(program);
  if (!out) return std::nullopt;
  auto line = last_line(*out);
  if (line && !cache_file.empty()) {
    // Written whole, then renamed: a concurrent launcher reads the old file or the new one.
    const std::string tmp = cache_file + ".tmp" + std::to_string(::getpid());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) {
      const std::string text = *line + "\n";
      const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
      ::close(fd);
      if (!written || ::rename(tmp.c_str(), cache_file.c_str()) != 0) ::unlink(tmp.c_str());
    }
  }
  return line;
}

std::string private_runtime_dir() {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  const std::string dir =
      runtime && runtime[0] == '/' ? std::string(runtime) + "/fad" : "/tmp/fad-" + std::to_string(::getuid());
  ::mkdir(dir.c_str(), 0700);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid() || (st.st_mode & 022))
    return "";
  return dir;
}

}  // namespace fad::client
