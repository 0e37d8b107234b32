// Tests for common/config: every key, every error path, file:line reporting.
#include <catch2/catch.hpp>

#include "common/config.h"
#include "common/text.h"

using fad::Config;
using fad::parse_config;

namespace {
const std::string kFixtures = FAD_FIXTURES_DIR;
constexpr std::uint64_t kGiB = 1ull << 30;

/// The error lines of a failed parse.
std::vector<std::string> error_lines(const fad::Result<Config>& r) {
  REQUIRE_FALSE(r.ok());
  std::vector<std::string> lines;
  std::string_view rest = r.error();
  while (!rest.empty()) {
    std::size_t nl = rest.find('\n');
    lines.emplace_back(rest.substr(0, nl));
    if (nl == std::string_view::npos) break;
    rest.remove_prefix(nl + 1);
  }
  return lines;
}
}  // namespace

TEST_CASE("load_config: every key set", "[config]") {
  auto r = fad::load_config(kFixtures + "/config_good_full.json");
  REQUIRE(r.ok());
  CHECK(r->memory_budget == 20 * kGiB);
  CHECK(r->reserve.bytes == 0);
  CHECK(r->reserve.percent == Approx(15.0));
  CHECK(r->reserve.resolve(100 * kGiB) == 15 * kGiB);
  CHECK(r->swap_use);
  CHECK(r->max_parallel_units == 4);
  CHECK(r->nvcc_threads == 2);
  CHECK(r->nvcc == "/usr/local/cuda-13.0/bin/nvcc");
  CHECK(r->unit_memory_prior == 7 * kGiB / 2);
  CHECK(r->poll_interval_ms == 250);
  CHECK(r->log_level == "debug");
  CHECK(r->socket == std::optional<std::string>("/run/fad/fad.sock"));
  CHECK(r->state_dir == std::optional<std::string>("/var/lib/fad"));
  CHECK(r->kernels_dir == std::optional<std::string>("/usr/share/fad/kernels"));
}

TEST_CASE("load_config: auto values, sizes as strings and integers", "[config]") {
  auto r = fad::load_config(kFixtures + "/config_good_auto.json");
  REQUIRE(r.ok());
  CHECK_FALSE(r->memory_budget.has_value());
  CHECK(r->reserve.bytes == 2 * kGiB);
  CHECK(r->reserve.resolve(100 * kGiB) == 2 * kGiB);
  CHECK_FALSE(r->swap_use);
  CHECK(r->nvcc_threads == 0);
  CHECK(r->unit_memory_prior == kGiB);
}

TEST_CASE("an empty object gives the documented defaults", "[config]") {
  auto r = fad::load_config(kFixtures + "/config_good_empty.json");
  REQUIRE(r.ok());
  CHECK_FALSE(r->memory_budget.has_value());
  CHECK(r->reserve.bytes == 0);
  CHECK(r->reserve.percent == Approx(10.0));
  CHECK(r->reserve.resolve(10 * kGiB) == kGiB);
  CHECK_FALSE(r->swap_use);
  CHECK(r->max_parallel_units == 0);
  CHECK(r->max_builds_per_user == 32);
  CHECK(r->max_launches_per_user_per_hour == 10000);
  CHECK(r->keep_builds_per_user == 100);
  CHECK(r->keep_records_per_user == 10000);
  CHECK(r->max_builds_per_user_per_hour == 600);
  CHECK(r->nvcc_threads == 0);
  CHECK(r->nvcc.empty());
  CHECK(r->unit_memory_prior == 5 * kGiB);
  CHECK(r->poll_interval_ms == 500);
  CHECK(r->log_level == "info");
  CHECK_FALSE(r->socket.has_value());
  CHECK_FALSE(r->state_dir.has_value());
  CHECK_FALSE(r->kernels_dir.has_value());
}

