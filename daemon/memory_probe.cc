// The real memory probe; see memory_probe.h.
#include "daemon/memory_probe.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "common/meminfo.h"

namespace fad {

ProcMemoryProbe::ProcMemoryProbe(std::string root) : root_(std::move(root)) {
  if (!root_.empty() && root_.back() == '/') root_.pop_back();
  bool v2 = false;
  if (auto rel = parse_proc_cgroup_memory_path(read_small_file(root_ + "/proc/self/cgroup"), &v2)) {
    cgroup_v2_ = v2;
    cgroup_dir_ = root_ + (v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/memory") + (*rel == "/" ? "" : *rel);
  }
}

MemorySnapshot ProcMemoryProbe::sample() {
  MemorySnapshot snap;
  if (auto mem = parse_meminfo(read_small_file(root_ + "/proc/meminfo"))) {
    snap.total = mem->total;
    snap.available = mem->available;
    snap.swap_total = mem->swap_total;
    snap.swap_free = mem->swap_free;
  }
  if (auto psi = parse_psi(read_small_file(root_ + "/proc/pressure/memory"))) snap.psi_some_avg10 = psi->some_avg10;
  if (!cgroup_dir_.empty()) {
    auto limit =
        parse_cgroup_limit(read_small_file(cgroup_dir_ + (cgroup_v2_ ? "/memory.max" : "/memory.limit_in_bytes")));
    if (limit && *limit) {
      snap.cgroup_limit = **limit;
      auto usage = parse_cgroup_value(
          read_small_file(cgroup_dir_ + (cgroup_v2_ ? "/memory.current" : "/memory.usage_in_bytes")));
      if (usage) {
        // Usage counts page cache too, which fills any limit in a long build
        // and which the kernel drops before it kills anything: the inactive
        // file pages are not held by anyone.
        const auto inactive = parse_stat_field(read_small_file(cgroup_dir_ + "/memory.stat"),
                                               cgroup_v2_ ? "inactive_file" : "total_inactive_file");
        snap.cgroup_usage = *usage - std::min<std::uint64_t>(*usage, inactive.value_or(0));
      }
    }
  }
  return snap;
}

}  // namespace fad
