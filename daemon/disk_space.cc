// disk_nearly_full; see disk_space.h.
#include "daemon/disk_space.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cstdint>

namespace fad {

bool disk_nearly_full(const std::string& dir) {
  struct statvfs st {};
  if (::statvfs(dir.c_str(), &st) != 0 || st.f_frsize == 0) return false;
  const std::uint64_t size = static_cast<std::uint64_t>(st.f_blocks) * st.f_frsize;
  // f_bavail, not f_bfree: compiles may run as users who cannot use root's reserve.
  const std::uint64_t free = static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize;
  const std::uint64_t low = std::clamp<std::uint64_t>(size / 100, 1ull << 20, 256ull << 20);
  return free < low;
}

}  // namespace fad
