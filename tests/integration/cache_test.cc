// The compile cache end to end: fad launch and fad run with the fake compiler
// installed as a toolkit's nvcc (and real nvcc where installed), fadd
// recording hits without scheduling them, bundled builds restored at submit,
// and the cache directory itself (fad cache stats, a corrupted entry).
#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include <catch2/catch.hpp>

#include "harness.h"

using namespace fad::test;

namespace {

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// A toolkit whose bin/nvcc is the fake compiler reporting `version`: a new
/// file each time, as an upgrade installs one.
void install_fake_nvcc(const fs::path& toolkit, const std::string& version) {
  fs::create_directories(toolkit / "bin");
  const auto tmp = toolkit / "bin" / "nvcc.new";
  std::ofstream(tmp) << "#!/bin/sh\nFAD_FAKE_VERSION=" << version << " exec " << FAD_FAKE_NVCC_BIN << " \"$@\"\n";
  fs::permissions(tmp, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  fs::rename(tmp, toolkit / "bin" / "nvcc");
}

/// A project: src/k.cu including include/k.h.
void write_project(const fs::path& dir, const std::string& header = "int k_header = 1;\n") {
  fs::create_directories(dir / "src");
  fs::create_directories(dir / "include");
  fs::create_directories(dir / "out");
  std::ofstream(dir / "src" / "k.cu") << "#include \"k.h\"\n__global__ void k() {}\n";
  std::ofstream(dir / "include" / "k.h") << header;
}

struct CacheRig {
  Daemon d;
  fs::path toolkit = d.dir() / "toolkit";
  fs::path cache = d.dir() / "cache";
  fs::path project = d.dir() / "project";

  CacheRig() {
    d.write_kernels({});
    d.start();
    install_fake_nvcc(toolkit, "13.0");
    write_project(project);
  }
  std::vector<std::string> nvcc_call(const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> argv{(toolkit / "bin" / "nvcc").string(),
                                  "-c",
                                  (project / "src/k.cu").string(),
                                  "-o",
                                  "out/k.o",
                                  "-I" + (project / "include").string(),
                                  "-MD",
                                  "-MF",
                                  "out/k.d",
                                  "-gencode",
                                  "arch=compute_90,code=sm_90",
                                  "-gencode",
                                  "arch=compute_80,code=sm_80",
                                  "--threads",
                                  "2"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return argv;
  }
  /// `fad run --name NAME -- NVCC...` in `dir`; returns the build's status.
  json compile(const std::string& name, const std::vector<std::string>& argv,
               std::map<std::string, std::string> env = {}, const fs::path& dir = {}) {
    std::string cmd = "cd " + quote((dir.empty() ? project : dir).string()) + " && exec";
    for (const auto& a : argv) cmd += " " + quote(a);
    env.emplace("FAD_SOCKET", d.socket());
    env.emplace("FAD_CACHE_DIR", cache.string());
    env.emplace("FAD_FAKE_LOG", d.fake_log_path());
    auto r = run({FAD_FAD_BIN, "run", "--name", name, "--", "/bin/sh", "-c", cmd}, env);
    INFO(r.out << r.err << d.daemon_log());
    REQUIRE(r.exit_code == 0);
    const json b = find_build(d.status_all(), name);
    REQUIRE(b.is_object());
    return d.status(b.at("id").get<std::int64_t>());
  }
  std::size_t compiles() {
    auto log = d.fake_log();
    return static_cast<std::size_t>(std::count_if(
        log.begin(), log.end(), [](const std::string& l) { return l.find("src=") != std::string::npos; }));
  }
  json cache_stats() {
    auto r = run({FAD_FAD_BIN, "cache", "stats", "--json"}, {{"FAD_CACHE_DIR", cache.string()}});
    REQUIRE(r.exit_code == 0);
    return json::parse(r.out);
  }
};

bool unit_cached(const json& build) { return build.at("unit_list").at(0).at("cached").get<bool>(); }

}  // namespace

TEST_CASE("identical inputs hit, and a header, flag, nvcc version or environment change misses",
          "[integration][cache]") {
  CacheRig rig;
  const auto first = rig.compile("first", rig.nvcc_call());
  CHECK(rig.compiles() == 1);
  CHECK_FALSE(unit_cached(first));
  const std::string object = slurp(rig.project / "out/k.o"), depfile = slurp(rig.project / "out/k.d");
  REQUIRE(object.find("fake-nvcc object") == 0);

  fs::remove(rig.project / "out/k.o");
  fs::remove(rig.project / "out/k.d");
  const auto again = rig.compile("again", rig.nvcc_call());
  CHECK(rig.compiles() == 1);  // not compiled: restored
  CHECK(unit_cached(again));
  CHECK(again.at("cache_hits") == 1);
  CHECK(again.at("unit_list").at(0).at("state") == "succeeded");
  CHECK(again.at("unit_list").at(0).at("attempts") == 0);  // never scheduled
  CHECK(slurp(rig.project / "out/k.o") == object);
  CHECK(slurp(rig.project / "out/k.d") == depfile);

  std::ofstream(rig.project / "include" / "k.h") << "int k_header = 2;\n";
  CHECK_FALSE(unit_cached(rig.compile("header", rig.nvcc_call())));
  CHECK(rig.compiles() == 2);
  CHECK(slurp(rig.project / "out/k.o") != object);  // the new header went into it

  CHECK_FALSE(unit_cached(rig.compile("flag", rig.nvcc_call({"-DFAST_PATH"}))));
  CHECK(rig.compiles() == 3);

  CHECK_FALSE(unit_cached(rig.compile("env", rig.nvcc_call(), {{"NVCC_APPEND_FLAGS", "-DEXTRA"}})));
  CHECK(rig.compiles() == 4);

  install_fake_nvcc(rig.toolkit, "13.1");
  CHECK_FALSE(unit_cached(rig.compile("version", rig.nvcc_call())));
  CHECK(rig.compiles() == 5);
  CHECK(unit_cached(rig.compile("version-again", rig.nvcc_call())));
  CHECK(rig.compiles() == 5);

  // History counts the hits per build; the cache's own counters agree.
  auto history = rig.d.fad({"history", "--json"});
  REQUIRE(history.exit_code == 0);
  INFO(history.out);
  const json finished = json::parse(history.out);
  int hits = 0;
  for (const auto& b : finished.at("builds")) hits += b.at("cache_hits").get<int>();
  CHECK(hits == 2);
  const auto stats = rig.cache_stats();
  CHECK(stats.at("hits") == 2);
  CHECK(stats.at("misses") == 5);
  CHECK(stats.at("stored") == 5);
  CHECK(stats.at("results").get<int>() == 5);
}

TEST_CASE("the dependency file is byte-identical to nvcc's, for the project elsewhere and -o anywhere",
          "[integration][cache]") {
  CacheRig rig;
  rig.compile("first", rig.nvcc_call());
  // The same project unpacked elsewhere (pip builds in a fresh directory), its
  // output in another directory: first what the compiler itself writes there...
  const fs::path other = rig.d.dir() / "pip-req-build-xyz";
  write_project(other);
  fs::create_directories(other / "build" / "deep");
  std::vector<std::string> call{(rig.toolkit / "bin" / "nvcc").string(),
                                "-c",
                                (other / "src/k.cu").string(),
                                "-o",
                                (other / "build/deep/k.o").string(),
                                "-I" + (other / "include").string(),
                                "-MD",
                                "-MF",
                                "out/k.d",
                                "-gencode",
                                "arch=compute_90,code=sm_90",
                                "-gencode",
                                "arch=compute_80,code=sm_80",
                                "--threads",
                                "4"};
  std::vector<std::string> in_other{"/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", other.string()};
  in_other.insert(in_other.end(), call.begin(), call.end());
  auto direct = run(in_other);
  REQUIRE(direct.exit_code == 0);
  const std::string expected = slurp(other / "out/k.d");
  REQUIRE(expected.find((other / "build/deep/k.o").string() + " : ") == 0);  // the target is this call's -o
  fs::remove(other / "out/k.d");
  fs::remove(other / "build/deep/k.o");
  const auto before = rig.compiles();
  // ...then through fad: a hit, restoring that very file.
  const auto b = rig.compile("elsewhere", call, {}, other);
  CHECK(unit_cached(b));
  CHECK(rig.compiles() == before);
  CHECK(slurp(other / "out/k.d") == expected);
  CHECK(fs::exists(other / "build/deep/k.o"));
}

TEST_CASE("a corrupted cache entry is detected, removed and compiled again", "[integration][cache]") {
  CacheRig rig;
  rig.compile("first", rig.nvcc_call());
  const std::string object = slurp(rig.project / "out/k.o");
  int damaged = 0;
  for (const auto& e : fs::recursive_directory_iterator(rig.cache / "r")) {
    if (!e.is_regular_file()) continue;
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(e.path()) / 2));
    f.put('\xff');
    ++damaged;
  }
  REQUIRE(damaged == 1);
  fs::remove(rig.project / "out/k.o");
  const auto second = rig.compile("second", rig.nvcc_call());
  CHECK_FALSE(unit_cached(second));
  CHECK(rig.compiles() == 2);
  CHECK(slurp(rig.project / "out/k.o") == object);
  CHECK(rig.cache_stats().at("corrupt") == 1);
  CHECK(unit_cached(rig.compile("third", rig.nvcc_call())));  // stored again, intact
}

