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
  // Cut short: the one name it begins; none when two begin so, or it is too short.
  CHECK(suggest("stat", names) == std::optional<std::string>("status"));
  CHECK(suggest("subm", names) == std::optional<std::string>("submit"));
  CHECK(suggest("wa", names) == std::optional<std::string>("watch"));
  CHECK_FALSE(suggest("s", names));
  CHECK_FALSE(suggest("su", {"submit", "suspend"}));
  CHECK_FALSE(suggest("stat", {"status", "statistics"}));
}

TEST_CASE("CLI11's count complaints are said in fad's words, others left alone") {
  CHECK(fad::option_count_problem("--socket: 1 required PATH missing") ==
        std::optional<std::string>("--socket: needs a value"));
  CHECK(fad::option_count_problem("--name: At Most 1 required but received 2") ==
        std::optional<std::string>("--name: given more than once; give it once"));
  CHECK_FALSE(fad::option_count_problem("--kernels: At Most 10 required but received 11"));
  CHECK_FALSE(fad::option_count_problem("Could not convert: --limit = x"));
  CHECK_FALSE(fad::option_count_problem("ID: 1 required INT missing"));
}

TEST_CASE("an unknown option is named as typed, with the closest name to its name") {
  const std::vector<std::string> names{"--socket", "--memory-budget", "--cores"};
  CHECK(fad::unknown_option("--sokcet=/run/fad.sock", names) ==
        "unknown option --sokcet=/run/fad.sock; did you mean '--socket'?");
  CHECK(fad::unknown_option("--frobnicate", names) == "unknown option --frobnicate");
  const auto words = fad::unexpected_words("The following arguments were not expected: 4G --memry-budget");
  CHECK(words == std::vector<std::string>{"4G", "--memry-budget"});
  REQUIRE(fad::first_option(words) != words.end());
  CHECK(*fad::first_option(words) == "--memry-budget");
  CHECK(fad::unexpected_words("no list here").empty());
}

TEST_CASE("a dash a word processor made of '--' is named, with the option it was") {
  CHECK(fad::dash_lookalike("\xe2\x80\x94socket") ==
        "'\xe2\x80\x94socket' starts with an em dash, not '-': did you mean '--socket'?");
  CHECK(fad::dash_lookalike("\xe2\x80\x93json") ==
        "'\xe2\x80\x93json' starts with an en dash, not '-': did you mean '--json'?");
  CHECK(fad::dash_lookalike("\xe2\x88\x92h") ==
        "'\xe2\x88\x92h' starts with a minus sign, not '-': did you mean '-h'?");
  for (const char* plain : {"--socket", "-h", "socket", "", "\xe2\x80\x9cquoted\xe2\x80\x9d"})
    CHECK(fad::dash_lookalike(plain).empty());
}

TEST_CASE("the '=' forms CLI11 misreads are split into option and value, before the options' end only") {
  std::vector<std::string> args{"--name=", "x", "-o=r.html", "-o=", "--name=a", "-=", "-oX", "--", "-o=y"};
  const std::size_t end = fad::split_option_values(args, 7);
  CHECK(end == 10);
  CHECK(args ==
        std::vector<std::string>{"--name", "", "x", "-o", "r.html", "-o", "", "--name=a", "-=", "-oX", "--", "-o=y"});
}
