// parse_stat_pgid and parse_process_info on awkward comm fields, and
// process_group_rss over a fake /proc tree.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <map>
#include <set>
#include <thread>

#include <boost/asio/io_context.hpp>

#include "daemon/boost_launcher.h"
#include "daemon/process_launcher.h"
#include "fakes.h"

namespace fad {

using test::TempDir;
using test::write_file;

TEST_CASE("process group: parse_stat_pgid reads field 5", "[process_group]") {
  CHECK(parse_stat_pgid("1234 (nvcc) S 1 1234 1234 0 -1 4194304 100 0") == std::optional<int>(1234));
  CHECK(parse_stat_pgid("1300 (cc1 plus) R 1234 1234 1200 0 -1") == std::optional<int>(1234));
  CHECK(parse_stat_pgid("55 (a) b) S 2 200 200 0") == std::optional<int>(200));
  CHECK(parse_stat_pgid("56 ((x)) (y) Z 7 300 300 0\n") == std::optional<int>(300));
  CHECK_FALSE(parse_stat_pgid(""));
  CHECK_FALSE(parse_stat_pgid("garbage"));
  CHECK_FALSE(parse_stat_pgid("1 (init)"));
  CHECK_FALSE(parse_stat_pgid("1 (init) S 0"));
  CHECK_FALSE(parse_stat_pgid("1 (init) S x y"));
}

TEST_CASE("process group: process_group_rss sums VmRSS over the group", "[process_group]") {
  TempDir tmp("fad-proc");
  const auto proc = tmp.path() / "proc";
  auto add = [&](int pid, const std::string& comm, int pgid, const std::string& status) {
    const auto dir = proc / std::to_string(pid);
    write_file(dir / "stat", std::to_string(pid) + " (" + comm + ") S 1 " + std::to_string(pgid) + " " +
                                 std::to_string(pgid) + " 0 -1 0\n");
    if (!status.empty()) write_file(dir / "status", status);
  };
  add(100, "nvcc", 100, "Name:\tnvcc\nVmPeak:\t  99999 kB\nVmRSS:\t   1000 kB\n");
  add(101, "cc1 plus", 100, "Name:\tcc1plus\nVmRSS:\t   2500 kB\nRssAnon:\t 2000 kB\n");
  add(200, "ptxas", 200, "Name:\tptxas\nVmRSS:\t   7000 kB\n");
  add(102, "zombie) x", 100, "Name:\tz\nState:\tZ (zombie)\n");    // no VmRSS: counts 0
  write_file(proc / "self" / "stat", "1 (self) S 0 100 100 0\n");  // not a pid dir
  write_file(proc / "meminfo", "MemTotal: 1 kB\n");

  CHECK(process_group_rss(proc.string(), 100) == 3500ull * 1024);
  CHECK(process_group_rss(proc.string(), 200) == 7000ull * 1024);
  CHECK(process_group_rss(proc.string(), 300) == 0);
  CHECK(process_group_rss((tmp.path() / "nowhere").string(), 100) == 0);
  // Every group at once, in one scan: each group asked for has its own sum.
  const std::map<int, std::uint64_t> all{{100, 3500ull * 1024}, {200, 7000ull * 1024}, {300, 0}};
  CHECK(process_groups_rss(proc.string(), {100, 200, 300}) == all);
  CHECK(process_groups_rss(proc.string(), {200}) == std::map<int, std::uint64_t>{{200, 7000ull * 1024}});
  CHECK(process_groups_rss(proc.string(), {}).empty());
}

TEST_CASE("process group: a launcher without cgroups measures its running units in one scan, as one by one",
          "[process_group]") {
  TempDir tmp("fad-proc");
  boost::asio::io_context io;
  BoostLauncher launcher(io, nullptr);
  std::set<int> groups;
  // Each holds 48 MiB it has written to, so its RSS stands out from a shell's.
  for (int i = 0; i < 2; ++i) {
    auto pid = launcher.launch(LaunchSpec{i + 1,
                                          {"/usr/bin/python3", "-c",
                                           "import time\nb = b'x' * (48 << 20)\nprint(1, flush=True)\n"
                                           "time.sleep(60)"},
                                          (tmp.path() / ("unit" + std::to_string(i) + ".log")).string()},
                               [](ExitInfo) {});
    REQUIRE(pid);
    groups.insert(*pid);
  }
  // Ready once each printed (its buffer is allocated and touched).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (int i = 0; i < 2; ++i)
    while (test::slurp(tmp.path() / ("unit" + std::to_string(i) + ".log")).empty() &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  groups.insert(0x7ffffffe);  // no such group: 0
  const auto together = launcher.groups_memory(groups);
  REQUIRE(together.size() == 3);
  CHECK(together.at(0x7ffffffe) == 0);
  for (int pgid : groups) {
    if (pgid == 0x7ffffffe) continue;
    CHECK(together.at(pgid) > 48ull << 20);
    const auto alone = launcher.group_memory(pgid);
    CHECK(alone > 48ull << 20);
    // The same processes a moment apart: within a few pages of each other.
    CHECK(std::max(alone, together.at(pgid)) - std::min(alone, together.at(pgid)) < 4ull << 20);
  }
  for (int pgid : groups) launcher.signal_group(pgid, SIGKILL);
}

TEST_CASE("process group: a unit with a temp dir of its own gets it as TMPDIR, and fadd's environment besides",
          "[process_group]") {
  TempDir tmp("fad-proc");
  boost::asio::io_context io;
  BoostLauncher launcher(io, nullptr);
  const std::string log = (tmp.path() / "unit.log").string();
  bool ended = false;
  LaunchSpec spec{1, {"/bin/sh", "-c", "echo \"$TMPDIR|$PATH\""}, log};
  spec.temp_dir = (tmp.path() / "t").string();
  REQUIRE(launcher.launch(spec, [&](ExitInfo info) {
    ended = true;
    CHECK(info.exit_code == 0);
  }));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!ended && std::chrono::steady_clock::now() < deadline) io.run_for(std::chrono::milliseconds(50));
  REQUIRE(ended);
  const char* path = std::getenv("PATH");
  CHECK(test::slurp(log) == spec.temp_dir + "|" + (path ? path : "") + "\n");
}

TEST_CASE("process group: parse_process_info reads parent, group, owner and start time", "[process_group]") {
  const std::string status = "Name:\tfad\nUid:\t1000\t1000\t1000\t1000\n";
  auto info =
      parse_process_info("4321 (fad (run)) S 77 4321 4321 0 -1 4194560 1 0 0 0 3 1 0 0 20 0 1 0 987654 1 2\n", status);
  REQUIRE(info);
  CHECK(info->ppid == 77);
  CHECK(info->pgid == 4321);
  CHECK(info->uid == 1000);
  CHECK(info->start_ticks == 987654);
  CHECK_FALSE(info->zombie);
  auto dead = parse_process_info("4321 (fad) Z 77 4321 4321 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 987654 0 0\n", status);
  REQUIRE(dead);
  CHECK(dead->zombie);
  CHECK_FALSE(info->stopped);
  for (const char* state : {"T", "t"}) {
    auto held = parse_process_info(
        std::string("4321 (fad) ") + state + " 77 4321 4321 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 987654 0 0\n", status);
    REQUIRE(held);
    CHECK(held->stopped);  // Ctrl-Z or SIGSTOP, or a debugger
  }
  // Cut off before the start time: not a process fadd can tell apart from a later one.
  CHECK_FALSE(parse_process_info("4321 (fad) S 77 4321 4321 0 -1 0\n", status));
  CHECK_FALSE(parse_process_info("4321 (fad) S 77 4321 4321 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0\n", "Name:\tx\n"));

  // This very process, as the kernel describes it.
  auto self = read_process_info(::getpid());
  REQUIRE(self);
  CHECK(self->ppid == ::getppid());
  CHECK(self->uid == ::getuid());
  CHECK(self->start_ticks > 0);
  CHECK(read_process_info(::getpid())->start_ticks == self->start_ticks);
}

TEST_CASE("process group: a group is stopped only when every living process of it is", "[process_group]") {
  TempDir tmp("fad-proc");
  const auto proc = tmp.path() / "proc";
  auto add = [&](int pid, int pgid, char state) {
    write_file(proc / std::to_string(pid) / "stat", std::to_string(pid) + " (a (b) c) " + state + " 1 " +
                                                        std::to_string(pgid) + " " + std::to_string(pgid) + " 0\n");
  };
  add(100, 100, 'T');  // Ctrl-Z: nvcc and its cicc
  add(101, 100, 'T');
  add(102, 100, 'Z');  // exited, not reaped: runs nothing
  add(200, 200, 'T');  // a leader that stopped itself
  add(201, 200, 'R');  // while its child compiles
  add(300, 300, 't');  // stopped by a debugger
  add(400, 400, 'Z');  // nothing left alive
  add(700, 700, 'S');  // a running leader: not stopped, whatever the rest
  add(701, 700, 'T');
  add(800, 800, 'Z');  // a leader whose main thread alone exited: its other threads compute
  write_file(proc / "800" / "status", "Name:\tcc1plus\nState:\tZ (zombie)\nThreads:\t3\n");
  add(801, 800, 'T');
  CHECK(process_group_stopped(proc.string(), 100));
  CHECK_FALSE(process_group_stopped(proc.string(), 200));
  CHECK(process_group_stopped(proc.string(), 300));
  CHECK_FALSE(process_group_stopped(proc.string(), 400));
  CHECK_FALSE(process_group_stopped(proc.string(), 500));
  CHECK_FALSE(process_group_stopped(proc.string(), 700));
  CHECK_FALSE(process_group_stopped(proc.string(), 800));
  // By pid, as a unit cgroup lists them: a setsid child outside the group counts.
  add(600, 600, 'S');
  CHECK(processes_stopped(proc.string(), 100, {100, 101, 102}));
  CHECK_FALSE(processes_stopped(proc.string(), 100, {100, 101, 600}));
  CHECK(processes_stopped(proc.string(), 100, {100, 999}));  // 999 exited meanwhile
  CHECK_FALSE(processes_stopped(proc.string(), 100, {}));
  CHECK_FALSE(processes_stopped(proc.string(), 800, {800, 801}));
  CHECK_FALSE(processes_stopped(proc.string(), 700, {701}));  // its leader runs
}

TEST_CASE("process group: process_group_owners names the owner of every member", "[process_group]") {
  // This test's own process group, as the kernel describes it.
  const auto owners = process_group_owners("/proc", ::getpgrp());
  REQUIRE_FALSE(owners.empty());
  CHECK(std::count(owners.begin(), owners.end(), ::getuid()) >= 1);
  CHECK(process_group_owners("/proc", 0x7ffffffe).empty());  // above any pid the kernel hands out
}

}  // namespace fad
