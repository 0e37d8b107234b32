// The state disk's reserve file: made with its blocks allocated, deleted to
// free them, and never made through a link or where there is no room.
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include "daemon/disk_reserve.h"
#include "fakes.h"

namespace fad {
namespace {
namespace fs = std::filesystem;
using test::TempDir;

std::uint64_t allocated(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return static_cast<std::uint64_t>(st.st_blocks) * 512;
}
}  // namespace

TEST_CASE("disk reserve: fill allocates it, release frees it once", "[disk_reserve]") {
  TempDir tmp("fad-reserve");
  DiskReserve r(tmp / "reserve", 1 << 20);
  CHECK_FALSE(r.held());
  REQUIRE(r.fill());
  CHECK(r.held());
  CHECK(fs::file_size(r.path()) == (1u << 20));
  CHECK(allocated(r.path()) >= (1u << 20));  // not sparse: deleting it frees the space
  CHECK(r.fill());                           // already there: nothing to do
  CHECK(r.release());
  CHECK_FALSE(r.held());
  CHECK_FALSE(r.release());  // nothing more to free
}

TEST_CASE("disk reserve: not made through a link, in a missing directory, or past the disk's room", "[disk_reserve]") {
  TempDir tmp("fad-reserve");
  const auto target = tmp / "elsewhere";
  fs::create_symlink(target, tmp / "reserve");
  DiskReserve linked(tmp / "reserve", 1 << 20);
  CHECK_FALSE(linked.fill());
  CHECK_FALSE(fs::exists(target));
  CHECK_FALSE(DiskReserve(tmp / "missing/reserve", 1 << 20).fill());
  // More than any disk here holds: refused, and nothing is left behind.
  DiskReserve huge(tmp / "huge", 1ull << 60);
  CHECK_FALSE(huge.fill());
  CHECK_FALSE(fs::exists(tmp / "huge"));
}

}  // namespace fad
