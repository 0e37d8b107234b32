// A compile call's project root, which the compile cache's key and the
// estimator's learning key both write paths relative to.
#include <catch2/catch.hpp>

#include "common/project_root.h"

namespace fad {

TEST_CASE("project root: the deepest directory the working directory and the source share", "[project_root]") {
  CHECK(project_root("/tmp/pip-req-build-ab12/build/temp.linux", "/tmp/pip-req-build-ab12/csrc/src/k.cu") ==
        "/tmp/pip-req-build-ab12");
  CHECK(project_root("/home/u/proj/build", "/home/u/proj/src/k.cu") == "/home/u/proj");
  CHECK(project_root("/home/u/proj/", "/home/u/proj/k.cu") == "/home/u/proj");  // compiled where it lies
  CHECK(project_root("/home/u/proj-2", "/home/u/proj/k.cu") == "/home/u");      // components, not characters
  CHECK(project_root("/build", "/src/k.cu").empty());                           // only "/" in common
  CHECK(project_root("/", "/k.cu").empty());
}

TEST_CASE("project root: replaced only where a path starts and a component ends", "[project_root]") {
  CHECK(replace_root("/w/csrc/k.cu", "/w", "<root>") == "<root>/csrc/k.cu");
  CHECK(replace_root("-I/w/csrc", "/w", "<root>") == "-I<root>/csrc");
  CHECK(replace_root("-I/w", "/w", "<root>") == "-I<root>");
  CHECK(replace_root("-DPATHS=/w/a,/w/b", "/w", "<root>") == "-DPATHS=<root>/a,<root>/b");
  CHECK(replace_root("-Xcompiler=-fdebug-prefix-map=/w=.", "/w", "<root>") == "-Xcompiler=-fdebug-prefix-map=<root>=.");
  CHECK(replace_root("-DP=/w,/x", "/w", "<root>") == "-DP=<root>,/x");
  CHECK(replace_root("-I/work/csrc", "/w", "<root>") == "-I/work/csrc");  // another directory that starts alike
  CHECK(replace_root("-I/var/w/inc", "/w", "<root>") == "-I/var/w/inc");  // the root's name inside another path
  CHECK(replace_root("-I/var/w/inc,/w/x", "/w", "<root>") == "-I/var/w/inc,<root>/x");
  CHECK(replace_root("-O3", "/w", "<root>") == "-O3");
  CHECK(replace_root("/w/k.cu", "", "<root>") == "/w/k.cu");  // no root: as given
}

}  // namespace fad
