// The trust rules for the socket directory, for fadd and for the client.
#include <catch2/catch.hpp>

#include "common/socket_dir.h"

using Catch::Contains;
using Catch::EndsWith;
using Catch::StartsWith;
using fad::PathFacts;

TEST_CASE("fadd uses a socket dir of its own user or root, writable by its owner only", "[socket_dir]") {
  CHECK(fad::check_daemon_socket_dir("/run/fad", PathFacts{true, 0, 0755}, 1000));
  CHECK(fad::check_daemon_socket_dir("/tmp/fad-1000", PathFacts{true, 1000, 0700}, 1000));
  CHECK(fad::check_daemon_socket_dir("/run/fad", PathFacts{true, 1000, 0750}, 1000));
  auto squatted = fad::check_daemon_socket_dir("/tmp/fad-1000", PathFacts{true, 1001, 0755}, 1000);
  REQUIRE_FALSE(squatted);
  CHECK_THAT(squatted.error(), Contains("belongs to") && Contains("uid 1001"));
  auto open = fad::check_daemon_socket_dir("/tmp", PathFacts{true, 0, 01777}, 1000);
  REQUIRE_FALSE(open);
  CHECK_THAT(open.error(), Contains("writable by others (mode 1777)"));
  CHECK_FALSE(fad::check_daemon_socket_dir("/run/fad", PathFacts{true, 0, 0775}, 0));
  CHECK_FALSE(fad::check_daemon_socket_dir("/run/fad/x", PathFacts{false, 0, 0644}, 0));
}

TEST_CASE("the client refuses a squatted or shared-writable socket dir", "[socket_dir]") {
  const PathFacts tmp{true, 0, 01777}, root_dir{true, 0, 0755};
  // Its own, root's, or a system account's placed by root.
  CHECK(fad::check_client_socket_dir("/tmp/fad-1000", PathFacts{true, 1000, 0700}, tmp, 1000));
  CHECK(fad::check_client_socket_dir("/run/fad", PathFacts{true, 0, 0755}, root_dir, 1000));
  CHECK(fad::check_client_socket_dir("/srv/fad", PathFacts{true, 998, 0750}, root_dir, 1000));
  // Another user's directory in /tmp: they made it themselves.
  auto squatted = fad::check_client_socket_dir("/tmp/fad-1000", PathFacts{true, 1001, 0700}, tmp, 1000);
  REQUIRE_FALSE(squatted);
  CHECK_THAT(squatted.error(), Contains("refusing to talk to the socket in /tmp/fad-1000") && Contains("uid 1001"));
  CHECK_THAT(squatted.error(), Contains("made in a directory anyone can write"));
  // Root is no exception: it has the most to lose.
  CHECK_FALSE(fad::check_client_socket_dir("/tmp/fad-0", PathFacts{true, 1001, 0700}, tmp, 0));
  // Another user's fadd in their own home: theirs, and not "a directory anyone can write".
  auto theirs =
      fad::check_client_socket_dir("/home/bob/fad", PathFacts{true, 1001, 0700}, PathFacts{true, 1001, 0755}, 0);
  REQUIRE_FALSE(theirs);
  CHECK_THAT(theirs.error(),
             StartsWith("refusing to talk to the socket in /home/bob/fad: it belongs to ") && Contains("uid 1001") &&
                 Contains(", in a directory of ") &&
                 EndsWith("and whoever controls it could answer in fadd's place; run fad as that user"));
  CHECK_THAT(theirs.error(), !Contains("anyone can write"));
  // Writable by others, whoever owns it.
  auto shared = fad::check_client_socket_dir("/tmp", tmp, root_dir, 1000);
  REQUIRE_FALSE(shared);
  CHECK_THAT(shared.error(), Contains("writable by others"));
  CHECK_FALSE(fad::check_client_socket_dir("/run/fad", PathFacts{true, 0, 0775}, root_dir, 1000));
}
