// ProcMemoryProbe over fixture trees in a temp dir: cgroup v1 and v2, limits
// and "max", with and without PSI.
#include <catch2/catch.hpp>

#include "daemon/memory_probe.h"
#include "fakes.h"

namespace fad {
namespace {

using test::TempDir;
using test::write_file;

constexpr const char* kMeminfo =
    "MemTotal:       16384000 kB\n"
    "MemFree:         1000000 kB\n"
    "MemAvailable:    8192000 kB\n"
    "Buffers:          100000 kB\n"
    "SwapTotal:       2048000 kB\n"
    "SwapFree:        1024000 kB\n";

void write_meminfo(const TempDir& root) { write_file(root.path() / "proc/meminfo", kMeminfo); }

void check_meminfo(const MemorySnapshot& s) {
  CHECK(s.total == 16384000ull * 1024);
  CHECK(s.available == 8192000ull * 1024);
  CHECK(s.swap_total == 2048000ull * 1024);
  CHECK(s.swap_free == 1024000ull * 1024);
}

}  // namespace

TEST_CASE("memory probe: cgroup v1 with a limit, and PSI", "[memory_probe]") {
  TempDir root("fad-probe");
  write_meminfo(root);
  write_file(root.path() / "proc/pressure/memory",
             "some avg10=1.53 avg60=0.87 avg300=0.25 total=12345678\n"
             "full avg10=0.42 avg60=0.10 avg300=0.03 total=2345678\n");
  write_file(root.path() / "proc/self/cgroup",
             "12:hugetlb:/\n9:memory:/system.slice/fad.service\n1:name=systemd:/system.slice/fad.service\n");
  const auto cg = root.path() / "sys/fs/cgroup/memory/system.slice/fad.service";
  write_file(cg / "memory.limit_in_bytes", "8589934592\n");
  write_file(cg / "memory.usage_in_bytes", "123456789\n");

  ProcMemoryProbe probe(root.str() + "/");
  auto s = probe.sample();
  check_meminfo(s);
  REQUIRE(s.psi_some_avg10);
  CHECK(*s.psi_some_avg10 == Approx(1.53));
  REQUIRE(s.cgroup_limit);
  CHECK(*s.cgroup_limit == 8589934592ull);
  CHECK(s.cgroup_usage == 123456789ull);

  // The files are read afresh on every sample.
  write_file(cg / "memory.usage_in_bytes", "5\n");
  CHECK(probe.sample().cgroup_usage == 5);
}

TEST_CASE("memory probe: cgroup v1 without a limit", "[memory_probe]") {
  TempDir root("fad-probe");
  write_meminfo(root);
  write_file(root.path() / "proc/self/cgroup", "9:memory:/user.slice\n");
  const auto cg = root.path() / "sys/fs/cgroup/memory/user.slice";
  write_file(cg / "memory.limit_in_bytes", "9223372036854771712\n");
  write_file(cg / "memory.usage_in_bytes", "1000\n");
  auto s = ProcMemoryProbe(root.str()).sample();
  check_meminfo(s);
  CHECK_FALSE(s.cgroup_limit);
  CHECK(s.cgroup_usage == 0);
}

TEST_CASE("memory probe: cgroup v2 with max and no PSI file", "[memory_probe]") {
  TempDir root("fad-probe");
  write_meminfo(root);
  write_file(root.path() / "proc/self/cgroup", "0::/user.slice/fad.service\n");
  const auto cg = root.path() / "sys/fs/cgroup/user.slice/fad.service";
  write_file(cg / "memory.max", "max\n");
  write_file(cg / "memory.current", "4096\n");
  auto s = ProcMemoryProbe(root.str()).sample();
  check_meminfo(s);
  CHECK_FALSE(s.psi_some_avg10);
  CHECK_FALSE(s.cgroup_limit);
  CHECK(s.cgroup_usage == 0);
}

TEST_CASE("memory probe: cgroup v2 with a limit", "[memory_probe]") {
  TempDir root("fad-probe");
  write_meminfo(root);
  write_file(root.path() / "proc/self/cgroup", "0::/fad.slice\n");
  const auto cg = root.path() / "sys/fs/cgroup/fad.slice";
  write_file(cg / "memory.max", "4294967296\n");
  write_file(cg / "memory.current", "1048576\n");
  auto s = ProcMemoryProbe(root.str()).sample();
  REQUIRE(s.cgroup_limit);
  CHECK(*s.cgroup_limit == 4294967296ull);
  CHECK(s.cgroup_usage == 1048576ull);
}

TEST_CASE("memory probe: the root cgroup v2 reads the top-level files", "[memory_probe]") {
  TempDir root("fad-probe");
  write_meminfo(root);
  write_file(root.path() / "proc/self/cgroup", "0::/\n");
  write_file(root.path() / "sys/fs/cgroup/memory.max", "2147483648\n");
  write_file(root.path() / "sys/fs/cgroup/memory.current", "77\n");
  auto s = ProcMemoryProbe(root.str()).sample();
  REQUIRE(s.cgroup_limit);
  CHECK(*s.cgroup_limit == 2147483648ull);
  CHECK(s.cgroup_usage == 77);
}

TEST_CASE("memory probe: missing files leave the snapshot empty", "[memory_probe]") {
  TempDir root("fad-probe");
  auto s = ProcMemoryProbe(root.str()).sample();
  CHECK(s.total == 0);
  CHECK(s.available == 0);
  CHECK_FALSE(s.psi_some_avg10);
  CHECK_FALSE(s.cgroup_limit);

  // A cgroup named in /proc/self/cgroup whose files are missing is no limit.
  write_meminfo(root);
  write_file(root.path() / "proc/self/cgroup", "0::/gone\n");
  auto t = ProcMemoryProbe(root.str()).sample();
  check_meminfo(t);
  CHECK_FALSE(t.cgroup_limit);
}

TEST_CASE("memory probe: read_small_file", "[memory_probe]") {
  TempDir root("fad-probe");
  write_file(root.path() / "f", "hello\nworld");
  CHECK(read_small_file(root / "f") == "hello\nworld");
  CHECK(read_small_file(root / "missing").empty());
}

TEST_CASE("memory probe: a cgroup's usage leaves out the page cache no one holds", "[memory_probe]") {
  // Usage counts inactive file pages that the kernel drops before it kills
  // anything; counting them as others' memory would shrink fad's capacity to
  // nothing once a long build has filled the cache.
  TempDir root("fad-probe");
  write_meminfo(root);
  write_file(root.path() / "proc/self/cgroup", "9:memory:/vm\n");
  const auto v1 = root.path() / "sys/fs/cgroup/memory/vm";
  write_file(v1 / "memory.limit_in_bytes", "10737418240\n");
  write_file(v1 / "memory.usage_in_bytes", "9000\n");
  write_file(v1 / "memory.stat", "cache 100\ninactive_file 50\ntotal_cache 7000\ntotal_inactive_file 6000\n");
  CHECK(ProcMemoryProbe(root.str()).sample().cgroup_usage == 3000);

  TempDir root2("fad-probe");
  write_meminfo(root2);
  write_file(root2.path() / "proc/self/cgroup", "0::/vm\n");
  const auto v2 = root2.path() / "sys/fs/cgroup/vm";
  write_file(v2 / "memory.max", "10737418240\n");
  write_file(v2 / "memory.current", "9000\n");
  write_file(v2 / "memory.stat", "anon 2000\nfile 7000\nactive_file 1000\ninactive_file 6000\n");
  CHECK(ProcMemoryProbe(root2.str()).sample().cgroup_usage == 3000);
}

}  // namespace fad
