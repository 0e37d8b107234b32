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

/// How long writes wait for another process's lock on the file (a user's
/// sqlite3 shell inside a transaction). fadd's one loop runs every
/// statement, so a lock held for minutes must not cost a full wait at each
/// one: waiting draws on an allowance of `allowance_ms` that refills at that
/// much per `refill_s`. A write that finds the file locked waits while the
/// allowance lasts, and at least `after_ms`, then fails. (Reads never wait
/// in WAL mode, so a success says nothing about the lock: the allowance is
/// time-based, not reset by the next statement that gets through.)
struct BusyWait {
  int allowance_ms = 2000;
  double refill_s = 60;
  int after_ms = 20;
  /// Waits `ms` milliseconds; empty: really sleeps. Tests count instead.
  std::function<void(int ms)> sleep{};
  /// Monotonic seconds; empty: the steady clock.
  std::function<double()> now{};
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
  /// The first `n` bytes of the main database file as they are on disk now
  /// (fewer when the file is shorter), read through SQLite's own descriptor:
  /// closing another descriptor of the file would drop SQLite's locks on it.
  std::string file_prefix(std::size_t n) const;
  /// Whether SQLite ever said the file is damaged (malformed, not a
  /// database) on this connection: it stays so until fadd restarts.
  bool damaged_seen() const { return damaged_seen_; }
  /// `e`, remembered when it says the file is damaged (for the throw sites).
  StoreError noted(StoreError e);

 private:
  friend class Statement;
  static int on_busy(void* self, int count);
  double now() const;

  sqlite3* db_ = nullptr;
  std::string path_;
  bool damaged_seen_ = false;
  BusyWait busy_;
  double credit_ms_ = 0;    ///< what is left of the allowance
  double credit_at_ = 0;    ///< when credit_ms_ was last refilled
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
