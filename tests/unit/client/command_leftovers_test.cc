// Which processes a stopped fad run command left running: the pure part.
#include "client/command_leftovers.h"

#include <algorithm>
#include <vector>

#include <catch2/catch.hpp>

using fad::client::command_leftovers;
using fad::client::parse_process_entry;
using fad::client::ProcessEntry;
using fad::client::ProcessId;

TEST_CASE("parse_process_entry reads pid, parent, session and start time", "[leftovers]") {
  const auto e = parse_process_entry(
      "4242 (sh -c (x)) S 4200 4242 4100 34816 4242 4194304 1 0 0 0 0 0 0 0 20 0 1 0 987654 1000 100");
  REQUIRE(e.has_value());
  CHECK(e->pid == 4242);
  CHECK(e->ppid == 4200);
  CHECK(e->session == 4100);
  CHECK(e->start_ticks == 987654);
  CHECK_FALSE(e->exited);  // the reader decides, from the threads left
  CHECK_FALSE(parse_process_entry("").has_value());
  CHECK_FALSE(parse_process_entry("x7 (sleep) S 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5").has_value());
  CHECK_FALSE(parse_process_entry("7(sleep) S 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5").has_value());
  CHECK_FALSE(parse_process_entry("7 (sleep) S 1 7 7 0 -1").has_value());  // no start time
}

namespace {
std::vector<pid_t> sorted(std::vector<pid_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}
}  // namespace

TEST_CASE("command_leftovers: the live tree under the root, in its session, but what it inherited", "[leftovers]") {
  // 100 is fad run (session 50). 101 its command's shell, 102 a child the
  // shell left (adopted by 100), 103 its grandchild, 104 a daemon that left
  // the session and 105 its child, 106 an exited child, 107 a tee fad run
  // had before the command (exec fad run) and 108 its child, 200 a stranger
  // and 300 a child of the stranger.
  const std::vector<ProcessEntry> table{
      {100, 1, 50, 10, false},    {101, 100, 50, 20, false},  {102, 100, 50, 21, false}, {103, 102, 50, 22, false},
      {104, 100, 104, 23, false}, {105, 104, 104, 24, false}, {106, 100, 50, 25, true},  {107, 100, 50, 5, false},
      {108, 107, 50, 30, false},  {200, 1, 50, 1, false},     {300, 200, 50, 2, false}};
  const std::vector<ProcessId> inherited{{107, 5}};
  CHECK(sorted(command_leftovers(table, 100, 50, inherited)) == std::vector<pid_t>{101, 102, 103});
  // The same pid started at another time is another process: the command's.
  CHECK(sorted(command_leftovers(table, 100, 50, {{107, 6}})) == std::vector<pid_t>{101, 102, 103, 107, 108});
  CHECK(command_leftovers(table, 103, 50, {}).empty());
  // A table read while pids were reused may hold a cycle: it still ends.
  const std::vector<ProcessEntry> cycle{{10, 11, 5, 1, false}, {11, 10, 5, 2, false}, {12, 11, 5, 3, false}};
  CHECK(sorted(command_leftovers(cycle, 10, 5, {})) == std::vector<pid_t>{11, 12});
}
