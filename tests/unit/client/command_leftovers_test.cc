// Which processes a stopped fad run command left running: the pure part.
#include "client/command_leftovers.h"

#include <algorithm>
#include <vector>

#include <catch2/catch.hpp>

using fad::client::descendants_in_session;
using fad::client::parse_process_entry;
using fad::client::ProcessEntry;

TEST_CASE("parse_process_entry reads pid, parent, session and whether it exited", "[leftovers]") {
  const auto e = parse_process_entry("4242 (sh -c (x)) S 4200 4242 4100 34816 4242 4194304 1 0 0 0");
  REQUIRE(e.has_value());
  CHECK(e->pid == 4242);
  CHECK(e->ppid == 4200);
  CHECK(e->session == 4100);
  CHECK_FALSE(e->zombie);
  CHECK(parse_process_entry("7 (sleep) Z 1 7 7 0 -1 4194304")->zombie);
  CHECK_FALSE(parse_process_entry("").has_value());
  CHECK_FALSE(parse_process_entry("x7 (sleep) S 1 7 7").has_value());
  CHECK_FALSE(parse_process_entry("7(sleep) S 1 7 7").has_value());
  CHECK_FALSE(parse_process_entry("7 (sleep) S 1 7").has_value());  // no session field
}

TEST_CASE("descendants_in_session: the live tree under the root, in its session", "[leftovers]") {
  // 100 is fad run (session 50). 101 its command's shell, 102 a child the
  // shell left (adopted by 100), 103 its grandchild, 104 a daemon that left
  // the session and 105 its child, 106 an exited child, 200 a stranger, and
  // 300 a child of the stranger.
  const std::vector<ProcessEntry> table{{100, 1, 50, false},   {101, 100, 50, false},  {102, 100, 50, false},
                                        {103, 102, 50, false}, {104, 100, 104, false}, {105, 104, 104, false},
                                        {106, 100, 50, true},  {200, 1, 50, false},    {300, 200, 50, false}};
  auto found = descendants_in_session(table, 100, 50);
  std::sort(found.begin(), found.end());
  CHECK(found == std::vector<pid_t>{101, 102, 103});
  CHECK(descendants_in_session(table, 103, 50).empty());
  // A table read while pids were reused may hold a cycle: it still ends.
  const std::vector<ProcessEntry> cycle{{10, 11, 5, false}, {11, 10, 5, false}, {12, 11, 5, false}};
  auto looped = descendants_in_session(cycle, 10, 5);
  std::sort(looped.begin(), looped.end());
  CHECK(looped == std::vector<pid_t>{11, 12});
}
