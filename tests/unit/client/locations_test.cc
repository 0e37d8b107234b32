// Socket and state dir resolution: flag, environment, config file, default.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>

#include <unistd.h>

#include "client/locations.h"

using namespace fad::client;

namespace {

fad::EnvLookup fake_env(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end() || it->second.empty()) return std::nullopt;
    return it->second;
  };
}

}  // namespace

TEST_CASE("defaults come from XDG directories") {
  Command cmd;
  auto loc = resolve_locations(
      cmd,
      fake_env(
          {{"XDG_RUNTIME_DIR", "/run/user/5"}, {"XDG_STATE_HOME", "/xs"}, {"XDG_CONFIG_HOME", "/nonexistent-config"}}),
      5);
  REQUIRE(loc.ok());
  CHECK(loc->socket == "/run/user/5/fad/fad.sock");
  CHECK(loc->state_dir == "/xs/fad");
  CHECK_FALSE(loc->config);
}

TEST_CASE("flag beats environment beats config file") {
  auto dir = std::filesystem::temp_directory_path() / ("fad-loc-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto config = (dir / "fad.json").string();
  std::ofstream(config) << R"({"socket": "/from-config.sock", "state_dir": "/config-state"})";

  Command cmd;
  cmd.config = config;
  auto env = fake_env({{"HOME", "/h"}, {"XDG_CONFIG_HOME", "/nonexistent-config"}});
  auto loc = resolve_locations(cmd, env, 5);
  REQUIRE(loc.ok());
  CHECK(loc->socket == "/from-config.sock");
  CHECK(loc->state_dir == "/config-state");
  CHECK(loc->config == config);

  auto with_env = fake_env({{"FAD_SOCKET", "/env.sock"}, {"FAD_STATE_DIR", "/env-state"}, {"FAD_CONFIG", config}});
  Command plain;
  loc = resolve_locations(plain, with_env, 5);
  REQUIRE(loc.ok());
  CHECK(loc->socket == "/env.sock");
  CHECK(loc->state_dir == "/env-state");

  plain.socket = "/flag.sock";
  plain.state_dir = "/flag-state";
  loc = resolve_locations(plain, with_env, 5);
  REQUIRE(loc.ok());
  CHECK(loc->socket == "/flag.sock");
  CHECK(loc->state_dir == "/flag-state");
  std::filesystem::remove_all(dir);
}

TEST_CASE("a state dir or socket named by flag or environment is meant, one from a default is not") {
  const auto env = fake_env(
      {{"XDG_RUNTIME_DIR", "/run/user/5"}, {"XDG_STATE_HOME", "/xs"}, {"XDG_CONFIG_HOME", "/nonexistent-config"}});
  auto by_default = resolve_locations(Command{}, env, 5);
  REQUIRE(by_default.ok());
  CHECK_FALSE(by_default->state_dir_named);
  CHECK_FALSE(by_default->socket_named);
  Command flags;
  flags.state_dir = "/flag/state";
  flags.socket = "/flag/fad.sock";
  auto by_flag = resolve_locations(flags, env, 5);
  REQUIRE(by_flag.ok());
  CHECK(by_flag->state_dir_named);
  CHECK(by_flag->socket_named);
  auto by_env = resolve_locations(
      Command{},
      fake_env({{"FAD_STATE_DIR", "/env/state"}, {"FAD_SOCKET", "/env/fad.sock"}, {"XDG_CONFIG_HOME", "/nonexistent"}}),
      5);
  REQUIRE(by_env.ok());
  CHECK(by_env->state_dir == "/env/state");
  CHECK(by_env->state_dir_named);
  CHECK(by_env->socket_named);
  // Exported with the default paths, they name the default fadd, as no variable does.
  auto env_default = resolve_locations(Command{},
                                       fake_env({{"XDG_RUNTIME_DIR", "/run/user/5"},
                                                 {"XDG_STATE_HOME", "/xs"},
                                                 {"XDG_CONFIG_HOME", "/nonexistent-config"},
                                                 {"FAD_STATE_DIR", "/xs/fad"},
                                                 {"FAD_SOCKET", "/run/user/5/fad/fad.sock"}}),
                                       5);
  REQUIRE(env_default.ok());
  CHECK_FALSE(env_default->state_dir_named);
  CHECK_FALSE(env_default->socket_named);
}

TEST_CASE("a named config file that is missing or bad is an error") {
  Command cmd;
  cmd.config = "/nonexistent/fad.json";
  auto loc = resolve_locations(cmd, fake_env({}), 5);
  REQUIRE_FALSE(loc.ok());
  CHECK(loc.error().find("/nonexistent/fad.json") != std::string::npos);
}

TEST_CASE("a socket path longer than a Unix socket can hold is a usage error naming the limit") {
  Command cmd;
  cmd.socket = "/tmp/" + std::string(120, 'a');
  auto loc = resolve_locations(cmd, fake_env({}), 5);
  REQUIRE_FALSE(loc.ok());
  CHECK(loc.error() == "socket path " + *cmd.socket +
                           " is 125 bytes; a Unix socket's path holds at most 107 (choose a "
                           "shorter --socket; a relative one counts from the working directory)");
  cmd.socket = "/tmp/" + std::string(100, 'a');
  CHECK(resolve_locations(cmd, fake_env({}), 5).ok());
}
