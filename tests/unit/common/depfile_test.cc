// Tests for common/depfile: reading nvcc's and gcc's dependency files, and the
// templates that restore them byte for byte for another output and root.
#include <catch2/catch.hpp>

#include "common/depfile.h"

using namespace fad;

namespace {
// As nvcc 13 writes it for `nvcc -c a.cu -o out/a.o -MD -MF out/a.d`, run in /p/build.
const std::string kNvcc =
    "out/a.o : /p/src/a.cu \\\n"
    "    /usr/include/stdc-predef.h \\\n"
    "    /usr/local/cuda/bin/../targets/x86_64-linux/include/cuda_runtime.h \\\n"
    "    ../src/sub/h1.h \\\n"
    "    /p/include/common.cuh\n";
}  // namespace

TEST_CASE("depfile_prerequisites: nvcc's layout, targets left out, in order", "[depfile]") {
  auto deps = depfile_prerequisites(kNvcc);
  REQUIRE(deps.size() == 5);
  CHECK(deps[0] == "/p/src/a.cu");
  CHECK(deps[3] == "../src/sub/h1.h");
  CHECK(deps[4] == "/p/include/common.cuh");
}

TEST_CASE("depfile_prerequisites: gcc's layout, escapes, several rules, duplicates", "[depfile]") {
  const std::string text =
      "obj/x.o: x.cu my\\ dir/h.h cost$$.h \\\r\n  y.h x.cu\n"
      "my\\ dir/h.h:\n"
      "y.h:\n";
  auto deps = depfile_prerequisites(text);
  REQUIRE(deps.size() == 4);
  CHECK(deps[0] == "x.cu");
  CHECK(deps[1] == "my dir/h.h");
  CHECK(deps[2] == "cost$.h");
  CHECK(deps[3] == "y.h");
  CHECK(depfile_prerequisites("").empty());
}

TEST_CASE("a dependency-file template restores the file exactly, and for another output and root", "[depfile]") {
  auto tmpl = make_depfile_template(kNvcc, "out/a.o", "/p");
  REQUIRE(tmpl);
  CHECK(tmpl->find("/p/") == std::string::npos);
  CHECK(expand_depfile_template(*tmpl, "out/a.o", "/p") == kNvcc);

  const std::string elsewhere = expand_depfile_template(*tmpl, "/tmp/b/x.o", "/tmp/pip-1");
  CHECK(elsewhere.rfind("/tmp/b/x.o : /tmp/pip-1/src/a.cu \\\n", 0) == 0);
  CHECK(elsewhere.find("    /tmp/pip-1/include/common.cuh\n") != std::string::npos);
  // Paths outside the root and relative ones are kept as they are.
  CHECK(elsewhere.find("/usr/local/cuda/bin/../targets") != std::string::npos);
  CHECK(elsewhere.find("../src/sub/h1.h") != std::string::npos);
}

TEST_CASE("depfile templates only replace whole tokens and path prefixes", "[depfile]") {
  // "/p" must not match "/pp/...", and "a.o" must not match "a.ox" or "b/a.o".
  const std::string text = "a.o: /pp/x.h /p/y.h b/a.o a.ox\n";
  auto tmpl = make_depfile_template(text, "a.o", "/p");
  REQUIRE(tmpl);
  CHECK(expand_depfile_template(*tmpl, "Z.o", "/R") == "Z.o: /pp/x.h /R/y.h b/a.o a.ox\n");
  CHECK(expand_depfile_template(*tmpl, "a.o", "/p") == text);
  // No output or root to replace: the template is the file.
  CHECK(*make_depfile_template(text, "", "") == text);
}

TEST_CASE("a file that already holds a mark byte gets no template", "[depfile]") {
  CHECK_FALSE(make_depfile_template(std::string("a.o: x\x01y.h\n"), "a.o", "/p"));
  CHECK_FALSE(make_depfile_template(std::string("a.o: x\x02y.h\n"), "a.o", "/p"));
}

TEST_CASE("depfile_safe_path refuses what make escapes", "[depfile]") {
  CHECK(depfile_safe_path("/tmp/pip-req-build-abc/build/x.o"));
  CHECK_FALSE(depfile_safe_path("/tmp/my dir/x.o"));
  CHECK_FALSE(depfile_safe_path("/tmp/a#b"));
  CHECK_FALSE(depfile_safe_path("/tmp/a$b"));
  CHECK_FALSE(depfile_safe_path("C:/x"));
  CHECK_FALSE(depfile_safe_path(std::string("/tmp/\x01")));
}

TEST_CASE("mark_root and unmark_root are inverse on paths under the root only", "[depfile]") {
  CHECK(unmark_root(mark_root("/p/src/a.cu", "/p"), "/q") == "/q/src/a.cu");
  CHECK(mark_root("/pp/a.cu", "/p") == "/pp/a.cu");
  CHECK(mark_root("../a.cu", "/p") == "../a.cu");
  CHECK(mark_root("/p/a.cu", "") == "/p/a.cu");
  CHECK(unmark_root("rel/a.cu", "/q") == "rel/a.cu");
}