TEST_CASE("a second submit of the same kernels is restored from the cache and only linked", "[integration][cache]") {
  Daemon d;
  d.write_kernels({{"fwd_a", ""}, {"fwd_b", ""}, {"bwd_a", ""}});
  d.start();
  const auto first = d.wait_final(d.submit({"--arch", "9.0"}));
  REQUIRE(first.at("state") == "succeeded");
  const auto compiles_before = d.fake_log().size();
  const auto id = d.submit({"--arch", "9.0"});
  const auto second = d.wait_final(id);
  INFO(d.daemon_log());
  REQUIRE(second.at("state") == "succeeded");
  const auto log = d.fake_log();
  REQUIRE(log.size() == compiles_before + 1);
  CHECK(log.back().find("link") != std::string::npos);  // only the link ran
  const auto units = d.status(id).at("unit_list");
  int cached = 0;
  for (const auto& u : units) cached += u.at("cached").get<bool>();
  CHECK(cached == 3);
  CHECK(d.status(id).at("cache_hits") == 3);
  CHECK(fs::exists(second.at("artifact").get<std::string>()));
  // A changed kernel header makes every unit compile again.
  std::ofstream(fs::path(d.kernels_dir()) / "include" / "common.cuh") << "#pragma once\nint changed;\n";
  const auto third = d.wait_final(d.submit({"--arch", "9.0"}));
  CHECK(third.at("state") == "succeeded");
  CHECK(third.at("cache_hits") == 0);
  CHECK(d.fake_log().size() == compiles_before + 1 + 4);
}