TEST_CASE("every bad value and unknown key is reported, in file order, with its line", "[config]") {
  std::string file = kFixtures + "/config_bad_values.json";
  auto lines = error_lines(fad::load_config(file));
  REQUIRE(lines.size() == 10);
  CHECK(lines[0] == file +
                        ":2: key 'memory_budget': invalid size '4X': expected a number with an optional K, M, G "
                        "or T suffix (e.g. 512M, 1.5G) (or \"auto\")");
  CHECK(lines[1] ==
        file + ":3: key 'reserve': invalid reserve '150%': a percentage must be more than 0% and less than 100%");
  CHECK(lines[2] == file + ":4: key 'swap': expected \"ignore\" or \"use\", got \"maybe\"");
  CHECK(lines[3] == file + ":5: key 'max_parallel_units': expected an integer >= 0 (0 = no limit), got -1");
  CHECK(lines[4] == file + ":6: key 'nvcc_threads': expected \"auto\" or an integer from 1 to 64, got 65");
  CHECK(lines[5] == file + ":7: key 'nvcc': expected a non-empty string (the nvcc program), got 42");
  CHECK(lines[6] == file + ":8: key 'unit_memory_prior': must be at least 1M");
  CHECK(lines[7] == file + ":9: key 'poll_interval_ms': expected an integer from 50 to 60000, got 10");
  CHECK(lines[8] == file + ":10: key 'log_level': expected one of trace, debug, info, warn, error, got \"verbose\"");
  CHECK(lines[9].rfind(file + ":11: key 'colour': unknown key (known keys: memory_budget, reserve,", 0) == 0);
}

