// Tests for common/cache_key: what a compile call's key holds and leaves out.
#include <catch2/catch.hpp>

#include "common/cache_key.h"

using namespace fad;

namespace {
// Every path with a source extension exists, unless it holds "missing".
bool exists(const std::string& path, const std::string&) { return path.find("missing") == std::string::npos; }

std::string key_of(const std::vector<std::string>& argv, const std::string& cwd = "/proj/build",
                   KeyInputs in = {"nvcc 13.0", "gcc 12", "abc", {"NVCC_APPEND_FLAGS"}}) {
  auto plan = plan_cache(argv, cwd, exists);
  REQUIRE(plan.cacheable);
  return call_key(plan, in);
}

const std::vector<std::string> kCall{"nvcc",           "-c",
                                     "/proj/src/a.cu", "-o",
                                     "obj/a.o",        "-O3",
                                     "-gencode",       "arch=compute_80,code=sm_80",
                                     "-gencode",       "arch=compute_90,code=sm_90",
                                     "-I/proj/include"};
}  // namespace

TEST_CASE("plan_cache: source, output, dependency file and root of a call", "[cache_key]") {
  auto plan =
      plan_cache({"nvcc", "-c", "../src/a.cu", "-o", "obj/a.o", "-MD", "-MF", "obj/a.d"}, "/proj/build", exists);
  REQUIRE(plan.cacheable);
  CHECK(plan.source == "../src/a.cu");
  CHECK(plan.output == "obj/a.o");
  CHECK(plan.user_depfile == "obj/a.d");
  CHECK(plan.root == "/proj");
  CHECK(plan.key_literals.empty());

  // nvcc's defaults: SOURCE_STEM.o in the working directory, OUTPUT with .d.
  auto defaults = plan_cache({"nvcc", "-c", "k.cu", "--generate-dependencies-with-compile"}, "/proj", exists);
  REQUIRE(defaults.cacheable);
  CHECK(defaults.output == "k.o");
  CHECK(defaults.user_depfile == "k.d");
  auto no_deps = plan_cache({"nvcc", "-c", "k.cu", "-o", "x/k.obj"}, "/proj", exists);
  CHECK(no_deps.user_depfile.empty());
}

TEST_CASE("the key leaves out -o, -MF and --threads, in every spelling", "[cache_key]") {
  const auto base = key_of(kCall);
  auto other = kCall;
  other[4] = "elsewhere/b.o";
  CHECK(key_of(other) == base);
  auto threaded = kCall;
  threaded.insert(threaded.end(), {"--threads", "4"});
  CHECK(key_of(threaded) == base);
  threaded.back() = "8";
  CHECK(key_of(threaded) == base);
  auto threaded_eq = kCall;
  threaded_eq.push_back("--threads=2");
  CHECK(key_of(threaded_eq) == base);
  auto t = kCall;
  t.insert(t.end(), {"-t", "3"});
  CHECK(key_of(t) == base);
  auto long_output = kCall;
  long_output[3] = "--output-file";
  CHECK(key_of(long_output) == base);
  // -MD changes the outputs (a dependency file); -MF only where it goes.
  auto deps_a = kCall, deps_b = kCall;
  deps_a.insert(deps_a.end(), {"-MD", "-MF", "a.d"});
  deps_b.insert(deps_b.end(), {"-MD", "--dependency-output", "b/other.d"});
  CHECK(key_of(deps_a) == key_of(deps_b));
  CHECK(key_of(deps_a) != base);
}

TEST_CASE("a flag, an arch, a define, the compilers, the source or the environment change the key", "[cache_key]") {
  const auto base = key_of(kCall);
  auto o2 = kCall;
  o2[5] = "-O2";
  CHECK(key_of(o2) != base);
  auto arch = kCall;
  arch[10] = "arch=compute_100,code=sm_100";
  arch[9] = "-gencode";
  CHECK(key_of(arch) != base);
  auto define = kCall;
  define.push_back("-DFLASH_NAMESPACE=x");
  CHECK(key_of(define) != base);
  auto include = kCall;
  include.back() = "-I/proj/other";
  CHECK(key_of(include) != base);
  CHECK(key_of(kCall, "/proj/build", {"nvcc 13.1", "gcc 12", "abc", {"NVCC_APPEND_FLAGS"}}) != base);
  CHECK(key_of(kCall, "/proj/build", {"nvcc 13.0", "gcc 13", "abc", {"NVCC_APPEND_FLAGS"}}) != base);
  CHECK(key_of(kCall, "/proj/build", {"nvcc 13.0", "gcc 12", "abd", {"NVCC_APPEND_FLAGS"}}) != base);
  CHECK(key_of(kCall, "/proj/build", {"nvcc 13.0", "gcc 12", "abc", {"NVCC_APPEND_FLAGS=-DX"}}) != base);
  // The order of gencodes is the order nvcc embeds them: a different call.
  auto swapped = kCall;
  std::swap(swapped[7], swapped[9]);
  CHECK(key_of(swapped) != base);
}

