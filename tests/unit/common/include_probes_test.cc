// Tests for common/include_probes: which __has_include probes a file makes
// and where the compiler looks for their names.
#include <catch2/catch.hpp>

#include "common/include_probes.h"

using namespace fad;

namespace {
EnvLookup env_of(std::vector<std::pair<std::string, std::string>> vars) {
  return [vars](std::string_view name) -> std::optional<std::string> {
    for (const auto& [k, v] : vars)
      if (k == name) return v;
    return std::nullopt;
  };
}
}  // namespace

TEST_CASE("find_include_probes: literal names, quoted or angled, once each", "[include_probes]") {
  const auto probes = find_include_probes(
      "#if __has_include(\"flag.h\")\n"
      "#elif defined(X) && __has_include_next( <sys/x.h> )\n"
      "#if __has_include \\\n (\"flag.h\")\n"  // again, across a line continuation
      "#define HAS(x) __has_include(x)\n"      // a macro's parameter: not a name
      "int my__has_include(\"no.h\");\n"       // another identifier
      "#ifdef __has_include\n"
      "#if __has_include(\"\")\n"
      "#if __has_include(\"broken.h\n"
      "#if __has_include(/* why */ \"commented.h\") || __has_include \\\r\n(<crlf.h>)\n");
  REQUIRE(probes.size() == 4);
  CHECK(probes[0] == IncludeProbe{"flag.h", true});
  CHECK(probes[1] == IncludeProbe{"sys/x.h", false});
  CHECK(probes[2] == IncludeProbe{"commented.h", true});
  CHECK(probes[3] == IncludeProbe{"crlf.h", false});
  CHECK(find_include_probes("int x;\n").empty());
}

TEST_CASE("include_search_dirs: the command line's and the environment's, in order", "[include_probes]") {
  const std::vector<std::string> args{"nvcc",
                                      "-c",
                                      "a.cu",
                                      "-Iinc",
                                      "-I",
                                      "/abs/inc",
                                      "--include-path=p1",
                                      "--include-path",
                                      "p2",
                                      "-isystem",
                                      "/sys",
                                      "-Xcompiler",
                                      "-iquote,q,-idirafter,late",
                                      "-Xcompiler=-I/host",
                                      "-include",
                                      "pre.h",
                                      "-Iinc"};
  const auto dirs = include_search_dirs(
      args,
      env_of({{"INCLUDES", "\"-I/env/inc\" -isystem /env/sys"}, {"CPATH", "/c1::/c2"}, {"C_INCLUDE_PATH", "/c3"}}));
  CHECK(dirs == std::vector<std::string>{"inc", "/abs/inc", "p1", "p2", "/sys", "q", "late", "/host", "/env/inc",
                                         "/env/sys", "/c1", ".", "/c2", "/c3"});
  CHECK(include_search_dirs({"nvcc", "-c", "a.cu"}, env_of({})).empty());
  // nvcc's lists ("-Ia,b"); INCLUDES as the shell splits it; a quoted -Xcompiler word.
  CHECK(include_search_dirs({"nvcc", "-Ia,b", "--system-include=s1,s2", "-Xcompiler", "'-I/x y'"},
                            env_of({{"INCLUDES", "\"-I/sp ace\" '-isystem' /q"}})) ==
        std::vector<std::string>{"a", "b", "s1", "s2", "/x y", "/sp ace", "/q"});
}

TEST_CASE("probe_candidates: the file's own directory for a quoted name, then the search dirs", "[include_probes]") {
  const std::vector<std::string> dirs{"inc", "/abs/"};
  CHECK(probe_candidates({"x.h", true}, "/src", dirs) == std::vector<std::string>{"/src/x.h", "inc/x.h", "/abs/x.h"});
  CHECK(probe_candidates({"x.h", false}, "/src", dirs) == std::vector<std::string>{"inc/x.h", "/abs/x.h"});
  CHECK(probe_candidates({"x.h", true}, "", {}) == std::vector<std::string>{"x.h"});
  CHECK(probe_candidates({"/etc/x.h", true}, "/src", dirs) == std::vector<std::string>{"/etc/x.h"});
}
