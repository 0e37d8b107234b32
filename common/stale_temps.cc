// Temporary entries named after their maker; see stale_temps.h.
#include "common/stale_temps.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "common/process_exists.h"

namespace fad {

namespace fs = std::filesystem;

namespace {

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
/// sharing /tmp must not have its runs' entries judged by our pids.
unsigned long long pid_namespace() {
  struct stat st {};
  return ::stat("/proc/self/ns/pid", &st) == 0 ? static_cast<unsigned long long>(st.st_ino) : 0;
}

/// This boot of this machine: the first 8 hex digits of the kernel's boot id
/// ("0" when unknown, which no name made where it is known matches).
std::string boot_token() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  std::string hex;
  for (char c : id)
    if (std::isxdigit(static_cast<unsigned char>(c)) && hex.size() < 8) hex += c;
  return hex.size() == 8 ? hex : "0";
}

/// The maker's pid in `<prefix><pid>-<pid namespace>-<boot>-<tail>` when it
/// was made in `ns` of `boot`; 0 for any other name (older versions' names
/// are left alone).
pid_t maker_of(std::string_view name, std::string_view prefix, unsigned long long ns, std::string_view boot) {
  if (name.substr(0, prefix.size()) != prefix) return 0;
  name.remove_prefix(prefix.size());
  const auto pid = take_number(name);
  if (pid == 0 || pid >= (1ull << 31) || ns == 0 || take_number(name) != ns) return 0;
  return name.substr(0, boot.size() + 1) == std::string(boot) + "-" ? static_cast<pid_t>(pid) : 0;
}

}  // namespace

std::string temp_name_start(std::string_view prefix) {
  return std::string(prefix) + std::to_string(::getpid()) + "-" + std::to_string(pid_namespace()) + "-" + boot_token() +
         "-";
}

int sweep_stale_temps(const std::string& root, StaleTemps which) {
  int removed = 0;
  const auto ns = pid_namespace();
  const std::string boot = boot_token();
  if (boot == "0") return 0;  // a pid cannot be told from another machine's
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const pid_t shim_maker = which == StaleTemps::all ? maker_of(name, kShimDirPrefix, ns, boot) : 0;
    const bool shim = shim_maker != 0;
    const pid_t pid = shim ? shim_maker : maker_of(name, kDepfilePrefix, ns, boot);
    if (pid == 0 || process_exists(pid)) continue;
    // Only a real directory (a shim) or a regular file (a depfile) of ours:
    // remove_all never follows the links inside, and a file is unlinked, not
    // removed as whatever may have been swapped in since the look.
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || st.st_uid != ::getuid()) continue;
    if (shim ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) continue;
    std::error_code rm;
    if (shim)
      fs::remove_all(it->path(), rm);
    else if (::unlink(it->path().c_str()) != 0)
      rm = std::error_code(errno, std::generic_category());
    removed += !rm;
  }
  return removed;
}

}  // namespace fad