TEST_CASE("the same project elsewhere (a fresh pip build directory) has the same key", "[cache_key]") {
  const std::vector<std::string> a{"nvcc",
                                   "-c",
                                   "/tmp/pip-req-build-aaa/csrc/k.cu",
                                   "-o",
                                   "/tmp/pip-req-build-aaa/build/temp/csrc/k.o",
                                   "-I/tmp/pip-req-build-aaa/csrc",
                                   "-I/opt/torch/include"};
  std::vector<std::string> b = a;
  for (auto& arg : b)
    if (auto at = arg.find("pip-req-build-aaa"); at != std::string::npos) arg.replace(at, 17, "pip-req-build-bbb");
  CHECK(key_of(a, "/tmp/pip-req-build-aaa/build/temp") == key_of(b, "/tmp/pip-req-build-bbb/build/temp"));
  auto plan = plan_cache(b, "/tmp/pip-req-build-bbb/build/temp", exists);
  CHECK(plan.root == "/tmp/pip-req-build-bbb");
  // Paths outside the root stay literal: another torch is another key.
  auto c = b;
  c.back() = "-I/opt/torch2/include";
  CHECK(key_of(c, "/tmp/pip-req-build-bbb/build/temp") != key_of(b, "/tmp/pip-req-build-bbb/build/temp"));
}

TEST_CASE("debug info records directories: the key then holds them", "[cache_key]") {
  auto a = kCall, b = kCall;
  a.push_back("-G");
  b.push_back("-G");
  for (auto& arg : b)
    if (arg.rfind("/proj", 0) == 0 || arg.rfind("-I/proj", 0) == 0) arg.replace(arg.find("/proj"), 5, "/other");
  CHECK(key_of(a, "/proj/build") != key_of(b, "/other/build"));
  auto plain_b = kCall;
  for (auto& arg : plain_b)
    if (arg.find("/proj") != std::string::npos) arg.replace(arg.find("/proj"), 5, "/other");
  CHECK(key_of(kCall, "/proj/build") == key_of(plain_b, "/other/build"));
  auto lineinfo = kCall;
  lineinfo.insert(lineinfo.end(), {"-Xcompiler", "-g"});
  CHECK_FALSE(plan_cache(lineinfo, "/proj/build", exists).key_literals.empty());
  // -gencode is not -g.
  CHECK(plan_cache(kCall, "/proj/build", exists).key_literals.empty());
}

TEST_CASE("calls the cache cannot capture say why", "[cache_key]") {
  auto reason = [](std::vector<std::string> argv) {
    auto plan = plan_cache(argv, "/proj", exists);
    CHECK_FALSE(plan.cacheable);
    return plan.reason;
  };
  CHECK(reason({"nvcc", "-c", "a.cu", "--keep"}).find("--keep") != std::string::npos);
  CHECK(reason({"nvcc", "-c", "a.cu", "-odir", "x"}).find("-odir") != std::string::npos);
  CHECK(reason({"nvcc", "-c", "a.cu", "-MMD"}).find("-MMD") != std::string::npos);
  CHECK(reason({"nvcc", "-c", "a.cu", "b.cu"}) == "several source files in one call");
  CHECK(reason({"nvcc", "-c", "missing.cu"}) == "no source file found");
  CHECK(reason({"nvcc", "a.cu", "-o", "a"}) == "not a compile (-c)");
  CHECK(reason({"nvcc", "-c", "a.cu", "-optf", "opts"}).find("options") != std::string::npos);
  CHECK(reason({"nvcc", "-c", "a.cu", "--options-file=opts"}).find("options") != std::string::npos);
  CHECK(reason({"nvcc", "-c", "a.cu", "-optf=opts"}).find("options") != std::string::npos);
  // The host compiler's (or ptxas's) response file: its content is not in the key.
  CHECK(reason({"nvcc", "-c", "a.cu", "-Xcompiler", "@opts.rsp"}).find("@FILE") != std::string::npos);
  CHECK(reason({"nvcc", "-c", "a.cu", "-Xcompiler=-O2,@opts.rsp"}).find("@FILE") != std::string::npos);
  CHECK(reason({"nvcc", "-c", "a.cu", "--compiler-options", "-O2 @opts.rsp"}).find("@FILE") != std::string::npos);
  CHECK(reason({"nvcc", "-c", "a.cu", "-Xptxas", "@opts.rsp"}).find("@FILE") != std::string::npos);
  CHECK(reason({"nvcc", "-c", "a.cu", "@opts.rsp"}).find("@FILE") != std::string::npos);
  CHECK(plan_cache({"nvcc", "-c", "a.cu", "-Xcompiler", "-DMAIL=a@b"}, "/proj", exists).cacheable);
  // nvcc runs its tools through a shell: quotes go, an expansion is not in the key.
  CHECK(reason({"nvcc", "-c", "a.cu", "-Xcompiler", "\"@opts.rsp\""}).find("@FILE") != std::string::npos);
  CHECK(reason({"nvcc", "-c", "a.cu", "-Xcompiler", "-O2,'@opts.rsp'"}).find("@FILE") != std::string::npos);
  CHECK(reason({"nvcc", "-c", "a.cu", "-Xcompiler", "-I$HOME/inc"}).find("expand") != std::string::npos);
  CHECK(reason({"nvcc", "-c", "a.cu", "--ptxas-options=-v,@p"}).find("@FILE") != std::string::npos);
  CHECK(plan_cache({"nvcc", "-c", "a.cu", "-Xcompiler", "-DNAME=\"fad\",-fPIC"}, "/proj", exists).cacheable);
  CHECK(reason({"nvcc", "-c", "a.cu", "-MF", "a.d"}).find("-MF without -MD") != std::string::npos);
  CHECK(reason({"nvcc", "-c", "a.cu", "-Xcompiler", "-MD"}).find("-Xcompiler") != std::string::npos);
  // An option's value is never the source.
  auto plan = plan_cache({"nvcc", "-c", "-include", "pre.cu", "a.cu"}, "/proj", exists);
  REQUIRE(plan.cacheable);
  CHECK(plan.source == "a.cu");
}