TEST_CASE("value checks, one key at a time", "[config]") {
  auto one = [](const std::string& body) { return parse_config("{\n  " + body + "\n}\n", "f.json"); };
  CHECK(*one(R"("memory_budget": 1073741824)")->memory_budget == kGiB);
  CHECK(one(R"("memory_budget": 0)").error() == "f.json:2: key 'memory_budget': must be at least 1M (or \"auto\")");
  // A number without its unit is bytes: far too little for any compile, surely meant as "12G".
  CHECK(one(R"("memory_budget": 12)").error() ==
        "f.json:2: key 'memory_budget': 12 bytes is less than 1M, the smallest budget: give a unit, such as \"12G\" "
        "(or \"auto\")");
  // Too many for gigabytes (this one would be a petabyte): kilobytes, then.
  CHECK(one(R"("memory_budget": "1048575")").error() ==
        "f.json:2: key 'memory_budget': 1048575 bytes is less than 1M, the smallest budget: give a unit, such as "
        "\"1048575K\" (or \"auto\")");
  // With a unit, no hint to add one.
  CHECK(one(R"("memory_budget": "1023K")").error() ==
        "f.json:2: key 'memory_budget': 1023K is less than 1M, the smallest budget (or \"auto\")");
  CHECK(one(R"("memory_budget": "12")").error().find("12 bytes is less than 1M") != std::string::npos);
  CHECK(*one(R"("memory_budget": "1M")")->memory_budget == (1u << 20));
  CHECK(one(R"("memory_budget": -5)").error().find("f.json:2: key 'memory_budget': expected a size") == 0);
  CHECK(one(R"("memory_budget": 1.5)").error().find("f.json:2: key 'memory_budget': expected a size") == 0);
  CHECK(one(R"("reserve": "0")")->reserve.resolve(100) == 0);
  CHECK(one(R"("reserve": 1024)")->reserve.resolve(1 << 20) == 1024);
  CHECK(one(R"("reserve": "7.5%")")->reserve.percent == Approx(7.5));
  CHECK(one(R"("reserve": "0%")").error() ==
        "f.json:2: key 'reserve': invalid reserve '0%': a percentage must be more than 0% and less than 100%");
  CHECK(one(R"("reserve": "100%")").ok() == false);
  CHECK(one(R"("reserve": "x%")").ok() == false);
  CHECK(one(R"("reserve": true)").error() ==
        "f.json:2: key 'reserve': expected a size such as \"2G\" or a percentage such as \"10%\", got true");
  CHECK(one(R"("max_parallel_units": 0)")->max_parallel_units == 0);
  CHECK(one(R"("max_parallel_units": 2.0)").ok() == false);
  CHECK(one(R"("max_parallel_units": "2")").ok() == false);
  CHECK(one(R"("max_builds_per_user": 0)")->max_builds_per_user == 0);
  CHECK(one(R"("max_builds_per_user": 500)")->max_builds_per_user == 500);
  CHECK(one(R"("max_launches_per_user_per_hour": 0)")->max_launches_per_user_per_hour == 0);
  CHECK(one(R"("keep_builds_per_user": 5)")->keep_builds_per_user == 5);
  CHECK_FALSE(one(R"("keep_builds_per_user": -5)").ok());
  CHECK(one(R"("keep_records_per_user": 0)")->keep_records_per_user == 0);
  CHECK_FALSE(one(R"("keep_records_per_user": "many")").ok());
  CHECK(one(R"("max_builds_per_user_per_hour": 0)")->max_builds_per_user_per_hour == 0);
  CHECK(one(R"("max_launches_per_user_per_hour": "100")").error() ==
        "f.json:2: key 'max_launches_per_user_per_hour': expected an integer >= 0 (0 = no limit), got \"100\"");
  CHECK(one(R"("max_builds_per_user": -1)").error() ==
        "f.json:2: key 'max_builds_per_user': expected an integer >= 0 (0 = no limit), got -1");
  CHECK(one(R"("nvcc_threads": 64)")->nvcc_threads == 64);
  CHECK(one(R"("nvcc_threads": 0)").ok() == false);
  CHECK(one(R"("nvcc_threads": "4")").ok() == false);
  CHECK(one(R"("poll_interval_ms": 60000)")->poll_interval_ms == 60000);
  CHECK(one(R"("poll_interval_ms": 60001)").ok() == false);
  CHECK(one(R"("unit_memory_prior": "5G")")->unit_memory_prior == 5 * kGiB);
  // 300 bytes per compile would let fadd start every compile at once.
  CHECK(one(R"("unit_memory_prior": 300)").error() ==
        "f.json:2: key 'unit_memory_prior': 300 bytes is less than 1M, the smallest estimate: give a unit, such as "
        "\"300G\"");
  CHECK(one(R"("swap": true)").error() == "f.json:2: key 'swap': expected \"ignore\" or \"use\", got true");
  CHECK(one(R"("log_level": 3)").ok() == false);
  CHECK(one(R"("socket": "")").error() == "f.json:2: key 'socket': expected a non-empty path string, got \"\"");
  CHECK(one(R"("state_dir": null)").error() == "f.json:2: key 'state_dir': expected a non-empty path string, got null");
  CHECK(one(R"("kernels_dir": ["a"])").ok() == false);
  // fadd runs the nvcc: its own working directory would decide what a relative path names.
  CHECK(one(R"("nvcc": "nvcc-13")")->nvcc == "nvcc-13");
  CHECK(one(R"("nvcc": "../cuda/bin/nvcc")").error() ==
        "f.json:2: key 'nvcc': '../cuda/bin/nvcc' is a relative path: give an absolute path or a bare name (looked up "
        "on PATH)");
  CHECK(one(R"("nvcc": "/bin/tr\u0000ue")").error() == "f.json:2: key 'nvcc': a path with a NUL byte");
  CHECK(one(R"("state_dir": "/var/lib/f\u0000ad")").error() == "f.json:2: key 'state_dir': a path with a NUL byte");
  // A key a letter or two off is named; one nowhere near gets the list.
  CHECK(one(R"("memroy_budget": "4G")").error() ==
        "f.json:2: key 'memroy_budget': unknown key; did you mean 'memory_budget'?");
  CHECK(one(R"("slurm": {"partiton": "gpu"})").error().find("unknown key; did you mean 'partition'?") !=
        std::string::npos);
  CHECK(one(R"("xyzzy": 1)").error().find("unknown key (known keys: memory_budget,") != std::string::npos);
  // Each program would resolve a relative path from its own working directory.
  for (const char* key : {"socket", "state_dir", "kernels_dir", "cache_dir"})
    CHECK(one("\"" + std::string(key) + "\": \"rel/x\"").error() ==
          "f.json:2: key '" + std::string(key) +
              "': must be an absolute path (a relative one names another place from each program's working "
              "directory), got \"rel/x\"");
  CHECK(one(R"("cache_dir": "~/cache")").error() ==
        "f.json:2: key 'cache_dir': must be an absolute path (no shell reads this file, so '~' is not your home "
        "directory), got \"~/cache\"");
}

TEST_CASE("the line is the key's, even when its name also appears as a value", "[config]") {
  auto r = parse_config("{\n  \"nvcc\": \"swap\",\n\n  \"swap\" :\n    \"no\"\n}", "c.json");
  CHECK(r.error() == "c.json:4: key 'swap': expected \"ignore\" or \"use\", got \"no\"");
}

