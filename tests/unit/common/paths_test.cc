// Tests for common/paths: the contract's default locations and resolution order,
// against a fake environment.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "common/paths.h"
#include "tests/temp_dir.h"

using fad::test::TempDir;

namespace {

fad::EnvLookup fake_env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end() || it->second.empty()) return std::nullopt;
    return it->second;
  };
}

}  // namespace

TEST_CASE("default_socket_path", "[paths]") {
  CHECK(fad::default_socket_path(fake_env({{"XDG_RUNTIME_DIR", "/run/user/1000"}}), 1000) ==
        "/run/user/1000/fad/fad.sock");
  CHECK(fad::default_socket_path(fake_env({}), 1000) == "/tmp/fad-1000/fad.sock");
  CHECK(fad::default_socket_path(fake_env({{"XDG_RUNTIME_DIR", ""}}), 0) == "/tmp/fad-0/fad.sock");
  // The XDG spec says relative values are invalid.
  CHECK(fad::default_socket_path(fake_env({{"XDG_RUNTIME_DIR", "run"}}), 7) == "/tmp/fad-7/fad.sock");
}

TEST_CASE("default_state_dir", "[paths]") {
  CHECK(fad::default_state_dir(fake_env({{"XDG_STATE_HOME", "/x/state"}, {"HOME", "/home/u"}})) == "/x/state/fad");
  CHECK(fad::default_state_dir(fake_env({{"HOME", "/home/u"}})) == "/home/u/.local/state/fad");
  CHECK(fad::default_state_dir(fake_env({{"XDG_STATE_HOME", "rel"}, {"HOME", "/home/u"}})) ==
        "/home/u/.local/state/fad");
  // Without HOME the password database is asked; the result still ends the same way.
  std::string no_home = fad::default_state_dir(fake_env({}));
  CHECK(no_home.size() > std::string("/.local/state/fad").size() - 1);
  CHECK(no_home.substr(no_home.size() - 16) == ".local/state/fad");
}

TEST_CASE("default_config_path only returns a file that exists", "[paths]") {
  TempDir home{"fad-paths"};
  auto env = fake_env({{"HOME", home.path().string()}});
  const std::string no_system = (home.path() / "no-etc/fad/fad.json").string();
  CHECK_FALSE(fad::default_config_path(env, no_system).has_value());

  std::filesystem::create_directories(home.path() / ".config/fad");
  std::ofstream(home.path() / ".config/fad/fad.json") << "{}";
  auto found = fad::default_config_path(env, no_system);
  REQUIRE(found.has_value());
  CHECK(*found == (home.path() / ".config/fad/fad.json").string());

  TempDir xdg{"fad-paths"};
  auto xdg_env = fake_env({{"HOME", home.path().string()}, {"XDG_CONFIG_HOME", xdg.path().string()}});
  CHECK_FALSE(fad::default_config_path(xdg_env, no_system).has_value());  // XDG wins, and has no file
  std::filesystem::create_directories(xdg.path() / "fad");
  std::ofstream(xdg.path() / "fad/fad.json") << "{}";
  CHECK(*fad::default_config_path(xdg_env, no_system) == (xdg.path() / "fad/fad.json").string());
}

TEST_CASE("default_config_path falls back to the machine-wide file, and a user's own wins", "[paths]") {
  TempDir home{"fad-paths"}, etc{"fad-paths"};
  auto env = fake_env({{"HOME", home.path().string()}});
  const std::string system = (etc.path() / "fad/fad.json").string();
  CHECK_FALSE(fad::default_config_path(env, system).has_value());
  std::filesystem::create_directories(etc.path() / "fad");
  std::ofstream(system) << "{}";
  CHECK(fad::default_config_path(env, system) == std::optional<std::string>(system));
  std::filesystem::create_directories(home.path() / ".config/fad");
  std::ofstream(home.path() / ".config/fad/fad.json") << "{}";
  CHECK(fad::default_config_path(env, system) == (home.path() / ".config/fad/fad.json").string());
  CHECK(fad::system_config_path().size() > std::string("/fad/fad.json").size());
}

TEST_CASE("socket_path_problem: a line break or escape in a socket path is refused", "[paths]") {
  CHECK(fad::socket_path_problem("/tmp/a b.sock").empty());
  CHECK(fad::socket_path_problem("/tmp/n\nl.sock") ==
        "socket path '/tmp/n?l.sock' holds control characters ('?' here); choose another --socket");
  CHECK_FALSE(fad::socket_path_problem("/tmp/\x1b[31m.sock").empty());
}

TEST_CASE("resolve_path: flag, env, config, default", "[paths]") {
  auto env = fake_env({{"FAD_SOCKET", "/env.sock"}});
  auto no_env = fake_env({});
  std::optional<std::string> none;
  CHECK(fad::resolve_path("/flag.sock", env, "FAD_SOCKET", "/cfg.sock", "/def.sock") == "/flag.sock");
  CHECK(fad::resolve_path(none, env, "FAD_SOCKET", "/cfg.sock", "/def.sock") == "/env.sock");
  CHECK(fad::resolve_path(none, no_env, "FAD_SOCKET", "/cfg.sock", "/def.sock") == "/cfg.sock");
  CHECK(fad::resolve_path(none, no_env, "FAD_SOCKET", none, "/def.sock") == "/def.sock");
  CHECK(fad::resolve_path(none, env, "FAD_STATE_DIR", none, "/def") == "/def");  // other variable
  // A relative one is made absolute from here, once (compiles in other
  // directories get the same path).
  const std::string here = std::filesystem::current_path().string();
  CHECK(fad::resolve_path(none, fake_env({{"FAD_SOCKET", "rel.sock"}}), "FAD_SOCKET", none, "/def.sock") ==
        here + "/rel.sock");
  // As given otherwise: through a link L, "L/.." is not "." to the kernel.
  CHECK(fad::resolve_path("a/../b.sock", env, "FAD_SOCKET", none, "/def.sock") == here + "/a/../b.sock");
  CHECK(fad::resolve_path("/x/L/../y", env, "FAD_SOCKET", none, "/def.sock") == "/x/L/../y");
}

TEST_CASE("process_env reads the real environment, empty counts as unset", "[paths]") {
  ::setenv("FAD_PATHS_TEST_VAR", "value", 1);
  ::setenv("FAD_PATHS_TEST_EMPTY", "", 1);
  ::unsetenv("FAD_PATHS_TEST_UNSET");
  auto env = fad::process_env();
  CHECK(env("FAD_PATHS_TEST_VAR") == std::optional<std::string>("value"));
  CHECK_FALSE(env("FAD_PATHS_TEST_EMPTY").has_value());
  CHECK_FALSE(env("FAD_PATHS_TEST_UNSET").has_value());
  ::unsetenv("FAD_PATHS_TEST_VAR");
  ::unsetenv("FAD_PATHS_TEST_EMPTY");
}
