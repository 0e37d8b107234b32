// fadd --check's look at the places a start uses; see settings_check.h.
#include "daemon/settings_check.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "common/mode_text.h"
#include "common/socket_dir.h"
#include "daemon/credentials.h"
#include "daemon/root_only_path.h"

namespace fad {
namespace {

namespace fs = std::filesystem;

/// Whether a directory could be made where `path` would be (under its
/// nearest existing ancestor), asked by making one there and removing it:
/// root passes access() on a read-only filesystem or /proc.
std::string can_make_in(fs::path dir) {
  std::error_code ec;
  while (!dir.empty() && dir != dir.root_path() && !fs::exists(dir, ec)) dir = dir.parent_path();
  std::string probe = (dir / ".fadd-check-XXXXXX").string();
  if (::mkdtemp(probe.data()) == nullptr) return std::strerror(errno);
  ::rmdir(probe.c_str());
  return "";
}

/// Whether a file could be made in the existing directory `dir`, asked by
/// making one of a unique name and removing it: never the log file itself,
/// which a fadd starting beside the check may be opening (a probe made and
/// unlinked there left that fadd logging into a deleted file).
std::string can_make_file_in(const fs::path& dir) {
  std::string probe = (dir / ".fadd-check-XXXXXX").string();
  const int made = ::mkstemp(probe.data());
  if (made < 0) return std::strerror(errno);
  ::close(made);
  ::unlink(probe.c_str());
  return "";
}

/// Whether fadd could append to `path`, asked by opening it as the logger
/// would (non-blocking: a FIFO without a reader must not hang the check), or,
/// when there is none, whether it could be made.
std::string log_file_problem(const std::string& path) {
  const int existing = ::open(path.c_str(), O_WRONLY | O_APPEND | O_NONBLOCK | O_CLOEXEC);
  if (existing >= 0) {
    ::close(existing);
    return "";
  }
  if (errno != ENOENT) return "cannot log to " + path + ": " + std::strerror(errno);
  std::error_code ec;
  const fs::path dir = fs::path(path).parent_path();
  if (!fs::exists(dir, ec)) {
    // The logger makes the missing directories.
    if (auto why = can_make_in(dir); !why.empty()) return "cannot log to " + path + ": " + why;
    return "";
  }
  if (fs::path(path).filename().string().size() > NAME_MAX)
    return "cannot log to " + path + ": " + std::strerror(ENAMETOOLONG);
  if (auto why = can_make_file_in(dir); !why.empty()) return "cannot log to " + path + ": " + why;
  return "";
}

}  // namespace

Status state_dir_safe(const std::string& state_dir) {
  std::error_code ec;
  // A file there would be chmodded as a directory before its lock failed.
  if (fs::exists(state_dir, ec) && !fs::is_directory(state_dir, ec))
    return make_error("state dir " + state_dir + " exists and is not a directory; move it away, or choose another");
  auto ok = only_owner_can_replace(state_dir, ::geteuid());
  // Another user's state dir (a system fadd's, shared by a config that
  // names it) is fine to keep fadd's files, but not this user's to run a
  // fadd on: said for what it is, not as the first file fadd fails to open.
  struct stat st {};
  if (ok && ::access(state_dir.c_str(), W_OK | X_OK) != 0 && errno == EACCES && ::stat(state_dir.c_str(), &st) == 0)
    return make_error("the state dir " + state_dir + " belongs to " + user_name(st.st_uid) + " (mode " +
                      mode_text(st.st_mode) + "), and " + user_name(::geteuid()) +
                      " may not write in it (another user's fadd's, named by a shared config?); run your own with "
                      "'fad daemon start --state-dir DIR --socket PATH'");
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
  // Writable: fad writes fadd.out there at each start (a filesystem remounted
  // read-only after disk errors leaves the running fadd up, and no start).
  std::error_code ec;
  const fs::path state(o.state_dir);
  if (fs::exists(state, ec)) {
    if (auto why = can_make_in(state); !why.empty()) return "cannot write in state dir " + o.state_dir + ": " + why;
  } else if (auto why = can_make_in(state.parent_path()); !why.empty()) {
    return "cannot create state dir " + o.state_dir + ": " + why + " (create it first, or choose another)";
  }
  const fs::path socket(o.socket);
  const fs::path socket_dir = socket.has_parent_path() ? socket.parent_path() : ".";
  if (auto ok = socket_dir_safe(socket_dir.string()); !ok) return ok.error();
  if (fs::exists(socket_dir, ec)) {
    if (!fs::is_directory(socket_dir, ec)) return "the socket directory " + socket_dir.string() + " is not a directory";
    auto facts = path_facts(socket_dir.string());
    if (!facts) return "cannot examine the socket directory " + socket_dir.string();
    if (Status trusted = check_daemon_socket_dir(socket_dir.string(), *facts, ::geteuid()); !trusted)
      return trusted.error();
    // Root's 0755 directory passes the trust rule, and a user's fadd cannot bind there.
    if (auto why = can_make_file_in(socket_dir); !why.empty())
      return "cannot make the socket " + o.socket + ": " + why + " in " + socket_dir.string();
    if (const auto st = fs::symlink_status(socket, ec); fs::exists(st) && st.type() != fs::file_type::socket)
      return o.socket +
             " exists and is not a socket; fadd replaces only a stale socket there: move it away, or "
             "choose another path with --socket";
  } else if (auto why = can_make_in(socket_dir); !why.empty()) {
    return "cannot create socket directory " + socket_dir.string() + ": " + why;
  }
  if (!o.log_file.empty()) return log_file_problem(o.log_file);
  return "";
}

}  // namespace fad
