// Tests for common/meminfo: each kernel file layout, from fixtures where the
// layout is long, inline where one line says it all.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "common/meminfo.h"

namespace {
std::string read_fixture(const std::string& name) {
  std::ifstream in(std::string(FAD_FIXTURES_DIR) + "/" + name);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("parse_meminfo: Debian 12, no swap, kB means KiB", "[meminfo]") {
  auto r = fad::parse_meminfo(read_fixture("meminfo_debian12.txt"));
  REQUIRE(r.ok());
  CHECK(r->total == 32787364ull * 1024);
  CHECK(r->free == 1843212ull * 1024);
  CHECK(r->available == 20435876ull * 1024);
  CHECK(r->swap_total == 0);
  CHECK(r->swap_free == 0);
}

TEST_CASE("parse_meminfo: WSL2 with swap", "[meminfo]") {
  auto r = fad::parse_meminfo(read_fixture("meminfo_wsl2.txt"));
  REQUIRE(r.ok());
  CHECK(r->total == 16303456ull * 1024);
  CHECK(r->available == 13421772ull * 1024);
  CHECK(r->swap_total == 4194304ull * 1024);
  CHECK(r->swap_free == 4128768ull * 1024);
}

TEST_CASE("parse_meminfo: MemAvailable and MemTotal are required", "[meminfo]") {
  auto r = fad::parse_meminfo(read_fixture("meminfo_no_available.txt"));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error() == "/proc/meminfo has no MemAvailable line (Linux 3.14 or newer is needed)");
  auto no_total = fad::parse_meminfo("MemFree: 1 kB\nMemAvailable: 2 kB\n");
  REQUIRE_FALSE(no_total.ok());
  CHECK(no_total.error() == "/proc/meminfo has no MemTotal line");
  CHECK_FALSE(fad::parse_meminfo("").ok());
  // No trailing newline, tabs, prefix look-alikes (MemTotalX) ignored.
  auto tight = fad::parse_meminfo("MemTotalX: 9 kB\nMemTotal:\t100 kB\nMemAvailable: 50 kB");
  REQUIRE(tight.ok());
  CHECK(tight->total == 102400);
  CHECK(tight->available == 51200);
}

TEST_CASE("parse_psi: some and full lines", "[meminfo][psi]") {
  auto r = fad::parse_psi(read_fixture("psi_memory.txt"));
  REQUIRE(r.ok());
  CHECK(r->some_avg10 == Approx(1.53));
  CHECK(r->some_avg60 == Approx(0.87));
  CHECK(r->some_avg300 == Approx(0.25));
  CHECK(r->some_total_us == 12345678);
  CHECK(r->full_avg10 == Approx(0.42));
  CHECK(r->full_avg60 == Approx(0.10));
  CHECK(r->full_avg300 == Approx(0.03));
  CHECK(r->full_total_us == 2345678);
}

TEST_CASE("parse_psi: the full line is optional", "[meminfo][psi]") {
  auto r = fad::parse_psi(read_fixture("psi_memory_no_full.txt"));
  REQUIRE(r.ok());
  CHECK(r->some_avg10 == Approx(12.5));
  CHECK(r->some_total_us == 987654321);
  CHECK(r->full_avg10 == 0);
  CHECK(r->full_total_us == 0);
}

TEST_CASE("parse_psi: errors", "[meminfo][psi]") {
  auto none = fad::parse_psi("");
  REQUIRE_FALSE(none.ok());
  CHECK(none.error() == "PSI text has no 'some' line");
  CHECK(fad::parse_psi("full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n").error() == "PSI text has no 'some' line");
  CHECK(fad::parse_psi("some avg10=x avg60=0.00 avg300=0.00 total=0\n").error() == "bad PSI value 'avg10=x'");
  CHECK(fad::parse_psi("some avg10=0.00\n").error() == "incomplete PSI line 'some avg10=0.00'");
  CHECK(fad::parse_psi("partial avg10=0.00\n").error() == "unexpected PSI line 'partial avg10=0.00'");
}

TEST_CASE("parse_cgroup_limit: v2 and v1 spellings of no limit", "[meminfo][cgroup]") {
  auto max = fad::parse_cgroup_limit("max\n");
  REQUIRE(max.ok());
  CHECK_FALSE(max->has_value());
  auto v1_none = fad::parse_cgroup_limit("9223372036854771712\n");
  REQUIRE(v1_none.ok());
  CHECK_FALSE(v1_none->has_value());
  auto at_threshold = fad::parse_cgroup_limit("4611686018427387904");  // 2^62
  REQUIRE(at_threshold.ok());
  CHECK_FALSE(at_threshold->has_value());

  auto limit = fad::parse_cgroup_limit("8589934592\n");
  REQUIRE(limit.ok());
  CHECK(**limit == 8589934592ull);
  auto below = fad::parse_cgroup_limit("4611686018427387903");
  REQUIRE(below.ok());
  CHECK(**below == 4611686018427387903ull);

  auto bad = fad::parse_cgroup_limit("lots\n");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error() == "bad cgroup memory limit 'lots'");
  CHECK_FALSE(fad::parse_cgroup_limit("").ok());
  CHECK_FALSE(fad::parse_cgroup_limit("-1").ok());
}