TEST_CASE("the working directory is in the key when there is no project root", "[cache_key]") {
  auto plan = plan_cache({"nvcc", "-c", "/src/a.cu"}, "/build", exists);  // they share only "/"
  REQUIRE(plan.cacheable);
  CHECK(plan.root.empty());
  CHECK(plan.key_literals == std::vector<std::string>{"cwd=/build"});
}

TEST_CASE("compiler_environment lists every variable, set or not", "[cache_key]") {
  auto env = compiler_environment([](std::string_view name) -> std::optional<std::string> {
    if (name == "NVCC_APPEND_FLAGS") return "-DX";
    return std::nullopt;
  });
  REQUIRE(env.size() == kCompilerEnvironment.size());
  CHECK(std::find(env.begin(), env.end(), "NVCC_APPEND_FLAGS=-DX") != env.end());
  CHECK(std::find(env.begin(), env.end(), "NVCC_PREPEND_FLAGS") != env.end());
}

TEST_CASE("an @FILE or an expansion in the variables nvcc.profile adds is not cacheable", "[cache_key]") {
  auto with = [](const char* name, const char* value) {
    return environment_uncacheable_reason([&](std::string_view n) -> std::optional<std::string> {
      if (n == name) return value;
      return std::nullopt;
    });
  };
  CHECK(with("INCLUDES", "@/tmp/opts").find("@FILE") != std::string::npos);
  CHECK(with("PTXAS_FLAGS", "-v '@opts'").find("@FILE") != std::string::npos);
  CHECK(with("SYSTEM_INCLUDES", "-isystem $PWD/inc").find("expand") != std::string::npos);
  CHECK(with("CUDAFE_FLAGS", "\"unclosed").find("expand") != std::string::npos);
  CHECK(with("INCLUDES", "\"-I/a dir\" -I/b").empty());
  CHECK(with("PATH", "@odd").empty());
  CHECK(environment_uncacheable_reason([](std::string_view) { return std::nullopt; }).empty());
}

TEST_CASE("the variables nvcc.profile adds to every compile change the key", "[cache_key]") {
  // nvcc -c with INCLUDES=-I/a and INCLUDES=-I/b reads other headers; with
  // PTXAS_FLAGS=-O0 it writes another object.
  for (std::string_view name : {"INCLUDES", "SYSTEM_INCLUDES", "CUDAFE_FLAGS", "PTXAS_FLAGS"}) {
    auto key_with = [&](const char* value) {
      KeyInputs in{"nvcc 13.0", "gcc 12", "abc", {}};
      in.environment = compiler_environment([&](std::string_view n) -> std::optional<std::string> {
        if (n == name && value != nullptr) return value;
        return std::nullopt;
      });
      return key_of(kCall, "/proj/build", in);
    };
    INFO(name);
    CHECK(key_with("-I/a") != key_with("-I/b"));
    CHECK(key_with("-I/a") != key_with(nullptr));
  }
}
