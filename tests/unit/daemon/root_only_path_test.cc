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
  CHECK(group.error() == cache + " is writable by its group (owner root, mode 2775)");
  ::chmod(cache.c_str(), 0755);

  // A parent others may write: they could move the cache aside and put their own.
  ::chmod(top.c_str(), 0777);
  auto parent = only_root_can_write(cache);
  REQUIRE_FALSE(parent);
  CHECK(parent.error() == top + " is writable by everyone (owner root, mode 0777)");
  ::chmod(top.c_str(), 01777);  // sticky, like /tmp: others cannot rename root's entries
  CHECK(only_root_can_write(cache));
  // But not a path fadd would make in it: another user could make it first, as theirs.
  auto unmade = only_root_can_write(top + "/new");
  REQUIRE_FALSE(unmade);
  CHECK(unmade.error() == top + " is writable by everyone (owner root, mode 1777): fadd creates " + top +
                              "/new only in a directory no one else can change; create it first (mkdir -m 0700) or "
                              "choose another");
  ::chmod(top.c_str(), 0755);
  // But the cache itself sticky: others could still add entries to it.
  ::chmod(cache.c_str(), 01777);
  auto sticky = only_root_can_write(cache);
  REQUIRE_FALSE(sticky);
  CHECK(sticky.error() == cache + " is writable by everyone (owner root, mode 1777)");
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

  // Not there yet: judged by the directory that will hold it, not by what
  // else that directory holds (root's home has links and more).
  CHECK(only_root_can_write(cache + "/not/yet"));
  REQUIRE(::symlink("/etc", (cache + "/o/link").c_str()) == 0);
  CHECK_FALSE(only_root_can_write(cache));
  CHECK(only_root_can_write(cache + "/not/yet"));
  CHECK(only_root_can_write(cache + "/not"));
  ::unlink((cache + "/o/link").c_str());
  // A dangling link where the path would be made is no path not there yet:
  // fadd would create what it names, wherever that is.
  REQUIRE(::symlink((top + "/nowhere").c_str(), (cache + "/dangling").c_str()) == 0);
  CHECK_FALSE(only_root_can_write(cache + "/dangling"));
  CHECK_FALSE(only_root_can_write(cache + "/dangling/below"));
  ::unlink((cache + "/dangling").c_str());

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

namespace fad {

TEST_CASE("state dir: only its owner (or root) may change it or any directory above it, whatever it holds",
          "[root_only_path]") {
  if (::geteuid() != 0) {
    WARN("SKIP: needs root to own and hand over directories");
    return;
  }
  test::TempDir tmp("fad-statedir");  // under the sticky /tmp
  const std::string top = tmp.str();
  const std::string state = top + "/state";
  ::mkdir(state.c_str(), 0700);
  ::chmod(top.c_str(), 0755);
  CHECK(only_owner_can_replace(state, 0));
  CHECK(only_owner_can_replace(top + "/not-yet/state", 0));  // judged by what will create it
  // What it holds is not examined: a root fadd keeps users' build files in it.
  test::write_file(state + "/theirs", "x");
  REQUIRE(::chown((state + "/theirs").c_str(), 65534, 65534) == 0);
  CHECK(only_owner_can_replace(state, 0));

  // Another user's state dir: refused to a root fadd, fine for that user's own.
  REQUIRE(::chown(state.c_str(), 65534, 65534) == 0);
  auto foreign = only_owner_can_replace(state, 0);
  REQUIRE_FALSE(foreign);
  CHECK_THAT(foreign.error(), Contains(state + " belongs to ") && Contains(", not root (mode 0700)"));
  CHECK(only_owner_can_replace(state, 65534));
  // A user's fadd tolerates its group writing (their umask chose it), not everyone.
  ::chmod(state.c_str(), 0770);
  CHECK(only_owner_can_replace(state, 65534));
  ::chmod(state.c_str(), 0777);
  CHECK_FALSE(only_owner_can_replace(state, 65534));
  ::chmod(state.c_str(), 0700);
  // Not a group-writable directory of root's above it (root:devs 0775): its
  // group is not the user's choice. Bug: accepted for a user's fadd.
  ::chmod(top.c_str(), 0775);
  auto root_group = only_owner_can_replace(state, 65534);
  REQUIRE_FALSE(root_group);
  CHECK_THAT(root_group.error(), Contains(top + " is writable by its group (owner root, mode 0775)"));
  ::chmod(top.c_str(), 0755);
  // ...and a directory of theirs above root's state dir: they could swap it.
  REQUIRE(::chown(state.c_str(), 0, 0) == 0);
  REQUIRE(::chown(top.c_str(), 65534, 65534) == 0);
  auto above = only_owner_can_replace(state, 0);
  REQUIRE_FALSE(above);
  CHECK_THAT(above.error(), Contains(top + " belongs to "));
  REQUIRE(::chown(top.c_str(), 0, 0) == 0);
  // A group-writable state dir; a sticky directory above is fine.
  ::chmod(state.c_str(), 0770);
  CHECK_FALSE(only_owner_can_replace(state, 0));
  ::chmod(state.c_str(), 0700);
  ::chmod(top.c_str(), 01777);
  CHECK(only_owner_can_replace(state, 0));
  ::chmod(top.c_str(), 0755);
  // A link to the state dir is judged where it leads.
  const std::string link = top + "/link";
  REQUIRE(::symlink(state.c_str(), link.c_str()) == 0);
  CHECK(only_owner_can_replace(link, 0));
  REQUIRE(::chown(state.c_str(), 65534, 65534) == 0);
  CHECK_FALSE(only_owner_can_replace(link, 0));
  REQUIRE(::chown(state.c_str(), 0, 0) == 0);
}

}  // namespace fad