TEST_CASE("parse_oom_kills reads v1 memory.oom_control and v2 memory.events", "[meminfo][cgroup]") {
  CHECK(fad::parse_oom_kills("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n") == std::optional<std::uint64_t>(3));
  // v2: oom_group_kill must not be taken for oom_kill.
  CHECK(fad::parse_oom_kills("low 0\nhigh 0\nmax 12\noom 2\noom_group_kill 5\noom_kill 1\n") ==
        std::optional<std::uint64_t>(1));
  CHECK(fad::parse_oom_kills("oom_kill 0") == std::optional<std::uint64_t>(0));
  // Kernels before 4.13 have no counter; a vanished cgroup reads as empty.
  CHECK_FALSE(fad::parse_oom_kills("oom_kill_disable 0\nunder_oom 0\n"));
  CHECK_FALSE(fad::parse_oom_kills(""));
  CHECK_FALSE(fad::parse_oom_kills("oom_kill lots\n"));
}

TEST_CASE("parse_cgroup_value", "[meminfo][cgroup]") {
  CHECK(*fad::parse_cgroup_value("123456789\n") == 123456789);
  CHECK(*fad::parse_cgroup_value("0") == 0);
  auto bad = fad::parse_cgroup_value("12 kB");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error() == "bad cgroup value '12 kB'");
  CHECK_FALSE(fad::parse_cgroup_value("").ok());
}

TEST_CASE("parse_proc_cgroup_memory_path", "[meminfo][cgroup]") {
  bool is_v2 = true;
  auto v1 = fad::parse_proc_cgroup_memory_path(read_fixture("cgroup_v1_self.txt"), &is_v2);
  REQUIRE(v1.has_value());
  CHECK(*v1 == "/user.slice/user-1000.slice/session-3.scope");
  CHECK_FALSE(is_v2);

  is_v2 = false;
  auto v2 = fad::parse_proc_cgroup_memory_path(read_fixture("cgroup_v2_self.txt"), &is_v2);
  REQUIRE(v2.has_value());
  CHECK(*v2 == "/user.slice/user-1000.slice/user@1000.service/app.slice/fad.service");
  CHECK(is_v2);

  // Hybrid: memory is still a v1 controller, even though a "0::" line exists.
  is_v2 = true;
  auto hybrid = fad::parse_proc_cgroup_memory_path(read_fixture("cgroup_hybrid_self.txt"), &is_v2);
  REQUIRE(hybrid.has_value());
  CHECK(*hybrid == "/system.slice/fad.service");
  CHECK_FALSE(is_v2);

  // Controller lists: memory among others; "memory" only as a substring does not count.
  CHECK(*fad::parse_proc_cgroup_memory_path("4:cpu,memory:/a\n", nullptr) == "/a");
  CHECK_FALSE(fad::parse_proc_cgroup_memory_path("4:cpu,cpuacct:/a\n5:memoryx:/b\n", nullptr).has_value());
  CHECK_FALSE(fad::parse_proc_cgroup_memory_path("", nullptr).has_value());
  // Paths may contain ':'.
  CHECK(*fad::parse_proc_cgroup_memory_path("0::/a:b", nullptr) == "/a:b");
}

