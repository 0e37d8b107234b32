// Tests for common/cached_compile: a compile call's lookups and stores, with a
// real cache directory and a real (script) compiler whose --version is its
// identity. The "compile" writes its object and dependency file as nvcc would.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include <catch2/catch.hpp>

#include "common/cached_compile.h"

using namespace fad;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

struct Fixture {
  fs::path root;
  fs::path cache_dir;
  fs::path compiler;
  std::map<std::string, std::string> env{{"PATH", std::getenv("PATH") ? std::getenv("PATH") : ""}};
  std::unique_ptr<CompileCache> cache;

  Fixture() {
    root = fs::temp_directory_path() /
           ("fad-cc-test-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}()));
    cache_dir = root / "cache";
    compiler = root / "toolkit" / "bin" / "nvcc";
    set_compiler_version("13.0");
    auto opened = CompileCache::open({cache_dir.string(), 1ull << 30});
    REQUIRE(opened);
    cache = std::move(*opened);
  }
  ~Fixture() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  /// A new binary, as an upgrade installs it: another file renamed into place.
  void set_compiler_version(const std::string& v) {
    const fs::path tmp = compiler.string() + ".new";
    write(tmp, "#!/bin/sh\necho 'Cuda compilation tools, release " + v + "'\n");
    fs::permissions(tmp, fs::perms::owner_all);
    fs::rename(tmp, compiler);
  }
  EnvLookup lookup() const {
    return [this](std::string_view name) -> std::optional<std::string> {
      auto it = env.find(std::string(name));
      if (it == env.end()) return std::nullopt;
      return it->second;
    };
  }
  /// A project at `dir`: src/a.cu including include/h.h.
  void write_project(const fs::path& dir, const std::string& header = "int h;\n") {
    write(dir / "src" / "a.cu", "#include \"h.h\"\n__global__ void k() {}\n");
    write(dir / "include" / "h.h", header);
    fs::create_directories(dir / "out");
  }
  std::vector<std::string> call(const fs::path& dir) const {
    return {compiler.string(),
            "-c",
            (dir / "src/a.cu").string(),
            "-o",
            "out/a.o",
            "-I" + (dir / "include").string(),
            "-MD",
            "-MF",
            "out/a.d",
            "-gencode",
            "arch=compute_90,code=sm_90"};
  }
  /// What nvcc writes for call(dir) run in dir.
  static std::string depfile_for(const fs::path& dir) {
    return "out/a.o : " + (dir / "src/a.cu").string() + " \\\n    " + (dir / "include/h.h").string() + "\n";
  }
  /// Looks `argv` up, run in `cwd`; on a miss, "compiles" it (writing
  /// out/a.o = `object` and out/a.d = `depfile`) and stores it. Whether it hit.
  bool build_call(const std::vector<std::string>& argv, const fs::path& cwd, const std::string& object,
                  const std::string& depfile) {
    CachedCompile c(*cache, argv, cwd.string(), lookup(), compiler.string());
    REQUIRE(c.cacheable());
    if (c.restore()) return true;
    const auto started = std::chrono::system_clock::now();
    write(cwd / "out/a.o", object);
    write(cwd / "out/a.d", depfile);
    REQUIRE(c.store(started, "compiled\n", "warning: w\n"));
    return false;
  }
  /// call(dir) through build_call().
  bool build(const fs::path& dir, const std::string& object) {
    return build_call(call(dir), dir, object, depfile_for(dir));
  }
};

}  // namespace