TEST_CASE("fad cache stats and clear", "[integration][cache]") {
  CacheRig rig;
  rig.compile("first", rig.nvcc_call());
  auto text = run({FAD_FAD_BIN, "cache", "stats"}, {{"FAD_CACHE_DIR", rig.cache.string()}});
  CHECK(text.exit_code == 0);
  CHECK(text.out.find("compile cache " + rig.cache.string()) != std::string::npos);
  CHECK(text.out.find("1 result(s)") != std::string::npos);
  CHECK(text.out.find(" of 10.0 GiB, 1 result(s)") != std::string::npos);
  // Off, what it still holds is shown without a bound of 0.
  auto off = run({FAD_FAD_BIN, "cache", "stats"}, {{"FAD_CACHE_DIR", rig.cache.string()}, {"FAD_CACHE_SIZE", "0"}});
  CHECK(off.exit_code == 0);
  CHECK(off.out.find("(off: its size, FAD_CACHE_SIZE or cache_size, is 0)") != std::string::npos);
  CHECK(off.out.find(" of 0 B") == std::string::npos);
  CHECK(off.out.find("1 result(s)") != std::string::npos);
  auto cleared = run({FAD_FAD_BIN, "cache", "clear", "--json"}, {{"FAD_CACHE_DIR", rig.cache.string()}});
  REQUIRE(cleared.exit_code == 0);
  CHECK(json::parse(cleared.out).at("results_removed") == 1);
  CHECK(json::parse(cleared.out).at("schema_version") == 1);
  CHECK(rig.cache_stats().at("schema_version") == 1);
  CHECK(rig.cache_stats().at("results") == 0);
  CHECK_FALSE(unit_cached(rig.compile("after-clear", rig.nvcc_call())));
  auto bad = run({FAD_FAD_BIN, "cache", "stats"}, {{"FAD_CACHE_DIR", rig.cache.string()}, {"FAD_CACHE_SIZE", "lots"}});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("FAD_CACHE_SIZE") != std::string::npos);
  auto usage = run({FAD_FAD_BIN, "cache", "wipe"});
  CHECK(usage.exit_code == 2);
  // Looking creates nothing: a mistyped --cache-dir is an error, a cache
  // not made yet is said to be so.
  const auto typo = rig.cache.parent_path() / "no" / "such" / "cache";
  for (const char* sub : {"stats", "clear"}) {
    auto missing = run({FAD_FAD_BIN, "cache", sub, "--cache-dir", typo.string()});
    CHECK(missing.exit_code == 2);
    CHECK(missing.err == "fad: --cache-dir " + typo.string() + ": no such directory\n");
  }
  auto not_yet = run({FAD_FAD_BIN, "cache", "stats", "--json"}, {{"FAD_CACHE_DIR", typo.string()}});
  CHECK(not_yet.exit_code == 0);
  CHECK(json::parse(not_yet.out).at("exists") == false);
  CHECK(json::parse(not_yet.out).at("schema_version") == 1);
  auto nothing = run({FAD_FAD_BIN, "cache", "clear", "--json"}, {{"FAD_CACHE_DIR", typo.string()}});
  CHECK(nothing.exit_code == 0);
  CHECK(json::parse(nothing.out).at("cleared") == false);
  CHECK(json::parse(nothing.out).at("schema_version") == 1);
  CHECK_FALSE(fs::exists(rig.cache.parent_path() / "no"));
  CHECK(rig.cache_stats().at("exists") == true);
}