TEST_CASE("a key set twice is refused at its second line, nested ones too", "[config]") {
  auto r = parse_config("{\n  \"swap\": \"use\",\n  \"nvcc\": \"swap\",\n  \"swap\": \"ignore\"\n}", "d.json");
  CHECK(r.error() == "d.json:4: key 'swap' is set twice (only the last would count): keep one");
  auto nested =
      parse_config("{\"slurm\": {\"partition\": \"a\",\n\"partition\": \"b\"},\n\"reserve\": \"150%\"}", "n.json");
  REQUIRE_FALSE(nested.ok());
  CHECK(nested.error().rfind("n.json:2: key 'partition' is set twice (only the last would count): keep one\n"
                             "n.json:3: key 'reserve': ",
                             0) == 0);
  // One name in two objects is two keys; the line is the repeat's own.
  CHECK(parse_config(R"({"slurm": {"nodes": 2}, "x": {"nodes": 3}})", "o.json").error().find("twice") ==
        std::string::npos);
  CHECK_THAT(parse_config("{\"slurm\": {\"nodes\": 1},\n\"nodes\": 2,\n\"nodes\": 3}", "l.json").error(),
             Catch::Contains("l.json:3: key 'nodes' is set twice"));
  // Shown as it can be read.
  CHECK(parse_config("{\"a\\u0007\": 1, \"a\\u0007\": 2}", "e.json")
            .error()
            .rfind("e.json:1: key 'a?' is set twice", 0) == 0);
}

TEST_CASE("invalid JSON names the line", "[config]") {
  std::string file = kFixtures + "/config_bad_json.json";
  auto r = fad::load_config(file);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().rfind(file + ":4: invalid JSON: parse error at line 4", 0) == 0);
  CHECK(r.error().find("[json.exception") == std::string::npos);

  auto empty = parse_config("", "e.json");
  REQUIRE_FALSE(empty.ok());
  CHECK(empty.error().rfind("e.json:1: invalid JSON: ", 0) == 0);
  auto trailing = parse_config("{\"swap\": \"use\",\n}\n", "t.json");
  CHECK(trailing.error().rfind("t.json:2: invalid JSON: ", 0) == 0);
}

TEST_CASE("the top level must be an object", "[config]") {
  std::string file = kFixtures + "/config_bad_toplevel.json";
  auto r = fad::load_config(file);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error() == file + ":2: the config must be a JSON object ({...}), got array");
  CHECK(parse_config("42", "n.json").error() == "n.json:1: the config must be a JSON object ({...}), got number");
}

TEST_CASE("load_config: unreadable files name the path and the reason", "[config]") {
  auto missing = fad::load_config("/nonexistent/fad.json");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error() == "cannot read config file /nonexistent/fad.json: No such file or directory");
  auto dir = fad::load_config(kFixtures);
  REQUIRE_FALSE(dir.ok());
  CHECK(dir.error() == "cannot read config file " + kFixtures + ": it is a directory");
}

TEST_CASE("parse_reserve and is_log_level", "[config]") {
  CHECK(fad::parse_reserve("2G")->bytes == 2 * kGiB);
  CHECK(fad::parse_reserve("10%")->resolve(1000) == 100);
  auto bad = fad::parse_reserve("lots");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error() ==
        "invalid size 'lots': expected a number with an optional K, M, G or T suffix (e.g. 512M, "
        "1.5G) or a percentage such as 10%");
  CHECK_FALSE(fad::parse_reserve("-5%").ok());
  CHECK_FALSE(fad::parse_reserve("%").ok());
  for (const char* level : {"trace", "debug", "info", "warn", "error"}) CHECK(fad::is_log_level(level));
  CHECK_FALSE(fad::is_log_level("warning"));
  CHECK_FALSE(fad::is_log_level(""));
}

TEST_CASE("config: socket_mode and socket_group", "[config]") {
  auto ok = parse_config(R"({"socket_mode": "0660", "socket_group": "root"})", "f.json");
  REQUIRE(ok.ok());
  CHECK(ok->socket_mode == 0660u);
  CHECK(ok->socket_group == std::optional<std::string>("root"));
  CHECK(parse_config("{}", "f.json")->socket_mode == 0600u);
  CHECK(parse_config(R"({"socket_mode": "666"})", "f.json")->socket_mode == 0666u);

  auto bad =
      error_lines(parse_config("{\n  \"socket_mode\": \"0777\",\n  \"socket_group\": \"no-such-group-fad\",\n"
                               "  \"log_level\": \"info\"\n}",
                               "f.json"));
  REQUIRE(bad.size() == 2);
  CHECK(bad[0] == "f.json:2: key 'socket_mode': a socket mode has read and write bits only (at most 0666), got '0777'");
  CHECK(bad[1] == "f.json:3: key 'socket_group': no group named 'no-such-group-fad' on this machine");
  CHECK(error_lines(parse_config(R"({"socket_mode": "0060"})", "f.json"))[0].find("0600 at least") !=
        std::string::npos);
  CHECK(error_lines(parse_config(R"({"socket_mode": 660})", "f.json"))[0].find("octal mode string") !=
        std::string::npos);
  CHECK(error_lines(parse_config(R"({"socket_mode": "06x0"})", "f.json"))[0].find("octal digits") != std::string::npos);
}

