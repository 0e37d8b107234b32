// memory_settings_problem: settings that leave fad no memory on this machine.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include <CLI/CLI.hpp>

#include "daemon/options.h"

namespace fad {

using Catch::Contains;

namespace {
constexpr std::uint64_t kGiB = 1ull << 30;

MemorySnapshot machine(std::uint64_t total, std::optional<std::uint64_t> cgroup_limit = std::nullopt) {
  MemorySnapshot m;
  m.total = total;
  m.available = total / 2;
  m.cgroup_limit = cgroup_limit;
  return m;
}
}  // namespace

TEST_CASE("options: a reserve of all the memory there is is refused", "[options]") {
  Config c;
  c.reserve = Reserve{200 * kGiB, 0.0};
  CHECK_THAT(memory_settings_problem(c, machine(24 * kGiB)),
             Contains("reserve 200.0 GiB is all of the 24.0 GiB of memory this machine has"));
  c.reserve = Reserve{24 * kGiB, 0.0};
  CHECK_FALSE(memory_settings_problem(c, machine(24 * kGiB)).empty());
  // Inside a smaller cgroup (a WSL-sized VM), the cgroup's limit is what there is.
  c.reserve = Reserve{8 * kGiB, 0.0};
  CHECK(memory_settings_problem(c, machine(24 * kGiB)).empty());
  CHECK_THAT(memory_settings_problem(c, machine(24 * kGiB, 6 * kGiB)), Contains("fadd's cgroup allows"));
  CHECK(memory_settings_problem(c, machine(24 * kGiB, 64 * kGiB)).empty());
  // A percentage always leaves some; an unreadable machine (0) is not judged.
  c.reserve = Reserve{0, 99.0};
  CHECK(memory_settings_problem(c, machine(24 * kGiB)).empty());
  c.reserve = Reserve{kGiB, 0.0};
  CHECK(memory_settings_problem(c, machine(0)).empty());
}

}  // namespace fad

namespace fad {

TEST_CASE("options: an empty value or a socket path too long for a Unix socket is one usage error", "[options]") {
  const EnvLookup no_env = [](std::string_view) -> std::optional<std::string> { return std::nullopt; };
  const auto resolve = [&](std::vector<const char*> args) {
    args.insert(args.begin(), "fadd");
    args.push_back("--config");
    args.push_back(FAD_SOURCE_DIR "/config/fad.json");
    auto flags = parse_daemon_flags(static_cast<int>(args.size()), args.data());
    REQUIRE(flags);
    return resolve_daemon_options(*flags, no_env, 1000);
  };
  // Every option that takes a value, so one added later is covered too.
  DaemonFlags unused;
  const auto cli = make_daemon_cli(unused);
  int with_value = 0;
  for (const CLI::Option* o : cli->get_options()) {
    if (o->get_items_expected() == 0) continue;  // a flag
    ++with_value;
    const std::string flag = o->get_name();
    const char* args[] = {"fadd", flag.c_str(), ""};
    auto r = parse_daemon_flags(3, args);
    INFO(flag);
    REQUIRE_FALSE(r);
    CHECK(r.error() == flag + ": the value is empty (see 'fadd --help')");
    // The next option is not a value: `--state-dir --socket S` once meant a
    // state dir named "--socket".
    const char* next[] = {"fadd", flag.c_str(), "--socket", "/run/s"};
    auto taken = parse_daemon_flags(4, next);
    REQUIRE_FALSE(taken);
    CHECK(taken.error() == flag + ": needs a value, got the option '--socket' (see 'fadd --help')");
  }
  CHECK(with_value == 11);
  // A flag given a value: CLI11 printed the help or the version for these.
  for (const char* word : {"--help=1", "--version=0", "-h=1", "--check="}) {
    const char* args[] = {"fadd", word};
    auto r = parse_daemon_flags(2, args);
    INFO(word);
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error(), Contains(": a flag takes no value") && Contains("(see 'fadd --help')"));
  }
  const std::string longest = "/" + std::string(106, 's'), too_long = "/" + std::string(107, 's');
  CHECK(resolve({"--socket", longest.c_str()}));
  auto refused = resolve({"--socket", too_long.c_str()});
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error(), Contains("is 108 bytes; a Unix socket's path holds at most 107"));

  // What fadd would only find out later: a compiler it cannot name, a log file that is a directory.
  auto relative = resolve({"--nvcc", "bin/nvcc"});
  REQUIRE_FALSE(relative);
  CHECK(relative.error() ==
        "--nvcc: 'bin/nvcc' is a relative path: give an absolute path or a bare name (looked up on PATH)");
  CHECK(resolve({"--nvcc", "nvcc"}));
  CHECK(resolve({"--nvcc", "/usr/local/cuda/bin/nvcc"}));
  // A log file that is not a file, or that is one of fadd's own: a FIFO hung
  // the start, and rotating STATE/fad.db renamed the database.
  auto device = resolve({"--log-file", "/dev/null"});
  REQUIRE_FALSE(device);
  CHECK(device.error() == "--log-file: /dev/null is not a regular file; give a file fadd may create and rotate");
  auto own = resolve({"--state-dir", "/srv/fad", "--log-file", "/srv/fad/fad.db"});
  REQUIRE_FALSE(own);
  CHECK(
      own.error() ==
      "--log-file: /srv/fad/fad.db is fadd's own in its state dir /srv/fad; give another name, e.g. /srv/fad/fadd.log");
  CHECK_FALSE(resolve({"--state-dir", "/srv/fad", "--log-file", "/srv/fad/builds/fadd.log"}));
  CHECK_FALSE(resolve({"--state-dir", "/srv/fad", "--log-file", "/srv/fad/fadd.lock"}));
  CHECK(resolve({"--state-dir", "/srv/fad", "--log-file", "/srv/fad/fadd.log"}));
  CHECK(resolve({"--state-dir", "/srv/fad", "--log-file", "/srv/fad.db"}));
  auto slash = resolve({"--log-file", "/srv/new.log/"});
  REQUIRE_FALSE(slash);
  CHECK(slash.error() == "--log-file: /srv/new.log/ names a directory (it ends in '/'); give a file");
  {
    // Through a link: a link to STATE/fad.db had fadd append its log to the database.
    const auto dir = std::filesystem::temp_directory_path() / ("fad-options-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir / "state");
    std::ofstream(dir / "state" / "fad.db") << "";
    std::filesystem::create_symlink(dir / "state" / "fad.db", dir / "db.log");
    std::filesystem::create_directory_symlink(dir / "state", dir / "state-link");
    const std::string state = (dir / "state").string(), link = (dir / "db.log").string(),
                      lock = (dir / "state-link" / "fadd.lock").string();
    CHECK_THAT(resolve({"--state-dir", state.c_str(), "--log-file", link.c_str()}).error(),
               Contains("is fadd's own in its state dir"));
    CHECK_FALSE(resolve({"--state-dir", state.c_str(), "--log-file", lock.c_str()}));
    // The config file in use: appended to, no later start could read it.
    const std::string config = FAD_SOURCE_DIR "/config/fad.json";
    CHECK_THAT(resolve({"--log-file", config.c_str()}).error(), Contains("is the config file"));
    std::filesystem::remove_all(dir);
  }
  // "-h" is fadd's option, not a compiler's name.
  const char* short_as_value[] = {"fadd", "--nvcc", "-h", "--check"};
  auto nvcc_h = parse_daemon_flags(4, short_as_value);
  REQUIRE_FALSE(nvcc_h);
  CHECK(nvcc_h.error() == "--nvcc: needs a value, got the option '-h' (see 'fadd --help')");
  auto directory = resolve({"--log-file", FAD_SOURCE_DIR});
  REQUIRE_FALSE(directory);
  CHECK_THAT(directory.error(), Contains("--log-file: ") && Contains(" is a directory; give a file in it, e.g. "));
}