TEST_CASE("identical inputs hit and restore the object, the dependency file and the output", "[cached_compile]") {
  Fixture f;
  const auto p = f.root / "p";
  f.write_project(p);
  CHECK_FALSE(f.build(p, "OBJECT-1"));
  fs::remove(p / "out/a.o");
  fs::remove(p / "out/a.d");
  CachedCompile again(*f.cache, f.call(p), p.string(), f.lookup(), f.compiler.string());
  auto hit = again.restore();
  REQUIRE(hit);
  CHECK(hit->stdout_text == "compiled\n");
  CHECK(hit->stderr_text == "warning: w\n");
  CHECK(slurp(p / "out/a.o") == "OBJECT-1");
  CHECK(slurp(p / "out/a.d") == Fixture::depfile_for(p));
  CHECK(again.compiler_version() == "Cuda compilation tools, release 13.0");
  auto stats = f.cache->stats();
  CHECK(stats->hits == 1);
  CHECK(stats->misses == 1);
  CHECK(stats->stored == 1);
}

TEST_CASE("a header change misses and the old header content hits again", "[cached_compile]") {
  Fixture f;
  const auto p = f.root / "p";
  f.write_project(p, "int h = 1;\n");
  CHECK_FALSE(f.build(p, "OBJECT-h1"));
  write(p / "include/h.h", "int h = 2;\n");
  CHECK_FALSE(f.build(p, "OBJECT-h2"));
  write(p / "include/h.h", "int h = 1;\n");
  CHECK(f.build(p, "unused"));
  CHECK(slurp(p / "out/a.o") == "OBJECT-h1");
  write(p / "include/h.h", "int h = 2;\n");
  CHECK(f.build(p, "unused"));
  CHECK(slurp(p / "out/a.o") == "OBJECT-h2");
}

TEST_CASE("a source, flag, compiler version or environment change misses", "[cached_compile]") {
  Fixture f;
  const auto p = f.root / "p";
  f.write_project(p);
  CHECK_FALSE(f.build(p, "O"));
  CHECK(f.build(p, "O"));
  write(p / "src/a.cu", "#include \"h.h\"\n__global__ void k2() {}\n");
  CHECK_FALSE(f.build(p, "O"));
  CHECK(f.build(p, "O"));

  auto flagged = f.call(p);
  flagged.push_back("-DFAST");
  CachedCompile with_flag(*f.cache, flagged, p.string(), f.lookup(), f.compiler.string());
  CHECK_FALSE(with_flag.restore());

  f.env["NVCC_APPEND_FLAGS"] = "-DX";
  CHECK_FALSE(f.build(p, "O"));
  CHECK(f.build(p, "O"));
  f.env.erase("NVCC_APPEND_FLAGS");
  CHECK(f.build(p, "O"));

  f.set_compiler_version("13.1");
  CHECK_FALSE(f.build(p, "O"));
  CHECK(f.build(p, "O"));
}

TEST_CASE("the project moved elsewhere hits, and its dependency file is the one nvcc writes there",
          "[cached_compile]") {
  Fixture f;
  const auto a = f.root / "pip-req-build-aaa", b = f.root / "pip-req-build-bbb";
  f.write_project(a);
  f.write_project(b);
  CHECK_FALSE(f.build(a, "OBJECT-A"));
  CHECK(f.build(b, "unused"));
  CHECK(slurp(b / "out/a.o") == "OBJECT-A");
  CHECK(slurp(b / "out/a.d") == Fixture::depfile_for(b));
  CHECK(slurp(b / "out/a.d").find(a.string()) == std::string::npos);
}

TEST_CASE("nothing is stored when a file changed during the compile or uses __TIME__", "[cached_compile]") {
  Fixture f;
  const auto p = f.root / "p";
  f.write_project(p);
  {
    CachedCompile c(*f.cache, f.call(p), p.string(), f.lookup(), f.compiler.string());
    CHECK_FALSE(c.restore());
    const auto started = std::chrono::system_clock::now() - std::chrono::seconds(5);  // header is newer
    write(p / "out/a.o", "O");
    write(p / "out/a.d", Fixture::depfile_for(p));
    REQUIRE(c.store(started, "", ""));
  }
  CHECK(f.cache->stats()->stored == 0);
  write(p / "include/h.h", "const char* t = __TIME__;\n");
  {
    CachedCompile c(*f.cache, f.call(p), p.string(), f.lookup(), f.compiler.string());
    CHECK_FALSE(c.restore());
    const auto started = std::chrono::system_clock::now();
    write(p / "out/a.o", "O");
    write(p / "out/a.d", Fixture::depfile_for(p));
    REQUIRE(c.store(started, "", ""));
  }
  CHECK(f.cache->stats()->stored == 0);
}

