// Exit statuses in words: the signal a status of 128 + N names, and what is
// an ordinary exit code however large.
#include <catch2/catch.hpp>

#include "common/exit_status.h"

namespace fad {

TEST_CASE("exit status: 128 + N is signal N, anything else an exit code", "[exit_status]") {
  CHECK(killing_signal(137) == 9);
  CHECK(killing_signal(129) == 1);
  CHECK(killing_signal(192) == 64);
  CHECK_FALSE(killing_signal(128).has_value());
  CHECK_FALSE(killing_signal(193).has_value());
  CHECK_FALSE(killing_signal(1).has_value());
  CHECK_FALSE(killing_signal(-1).has_value());
  CHECK(exit_status_text(137) == "killed by signal 9 (SIGKILL)");
  CHECK(exit_status_text(153) == "killed by signal 25 (SIGXFSZ)");
  CHECK(exit_status_text(2) == "exit code 2");
  CHECK(exit_status_text(255) == "exit code 255");
  CHECK(signal_name(2) == "SIGINT");
  CHECK(signal_name(15) == "SIGTERM");
  CHECK(signal_name(0) == "signal 0");
  CHECK(signal_name(99) == "signal 99");
}

}  // namespace fad
