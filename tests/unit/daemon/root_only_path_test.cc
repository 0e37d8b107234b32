// Which directories a root fadd trusts with its compile cache: root's, and
// writable by no one else, all the way up (a sticky /tmp may be shared).
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "daemon/root_only_path.h"
#include "fakes.h"

namespace fad {

using Catch::Contains;

TEST_CASE("root-only path: root's private directories pass, shared or foreign ones are named", "[root_only_path]") {
  if (::geteuid() != 0) {
    WARN("SKIP: needs root to own and hand over directories");
    return;
  }
  test::TempDir tmp("fad-rootonly");  // under the sticky /tmp
  const std::string top = tmp.str();
  const std::string cache = top + "/cache";
  ::mkdir(cache.c_str(), 0755);
  ::chmod(top.c_str(), 0755);
  CHECK(only_root_can_write(cache));
  CHECK(only_root_can_write(cache + "/../cache"));

  // A group may write the cache itself: refused, naming it.
  ::chmod(cache.c_str(), 02775);
  auto group = only_root_can_write(cache);
  REQUIRE_FALSE(group);
  CHECK(group.error() == cache + " is writable by its group (mode 2775)");
  ::chmod(cache.c_str(), 0755);

  // A parent others may write: they could move the cache aside and put their own.
  ::chmod(top.c_str(), 0777);
  auto parent = only_root_can_write(cache);
  REQUIRE_FALSE(parent);
  CHECK(parent.error() == top + " is writable by everyone (mode 0777)");
  ::chmod(top.c_str(), 01777);  // sticky, like /tmp: others cannot rename root's entries
  CHECK(only_root_can_write(cache));
  ::chmod(top.c_str(), 0755);
  // But the cache itself sticky: others could still add entries to it.
  ::chmod(cache.c_str(), 01777);
  auto sticky = only_root_can_write(cache);
  REQUIRE_FALSE(sticky);
  CHECK(sticky.error() == cache + " is writable by everyone (mode 1777)");
  ::chmod(cache.c_str(), 0755);

  // An entry someone else left inside (while the cache was shared), however deep.
  ::mkdir((cache + "/o").c_str(), 0755);
  test::write_file(cache + "/o/planted", "object");
  REQUIRE(::chown((cache + "/o/planted").c_str(), 65534, 65534) == 0);
  auto planted = only_root_can_write(cache);
  REQUIRE_FALSE(planted);
  CHECK_THAT(planted.error(), Contains(cache + "/o/planted belongs to "));
  REQUIRE(::chown((cache + "/o/planted").c_str(), 0, 0) == 0);
  CHECK(only_root_can_write(cache));

  // Not there yet: judged by the directory that will hold it.
  CHECK(only_root_can_write(cache + "/not/yet"));

  // Another user's directory.
  REQUIRE(::chown(cache.c_str(), 65534, 65534) == 0);
  auto foreign = only_root_can_write(cache);
  REQUIRE_FALSE(foreign);
  CHECK_THAT(foreign.error(), Contains(cache + " belongs to ") && Contains("not root"));
  REQUIRE(::chown(cache.c_str(), 0, 0) == 0);

  // A link is judged by where it leads too.
  const std::string elsewhere = top + "/elsewhere";
  ::mkdir(elsewhere.c_str(), 0777);
  ::chmod(elsewhere.c_str(), 0777);
  REQUIRE(::symlink(elsewhere.c_str(), (top + "/link").c_str()) == 0);
  auto linked = only_root_can_write(top + "/link");
  REQUIRE_FALSE(linked);
  CHECK_THAT(linked.error(), Contains(elsewhere + " is writable by everyone"));
}

}  // namespace fad