TEST_CASE("a call without a dependency file gets one written privately, and none restored", "[cached_compile]") {
  Fixture f;
  const auto p = f.root / "p";
  f.write_project(p);
  std::vector<std::string> argv{f.compiler.string(), "-c", "src/a.cu", "-o", "out/a.o", "-Iinclude"};
  std::string own;
  {
    CachedCompile c(*f.cache, argv, p.string(), f.lookup(), f.compiler.string());
    CHECK_FALSE(c.restore());
    const auto extra = c.extra_args();
    REQUIRE(extra.size() == 3);
    CHECK(extra[0] == "--generate-dependencies-with-compile");
    own = extra[2];
    const auto started = std::chrono::system_clock::now();
    write(p / "out/a.o", "O");
    write(own, "out/a.o : src/a.cu \\\n    include/h.h\n");
    REQUIRE(c.store(started, "", ""));
  }
  CHECK_FALSE(fs::exists(own));  // the private dependency file is removed
  fs::remove(p / "out/a.o");
  CachedCompile again(*f.cache, argv, p.string(), f.lookup(), f.compiler.string());
  REQUIRE(again.restore());
  CHECK(slurp(p / "out/a.o") == "O");
  CHECK_FALSE(fs::exists(p / "out/a.d"));
  // A relative header is checked where this call would read it.
  write(p / "include/h.h", "changed\n");
  CachedCompile changed(*f.cache, argv, p.string(), f.lookup(), f.compiler.string());
  CHECK_FALSE(changed.restore());
}