TEST_CASE("parse_status_rss", "[meminfo][proc]") {
  const char* status =
      "Name:\tcicc\nUmask:\t0022\nState:\tR (running)\nPid:\t1234\nVmPeak:\t 2345678 kB\n"
      "VmHWM:\t 1234567 kB\nVmRSS:\t  987654 kB\nRssAnon:\t  900000 kB\nThreads:\t1\n";
  CHECK(*fad::parse_status_rss(status) == 987654ull * 1024);
  // Kernel threads and zombies have no VmRSS line.
  CHECK_FALSE(fad::parse_status_rss("Name:\tkthreadd\nState:\tS (sleeping)\n").has_value());
  CHECK_FALSE(fad::parse_status_rss("VmRSS:\tgarbage kB\n").has_value());
}

TEST_CASE("parse_stat_state: the letter after the last parenthesis", "[meminfo][proc]") {
  CHECK(fad::parse_stat_state("1234 (cc1plus) T 1200 1234") == 'T');
  CHECK(fad::parse_stat_state("77 (a) Z) (c) S 1 77") == 'S');
  CHECK_FALSE(fad::parse_stat_state("").has_value());
  CHECK_FALSE(fad::parse_stat_state("1234 (cc1plus").has_value());
  CHECK_FALSE(fad::parse_stat_state("1234 (cc1plus)").has_value());
}

TEST_CASE("parse_stat_ppid: comm may hold spaces and parentheses", "[meminfo][proc]") {
  CHECK(*fad::parse_stat_ppid("1234 (cc1plus) S 1200 1234 1200 0 -1 4194304 1 0 0 0") == 1200);
  CHECK(*fad::parse_stat_ppid("1234 (cc1 plus) S 1200 1234 1200 0 -1") == 1200);
  CHECK(*fad::parse_stat_ppid("77 (a) b) (c) R 1 77 77 0") == 1);
  CHECK_FALSE(fad::parse_stat_ppid("").has_value());
  CHECK_FALSE(fad::parse_stat_ppid("1234 (cc1plus").has_value());
  CHECK_FALSE(fad::parse_stat_ppid("1234 (cc1plus) S").has_value());
  CHECK_FALSE(fad::parse_stat_ppid("1234 (cc1plus) S x").has_value());
}

TEST_CASE("parse_stat_start_ticks: field 22, counted after a comm with spaces and parentheses", "[meminfo][proc]") {
  const std::string rest = " S 1 2 2 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 8192 100";
  CHECK(fad::parse_stat_start_ticks("42 (fadd)" + rest) == std::optional<std::uint64_t>(987654));
  CHECK(fad::parse_stat_start_ticks("42 (a) b) (c d)" + rest) == std::optional<std::uint64_t>(987654));
  CHECK_FALSE(fad::parse_stat_start_ticks("42 (fadd) S 1 2 2 0 -1 4194560 100 0").has_value());
  CHECK_FALSE(
      fad::parse_stat_start_ticks("42 (fadd) S 1 2 2 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 -5 8192").has_value());
  CHECK_FALSE(fad::parse_stat_start_ticks("").has_value());
}

TEST_CASE("parse_stat_field reads one key of memory.stat, not a key it is a prefix of", "[meminfo][cgroup]") {
  const std::string stat = "inactive_file 5\ntotal_inactive_file 6000\ntotal_rss x\n";
  CHECK(fad::parse_stat_field(stat, "inactive_file") == std::optional<std::uint64_t>(5));
  CHECK(fad::parse_stat_field(stat, "total_inactive_file") == std::optional<std::uint64_t>(6000));
  CHECK_FALSE(fad::parse_stat_field(stat, "total_rss"));
  CHECK_FALSE(fad::parse_stat_field(stat, "total"));
  CHECK_FALSE(fad::parse_stat_field("", "inactive_file"));
}
