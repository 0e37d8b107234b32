// Suggestions for mistyped names: the distance, and when a word is too far
// from every candidate to suggest one.
#include <catch2/catch.hpp>

#include "common/suggest.h"

using fad::edit_distance;
using fad::suggest;

TEST_CASE("edit distance and suggestions") {
  CHECK(edit_distance("status", "status") == 0);
  CHECK(edit_distance("stauts", "status") == 1);  // one swap of neighbours
  CHECK(edit_distance("stat", "status") == 2);
  CHECK(edit_distance("", "abc") == 3);
  const std::vector<std::string> names{"submit", "status", "logs", "watch"};
  CHECK(suggest("stauts", names) == std::optional<std::string>("status"));
  CHECK(suggest("lgos", names) == std::optional<std::string>("logs"));
  CHECK_FALSE(suggest("frob", names));
  CHECK_FALSE(suggest("xyzzy", names));
}
