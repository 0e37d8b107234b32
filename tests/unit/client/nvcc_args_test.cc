// Reading nvcc command lines as the launcher does.
#include <catch2/catch.hpp>

#include "client/nvcc_args.h"

using fad::client::parse_nvcc_call;
using fad::client::with_threads;

namespace {
bool exists_cu(const std::string& path) { return path.find("missing") == std::string::npos; }
}  // namespace

TEST_CASE("nvcc_args: a CMake-style compile", "[nvcc_args]") {
  auto call = parse_nvcc_call({"-forward-unknown-to-host-compiler", "-I/src/include", "-O3",
                               "--generate-code=arch=compute_90,code=[compute_90,sm_90]", "-MD", "-MT",
                               "CMakeFiles/k.dir/src/saxpy.cu.o", "-MF", "CMakeFiles/k.dir/src/saxpy.cu.o.d", "-x",
                               "cu", "-c", "/src/saxpy.cu", "-o", "CMakeFiles/k.dir/src/saxpy.cu.o"},
                              exists_cu);
  CHECK(call.compile);
  CHECK(call.source == "/src/saxpy.cu");
  CHECK(call.output == "CMakeFiles/k.dir/src/saxpy.cu.o");
  // PTX and SASS of one virtual arch are one front end, not two.
  CHECK(call.archs == std::vector<std::string>{"9.0"});
  CHECK(call.include_dirs == std::vector<std::string>{"/src/include"});
}

TEST_CASE("nvcc_args: include directories in every spelling, in order", "[nvcc_args]") {
  auto call = parse_nvcc_call({"-c", "a.cu", "-Ia", "-I", "b", "-I=c", "--include-path", "d", "--include-path=e",
                               "-isystem", "sys", "-Xcompiler", "-Inot_nvccs"},
                              exists_cu);
  CHECK(call.include_dirs == std::vector<std::string>{"a", "b", "c", "d", "e"});
}

TEST_CASE("nvcc_args: several -gencode and -arch spellings", "[nvcc_args]") {
  auto call = parse_nvcc_call({"-c", "a.cu", "-o", "a.o", "-gencode", "arch=compute_80,code=sm_80", "-gencode",
                               "arch=compute_90a,code=sm_90a", "-arch=sm_120"},
                              exists_cu);
  CHECK(call.archs == std::vector<std::string>{"8.0", "9.0a", "12.0"});
  auto native = parse_nvcc_call({"-c", "a.cu", "-arch", "native"}, exists_cu);
  CHECK(native.archs.empty());
}

TEST_CASE("nvcc_args: calls that are not compiles are not scheduled", "[nvcc_args]") {
  CHECK_FALSE(parse_nvcc_call({"--version"}, exists_cu).compile);
  CHECK_FALSE(parse_nvcc_call({"a.o", "b.o", "-o", "app"}, exists_cu).compile);        // link
  CHECK_FALSE(parse_nvcc_call({"-c", "missing.cu", "-o", "x.o"}, exists_cu).compile);  // no such source
  CHECK_FALSE(parse_nvcc_call({"-c", "x.o", "-o", "y.o"}, exists_cu).compile);         // not a source
  // A value of -MF that looks like a source is not the source.
  auto call = parse_nvcc_call({"-MF", "dep.cu", "-c", "real.cu"}, exists_cu);
  CHECK(call.source == "real.cu");
  CHECK(parse_nvcc_call({"-dc", "rdc.cu"}, exists_cu).compile);
  // Stopped before the compile, -c or not: preprocessing, dependencies, a dry run.
  for (const char* quick : {"-E", "--preprocess", "-M", "-MM", "--generate-dependencies", "--dryrun", "-dryrun"}) {
    INFO(quick);
    CHECK_FALSE(parse_nvcc_call({"-c", quick, "real.cu"}, exists_cu).compile);
  }
  CHECK(parse_nvcc_call({"-c", "-MD", "real.cu"}, exists_cu).compile);  // dependencies with a compile
}

TEST_CASE("nvcc_args: --threads is replaced by the grant", "[nvcc_args]") {
  using V = std::vector<std::string>;
  CHECK(with_threads({"-c", "a.cu"}, 3) == V{"-c", "a.cu", "--threads", "3"});
  CHECK(with_threads({"-c", "a.cu", "--threads", "8", "-o", "a.o"}, 2) ==
        V{"-c", "a.cu", "-o", "a.o", "--threads", "2"});
  CHECK(with_threads({"--threads=0", "-c", "a.cu", "-t", "4"}, 1) == V{"-c", "a.cu", "--threads", "1"});
}

TEST_CASE("nvcc_args: the threads a call asks for", "[nvcc_args]") {
  using fad::client::requested_threads;
  CHECK(requested_threads({"-c", "a.cu"}) == 1);
  CHECK(requested_threads({"-c", "a.cu", "--threads", "4"}) == 4);
  CHECK(requested_threads({"-c", "a.cu", "--threads=2", "-t", "3"}) == 3);  // the last one counts
  CHECK(requested_threads({"-c", "a.cu", "-t", "0"}) == 0);
  CHECK(requested_threads({"-c", "a.cu", "--threads", "many"}) == 1);
}
