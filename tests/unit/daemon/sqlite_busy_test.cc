// Another process's lock on fad's database: fadd's one loop runs every
// statement, so a lock held for minutes may cost it one stall budget, not the
// full wait at each statement. The waits are counted, not slept.
#include <sqlite3.h>

#include <catch2/catch.hpp>

#include "daemon/sqlite.h"
#include "fakes.h"

namespace fad {
namespace {

using test::TempDir;

struct Locked {
  TempDir dir;
  std::string path = dir / "fad.db";
  int slept = 0;
  std::function<void()> on_sleep;  // runs after each counted wait
  Database db{path, BusyWait{300, 20, [this](int ms) {
                               slept += ms;
                               if (on_sleep) on_sleep();
                             }}};
  Database other{path};  // the stranger: a sqlite3 shell, a backup
  Locked() { db.exec("PRAGMA journal_mode=WAL; CREATE TABLE t (x INTEGER)"); }
  /// Inserts one row; the wait it took, in ms.
  int insert(Statement& st) {
    slept = 0;
    st.reset();
    st.run();
    return slept;
  }
  /// Inserts one row and expects SQLITE_BUSY; the wait it took, in ms.
  int refused(Statement& st) {
    slept = 0;
    st.reset();
    try {
      st.run();
    } catch (const StoreError& e) {
      CHECK((e.code & 0xff) == SQLITE_BUSY);
      CHECK_THAT(e.what(), Catch::Contains(path) && Catch::Contains("locked by another process"));
      return slept;
    }
    FAIL("the insert got through a held lock");
    return -1;
  }
};

TEST_CASE("database: a foreign lock costs one stall budget, then a short wait per statement until one gets through",
          "[store]") {
  Locked f;
  auto st = f.db.prepare("INSERT INTO t VALUES (1)");
  CHECK(f.insert(st) == 0);
  f.other.exec("BEGIN IMMEDIATE");
  // Bug: each statement waited the full 5 s, so a tick of many statements
  // held the loop (pressure response, every client) for minutes.
  CHECK(f.refused(st) == 300);
  CHECK(f.refused(st) == 20);
  CHECK(f.refused(st) == 20);
  f.other.exec("COMMIT");
  CHECK(f.insert(st) == 0);
  // A new stall has its whole budget again.
  f.other.exec("BEGIN IMMEDIATE");
  CHECK(f.refused(st) == 300);
  f.other.exec("ROLLBACK");
}

TEST_CASE("database: a lock released while a statement waits lets it through, within the budget or after it",
          "[store]") {
  Locked f;
  auto st = f.db.prepare("INSERT INTO t VALUES (1)");
  f.other.exec("BEGIN IMMEDIATE");
  f.on_sleep = [&] {
    if (f.slept >= 50) f.other.exec("COMMIT");
  };
  const int waited = f.insert(st);
  CHECK(waited >= 50);
  CHECK(waited < 300);
  // Once a stall spent its budget, a lock held for less than the short wait
  // still does not refuse the statement.
  f.on_sleep = nullptr;
  f.other.exec("BEGIN IMMEDIATE");
  CHECK(f.refused(st) == 300);
  f.on_sleep = [&] {
    if (f.slept >= 10) f.other.exec("COMMIT");
  };
  CHECK(f.insert(st) >= 10);
  auto count = f.db.prepare("SELECT count(*) FROM t");
  REQUIRE(count.step());
  CHECK(count.int64(0) == 2);
}

}  // namespace
}  // namespace fad