TEST_CASE("retention and log rotation keys", "[config]") {
  auto defaults = parse_config("{}", "f.json");
  REQUIRE(defaults.ok());
  CHECK(defaults->retention_s == std::optional<std::int64_t>(30 * 86400));
  CHECK(defaults->log_max_size == 10ull << 20);
  CHECK(defaults->log_max_files == 3);

  auto set = parse_config(R"({"retention": "2w", "log_max_size": "64K", "log_max_files": 5})", "f.json");
  REQUIRE(set.ok());
  CHECK(set->retention_s == std::optional<std::int64_t>(14 * 86400));
  CHECK(set->log_max_size == 64ull << 10);
  CHECK(set->log_max_files == 5);
  auto never = parse_config(R"({"retention": "never"})", "f.json");
  REQUIRE(never.ok());
  CHECK_FALSE(never->retention_s.has_value());

  CHECK(error_lines(
            parse_config("{\n\"retention\": \"30\",\n\"log_max_size\": \"1K\",\n\"log_max_files\": 0}", "f.json")) ==
        std::vector<std::string>{
            "f.json:2: key 'retention': invalid age '30': use a whole number with s, m, h, d or w (e.g. 30d, 12h) (or "
            "\"never\")",
            "f.json:3: key 'log_max_size': must be at least 4K",
            "f.json:4: key 'log_max_files': expected an integer from 1 to 100, got 0"});
  CHECK(error_lines(parse_config(R"({"retention": 30})", "f.json")).at(0) ==
        "f.json:1: key 'retention': expected an age such as \"30d\" or \"never\", got 30");
  CHECK(error_lines(parse_config(R"({"retention": "0d"})", "f.json")).at(0) ==
        "f.json:1: key 'retention': must be more than 0 (or \"never\")");
}

TEST_CASE("the shipped config/fad.json lists every key at its default", "[config]") {
  auto shipped = fad::load_config(std::string(FAD_SOURCE_DIR) + "/config/fad.json");
  REQUIRE(shipped.ok());
  const Config defaults;
  CHECK(shipped->memory_budget == defaults.memory_budget);
  CHECK(shipped->retention_s == defaults.retention_s);
  CHECK(shipped->log_max_size == defaults.log_max_size);
  CHECK(shipped->log_max_files == defaults.log_max_files);
  CHECK(shipped->poll_interval_ms == defaults.poll_interval_ms);
  CHECK(shipped->max_builds_per_user == defaults.max_builds_per_user);
  CHECK(shipped->max_launches_per_user_per_hour == defaults.max_launches_per_user_per_hour);
  CHECK(shipped->keep_builds_per_user == defaults.keep_builds_per_user);
  CHECK(shipped->keep_records_per_user == defaults.keep_records_per_user);
  CHECK(shipped->max_builds_per_user_per_hour == defaults.max_builds_per_user_per_hour);
  CHECK(shipped->log_level == defaults.log_level);
  CHECK(shipped->cache_size == defaults.cache_size);
  CHECK(shipped->unit_max_file_size == defaults.unit_max_file_size);
  CHECK(shipped->unit_max_log_size == defaults.unit_max_log_size);
  CHECK(shipped->unit_time_limit_s == defaults.unit_time_limit_s);
  CHECK(shipped->state_disk_reserve == defaults.state_disk_reserve);
  CHECK(shipped->socket_mode == defaults.socket_mode);
}

TEST_CASE("an empty nvcc is an error, never a silent default", "[config]") {
  CHECK(error_lines(parse_config(R"({"nvcc": ""})", "f.json")).at(0) ==
        "f.json:1: key 'nvcc': expected a non-empty string (the nvcc program), got \"\"");
}

