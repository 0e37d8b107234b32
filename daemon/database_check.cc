// Classifying STATE/fad.db; see database_check.h. The header is read as bytes
// first (the SQLite file format puts the magic string at offset 0 and the
// application_id at 68); only a file that passes is opened, read-only, to
// look at its tables.
#include "daemon/database_check.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <set>
#include <sstream>

namespace fad {
namespace {

constexpr std::size_t kHeaderBytes = 100;
constexpr char kMagic[] = "SQLite format 3";  // 16 bytes with its NUL

std::string hex_id(std::uint32_t id) {
  std::ostringstream s;
  s << "0x" << std::hex << id;
  return s.str();
}

std::string printable_prefix(const unsigned char* bytes, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n && i < 16; ++i)
    out += (bytes[i] >= 0x20 && bytes[i] < 0x7f) ? static_cast<char>(bytes[i]) : '.';
  return out;
}

constexpr const char* kMoveAway =
    "fadd leaves it untouched: move it away (fadd then starts a fresh database) or choose another --state-dir";

// What a read-only SQLite connection sees: the application_id as of the last
// commit (the header on disk may lag behind a WAL) and the table names.
struct Inside {
  std::uint32_t application_id = 0;
  std::int64_t user_version = 0;
  std::set<std::string> tables;
};

Result<Inside> look_inside(const std::string& path) {
  sqlite3* db = nullptr;
  const std::string uri = "file:" + path + "?mode=ro";
  int rc = sqlite3_open_v2(uri.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
  Inside inside;
  auto query = [&](const char* sql, auto&& on_row) {
    sqlite3_stmt* st = nullptr;
    if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(db, sql, -1, &st, nullptr);
    while (rc == SQLITE_OK || rc == SQLITE_ROW) {
      rc = sqlite3_step(st);
      if (rc == SQLITE_ROW) on_row(st);
    }
    if (rc == SQLITE_DONE) rc = SQLITE_OK;
    sqlite3_finalize(st);
  };
  query("PRAGMA application_id",
        [&](sqlite3_stmt* st) { inside.application_id = static_cast<std::uint32_t>(sqlite3_column_int64(st, 0)); });
  query("PRAGMA user_version", [&](sqlite3_stmt* st) { inside.user_version = sqlite3_column_int64(st, 0); });
  query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
        [&](sqlite3_stmt* st) { inside.tables.insert(reinterpret_cast<const char*>(sqlite3_column_text(st, 0))); });
  std::string why = rc == SQLITE_OK ? "" : (db ? sqlite3_errmsg(db) : "out of memory");
  sqlite3_close(db);
  if (!why.empty()) return make_error(why);
  return inside;
}

}  // namespace

Result<DatabaseKind> check_database_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return DatabaseKind::absent;
    return make_error("cannot read the database " + path + ": " + std::strerror(errno));
  }
  std::array<unsigned char, kHeaderBytes> header{};
  std::size_t got = 0;
  while (got < header.size()) {
    const ssize_t n = ::read(fd, header.data() + got, header.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (got == 0) return DatabaseKind::absent;
  if (got < header.size() || std::memcmp(header.data(), kMagic, sizeof kMagic) != 0)
    return make_error(path + " is not an SQLite database (it starts with '" + printable_prefix(header.data(), got) +
                      "'), so it is not fad's; " + kMoveAway);
  const std::uint32_t on_disk = (std::uint32_t{header[68]} << 24) | (std::uint32_t{header[69]} << 16) |
                                (std::uint32_t{header[70]} << 8) | std::uint32_t{header[71]};
  if (on_disk == static_cast<std::uint32_t>(kApplicationId)) return DatabaseKind::fad;
  if (on_disk != 0)
    return make_error(path + " belongs to another application (SQLite application_id " + hex_id(on_disk) +
                      ", fad's is " + hex_id(static_cast<std::uint32_t>(kApplicationId)) + "); " + kMoveAway);

  // No id in the header: a database fad made before it set one (or whose id
  // still sits in the WAL), an empty SQLite file, or someone else's.
  auto inside = look_inside(path);
  if (!inside)
    return make_error("cannot read the database " + path + " (" + inside.error() + "); it may be damaged; " +
                      kMoveAway);
  if (inside->application_id == static_cast<std::uint32_t>(kApplicationId)) return DatabaseKind::fad;
  if (inside->application_id != 0)
    return make_error(path + " belongs to another application (SQLite application_id " +
                      hex_id(inside->application_id) + "); " + kMoveAway);
  if (inside->tables.empty() && inside->user_version == 0) return DatabaseKind::absent;
  static const char* const kFadTables[] = {"meta", "builds", "units", "samples", "unit_history"};
  bool all = inside->user_version > 0;
  for (const char* t : kFadTables) all = all && inside->tables.count(t) > 0;
  if (all) return DatabaseKind::fad;
  std::string names;
  for (const auto& t : inside->tables) {
    if (names.size() > 60) {
      names += ", ...";
      break;
    }
    names += (names.empty() ? "" : ", ") + t;
  }
  return make_error(
      path + " is an SQLite database of another application (tables: " + (names.empty() ? std::string("none") : names) +
      "; user_version " + std::to_string(inside->user_version) + "), not fad's; " + kMoveAway);
}

}  // namespace fad
