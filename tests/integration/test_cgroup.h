// A memory cgroup (v1) that stands in for a small VM or a container in the
// integration tests: fadd, build tools and bystanders run inside it, so an
// overrun is an OOM kill. Needs root and the v1 memory controller; ok() is
// false elsewhere and the test skips, saying so.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fad::test {

namespace fs = std::filesystem;

constexpr const char* kMemoryRoot = "/sys/fs/cgroup/memory";

/// A memory cgroup removed (after its processes are gone) at the end of the test.
class TestCgroup {
 public:
  explicit TestCgroup(std::uint64_t limit, const std::string& name = "oom") {
    if (::geteuid() != 0 || !fs::is_directory(kMemoryRoot)) return;
    const auto dir = fs::path(kMemoryRoot) / ("fad-" + name + "-test-" + std::to_string(::getpid()));
    std::error_code ec;
    if (!fs::create_directory(dir, ec)) return;
    dir_ = dir;
    std::ofstream(dir_ / "memory.limit_in_bytes") << limit;
    std::ofstream(dir_ / "memory.swappiness") << 0;  // no swap: an overrun is an OOM kill
  }
  ~TestCgroup() {
    if (dir_.empty()) return;
    // Children first (fadd's unit cgroups, if a crash left any), deepest first.
    std::vector<fs::path> dirs;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_directory()) dirs.push_back(it->path());
    std::sort(dirs.begin(), dirs.end(),
              [](const fs::path& a, const fs::path& b) { return a.native().size() > b.native().size(); });
    for (const auto& d : dirs) ::rmdir(d.c_str());
    ::rmdir(dir_.c_str());
  }
  bool ok() const { return !dir_.empty(); }
  /// argv run inside this cgroup: a shell joins it, then execs argv.
  std::vector<std::string> wrap(std::vector<std::string> argv) const {
    std::vector<std::string> out{"/bin/sh", "-c", "echo $$ > \"$0/cgroup.procs\" && exec \"$@\"", dir_.string()};
    out.insert(out.end(), argv.begin(), argv.end());
    return out;
  }
  const fs::path& dir() const { return dir_; }
  /// How often usage reached the limit of this cgroup (not of those below it).
  std::uint64_t limit_hits() const { return failcnt(dir_); }
  /// How often usage reached a limit here or in any cgroup below (fadd's
  /// units cgroup, whose hard limit an estimate that is too low meets first).
  std::uint64_t limit_hits_below() const {
    std::uint64_t n = failcnt(dir_);
    std::error_code ec;
    for (fs::recursive_directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_directory()) n += failcnt(it->path());
    return n;
  }
  /// OOM kills in this cgroup and every cgroup below it that still exists.
  std::uint64_t oom_kills() const {
    std::uint64_t total = oom_kills_in(dir_);
    std::error_code ec;
    for (fs::recursive_directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec))
      if (it->is_directory()) total += oom_kills_in(it->path());
    return total;
  }
  /// The value of `file` in this cgroup, 0 when unreadable.
  std::uint64_t read(const std::string& file) const {
    std::uint64_t v = 0;
    std::ifstream(dir_ / file) >> v;
    return v;
  }

 private:
  static std::uint64_t oom_kills_in(const fs::path& dir) {
    std::ifstream in(dir / "memory.oom_control");
    for (std::string key; in >> key;) {
      std::uint64_t value = 0;
      in >> value;
      if (key == "oom_kill") return value;
    }
    return 0;
  }
  static std::uint64_t failcnt(const fs::path& dir) {
    std::uint64_t n = 0;
    std::ifstream(dir / "memory.failcnt") >> n;
    return n;
  }
  fs::path dir_;
};

}  // namespace fad::test