TEST_CASE("unit_max_file_size: a size of at least 1M, or unlimited", "[config]") {
  CHECK(parse_config("{}", "f.json")->unit_max_file_size == (16ull << 30));
  CHECK(parse_config(R"({"unit_max_file_size": "2G"})", "f.json")->unit_max_file_size == (2ull << 30));
  CHECK(parse_config(R"({"unit_max_file_size": "unlimited"})", "f.json")->unit_max_file_size == 0);
  CHECK(error_lines(parse_config(R"({"unit_max_file_size": "512K"})", "f.json")).at(0) ==
        "f.json:1: key 'unit_max_file_size': must be at least 1M (or \"unlimited\")");
  CHECK_THAT(error_lines(parse_config(R"({"unit_max_file_size": "lots"})", "f.json")).at(0),
             Catch::StartsWith("f.json:1: key 'unit_max_file_size': ") && Catch::EndsWith(" (or \"unlimited\")"));
}

TEST_CASE("unit_time_limit: an age, or unlimited", "[config]") {
  CHECK(parse_config("{}", "f.json")->unit_time_limit_s == 0);
  CHECK(parse_config(R"({"unit_time_limit": "6h"})", "f.json")->unit_time_limit_s == 6 * 3600);
  CHECK(parse_config(R"({"unit_time_limit": "unlimited"})", "f.json")->unit_time_limit_s == 0);
  CHECK(error_lines(parse_config(R"({"unit_time_limit": "0s"})", "f.json")).at(0) ==
        "f.json:1: key 'unit_time_limit': must be more than 0 (or \"unlimited\")");
  CHECK(error_lines(parse_config(R"({"unit_time_limit": 3600})", "f.json")).at(0) ==
        "f.json:1: key 'unit_time_limit': expected an age such as \"6h\" or \"unlimited\", got 3600");
  CHECK_THAT(error_lines(parse_config(R"({"unit_time_limit": "6 hours"})", "f.json")).at(0),
             Catch::StartsWith("f.json:1: key 'unit_time_limit': ") && Catch::EndsWith(" (or \"unlimited\")"));
}

TEST_CASE("unit_max_log_size: a size of at least 1M, or unlimited", "[config]") {
  CHECK(parse_config("{}", "f.json")->unit_max_log_size == (64ull << 20));
  CHECK(parse_config(R"({"unit_max_log_size": "1G"})", "f.json")->unit_max_log_size == (1ull << 30));
  CHECK(parse_config(R"({"unit_max_log_size": "unlimited"})", "f.json")->unit_max_log_size == 0);
  // Each key sets its own limit.
  CHECK(parse_config(R"({"unit_max_log_size": "unlimited"})", "f.json")->unit_max_file_size == (16ull << 30));
  CHECK(error_lines(parse_config(R"({"unit_max_log_size": 4096})", "f.json")).at(0) ==
        "f.json:1: key 'unit_max_log_size': must be at least 1M (or \"unlimited\")");
}

TEST_CASE("state_disk_reserve: a size up to 1G, 0 for none", "[config]") {
  CHECK(parse_config("{}", "f.json")->state_disk_reserve == (4ull << 20));
  CHECK(parse_config(R"({"state_disk_reserve": "16M"})", "f.json")->state_disk_reserve == (16ull << 20));
  CHECK(parse_config(R"({"state_disk_reserve": 0})", "f.json")->state_disk_reserve == 0);
  CHECK(error_lines(parse_config(R"({"state_disk_reserve": "2G"})", "f.json")).at(0) ==
        "f.json:1: key 'state_disk_reserve': must be at most 1G (0 keeps no reserve)");
  CHECK_THAT(error_lines(parse_config(R"({"state_disk_reserve": "lots"})", "f.json")).at(0),
             Catch::StartsWith("f.json:1: key 'state_disk_reserve': ") && Catch::EndsWith(" (0 keeps no reserve)"));
}

TEST_CASE("cache_dir and cache_size: the compile cache's keys", "[config]") {
  auto c = fad::parse_config(R"({"cache_dir": "/srv/fad-cache", "cache_size": "2G"})", "f.json");
  REQUIRE(c);
  CHECK(c->cache_dir == std::string("/srv/fad-cache"));
  CHECK(c->cache_size == (2ull << 30));
  auto off = fad::parse_config(R"({"cache_size": 0})", "f.json");
  REQUIRE(off);
  CHECK(off->cache_size == 0);
  CHECK(fad::parse_config("{}", "f.json")->cache_size == (10ull << 30));
  auto bad = fad::parse_config(R"({"cache_size": "huge", "cache_dir": ""})", "f.json");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().find("key 'cache_size'") != std::string::npos);
  CHECK(bad.error().find("key 'cache_dir': expected a non-empty path string") != std::string::npos);
}

