// fad run's nvcc shim directory; see shim_dir.h.
#include "client/shim_dir.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <filesystem>
#include <system_error>

namespace fad::client {

namespace fs = std::filesystem;

namespace {
constexpr std::string_view kPrefix = "fad-run-";

/// The creator's pid in `fad-run-<pid>-XXXXXX`; 0 for any other name
/// (the pid-less names of older versions are left alone).
pid_t creator_of(std::string_view name) {
  if (name.substr(0, kPrefix.size()) != kPrefix) return 0;
  name.remove_prefix(kPrefix.size());
  const auto dash = name.find('-');
  if (dash == std::string_view::npos || dash == 0) return 0;
  pid_t pid = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + dash, pid);
  return ec == std::errc{} && end == name.data() + dash && pid > 0 ? pid : 0;
}

bool runs(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }
}  // namespace

int sweep_stale_shim_dirs(const std::string& root) {
  int removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const pid_t pid = creator_of(name);
    if (pid == 0 || runs(pid)) continue;
    // Only a real directory of ours: /tmp is everyone's, and a name alone
    // proves nothing. remove_all never follows the links inside.
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid()) continue;
    std::error_code rm;
    fs::remove_all(it->path(), rm);
    removed += !rm;
  }
  return removed;
}

std::string make_shim_dir(const std::string& root, const std::string& fad) {
  sweep_stale_shim_dirs(root);
  std::string path = root + "/" + std::string(kPrefix) + std::to_string(::getpid()) + "-XXXXXX";
  if (!::mkdtemp(path.data())) return {};
  std::error_code ec;
  fs::create_symlink(fad, fs::path(path) / "nvcc", ec);
  return path;
}

}  // namespace fad::client
