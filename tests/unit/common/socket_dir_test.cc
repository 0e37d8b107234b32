// The trust rules for the socket directory, for fadd and for the client.
#include <catch2/catch.hpp>

#include "common/socket_dir.h"

using Catch::Contains;
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
  // Root is no exception: it has the most to lose.
  CHECK_FALSE(fad::check_client_socket_dir("/tmp/fad-0", PathFacts{true, 1001, 0700}, tmp, 0));
  // Writable by others, whoever owns it.
  auto shared = fad::check_client_socket_dir("/tmp", tmp, root_dir, 1000);
  REQUIRE_FALSE(shared);
  CHECK_THAT(shared.error(), Contains("writable by others"));
  CHECK_FALSE(fad::check_client_socket_dir("/run/fad", PathFacts{true, 0, 0775}, root_dir, 1000));
}
