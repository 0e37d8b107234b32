// Tests for common/cache_entry: entries read back as written, and any damage
// is recognised.
#include <catch2/catch.hpp>

#include "common/cache_entry.h"

using namespace fad;

TEST_CASE("a result reads back as written, with and without a dependency file", "[cache_entry]") {
  CompileResult r{std::string("\x7f"
                              "ELF\0\1binary",
                              11),
                  std::string("\x02 : \x01/a.cu\n"), "out", "warning: x\n"};
  auto back = decode_result(encode_result(r));
  REQUIRE(back);
  CHECK(*back == r);
  r.depfile_template.reset();
  r.object.clear();
  back = decode_result(encode_result(r));
  REQUIRE(back);
  CHECK(*back == r);
}

TEST_CASE("a manifest reads back as written", "[cache_entry]") {
  CacheManifest m{{{"r1", {{"\x01/src/a.cu", "h1"}, {"/usr/include/x.h", "h2"}}}, {"r2", {}}}};
  auto back = decode_manifest(encode_manifest(m));
  REQUIRE(back);
  CHECK(*back == m);
}

TEST_CASE("any flipped byte, a truncation or the wrong kind is refused", "[cache_entry]") {
  const std::string bytes = encode_result({"object bytes", std::nullopt, "o", "e"});
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    std::string damaged = bytes;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x20);
    INFO("byte " << i);
    CHECK_FALSE(decode_result(damaged));
  }
  for (std::size_t n : {std::size_t{0}, std::size_t{5}, bytes.size() / 2, bytes.size() - 1})
    CHECK_FALSE(decode_result(bytes.substr(0, n)));
  CHECK_FALSE(decode_result(bytes + "x"));
  CHECK(decode_result(bytes));
  auto as_manifest = decode_manifest(bytes);
  REQUIRE_FALSE(as_manifest);
  CHECK(as_manifest.error() == "a cache file of another kind");
  CHECK(decode_result(bytes.substr(0, bytes.size() - 1) + "Z").error() == "checksum mismatch (torn or corrupted)");
}
