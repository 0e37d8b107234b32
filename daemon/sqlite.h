// A thin RAII layer over the sqlite3 C API: a connection, prepared statements
// with typed binds and reads, and a transaction guard. SQLite failures here are
// unexpected (disk full, corruption): they throw StoreError, which the daemon
// catches at the request boundary and at startup.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace fad {

struct StoreError : std::runtime_error {
  /// `code` is SQLite's result code where SQLite raised it, 0 where fad did.
  explicit StoreError(const std::string& what, int code = 0) : std::runtime_error(what), code(code) {}
  /// The file is not a sound database (SQLITE_CORRUPT, SQLITE_NOTADB), as
  /// opposed to one fadd cannot use just now (busy, unreadable, disk full).
  bool damaged() const;
  int code;
};

class Statement;

/// How long statements wait for another process's lock on the file (a second
/// fadd, a user's sqlite3 shell, a backup). fadd's one loop runs every
/// statement, so a lock held for minutes must not cost the full wait at each
/// statement: a stall (busy statements with no success between) may wait
/// `stall_ms` in all; once that is spent, each further statement waits only
/// `after_ms`, until one gets through and the next stall has its own budget.
struct BusyWait {
  int stall_ms = 2000;
  int after_ms = 20;
  /// Waits `ms` milliseconds; empty: really sleeps. Tests count instead.
  std::function<void(int ms)> sleep{};
};

class Database {
 public:
  /// Opens (creating if needed) the database file. Throws StoreError naming the path.
  explicit Database(const std::string& path, BusyWait busy = {});
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  /// Runs one or more statements without results.
  void exec(std::string_view sql);
  Statement prepare(std::string_view sql);
  std::int64_t last_insert_id() const;
  int changes() const;

 private:
  friend class Statement;
  static int on_busy(void* self, int count);
  /// A statement got through: the next stall has its full budget again.
  void got_through() { stall_spent_ms_ = 0; }

  sqlite3* db_ = nullptr;
  std::string path_;
  BusyWait busy_;
  int stall_spent_ms_ = 0;  ///< waited in the current stall
  int event_limit_ms_ = 0;  ///< what the current busy statement may wait
  int event_spent_ms_ = 0;
};

class Statement {
 public:
  Statement(Database& db, std::string_view sql);
  ~Statement();
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&&) = delete;
  Statement(const Statement&) = delete;

  Statement& bind(int index, std::int64_t value);
  Statement& bind(int index, int value) { return bind(index, static_cast<std::int64_t>(value)); }
  Statement& bind(int index, std::uint64_t value) { return bind(index, static_cast<std::int64_t>(value)); }
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view value);
  Statement& bind(int index, const char* value) { return bind(index, std::string_view(value)); }
  Statement& bind(int index, const std::string& value) { return bind(index, std::string_view(value)); }
  Statement& bind_null(int index);
  template <class T>
  Statement& bind(int index, const std::optional<T>& value) {
    return value ? bind(index, *value) : bind_null(index);
  }

  /// Advances to the next row; false when done. Throws on error.
  bool step();
  /// Runs a statement that returns no rows, then resets it for reuse.
  void run();
  /// Clears the result so the statement can run again with new binds.
  void reset();

  std::int64_t int64(int col) const;
  double real(int col) const;
  std::string text(int col) const;
  bool is_null(int col) const;
  std::optional<std::string> opt_text(int col) const;
  std::optional<std::int64_t> opt_int64(int col) const;

 private:
  Database* owner_;
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

/// BEGIN IMMEDIATE on construction, ROLLBACK on destruction unless commit() ran:
/// every state change is one transaction, so a crash leaves no half-done change.
class Transaction {
 public:
  explicit Transaction(Database& db);
  ~Transaction();
  void commit();

 private:
  Database& db_;
  bool done_ = false;
};

}  // namespace fad
