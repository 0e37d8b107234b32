// A database file damaged under an open connection (emptied, written over):
// SQLite says so on the statements that read the lost pages, and the
// connection remembers it, so that fadd says what to do instead of "try
// again" for ever.
#include <catch2/catch.hpp>

#include <fstream>

#include "daemon/sqlite.h"
#include "fakes.h"

namespace fad {
namespace {

using test::TempDir;

TEST_CASE("sqlite: a connection remembers that SQLite found its file damaged", "[sqlite]") {
  TempDir dir;
  const std::string path = dir / "fad.db";
  {
    Database setup(path);
    setup.exec("CREATE TABLE t (x TEXT)");
    auto insert = setup.prepare("INSERT INTO t VALUES (?)");
    for (int i = 0; i < 200; ++i) {
      insert.bind(1, std::string(1000, static_cast<char>('a' + i % 26)));
      insert.run();
    }
  }
  Database db(path);
  auto schema = db.prepare("SELECT count(*) FROM sqlite_master");
  REQUIRE(schema.step());
  CHECK_FALSE(db.damaged_seen());
  // Written over past its first page, as a stray `dd` would (page 1, the
  // schema, stays: the table's own pages are what is lost).
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(4096);
    const std::string junk(16384, '\xa5');
    file.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  try {
    auto read = db.prepare("SELECT count(*), sum(length(x)) FROM t");
    while (read.step()) {}
    FAIL("reading the damaged table succeeded");
  } catch (const StoreError& e) {
    CHECK(e.damaged());
  }
  CHECK(db.damaged_seen());
}

TEST_CASE("sqlite: other errors are not damage", "[sqlite]") {
  TempDir dir;
  Database db(dir / "fad.db");
  CHECK_THROWS_AS(db.exec("SELECT * FROM no_such_table"), StoreError);
  CHECK_THROWS_AS(db.prepare("INSERT INTO nowhere VALUES (1)"), StoreError);
  CHECK_FALSE(db.damaged_seen());
}

}  // namespace
}  // namespace fad