TEST_CASE("options: fadd --help fits 80 columns off a terminal", "[options]") {
  const char* argv[] = {"fadd", "--help"};
  auto r = parse_daemon_flags(2, argv);
  REQUIRE(r);
  REQUIRE(r->help);
  const std::string& text = r->help_text;
  CHECK_THAT(text, Contains("--memory-budget"));
  std::size_t start = 0;
  for (std::size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    INFO(text.substr(start, end - start));
    CHECK(end - start <= 80);
  }
}

TEST_CASE("options: a mistyped option is named, not its value, with the option it most likely was", "[options]") {
  const auto error = [](std::vector<const char*> args) {
    args.insert(args.begin(), "fadd");
    auto r = parse_daemon_flags(static_cast<int>(args.size()), args.data());
    REQUIRE_FALSE(r);
    return r.error();
  };
  CHECK(error({"--memry-budget", "4G"}) ==
        "unknown option --memry-budget; did you mean '--memory-budget'? (see 'fadd --help')");
  CHECK(error({"--cores", "2", "--sokcet=/run/fad.sock"}) ==
        "unknown option --sokcet=/run/fad.sock; did you mean '--socket'? (see 'fadd --help')");
  CHECK(error({"--frobnicate"}) == "unknown option --frobnicate (see 'fadd --help')");
  CHECK(error({"--cores"}) == "--cores: needs a value (see 'fadd --help')");
  CHECK(error({"\xe2\x80\x94"
               "cores",
               "2"}) ==
        "'\xe2\x80\x94"
        "cores' starts with an em dash, not '-': did you mean '--cores'? (see 'fadd --help')");
  CHECK(error({"--socket", "/s", "--state-dir"}) == "--state-dir: needs a value (see 'fadd --help')");
  // Twice: CLI11 said "At Most 1 required but received 2".
  CHECK(error({"--cores", "2", "--cores", "4"}) == "--cores: given more than once; give it once (see 'fadd --help')");
  // "--opt=$UNSET": the empty value, not the word after it (a 2G budget).
  CHECK(error({"--memory-budget=", "2G"}) == "--memory-budget: the value is empty (see 'fadd --help')");
  CHECK(error({"--nvcc=", "--socket", "/s"}) == "--nvcc: the value is empty (see 'fadd --help')");
  // --cores in words a user acts on, not CLI11's.
  for (const char* bad : {"abc", "0", "-3", "1.5", "4097", "2x", "99999999999"})
    CHECK(error({"--cores", bad}) ==
          "--cores: expected a whole number from 1 to 4096, got '" + std::string(bad) + "' (see 'fadd --help')");
  for (const char* good : {"1", "16", "4096"}) {
    const char* args[] = {"fadd", "--cores", good};
    auto flags = parse_daemon_flags(3, args);
    REQUIRE(flags);
    CHECK(flags->cores == std::stoi(good));
  }
  CHECK(error({"start"}) == "unexpected argument 'start' (fadd takes only options) (see 'fadd --help')");
}

}  // namespace fad
