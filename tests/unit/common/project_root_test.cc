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

TEST_CASE("project root: where a path might be another one, it stays as given", "[project_root]") {
  // A space belongs to a directory's name far more often than it lists paths.
  CHECK(replace_root("-I/w 2/inc", "/w", "<root>") == "-I/w 2/inc");
  CHECK(replace_root("-I/opt/my lib/tmp/inc", "/tmp", "<root>") == "-I/opt/my lib/tmp/inc");
  CHECK(replace_root("/home/u/My Proj/k.cu", "/home/u/My Proj", "<root>") == "<root>/k.cu");
  // A relative path that ends in the root's name is somewhere else.
  CHECK(replace_root("-Ideps/src", "/src", "<root>") == "-Ideps/src");
  CHECK(replace_root("deps/src/inc", "/src", "<root>") == "deps/src/inc");
  // Glued path options are a path's start; unknown ones are not.
  CHECK(replace_root("-isystem/w/inc", "/w", "<root>") == "-isystem<root>/inc");
  CHECK(replace_root("-L/w/lib", "/w", "<root>") == "-L<root>/lib");
  CHECK(replace_root("-Xfoo/w/inc", "/w", "<root>") == "-Xfoo/w/inc");
  // ".." leaves the root: "<root>/../q" would be /tmp/q in one project, /var/q in the next.
  CHECK(replace_root("-I/w/p/../q", "/w/p", "<root>") == "-I/w/p/../q");
  CHECK(replace_root("-I/w/p/..", "/w/p", "<root>") == "-I/w/p/..");
  CHECK(replace_root("-DA=/w/p/../q,/w/p/x", "/w/p", "<root>") == "-DA=/w/p/../q,<root>/x");
  CHECK(replace_root("-I/w/p/..x/y", "/w/p", "<root>") == "-I<root>/..x/y");  // a name, not ".."
}

TEST_CASE("project root: the root's name again inside its own tree is a directory there", "[project_root]") {
  CHECK(replace_root("/w/w/k.cu", "/w", "<root>") == "<root>/w/k.cu");
  CHECK(replace_root("-I/w/x/w,/w", "/w", "<root>") == "-I<root>/x/w,<root>");
}

}  // namespace fad
