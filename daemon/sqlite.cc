// RAII wrappers over sqlite3; see sqlite.h.
#include "daemon/sqlite.h"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <utility>

namespace fad {

namespace {
[[noreturn]] void fail(Database& owner, sqlite3* db, std::string_view what) {
  throw owner.noted(StoreError(std::string(what) + ": " + (db ? sqlite3_errmsg(db) : "out of memory"),
                               db ? sqlite3_errcode(db) : SQLITE_NOMEM));
}

bool busy(int rc) { return (rc & 0xff) == SQLITE_BUSY; }

// SQLite's own "database is locked" does not say by whom; the usual holder
// is a person's sqlite3 shell left inside a transaction, which they can end.
std::string locked_message(const std::string& path) {
  return "database " + path + " is locked by another process (a sqlite3 shell inside a transaction?)";
}
}  // namespace

bool StoreError::damaged() const {
  const int primary = code & 0xff;  // extended codes keep the primary one in the low byte
  return primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB;
}

Database::Database(const std::string& path, BusyWait busy)
    : path_(path), busy_(std::move(busy)), credit_ms_(busy_.allowance_ms), credit_at_(now()) {
  int rc =
      sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = "cannot open database " + path + ": " + (db_ ? sqlite3_errmsg(db_) : "out of memory");
    sqlite3_close(db_);
    db_ = nullptr;
    throw StoreError(msg, rc);
  }
  sqlite3_busy_handler(db_, &Database::on_busy, this);
}

double Database::now() const {
  if (busy_.now) return busy_.now();
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int Database::on_busy(void* self, int count) {
  auto& d = *static_cast<Database*>(self);
  if (count == 0) {
    const double t = d.now();
    d.credit_ms_ = std::min<double>(d.busy_.allowance_ms,
                                    d.credit_ms_ + (t - d.credit_at_) * d.busy_.allowance_ms / d.busy_.refill_s);
    d.credit_at_ = t;
    d.event_spent_ms_ = 0;
    d.event_limit_ms_ = std::max(static_cast<int>(d.credit_ms_), d.busy_.after_ms);
  }
  if (d.event_spent_ms_ >= d.event_limit_ms_) return 0;  // SQLITE_BUSY for this statement
  // Short naps: a lock is usually held for milliseconds.
  const int nap = std::min(count < 10 ? 2 : 10, d.event_limit_ms_ - d.event_spent_ms_);
  if (d.busy_.sleep)
    d.busy_.sleep(nap);
  else
    sqlite3_sleep(nap);
  d.event_spent_ms_ += nap;
  d.credit_ms_ = std::max(0.0, d.credit_ms_ - nap);
  return 1;
}

Database::~Database() { sqlite3_close(db_); }

void Database::exec(std::string_view sql) {
  char* err = nullptr;
  std::string s(sql);
  if (const int rc = sqlite3_exec(db_, s.c_str(), nullptr, nullptr, &err); rc != SQLITE_OK) {
    std::string msg = busy(rc) ? locked_message(path_) : "database " + path_ + ": " + (err ? err : "error");
    sqlite3_free(err);
    throw noted(StoreError(msg, rc));
  }
}

StoreError Database::noted(StoreError e) {
  damaged_seen_ = damaged_seen_ || e.damaged();
  return e;
}

Statement Database::prepare(std::string_view sql) { return Statement(*this, sql); }
std::int64_t Database::last_insert_id() const { return sqlite3_last_insert_rowid(db_); }

std::string Database::file_prefix(std::size_t n) const {
  sqlite3_file* file = nullptr;
  if (sqlite3_file_control(db_, "main", SQLITE_FCNTL_FILE_POINTER, &file) != SQLITE_OK || !file || !file->pMethods)
    return {};
  sqlite3_int64 size = 0;
  if (file->pMethods->xFileSize(file, &size) != SQLITE_OK || size <= 0) return {};
  std::string out(std::min<std::size_t>(n, static_cast<std::size_t>(size)), '\0');
  if (file->pMethods->xRead(file, out.data(), static_cast<int>(out.size()), 0) != SQLITE_OK) return {};
  return out;
}
int Database::changes() const { return sqlite3_changes(db_); }

Statement::Statement(Database& db, std::string_view sql) : owner_(&db), db_(db.db_) {
  if (sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr) != SQLITE_OK)
    fail(*owner_, db_, "prepare '" + std::string(sql.substr(0, 60)) + "'");
}

Statement::~Statement() { sqlite3_finalize(stmt_); }
Statement::Statement(Statement&& other) noexcept : owner_(other.owner_), db_(other.db_), stmt_(other.stmt_) {
  other.stmt_ = nullptr;
}

Statement& Statement::bind(int index, std::int64_t value) {
  if (sqlite3_bind_int64(stmt_, index, value) != SQLITE_OK) fail(*owner_, db_, "bind");
  return *this;
}
Statement& Statement::bind(int index, double value) {
  if (sqlite3_bind_double(stmt_, index, value) != SQLITE_OK) fail(*owner_, db_, "bind");
  return *this;
}
Statement& Statement::bind(int index, std::string_view value) {
  if (sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT) != SQLITE_OK)
    fail(*owner_, db_, "bind");
  return *this;
}
Statement& Statement::bind_null(int index) {
  if (sqlite3_bind_null(stmt_, index) != SQLITE_OK) fail(*owner_, db_, "bind");
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (busy(rc)) throw StoreError(locked_message(owner_->path_), rc);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) fail(*owner_, db_, "step");
  return rc == SQLITE_ROW;
}

void Statement::run() {
  while (step()) {}
  reset();
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

std::int64_t Statement::int64(int col) const { return sqlite3_column_int64(stmt_, col); }
double Statement::real(int col) const { return sqlite3_column_double(stmt_, col); }
std::string Statement::text(int col) const {
  auto p = sqlite3_column_text(stmt_, col);
  return p ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)))
           : std::string();
}
bool Statement::is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
std::optional<std::string> Statement::opt_text(int col) const {
  if (is_null(col)) return std::nullopt;
  return text(col);
}
std::optional<std::int64_t> Statement::opt_int64(int col) const {
  if (is_null(col)) return std::nullopt;
  return int64(col);
}

Transaction::Transaction(Database& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }
Transaction::~Transaction() {
  if (!done_) {
    try {
      db_.exec("ROLLBACK");
    } catch (const StoreError&) {
      // Nothing more to do: the transaction was never committed.
    }
  }
}
void Transaction::commit() {
  db_.exec("COMMIT");
  done_ = true;
}

}  // namespace fad
