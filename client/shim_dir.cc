// fad run's nvcc shim directory; see shim_dir.h.
#include "client/shim_dir.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <filesystem>
#include <system_error>

#include "common/process_exists.h"

namespace fad::client {

namespace fs = std::filesystem;

namespace {
constexpr std::string_view kPrefix = "fad-run-";

/// The leading decimal number of `text` up to the next '-', which it drops;
/// 0 when there is none.
unsigned long long take_number(std::string_view& text) {
  const auto dash = text.find('-');
  if (dash == std::string_view::npos || dash == 0) return 0;
  unsigned long long n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + dash, n);
  if (ec != std::errc{} || end != text.data() + dash) return 0;
  text.remove_prefix(dash + 1);
  return n;
}

/// This process's pid namespace (the inode of /proc/self/ns/pid); 0 when
/// unknown. A pid means something only within its namespace: a container
/// sharing /tmp must not have its runs' directories judged by our pids.
unsigned long long pid_namespace() {
  struct stat st {};
  return ::stat("/proc/self/ns/pid", &st) == 0 ? static_cast<unsigned long long>(st.st_ino) : 0;
}

/// The creator's pid in `fad-run-<pid>-<pid namespace>-XXXXXX` when it was
/// made in `ns`; 0 for any other name (older versions' names are left alone).
pid_t creator_of(std::string_view name, unsigned long long ns) {
  if (name.substr(0, kPrefix.size()) != kPrefix) return 0;
  name.remove_prefix(kPrefix.size());
  const auto pid = take_number(name);
  return pid > 0 && pid < (1ull << 31) && ns != 0 && take_number(name) == ns ? static_cast<pid_t>(pid) : 0;
}

}  // namespace

int sweep_stale_shim_dirs(const std::string& root) {
  int removed = 0;
  const auto ns = pid_namespace();
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const pid_t pid = creator_of(name, ns);
    if (pid == 0 || process_exists(pid)) continue;
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
  std::string path = root + "/" + std::string(kPrefix) + std::to_string(::getpid()) + "-" +
                     std::to_string(pid_namespace()) + "-XXXXXX";
  if (!::mkdtemp(path.data())) return {};
  std::error_code ec;
  fs::create_symlink(fad, fs::path(path) / "nvcc", ec);
  return path;
}

}  // namespace fad::client
