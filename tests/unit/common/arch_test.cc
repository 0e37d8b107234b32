// Tests for common/arch: spellings, renderings, lists and nvcc validation.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "common/arch.h"

using fad::Arch;
using fad::parse_arch;

namespace {
std::string read_fixture(const std::string& name) {
  std::ifstream in(std::string(FAD_FIXTURES_DIR) + "/" + name);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("parse_arch: every accepted spelling", "[arch]") {
  struct Case {
    const char* text;
    int number;
    char suffix;
  };
  for (Case c : {Case{"12.0", 120, 0},
                 {"120", 120, 0},
                 {"sm_120", 120, 0},
                 {"compute_120", 120, 0},
                 {"9.0a", 90, 'a'},
                 {"sm_90a", 90, 'a'},
                 {"90a", 90, 'a'},
                 {"10.0f", 100, 'f'},
                 {"sm_100f", 100, 'f'},
                 {"  8.6\t", 86, 0},
                 {"7.5", 75, 0},
                 {"SM_90A", 90, 'a'},
                 {"compute_90a", 90, 'a'}}) {
    INFO(c.text);
    auto r = parse_arch(c.text);
    REQUIRE(r.ok());
    CHECK(r->number == c.number);
    CHECK(r->suffix == c.suffix);
  }
}

TEST_CASE("parse_arch: rejects and quotes the input", "[arch]") {
  for (const char* bad : {"1.2.3", "sm_", "abc", "9.0b", "0", "", "compute_", "12.00", "1200", "sm_9.0", "a"}) {
    INFO(bad);
    auto r = parse_arch(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error() == "invalid arch '" + std::string(bad) +
                           "': expected a compute capability such as 12.0, 120, sm_120, compute_120 or 9.0a");
  }
  // Quoted printable: an escape sequence in a flag or a socket message does not reach a terminal or log.
  CHECK(parse_arch("9.0\x1b[2J").error().find("invalid arch '9.0?[2J'") == 0);
  CHECK(parse_arch("\xc2\x9b"
                   "31m")
            .error()
            .find("invalid arch '?31m'") == 0);
}

TEST_CASE("parse_arch: a two-digit number below 3.0 is ambiguous", "[arch]") {
  auto r = parse_arch("12");
  REQUIRE_FALSE(r.ok());
  CHECK(r.error() == "invalid arch '12': ambiguous; write 12.0 or 120");
}

TEST_CASE("Arch renders every form", "[arch]") {
  CHECK(Arch{120, 0}.display() == "12.0");
  CHECK(Arch{90, 'a'}.display() == "9.0a");
  CHECK(Arch{75, 0}.display() == "7.5");
  CHECK(Arch{100, 0}.display() == "10.0");
  CHECK(Arch{100, 'f'}.display() == "10.0f");
  CHECK(Arch{120, 0}.sm() == "sm_120");
  CHECK(Arch{90, 'a'}.sm() == "sm_90a");
  CHECK(Arch{90, 'a'}.compute() == "compute_90a");
  CHECK(Arch{90, 'a'}.gencode() == "arch=compute_90a,code=sm_90a");
  CHECK(Arch{86, 0}.gencode() == "arch=compute_86,code=sm_86");
  // display() parses back to the same arch
  for (Arch a : {Arch{75, 0}, Arch{90, 'a'}, Arch{100, 'f'}, Arch{121, 0}}) CHECK(*parse_arch(a.display()) == a);
}

TEST_CASE("parse_arch_list: commas, repeats, duplicates", "[arch]") {
  auto r = fad::parse_arch_list({"8.0,9.0", "12.0", "sm_80", "90"});
  REQUIRE(r.ok());
  CHECK(*r == std::vector<Arch>{{80, 0}, {90, 0}, {120, 0}});
  auto bad = fad::parse_arch_list({"8.0,9.5x"});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().find("invalid arch '9.5x'") == 0);
  CHECK_FALSE(fad::parse_arch_list({"8.0,"}).ok());
  // An empty element names the list, not an arch called ''.
  for (const char* list : {"12.0,", "9.0,,12.0", ",9.0", "9.0, ,12.0"})
    CHECK(fad::parse_arch_list({list}).error() ==
          "empty arch in the list '" + std::string(list) + "': separate archs with single commas");
  CHECK(fad::parse_arch_list({""}).error().find("invalid arch ''") != std::string::npos);  // no list: as before
  CHECK(fad::parse_arch_list({})->empty());
}

TEST_CASE("parse_arch_list: at most kMaxArchs distinct archs, however often repeated", "[arch]") {
  // A user's own "nvcc" may claim thousands: each would be a compile of
  // every unit and a column of every user's listing.
  std::string list;
  for (std::size_t i = 0; i < fad::kMaxArchs; ++i) list += (list.empty() ? "" : ",") + std::to_string(100 + i);
  auto full = fad::parse_arch_list({list, list, "100"});
  REQUIRE(full.ok());
  CHECK(full->size() == fad::kMaxArchs);
  auto over = fad::parse_arch_list({list, "99"});
  REQUIRE_FALSE(over.ok());
  CHECK(over.error() == "too many archs: at most 64 in one build");
}

TEST_CASE("parse_nvcc_arch_list: nvcc 13.0 output", "[arch]") {
  auto archs = fad::parse_nvcc_arch_list(read_fixture("nvcc_list_gpu_arch_13.0.txt"));
  std::vector<int> numbers;
  for (const Arch& a : archs) numbers.push_back(a.number);
  CHECK(numbers == std::vector<int>{75, 80, 86, 87, 88, 89, 90, 100, 110, 103, 120, 121});
  CHECK(fad::parse_nvcc_arch_list("nvcc warning: something\nsm_90\ncompute_90\n\n").size() == 1);
}

TEST_CASE("validate_archs: against nvcc 13.0", "[arch]") {
  auto supported = fad::parse_nvcc_arch_list(read_fixture("nvcc_list_gpu_arch_13.0.txt"));
  CHECK(fad::validate_archs({{90, 0}, {120, 0}, {75, 0}}, supported).ok());
  CHECK(fad::validate_archs({{90, 'a'}, {100, 'f'}, {120, 'a'}}, supported).ok());
  CHECK(fad::validate_archs({}, supported).ok());

  auto r = fad::validate_archs({{90, 0}, {95, 0}}, supported);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error() ==
        "arch 9.5 is not supported by this nvcc; it can build: 7.5, 8.0, 8.6, 8.7, 8.8, 8.9, 9.0, 10.0, 10.3, 11.0, "
        "12.0, 12.1");

  auto old = fad::validate_archs({{70, 0}}, supported);
  REQUIRE_FALSE(old.ok());
  CHECK(old.error().find("arch 7.0 is not supported by this nvcc") == 0);

  auto a = fad::validate_archs({{86, 'a'}}, supported);
  REQUIRE_FALSE(a.ok());
  CHECK(a.error() == "arch 8.6a is not supported: the 'a' suffix needs arch 9.0 or newer");
  auto f = fad::validate_archs({{90, 'f'}}, supported);
  REQUIRE_FALSE(f.ok());
  CHECK(f.error() == "arch 9.0f is not supported: the 'f' suffix needs arch 10.0 or newer");

  auto none = fad::validate_archs({{90, 0}}, {});
  REQUIRE_FALSE(none.ok());
  CHECK(none.error() == "arch 9.0 is not supported by this nvcc; it can build: nothing");
}