TEST_CASE("real nvcc: a hit restores the dependency file nvcc writes, byte for byte", "[integration][cache][nvcc]") {
  const auto nvcc = find_tool({"/usr/local/cuda/bin/nvcc", "/usr/bin/nvcc"});
  if (nvcc.empty() || std::getenv("FAD_SKIP_REAL_NVCC")) {
    WARN("SKIP: needs nvcc (or FAD_SKIP_REAL_NVCC is set); the real-nvcc cache test did not run");
    return;
  }
  TempDir tmp;
  const auto cache = tmp.path() / "cache";
  auto make = [&](const fs::path& dir) {
    fs::create_directories(dir / "src");
    fs::create_directories(dir / "include");
    fs::create_directories(dir / "build" / "obj");
    std::ofstream(dir / "include" / "scale.h")
        << "#pragma once\n__device__ inline float scale(float x) { return 2 * x; }\n";
    std::ofstream(dir / "src" / "scale.cu")
        << "#include \"scale.h\"\n#include <cstdio>\n"
           "__global__ void k(float* x) { x[threadIdx.x] = scale(x[threadIdx.x]); }\n";
  };
  auto call = [&](const fs::path& dir, bool through_fad) {
    std::vector<std::string> argv{"/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", (dir / "build").string()};
    if (through_fad) argv.insert(argv.end(), {FAD_FAD_BIN, "launch", "--"});
    argv.insert(argv.end(), {nvcc, "-c", (dir / "src/scale.cu").string(), "-o", "obj/scale.o",
                             "-I" + (dir / "include").string(), "--generate-dependencies-with-compile",
                             "--dependency-output", "obj/scale.d", "-gencode", "arch=compute_80,code=sm_80", "-O2"});
    return run(argv, {{"FAD_CACHE_DIR", cache.string()}, {"FAD_SOCKET", (tmp.path() / "no-fadd.sock").string()}}, 600);
  };
  const auto a = tmp.path() / "a", b = tmp.path() / "pip-build-b";
  make(a);
  make(b);
  auto first = call(a, true);
  INFO(first.out << first.err);
  REQUIRE(first.exit_code == 0);
  auto reference = call(b, false);  // what nvcc itself writes in b
  REQUIRE(reference.exit_code == 0);
  const std::string expected = slurp(b / "build/obj/scale.d");
  REQUIRE(expected.find((b / "src/scale.cu").string()) != std::string::npos);
  fs::remove(b / "build/obj/scale.d");
  fs::remove(b / "build/obj/scale.o");
  auto hit = call(b, true);
  INFO(hit.out << hit.err);
  REQUIRE(hit.exit_code == 0);
  auto stats = run({FAD_FAD_BIN, "cache", "stats", "--json"}, {{"FAD_CACHE_DIR", cache.string()}});
  CHECK(json::parse(stats.out).at("hits") == 1);
  CHECK(slurp(b / "build/obj/scale.d") == expected);
  CHECK(slurp(b / "build/obj/scale.o") == slurp(a / "build/obj/scale.o"));
}
