// fadd --check's look at the places a start uses; see settings_check.h.
#include "daemon/settings_check.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "daemon/root_only_path.h"

namespace fad {
namespace {

namespace fs = std::filesystem;

/// Whether fadd could append to `path`, asked by opening it as the logger
/// would: non-blocking (a FIFO without a reader must not hang the check), and
/// a file made only for the question is removed again.
std::string log_file_problem(const std::string& path) {
  const int existing = ::open(path.c_str(), O_WRONLY | O_APPEND | O_NONBLOCK | O_CLOEXEC);
  if (existing >= 0) {
    ::close(existing);
    return "";
  }
  if (errno != ENOENT) return "cannot log to " + path + ": " + std::strerror(errno);
  std::error_code ec;
  fs::path dir = fs::path(path).parent_path();
  if (!fs::exists(dir, ec)) {
    // The logger makes the missing directories: asked by making one where
    // the first would go (root may write to /proc as far as access() says).
    while (!dir.empty() && dir != dir.root_path() && !fs::exists(dir, ec)) dir = dir.parent_path();
    std::string probe = (dir / ".fadd-check-XXXXXX").string();
    if (::mkdtemp(probe.data()) == nullptr) return "cannot log to " + path + ": " + std::strerror(errno);
    ::rmdir(probe.c_str());
    return "";
  }
  const int made = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NONBLOCK | O_CLOEXEC, 0600);
  if (made < 0) return "cannot log to " + path + ": " + std::strerror(errno);
  ::close(made);
  ::unlink(path.c_str());
  return "";
}

}  // namespace

Status state_dir_safe(const std::string& state_dir) {
  auto ok = only_owner_can_replace(state_dir, ::geteuid());
  if (ok) return ok;
  return make_error("refusing state dir " + state_dir + ": " + ok.error() + "; keep fadd's state where only " +
                    who_may_change_fadds_files() + " can change it");
}

Status socket_dir_safe(const std::string& dir) {
  auto ok = only_owner_can_replace_above(dir, ::geteuid());
  if (ok) return ok;
  return make_error("refusing the socket directory " + dir + ": " + ok.error() + "; keep fadd's socket where only " +
                    who_may_change_fadds_files() + " can change the directories above it");
}

std::string settings_check_problem(const DaemonOptions& o) {
  if (auto ok = state_dir_safe(o.state_dir); !ok) return ok.error();
  const fs::path socket_dir = fs::path(o.socket).has_parent_path() ? fs::path(o.socket).parent_path() : ".";
  if (auto ok = socket_dir_safe(socket_dir.string()); !ok) return ok.error();
  if (!o.log_file.empty()) return log_file_problem(o.log_file);
  return "";
}

}  // namespace fad
