// Tests for client/compiler_process: a real child, held before exec until
// go(), its output captured, and the OOM score it runs with.
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include <catch2/catch.hpp>

#include "client/compiler_process.h"

using namespace fad::client;

namespace {
int own_oom_score_adj() {
  int v = 0;
  std::ifstream("/proc/self/oom_score_adj") >> v;
  return v;
}

/// The oom_score_adj a compiler let go as `oom_victim` or not runs with, as it reports it.
std::string score_of_compiler(bool oom_victim) {
  auto proc = CompilerProcess::start({"cat", "/proc/self/oom_score_adj"}, true);
  REQUIRE(proc.has_value());
  proc->go(oom_victim);
  const CompilerExit exit = proc->wait();
  REQUIRE(exit.code == 0);
  REQUIRE(exit.complete);
  return exit.stdout_text;
}
}  // namespace

TEST_CASE("a compiler fadd runs is the kernel's first OOM victim and one run without fadd is not", "[launcher][oom]") {
  const int own = own_oom_score_adj();
  if (own >= 500) {
    WARN("SKIP: this process already has oom_score_adj " << own << ", so a raise to 500 cannot be seen");
    return;
  }
  CHECK(score_of_compiler(true) == "500\n");
  CHECK(score_of_compiler(false) == std::to_string(own) + "\n");
}

TEST_CASE("a held compiler never runs when it is abandoned", "[launcher]") {
  char tmpl[] = "/tmp/fad-compiler-process-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::string marker = std::string(tmpl) + "/ran";
  {
    auto proc = CompilerProcess::start({"touch", marker}, false);
    REQUIRE(proc.has_value());
    proc->abandon();
  }
  CHECK(::access(marker.c_str(), F_OK) != 0);
  ::rmdir(tmpl);
}

TEST_CASE("a compiler stopped in silence is seen stopped by the look the wait takes now and then", "[launcher]") {
  for (const bool capture : {true, false}) {
    auto proc = CompilerProcess::start({"sh", "-c", "kill -STOP $$; echo went on"}, capture);
    REQUIRE(proc.has_value());
    proc->go();
    int looks = 0;
    bool seen_stopped = false;
    const CompilerExit exit = proc->wait([&] {
      ++looks;
      // Only this look can continue it: the wait must come back while the
      // compiler neither prints nor ends.
      if (proc->stopped()) {
        seen_stopped = true;
        ::kill(-proc->pid(), SIGCONT);
      }
    });
    CHECK(seen_stopped);
    CHECK(looks >= 1);
    CHECK(exit.code == 0);
    CHECK(exit.stdout_text == (capture ? "went on\n" : ""));
  }
}

TEST_CASE("a running compiler is not seen stopped", "[launcher]") {
  auto proc = CompilerProcess::start({"sleep", "5"}, false);
  REQUIRE(proc.has_value());
  proc->go();
  CHECK_FALSE(proc->stopped());
  ::kill(-proc->pid(), SIGKILL);
  CHECK(proc->wait().signaled);
}