TEST_CASE("config: the executor and the slurm object", "[config]") {
  auto r = parse_config(R"({"executor": "slurm", "slurm": {"mode": "job-per-unit", "nodes": 4,
      "time_limit": "1-00:00:00", "partition": "build", "account": "ml", "extra_args": ["--qos=build"],
      "memory_margin": "512M", "step_wrapper": "/opt/fad/bin/fad-step"}})",
                        "f.json");
  REQUIRE(r.ok());
  CHECK(r->executor == fad::ExecutorKind::slurm);
  CHECK(r->slurm.job_per_unit);
  CHECK(r->slurm.nodes == 4);
  CHECK(r->slurm.time_limit == "1-00:00:00");
  CHECK(r->slurm.partition == "build");
  CHECK(r->slurm.account == "ml");
  CHECK(r->slurm.extra_args == std::vector<std::string>{"--qos=build"});
  CHECK(r->slurm.step_wrapper == "/opt/fad/bin/fad-step");
  // A size margin is added as is; the default is 15% with at least 128 MiB.
  CHECK(fad::step_memory(r->slurm, 4 * kGiB) == 4 * kGiB + (512ull << 20));
  fad::SlurmConfig defaults;
  CHECK(fad::step_memory(defaults, 4 * kGiB) == 4 * kGiB + static_cast<std::uint64_t>(0.15 * 4 * kGiB) + 1);
  CHECK(fad::step_memory(defaults, 100ull << 20) == (100ull << 20) + (128ull << 20));

  auto shipped = fad::load_config(std::string(FAD_SOURCE_DIR) + "/config/fad.json");
  REQUIRE(shipped.ok());
  CHECK(shipped->executor == fad::ExecutorKind::local);
}

TEST_CASE("config: bad slurm values are each named", "[config]") {
  auto r = parse_config(R"({"executor": "kubernetes",
  "slurm": {"nodes": 0, "time_limit": "soon", "extra_args": "--qos", "mode": "pilot", "colour": 1}})",
                        "f.json");
  auto lines = error_lines(r);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0] == "f.json:1: key 'executor': expected \"local\" or \"slurm\", got \"kubernetes\"");
  for (const char* key : {"'nodes'", "'time_limit'", "'extra_args'", "'mode'", "'colour': unknown key"})
    CHECK(lines[1].find(key) != std::string::npos);
  CHECK_FALSE(parse_config(R"({"slurm": []})", "f.json").ok());
  // "150%" is a percentage: what is wrong with it is said.
  CHECK(error_lines(parse_config(R"({"slurm": {"memory_margin": "150%"}})", "f.json"))[0].find(
            "expected a percentage more than 0% and less than 100%") != std::string::npos);
}

TEST_CASE("a bad value is shown printable: no escape sequence reaches the terminal", "[config]") {
  auto one = [](const std::string& body) { return parse_config("{\n  " + body + "\n}\n", "f.json"); };
  // ESC (C0) and U+009B (CSI, C1) inside values of each kind of key.
  for (const std::string body :
       {R"("memory_budget": "4G\u001b[2J")", R"("memory_budget": "\u009b2J")", R"("reserve": "5\u001b[2J%")",
        R"("retention": "30d\u001b]0;owned\u0007")", R"("unit_time_limit": "\u009b31m")", R"("swap": "\u009b2J")",
        R"("socket_mode": "06\u001b")", R"("log_level": "\u009b2J")", R"("nvcc_threads": "\u009b")"}) {
    INFO(body);
    const auto r = one(body);
    REQUIRE_FALSE(r.ok());
    CHECK_FALSE(fad::has_control(r.error()));
    CHECK(r.error().find("f.json:2: key '") == 0);
  }
  CHECK(one(R"("memory_budget": "4G\u001b[2J")").error() ==
        "f.json:2: key 'memory_budget': invalid size '4G?[2J': expected a number with an optional K, M, G or T "
        "suffix (e.g. 512M, 1.5G) (or \"auto\")");
}