TEST_CASE("a corrupted result is recompiled, not restored", "[cached_compile]") {
  Fixture f;
  const auto p = f.root / "p";
  f.write_project(p);
  CHECK_FALSE(f.build(p, "GOOD"));
  for (const auto& e : fs::recursive_directory_iterator(f.cache_dir / "r")) {
    if (!e.is_regular_file()) continue;
    std::fstream file(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(12);
    file.put('!');
  }
  write(p / "out/a.o", "stale");
  CHECK_FALSE(f.build(p, "RECOMPILED"));
  CHECK(slurp(p / "out/a.o") == "RECOMPILED");
  CHECK(f.cache->stats()->corrupt == 1);
  CHECK(f.build(p, "unused"));
  CHECK(slurp(p / "out/a.o") == "RECOMPILED");
}

TEST_CASE("a compile written to /dev/null is not stored: no empty object is served later", "[cached_compile]") {
  Fixture f;
  const auto p = f.root / "p";
  f.write_project(p);
  auto argv = f.call(p);
  *std::find(argv.begin(), argv.end(), "out/a.o") = "/dev/null";
  {
    CachedCompile c(*f.cache, argv, p.string(), f.lookup(), f.compiler.string());
    REQUIRE(c.cacheable());
    CHECK_FALSE(c.restore());
    const auto started = std::chrono::system_clock::now();
    write(p / "out/a.d", Fixture::depfile_for(p));
    REQUIRE(c.store(started, "", ""));
  }
  CHECK(f.cache->stats()->stored == 0);
  CHECK_FALSE(f.build(p, "REAL"));  // the same call with a real output compiles
  CHECK(slurp(p / "out/a.o") == "REAL");
}

TEST_CASE("an entry that is a FIFO, a link to a device or too large is removed, never read", "[cached_compile]") {
  Fixture f;
  const auto p = f.root / "p";
  f.write_project(p);
  CHECK_FALSE(f.build(p, "GOOD"));
  auto entry = [&] {
    for (const auto& e : fs::recursive_directory_iterator(f.cache_dir / "r"))
      if (e.is_regular_file() || e.is_symlink() || e.is_fifo()) return e.path();
    FAIL("no result entry");
    return fs::path();
  };
  std::uint64_t corrupt = 0;
  for (const std::string damage : {"fifo", "zero", "huge"}) {
    INFO(damage);
    const fs::path e = entry();
    fs::remove(e);
    if (damage == "fifo") REQUIRE(::mkfifo(e.c_str(), 0644) == 0);  // read, it would block the compile forever
    if (damage == "zero") fs::create_symlink("/dev/zero", e);       // read, it would exhaust memory
    if (damage == "huge") {
      std::ofstream(e).close();
      fs::resize_file(e, (2ull << 30) + 1);  // sparse: past any entry, no memory used
    }
    CHECK_FALSE(f.build(p, "AGAIN"));  // recompiled, and stored again
    CHECK(f.cache->stats()->corrupt == ++corrupt);
    CHECK(f.build(p, "unused"));
    CHECK(slurp(p / "out/a.o") == "AGAIN");
  }
}

TEST_CASE("a define's absolute path is part of the key as written, the project's other paths are not",
          "[cached_compile]") {
  Fixture f;
  const auto a = f.root / "pip-req-build-aaa", b = f.root / "pip-req-build-bbb";
  f.write_project(a);
  f.write_project(b);
  // The macro's value is compiled into the object: b's must not be a's.
  auto build_with = [&](const fs::path& dir, const std::vector<std::string>& extra) {
    auto argv = f.call(dir);
    argv.insert(argv.end(), extra.begin(), extra.end());
    return f.build_call(argv, dir, "O", Fixture::depfile_for(dir));
  };
  for (const auto& spelling : std::vector<std::vector<std::string>>{
           {"-DDATA=$"}, {"-D", "DATA=$"}, {"--define-macro=DATA=$"}, {"-Xcompiler", "-DDATA=$"}}) {
    auto in = [&](const fs::path& dir) {
      auto words = spelling;
      for (auto& w : words)
        if (auto at = w.find('$'); at != std::string::npos) w.replace(at, 1, (dir / "data").string());
      return words;
    };
    INFO(spelling.back());
    CHECK_FALSE(build_with(a, in(a)));
    CHECK(build_with(a, in(a)));
    CHECK_FALSE(build_with(b, in(b)));
  }
  // An include path under the root is relabelled: b hits a's object.
  CHECK_FALSE(build_with(a, {"-I" + (a / "src").string()}));
  CHECK(build_with(b, {"-I" + (b / "src").string()}));
}

TEST_CASE("the time on the command line or in NVCC_APPEND_FLAGS is not cacheable", "[cached_compile]") {
  Fixture f;
  const auto p = f.root / "p";
  f.write_project(p);
  auto argv = f.call(p);
  argv.push_back("-DSTAMP=__TIME__");
  CachedCompile on_line(*f.cache, argv, p.string(), f.lookup(), f.compiler.string());
  CHECK_FALSE(on_line.cacheable());
  f.env["NVCC_APPEND_FLAGS"] = "-O3 -DSTAMP=__DATE__";
  CachedCompile in_env(*f.cache, f.call(p), p.string(), f.lookup(), f.compiler.string());
  CHECK_FALSE(in_env.cacheable());
  f.env["NVCC_PREPEND_FLAGS"] = "--keep";  // nvcc reads them as arguments: neither is capturable
  f.env["NVCC_APPEND_FLAGS"] = "-O3";
  CachedCompile keep(*f.cache, f.call(p), p.string(), f.lookup(), f.compiler.string());
  CHECK_FALSE(keep.cacheable());
}

TEST_CASE("NVCC_APPEND_FLAGS with -g is a debug compile: another checkout does not get its paths", "[cached_compile]") {
  Fixture f;
  const auto a = f.root / "pip-req-build-aaa", b = f.root / "pip-req-build-bbb";
  f.write_project(a);
  f.write_project(b);
  f.env["NVCC_APPEND_FLAGS"] = "  -g ";
  CHECK_FALSE(f.build(a, "DEBUG-A"));
  CHECK(f.build(a, "unused"));
  CHECK_FALSE(f.build(b, "DEBUG-B"));
}

TEST_CASE("a header reached through '..' after a symlinked directory is checked where the compiler read it",
          "[cached_compile]") {
  Fixture f;
  const auto proj = f.root / "proj", other = f.root / "other";
  write(other / "mod" / "a.cu", "#include \"../include/h.h\"\n");
  write(other / "include" / "h.h", "int real1;\n");
  write(proj / "include" / "h.h", "int decoy;\n");  // where the text, collapsed, would point
  fs::create_directories(proj / "out");
  fs::create_symlink(other / "mod", proj / "mod");
  std::vector<std::string> argv{f.compiler.string(), "-c", "mod/a.cu", "-o", "out/a.o", "-MD", "-MF", "out/a.d"};
  auto build = [&](const std::string& object) {
    return f.build_call(argv, proj, object, "out/a.o : mod/a.cu mod/../include/h.h\n");
  };
  CHECK_FALSE(build("REAL1"));
  CHECK(build("unused"));
  write(other / "include" / "h.h", "int real2;\n");
  CHECK_FALSE(build("REAL2"));
}

TEST_CASE("on a filesystem of whole seconds, a header dated in the compile's first second is not trusted",
          "[cached_compile]") {
  Fixture f;
  const auto p = f.root / "p";
  f.write_project(p);
  const fs::path header = p / "include/h.h";
  // Dates `header` at a whole second and returns a start within that second,
  // after the change of date (whose ctime is exact): the file could have
  // changed after the start, and its date could not tell.
  auto date_header = [&](std::int64_t second) {
    const timespec times[2] = {{second, 0}, {second, 0}};
    REQUIRE(::utimensat(AT_FDCWD, header.c_str(), times, 0) == 0);
    struct stat st {};
    REQUIRE(::stat(header.c_str(), &st) == 0);
    return std::chrono::system_clock::time_point(std::chrono::seconds(st.st_ctim.tv_sec) +
                                                 std::chrono::nanoseconds(st.st_ctim.tv_nsec + 1000));
  };
  auto store_at = [&](std::chrono::system_clock::time_point started) {
    CachedCompile c(*f.cache, f.call(p), p.string(), f.lookup(), f.compiler.string());
    CHECK_FALSE(c.restore());
    write(p / "out/a.o", "O");
    write(p / "out/a.d", Fixture::depfile_for(p));
    REQUIRE(c.store(started, "", ""));
  };
  // The start's own second (retried in the rare case the clock ticked over meanwhile).
  for (int tries = 0; tries < 5; ++tries) {
    const auto now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    const auto started = date_header(now);
    if (std::chrono::duration_cast<std::chrono::seconds>(started.time_since_epoch()).count() != now) continue;
    store_at(started);
    break;
  }
  CHECK(f.cache->stats()->stored == 0);
  // A whole second before the start's: older than the compile, trusted.
  const auto now =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  const auto started = date_header(now - 2);
  store_at(started);
  CHECK(f.cache->stats()->stored == 1);
}

TEST_CASE("a wrapper script is asked its version every time: a compiler changed behind it misses", "[cached_compile]") {
  Fixture f;
  const auto p = f.root / "p";
  f.write_project(p);
  // `exec /opt/cuda-$V/bin/nvcc "$@"` with $V switched elsewhere: the script
  // itself never changes.
  const fs::path version = f.root / "current-version";
  write(version, "Cuda compilation tools, release 13.0\n");
  write(f.compiler, "#!/bin/sh\ncat " + version.string() + "\n");
  fs::permissions(f.compiler, fs::perms::owner_all);
  CHECK_FALSE(f.build(p, "O"));
  CHECK(f.build(p, "O"));
  write(version, "Cuda compilation tools, release 12.9\n");
  CHECK_FALSE(f.build(p, "O"));
}

TEST_CASE("an edited wrapper script misses though its --version answer is the same", "[cached_compile]") {
  Fixture f;
  const auto p = f.root / "p";
  f.write_project(p);
  // `exec nvcc -DVAL=0 "$@"` edited to -DVAL=40: the same nvcc answers.
  auto wrapper = [&](const std::string& define) {
    write(f.compiler, "#!/bin/sh\n# exec nvcc " + define + " \"$@\"\necho 'Cuda compilation tools, release 13.0'\n");
    fs::permissions(f.compiler, fs::perms::owner_all);
  };
  wrapper("-DVAL=0");
  CHECK_FALSE(f.build(p, "O"));
  CHECK(f.build(p, "O"));
  wrapper("-DVAL=40");
  CHECK_FALSE(f.build(p, "O-40"));
  CHECK(f.build(p, "O-40"));
  // The version fadd records is still nvcc's line.
  CachedCompile c(*f.cache, f.call(p), p.string(), f.lookup(), f.compiler.string());
  CHECK(c.compiler_version() == "Cuda compilation tools, release 13.0");
}

TEST_CASE("a header a __has_include probe found, or did not, is checked again", "[cached_compile]") {
  Fixture f;
  const auto p = f.root / "p";
  f.write_project(p);
  // The source asks about flag.h beside it; h.h (in include/, an -I
  // directory) asks about opt.h among the include directories.
  write(p / "src" / "a.cu",
        "#if __has_include(\"flag.h\")\n#define VAL 7\n#endif\n#include \"h.h\"\n__global__ void k() {}\n");
  write(p / "include" / "h.h", "#if __has_include(<opt.h>)\n#include <opt.h>\n#endif\n");
  write(p / "src" / "flag.h", "");
  CHECK_FALSE(f.build(p, "WITH-FLAG"));
  CHECK(f.build(p, "WITH-FLAG"));
  fs::remove(p / "src" / "flag.h");  // the probe now fails: another object
  CHECK_FALSE(f.build(p, "NO-FLAG"));
  CHECK(f.build(p, "NO-FLAG"));
  write(p / "include" / "opt.h", "int opt;\n");  // a header that appeared where -I looks
  CHECK_FALSE(f.build(p, "NO-FLAG-OPT"));
  fs::remove(p / "include" / "opt.h");
  write(p / "src" / "flag.h", "");
  CHECK(f.build(p, "WITH-FLAG"));  // as at first: the first header set again
  // A directory by the probed name is not a header.
  fs::remove(p / "src" / "flag.h");
  fs::create_directories(p / "src" / "flag.h");
  CHECK(f.build(p, "NO-FLAG"));
  // The same project elsewhere hits: the probed paths move with it.
  const auto moved = f.root / "moved";
  fs::create_directories(moved);
  fs::copy(p, moved, fs::copy_options::recursive);
  CHECK(f.build(moved, "NO-FLAG"));
}

TEST_CASE("an edit of nvcc.profile beside a compiled nvcc misses", "[cached_compile]") {
  Fixture f;
  const auto p = f.root / "p";
  f.write_project(p);
  // A real executable (not a script), whose identity fad keeps by its file;
  // coreutils' echo answers --version.
  fs::remove(f.compiler);
  fs::copy_file("/bin/echo", f.compiler);
  write(f.compiler.parent_path() / "nvcc.profile", "INCLUDES += \"-DPROF=1\"\n");
  CHECK_FALSE(f.build(p, "O"));
  CHECK(f.build(p, "O"));
  write(f.compiler.parent_path() / "nvcc.profile", "INCLUDES += \"-DPROF=2\"\n");
  CHECK_FALSE(f.build(p, "O"));
  CHECK(f.build(p, "O"));
}
