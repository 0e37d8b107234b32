// The learning key's content hash of a launched compile: source and project headers.
#include "client/source_digest.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "common/content_hash.h"

namespace fs = std::filesystem;
using fad::client::quoted_includes;
using fad::client::source_digest;

namespace {
struct Tree {
  fs::path root = fs::temp_directory_path() / ("fad-digest-test-" + std::to_string(::getpid()));
  Tree() { fs::remove_all(root); }
  ~Tree() { fs::remove_all(root); }
  void write(const std::string& rel, const std::string& text) const {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << text;
  }
  std::string at(const std::string& rel) const { return (root / rel).string(); }
};
}  // namespace

TEST_CASE("source digest: quoted includes, however spaced", "[source_digest]") {
  CHECK(quoted_includes("#include \"a.h\"\n  #  include   \"sub/b.h\" // x\n#include <vector>\n"
                        "#include_next \"c.h\"\n#define include \"d.h\"\n#include \"\"\n#include \"e.h") ==
        std::vector<std::string>{"a.h", "sub/b.h"});
}

TEST_CASE("source digest: a stub's headers are part of its hash, where it sits is not", "[source_digest]") {
  Tree t;
  // A FlashAttention-like stub: the kernel is in the headers it includes.
  const std::string stub = "#include \"launch.h\"\ntemplate void run<128>();\n";
  t.write("v1/csrc/k.cu", stub);
  t.write("v1/csrc/launch.h", "#include \"kernel.h\"\n#include <cuda.h>\n");
  t.write("v1/include/kernel.h", "#include \"launch.h\"\nint kernel_v1;\n");  // a cycle back
  t.write("v1/csrc/unrelated.h", "int x;\n");
  const auto v1 = source_digest(t.at("v1/csrc/k.cu"), {"../include"}, t.at("v1/csrc"));
  REQUIRE(v1);
  CHECK(*v1 != fad::content_hash(stub));

  // The same files unpacked elsewhere (pip's fresh directory): the same hash.
  t.write("v1copy/csrc/k.cu", stub);
  t.write("v1copy/csrc/launch.h", "#include \"kernel.h\"\n#include <cuda.h>\n");
  t.write("v1copy/include/kernel.h", "#include \"launch.h\"\nint kernel_v1;\n");
  CHECK(source_digest(t.at("v1copy/csrc/k.cu"), {t.at("v1copy/include")}, "/") == v1);

  // The next version: the same stub, another kernel two includes down.
  t.write("v2/csrc/k.cu", stub);
  t.write("v2/csrc/launch.h", "#include \"kernel.h\"\n#include <cuda.h>\n");
  t.write("v2/include/kernel.h", "#include \"launch.h\"\nint kernel_v2;\n");
  const auto v2 = source_digest(t.at("v2/csrc/k.cu"), {"../include"}, t.at("v2/csrc"));
  REQUIRE(v2);
  CHECK(*v2 != *v1);

  // A header no include reaches changes nothing.
  t.write("v1/csrc/unrelated.h", "int y;\n");
  CHECK(source_digest(t.at("v1/csrc/k.cu"), {"../include"}, t.at("v1/csrc")) == v1);
  // Without the -I the header is not found: the compiler would not find it either.
  CHECK(source_digest(t.at("v1/csrc/k.cu"), {}, t.at("v1/csrc")) != v1);
}

TEST_CASE("source digest: a source with no project header keeps the hash of its text", "[source_digest]") {
  Tree t;
  t.write("a.cu", "#include <cstdio>\n#include \"missing.h\"\n__global__ void k() {}\n");
  CHECK(source_digest(t.at("a.cu"), {}, "/") ==
        fad::content_hash("#include <cstdio>\n#include \"missing.h\"\n__global__ void k() {}\n"));
  // Not a regular file: nothing to hash.
  CHECK_FALSE(source_digest(t.root.string(), {}, "/"));
  CHECK_FALSE(source_digest(t.at("none.cu"), {}, "/"));
}

TEST_CASE("source digest: the headers followed are bounded", "[source_digest]") {
  Tree t;
  // A chain longer than kMaxHeaders: the digest still comes, and a change
  // past the cut is not seen (the same cut each time).
  std::string src;
  const std::size_t n = fad::client::kMaxHeaders + 5;
  for (std::size_t i = 0; i < n; ++i) src += "#include \"h" + std::to_string(i) + ".h\"\n";
  t.write("big.cu", src);
  for (std::size_t i = 0; i < n; ++i) t.write("h" + std::to_string(i) + ".h", "int v" + std::to_string(i) + ";\n");
  const auto before = source_digest(t.at("big.cu"), {}, "/");
  REQUIRE(before);
  t.write("h" + std::to_string(n - 1) + ".h", "int changed;\n");
  CHECK(source_digest(t.at("big.cu"), {}, "/") == before);
  t.write("h0.h", "int changed;\n");
  CHECK(source_digest(t.at("big.cu"), {}, "/") != before);
}

TEST_CASE("source digest: include lines that resolve nowhere are bounded too", "[source_digest]") {
  Tree t;
  // More distinct unresolved names than kMaxLookups, then a real header: the
  // walk stops at the cap (the same cut each time), so the header is not seen.
  std::string src;
  for (std::size_t i = 0; i < fad::client::kMaxLookups; ++i) src += "#include \"no" + std::to_string(i) + ".h\"\n";
  src += "#include \"real.h\"\n";
  t.write("many.cu", src);
  t.write("real.h", "int v;\n");
  CHECK(source_digest(t.at("many.cu"), {"d1", "d2", "d3"}, t.root.string()) == fad::content_hash(src));

  // The same missing name, however often, is looked up once per directory:
  // it does not use up the cap, so the real header after it still counts.
  std::string repeated;
  for (std::size_t i = 0; i < 2 * fad::client::kMaxLookups; ++i) repeated += "#include \"gone.h\"\n";
  repeated += "#include \"real.h\"\n";
  t.write("repeated.cu", repeated);
  CHECK(source_digest(t.at("repeated.cu"), {}, "/") != fad::content_hash(repeated));
}
