// SQLite-backed state; see store.h. Lists (archs, argv) are stored as JSON text.
#include "daemon/store.h"

#include <sys/stat.h>

#include "common/text.h"
#include "daemon/database_check.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <string_view>

namespace fad {

namespace {

// Ordered migrations: entry i upgrades user_version i to i + 1. Never edit a
// released entry; append a new one.
constexpr std::array<std::string_view, kSchemaVersion> kMigrations{{
    R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE builds(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL DEFAULT '',
  state TEXT NOT NULL,
  archs TEXT NOT NULL,
  kernels_glob TEXT NOT NULL,
  nvcc TEXT NOT NULL,
  created_at TEXT NOT NULL,
  finished_at TEXT,
  peak_bytes INTEGER NOT NULL DEFAULT 0,
  artifact TEXT,
  error TEXT NOT NULL DEFAULT '');
CREATE TABLE units(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  build_id INTEGER NOT NULL REFERENCES builds(id),
  seq INTEGER NOT NULL,
  name TEXT NOT NULL,
  kind TEXT NOT NULL,
  source TEXT NOT NULL,
  family TEXT NOT NULL,
  archs TEXT NOT NULL,
  argv TEXT NOT NULL,
  output_path TEXT NOT NULL,
  log_path TEXT NOT NULL,
  key TEXT NOT NULL,
  content_hash TEXT NOT NULL,
  flags TEXT NOT NULL,
  compiler TEXT NOT NULL,
  prior_peak INTEGER NOT NULL DEFAULT 0,
  prior_duration_s REAL NOT NULL DEFAULT 0,
  state TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  threads INTEGER NOT NULL DEFAULT 0,
  estimate_bytes INTEGER NOT NULL DEFAULT 0,
  peak_bytes INTEGER NOT NULL DEFAULT 0,
  requeued_peak INTEGER NOT NULL DEFAULT 0,
  exit_code INTEGER,
  started_at TEXT,
  finished_at TEXT,
  duration_s REAL NOT NULL DEFAULT 0,
  wait_reason TEXT NOT NULL DEFAULT '',
  pgid INTEGER,
  UNIQUE(build_id, name));
CREATE INDEX units_by_state ON units(state);
CREATE TABLE samples(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at TEXT NOT NULL,
  total INTEGER NOT NULL,
  available INTEGER NOT NULL,
  swap_free INTEGER NOT NULL,
  fad_bytes INTEGER NOT NULL,
  committed INTEGER NOT NULL,
  psi_some_avg10 REAL);
CREATE TABLE unit_history(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  key TEXT NOT NULL,
  source TEXT NOT NULL,
  content_hash TEXT NOT NULL,
  flags TEXT NOT NULL,
  archs TEXT NOT NULL,
  compiler TEXT NOT NULL,
  family TEXT NOT NULL,
  arch_count INTEGER NOT NULL,
  threads INTEGER NOT NULL,
  profile TEXT NOT NULL,
  recorded_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ','now')));
CREATE INDEX history_by_key ON unit_history(key);
)sql",
    // 2: external builds (fad run, fad launch).
    R"sql(
ALTER TABLE builds ADD COLUMN kind TEXT NOT NULL DEFAULT 'bundled';
ALTER TABLE builds ADD COLUMN session INTEGER;
ALTER TABLE builds ADD COLUMN command TEXT NOT NULL DEFAULT '';
ALTER TABLE builds ADD COLUMN budget_bytes INTEGER;
)sql",
    // 3: builds belong to the user who submitted them.
    R"sql(
ALTER TABLE builds ADD COLUMN uid INTEGER;
ALTER TABLE builds ADD COLUMN gid INTEGER;
)sql",
    // 4: retention (fad prune): when a finished build's outputs and logs were deleted.
    R"sql(
ALTER TABLE builds ADD COLUMN pruned_at TEXT;
)sql",
    // 5: where estimates come from (fad status), a size feature for ordering,
    // and history imported from elsewhere (fad history import).
    R"sql(
ALTER TABLE units ADD COLUMN source_bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE units ADD COLUMN estimate_source TEXT NOT NULL DEFAULT '';
ALTER TABLE unit_history ADD COLUMN origin TEXT NOT NULL DEFAULT 'local';
)sql",
    // 6: units whose outputs came from the compile cache.
    R"sql(
ALTER TABLE units ADD COLUMN cached INTEGER NOT NULL DEFAULT 0;
)sql",
    // 7: what `fad report` draws: each unit attempt's thinned memory samples,
    // the events between them, when a build first ran, and the capacity
    // beside each machine sample. Times are epoch seconds.
    R"sql(
CREATE TABLE unit_samples(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  unit_id INTEGER NOT NULL REFERENCES units(id) ON DELETE CASCADE,
  attempt INTEGER NOT NULL,
  started_at REAL NOT NULL,
  ended_at REAL NOT NULL,
  outcome TEXT NOT NULL,
  threads INTEGER NOT NULL,
  estimate_bytes INTEGER NOT NULL,
  peak_bytes INTEGER NOT NULL,
  points TEXT NOT NULL);
CREATE INDEX unit_samples_by_unit ON unit_samples(unit_id);
CREATE TABLE unit_events(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  unit_id INTEGER NOT NULL REFERENCES units(id) ON DELETE CASCADE,
  at REAL NOT NULL,
  kind TEXT NOT NULL,
  detail TEXT NOT NULL DEFAULT '');
CREATE INDEX unit_events_by_unit ON unit_events(unit_id);
ALTER TABLE builds ADD COLUMN started_at TEXT;
ALTER TABLE samples ADD COLUMN capacity INTEGER NOT NULL DEFAULT 0;
)sql",
    // 8: units run on cluster nodes (the Slurm executor).
    R"sql(
ALTER TABLE units ADD COLUMN node TEXT NOT NULL DEFAULT '';
ALTER TABLE units ADD COLUMN peak_source TEXT NOT NULL DEFAULT '';
)sql",
    // 9: the process that opened a fad run build, so a build whose fad run
    // was killed does not stay open forever; the learning scope of units and
    // their history, so one user's launches cannot steer another's estimates.
    R"sql(
ALTER TABLE builds ADD COLUMN opener_pid INTEGER;
ALTER TABLE builds ADD COLUMN opener_start INTEGER;
-- Whose measurements may inform a unit (UnitKey::scope): '' = everyone's.
ALTER TABLE units ADD COLUMN scope TEXT NOT NULL DEFAULT '';
ALTER TABLE unit_history ADD COLUMN scope TEXT NOT NULL DEFAULT '';
)sql",
    // 9 -> 10: the submitter's supplementary groups as its process held them
    // (JSON array); NULL for older builds, whose compiles look them up.
    R"sql(
ALTER TABLE builds ADD COLUMN supplementary_gids TEXT;
)sql",
    // 10 -> 11: when a unit's process-group leader started (clock ticks since
    // boot), so a restarted fadd kills only its own leftover compilers, never a
    // process that was given the same id since.
    R"sql(
ALTER TABLE units ADD COLUMN pgid_start INTEGER;
)sql",
    // 11 -> 12: a build's next unit number without reading every unit of
    // it: each launched compile asks, and a build may hold 10,000.
    R"sql(
CREATE INDEX units_by_build_seq ON units(build_id, seq);
)sql",
    // 12 -> 13: a build's unit counts by state (every status listing) from
    // the index alone: state and cached sit after argv in the row, and
    // reading them walked each unit's command line.
    R"sql(
CREATE INDEX units_by_build_state ON units(build_id, state, cached);
)sql",
    // 13 -> 14: the order in which builds finished, as fadd saw it: the keep
    // limits rank each user's builds by it. Neither the finish time's
    // wall-clock text (a clock stepped back made every new build the oldest)
    // nor the id (a long build finished after a quicker later one would be
    // pruned at once) says which finished last. Builds finished before this
    // version are numbered in their recorded order.
    R"sql(
ALTER TABLE builds ADD COLUMN finish_seq INTEGER;
CREATE TEMP TABLE finish_order(id INTEGER PRIMARY KEY, seq INTEGER NOT NULL);
INSERT INTO finish_order SELECT id, row_number() OVER (ORDER BY finished_at, id) FROM builds
  WHERE finished_at IS NOT NULL;
UPDATE builds SET finish_seq = (SELECT seq FROM finish_order WHERE finish_order.id = builds.id)
  WHERE finished_at IS NOT NULL;
DROP TABLE finish_order;
CREATE INDEX builds_by_finish_seq ON builds(finish_seq);
)sql",
}};

std::string to_json_text(const std::vector<std::string>& v) { return nlohmann::json(v).dump(); }
std::vector<std::string> from_json_text(const std::string& s) {
  auto j = nlohmann::json::parse(s, nullptr, false);
  if (!j.is_array()) return {};
  std::vector<std::string> out;
  for (const auto& e : j)
    if (e.is_string()) out.push_back(e.get<std::string>());
  return out;
}

constexpr std::string_view kBuildColumns =
    "id, name, state, archs, kernels_glob, nvcc, created_at, finished_at, peak_bytes, artifact, error, kind, session, "
    "command, budget_bytes, uid, gid, pruned_at, opener_pid, opener_start, supplementary_gids";

BuildRecord read_build(const Statement& s) {
  BuildRecord b;
  b.id = s.int64(0);
  b.name = s.text(1);
  b.state = build_state_from(s.text(2)).value_or(BuildState::failed);
  b.archs = from_json_text(s.text(3));
  b.kernels_glob = s.text(4);
  b.nvcc = s.text(5);
  b.created_at = s.text(6);
  b.finished_at = s.opt_text(7);
  b.peak_bytes = static_cast<std::uint64_t>(s.int64(8));
  b.artifact = s.opt_text(9);
  b.error = s.text(10);
  b.kind = s.text(11);
  b.session = s.opt_int64(12);
  b.command = s.text(13);
  if (auto budget = s.opt_int64(14)) b.budget_bytes = static_cast<std::uint64_t>(*budget);
  b.uid = s.opt_int64(15);
  b.gid = s.opt_int64(16);
  b.pruned_at = s.opt_text(17);
  if (auto pid = s.opt_int64(18); pid && *pid > 0) {
    b.opener = ProcessStamp{static_cast<int>(*pid), static_cast<std::uint64_t>(s.opt_int64(19).value_or(0))};
  }
  if (auto groups = s.opt_text(20)) {
    // Written by fadd itself; anything unreadable counts as unknown.
    const auto j = nlohmann::json::parse(*groups, nullptr, false);
    if (j.is_array()) {
      std::vector<std::int64_t> gids;
      for (const auto& g : j)
        if (g.is_number_integer()) gids.push_back(g.get<std::int64_t>());
      b.groups = std::move(gids);
    }
  }
  return b;
}

constexpr std::string_view kUnitColumns =
    "id, build_id, seq, name, kind, source, family, archs, argv, output_path, log_path, key, content_hash, flags, "
    "compiler, prior_peak, prior_duration_s, state, attempts, threads, estimate_bytes, peak_bytes, requeued_peak, "
    "exit_code, started_at, finished_at, duration_s, wait_reason, pgid, source_bytes, estimate_source, cached, node, "
    "peak_source, scope";

UnitRecord read_unit(const Statement& s) {
  UnitRecord u;
  u.id = s.int64(0);
  u.build_id = s.int64(1);
  u.seq = static_cast<int>(s.int64(2));
  u.name = s.text(3);
  u.kind = unit_kind_from(s.text(4)).value_or(UnitKind::compile);
  u.source = s.text(5);
  u.family = s.text(6);
  u.archs = from_json_text(s.text(7));
  u.argv = from_json_text(s.text(8));
  u.output_path = s.text(9);
  u.log_path = s.text(10);
  u.key = s.text(11);
  u.content_hash = s.text(12);
  u.flags = s.text(13);
  u.compiler = s.text(14);
  u.prior_peak = static_cast<std::uint64_t>(s.int64(15));
  u.prior_duration_s = s.real(16);
  u.state = unit_state_from(s.text(17)).value_or(UnitState::failed);
  u.attempts = static_cast<int>(s.int64(18));
  u.threads = static_cast<int>(s.int64(19));
  u.estimate_bytes = static_cast<std::uint64_t>(s.int64(20));
  u.peak_bytes = static_cast<std::uint64_t>(s.int64(21));
  u.requeued_peak = static_cast<std::uint64_t>(s.int64(22));
  if (auto e = s.opt_int64(23)) u.exit_code = static_cast<int>(*e);
  u.started_at = s.opt_text(24);
  u.finished_at = s.opt_text(25);
  u.duration_s = s.real(26);
  u.wait_reason = s.text(27);
  u.pgid = s.opt_int64(28);
  u.source_bytes = static_cast<std::uint64_t>(s.int64(29));
  u.estimate_source = s.text(30);
  u.cached = s.int64(31) != 0;
  u.node = s.text(32);
  u.peak_source = s.text(33);
  u.scope = s.text(34);
  return u;
}

std::string replace_build_id(std::string s, std::int64_t id) {
  const std::string token = "{build}";
  for (auto pos = s.find(token); pos != std::string::npos; pos = s.find(token, pos))
    s.replace(pos, token.size(), std::to_string(id));
  return s;
}

void insert_unit(Database& db, std::int64_t build_id, UnitRecord& u) {
  for (auto& a : u.argv) a = replace_build_id(a, build_id);
  db.prepare(
        "INSERT INTO units(build_id, seq, name, kind, source, family, archs, argv, output_path, log_path, key, "
        "content_hash, flags, compiler, prior_peak, prior_duration_s, state, source_bytes, scope) "
        "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
      .bind(1, build_id)
      .bind(2, u.seq)
      .bind(3, u.name)
      .bind(4, to_string(u.kind))
      .bind(5, u.source)
      .bind(6, u.family)
      .bind(7, to_json_text(u.archs))
      .bind(8, to_json_text(u.argv))
      .bind(9, replace_build_id(u.output_path, build_id))
      .bind(10, replace_build_id(u.log_path, build_id))
      .bind(11, u.key)
      .bind(12, u.content_hash)
      .bind(13, u.flags)
      .bind(14, u.compiler)
      .bind(15, u.prior_peak)
      .bind(16, u.prior_duration_s)
      .bind(17, to_string(UnitState::queued))
      .bind(18, u.source_bytes)
      .bind(19, u.scope)
      .run();
}

std::vector<BuildRecord> query_builds(Database& db, const std::string& where, std::optional<int> limit) {
  std::string sql = "SELECT " + std::string(kBuildColumns) + " FROM builds " + where;
  auto st = db.prepare(sql);
  if (limit) st.bind(1, *limit);
  std::vector<BuildRecord> out;
  while (st.step()) out.push_back(read_build(st));
  return out;
}

}  // namespace

namespace {
// Refuses, before anything opens it for writing, a file that is not fad's.
const std::string& checked_database_path(const std::string& path) {
  if (auto kind = check_database_file(path); !kind) throw StoreError(kind.error());
  return path;
}
}  // namespace

Store::Store(const std::string& path) : db_(checked_database_path(path)), path_(path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) dev_ = st.st_dev, ino_ = st.st_ino;
  // A damaged database is refused before fadd writes to it: writing on could
  // turn a recoverable file into a lost history. Damage bad enough stops the
  // check itself; either way the user reads one line naming the file and
  // what to do.
  const auto damaged = [&path](const std::string& what) {
    std::string line = what;
    std::replace(line.begin(), line.end(), '\n', ' ');
    return StoreError(path + " is damaged (" + line + "); fadd leaves it untouched: " + damaged_database_advice(path));
  };
  std::string problems;
  try {
    auto check = db_.prepare("PRAGMA quick_check(5)");
    while (check.step())
      if (check.text(0) != "ok") problems += (problems.empty() ? "" : "; ") + check.text(0);
  } catch (const StoreError& e) {
    if (!e.damaged()) throw;
    throw damaged(e.what());
  }
  if (!problems.empty()) throw damaged("quick_check: " + problems);
  // Marked as fad's, so that no other program's database is ever taken for one.
  if (application_id() != kApplicationId) db_.exec("PRAGMA application_id = " + std::to_string(kApplicationId));
  // WAL: readers (status) never block the writer; synchronous=NORMAL is durable
  // against process crashes, which is the failure fadd must survive.
  db_.exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;");
  migrate();
  // A table dropped by hand (or lost to damage quick_check cannot see) would
  // fail each request that needs it with "no such table": said once, here.
  for (const char* table : {"meta", "builds", "units", "samples", "unit_history", "unit_samples", "unit_events"}) {
    auto st = db_.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?");
    st.bind(1, table);
    if (!st.step()) throw damaged(std::string("its table ") + table + " is missing");
  }
  watch_queues();
}

void Store::watch_queues() {
  // Temporary triggers live with this connection, never in the file: a
  // schema change needs no migration of them, and they see every write fadd
  // makes. In memory, so that they cannot fail where the file's writes do not.
  db_.exec("PRAGMA temp_store = MEMORY; CREATE TEMP TABLE changed_builds(id INTEGER PRIMARY KEY)");
  // Every column but the wait reason, which the scheduler itself writes each pass.
  std::string columns;
  auto st = db_.prepare("SELECT name FROM pragma_table_info('units') WHERE name != 'wait_reason'");
  while (st.step()) columns += (columns.empty() ? "\"" : ", \"") + st.text(0) + "\"";
  const auto mark = [](const char* id) {
    return std::string(" BEGIN INSERT OR IGNORE INTO changed_builds VALUES (") + id + "); END;";
  };
  db_.exec("CREATE TEMP TRIGGER unit_added AFTER INSERT ON main.units" + mark("NEW.build_id") +
           "CREATE TEMP TRIGGER unit_removed AFTER DELETE ON main.units" + mark("OLD.build_id") +
           "CREATE TEMP TRIGGER unit_changed AFTER UPDATE OF " + columns +
           " ON main.units WHEN OLD.state IS NOT NEW.state OR NEW.state = 'queued'" + mark("NEW.build_id") +
           "CREATE TEMP TRIGGER build_added AFTER INSERT ON main.builds" + mark("NEW.id") +
           "CREATE TEMP TRIGGER build_removed AFTER DELETE ON main.builds" + mark("OLD.id") +
           "CREATE TEMP TRIGGER build_changed AFTER UPDATE OF state, budget_bytes, uid, gid ON main.builds" +
           mark("NEW.id"));
}

std::set<std::int64_t> Store::take_changed_builds() {
  std::set<std::int64_t> out;
  auto st = db_.prepare("SELECT id FROM temp.changed_builds");
  while (st.step()) out.insert(st.int64(0));
  if (!out.empty()) db_.exec("DELETE FROM temp.changed_builds");
  return out;
}

std::int32_t Store::application_id() {
  auto st = db_.prepare("PRAGMA application_id");
  st.step();
  return static_cast<std::int32_t>(st.int64(0));
}

int Store::schema_version() {
  auto st = db_.prepare("PRAGMA user_version");
  st.step();
  return static_cast<int>(st.int64(0));
}

void Store::migrate() {
  int version = schema_version();
  if (version > kSchemaVersion)
    throw StoreError("database schema version " + std::to_string(version) + " is newer than this fadd supports (" +
                     std::to_string(kSchemaVersion) + "); upgrade fad or use another --state-dir");
  for (; version < kSchemaVersion; ++version) {
    Transaction tx(db_);
    db_.exec(kMigrations[static_cast<std::size_t>(version)]);
    db_.exec("PRAGMA user_version = " + std::to_string(version + 1));
    tx.commit();
  }
}

std::int64_t Store::create_build(BuildRecord build, std::vector<UnitRecord> units) {
  Transaction tx(db_);
  db_.prepare(
         "INSERT INTO builds(name, state, archs, kernels_glob, nvcc, created_at, kind, session, command, budget_bytes, "
         "uid, gid, opener_pid, opener_start, supplementary_gids) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
      .bind(1, build.name)
      .bind(2, to_string(build.state))
      .bind(3, to_json_text(build.archs))
      .bind(4, build.kernels_glob)
      .bind(5, build.nvcc)
      .bind(6, build.created_at)
      .bind(7, build.kind)
      .bind(8, build.session)
      .bind(9, build.command)
      .bind(10, build.budget_bytes)
      .bind(11, build.uid)
      .bind(12, build.gid)
      .bind(13, build.opener ? std::optional<std::int64_t>(build.opener->pid) : std::nullopt)
      .bind(14, build.opener ? std::optional<std::int64_t>(static_cast<std::int64_t>(build.opener->start_ticks))
                             : std::nullopt)
      .bind(15, build.groups ? std::optional<std::string>(nlohmann::json(*build.groups).dump()) : std::nullopt)
      .run();
  const auto id = db_.last_insert_id();
  for (auto& u : units) insert_unit(db_, id, u);
  tx.commit();
  return id;
}

namespace {
/// Where add_unit stops doubling: far above any real build's repeats of a name.
constexpr std::int64_t kMaxDoubledNumber = std::int64_t{1} << 40;
}  // namespace

std::int64_t Store::add_unit(std::int64_t build_id, UnitRecord& unit, const std::string& log_dir) {
  Transaction tx(db_);
  auto taken = [&](const char* column, const std::string& value) {
    auto st = db_.prepare(std::string("SELECT 1 FROM units WHERE build_id = ? AND ") + column + " = ? LIMIT 1");
    st.bind(1, build_id).bind(2, value);
    return st.step();
  };
  auto seq = db_.prepare("SELECT coalesce(max(seq) + 1, 0) FROM units WHERE build_id = ?");
  seq.bind(1, build_id);
  seq.step();
  unit.seq = static_cast<int>(seq.int64(0));
  if (taken("name", unit.name)) {
    // Two calls may compile files of the same name (a/x.cu, b/x.cu): the
    // next is "x#N", N the first number free. Numbers are taken in order, so
    // it is found by doubling, then halving: a few lookups in the unique
    // index even when a build tool writes out.o 10,000 times. A compile
    // whose own output is called "x#7" may leave a gap, so N is then not
    // always the lowest free number; but the search only ever moves `free`
    // to a number it has seen free, so the one it ends on is never taken.
    auto numbered = [&](std::int64_t n) { return taken("name", unit.name + "#" + std::to_string(n)); };
    std::int64_t free = 2;
    while (free < kMaxDoubledNumber && numbered(free)) free *= 2;
    if (numbered(free)) {
      // Only outputs named to fill the powers of two ("x#2" ... "x#2^40",
      // a client's choice) get here; doubling on would overflow. Counting
      // up from the unit's place in the build ends within as many steps as
      // the build has units, each of which can hold one number.
      for (free = unit.seq + 2; numbered(free);) ++free;
    } else {
      for (std::int64_t held = free / 2; free - held > 1;) {
        const std::int64_t mid = held + (free - held) / 2;
        (numbered(mid) ? held : free) = mid;
      }
    }
    unit.name += "#" + std::to_string(free);
  }
  if (!log_dir.empty()) {
    // The name as a file name: one that would be cut (NAME_MAX is 255 bytes,
    // ".log" included) or holds controls is shortened and made printable,
    // and its place in the build keeps it unique. Two units sharing a log
    // would interleave their output and lose one at prune.
    std::string file = printable(unit.name);
    if (file != unit.name || file.size() + 4 > 255)
      file = utf8_prefix(file, 255 - 4 - 12) + "~" + std::to_string(unit.seq);
    unit.log_path = log_dir + "/" + file + ".log";
    // A plain name is unique among plain names and a shortened one by its
    // number: only a plain name that looks shortened ("o??.o~6") can meet
    // another's log. Asked only then, since the column has no index.
    const auto tilde = file.rfind('~');
    const bool looks_shortened = tilde != std::string::npos && tilde + 1 < file.size() &&
                                 file.find_first_not_of("0123456789", tilde + 1) == std::string::npos;
    for (int extra = 2; looks_shortened && taken("log_path", unit.log_path); ++extra)
      unit.log_path = log_dir + "/" + utf8_prefix(file, 255 - 4 - 24) + "~" + std::to_string(unit.seq) + "~" +
                      std::to_string(extra) + ".log";
  }
  insert_unit(db_, build_id, unit);
  const auto id = db_.last_insert_id();
  tx.commit();
  return id;
}

std::optional<BuildRecord> Store::session_build(std::int64_t session, std::int64_t uid) {
  // Session ids are process ids: another user's session may carry the same one.
  auto st = db_.prepare("SELECT " + std::string(kBuildColumns) +
                        " FROM builds WHERE kind = 'external' AND session = ? AND uid IS ? AND state IN "
                        "('queued','running','paused') ORDER BY id DESC LIMIT 1");
  st.bind(1, session).bind(2, uid);
  if (!st.step()) return std::nullopt;
  return read_build(st);
}

std::optional<BuildRecord> Store::build(std::int64_t id) {
  auto st = db_.prepare("SELECT " + std::string(kBuildColumns) + " FROM builds WHERE id = ?");
  st.bind(1, id);
  if (!st.step()) return std::nullopt;
  return read_build(st);
}

std::vector<BuildRecord> Store::active_builds() {
  return query_builds(db_, "WHERE state IN ('queued','running','paused') ORDER BY id", std::nullopt);
}

int Store::open_builds_of(std::int64_t uid) {
  auto st = db_.prepare("SELECT COUNT(*) FROM builds WHERE uid IS ? AND state IN ('queued','running','paused')");
  st.bind(1, uid);
  st.step();
  return static_cast<int>(st.int64(0));
}

int Store::unit_count(std::int64_t build_id, int cap) {
  auto st = db_.prepare("SELECT COUNT(*) FROM (SELECT 1 FROM units WHERE build_id = ? LIMIT ?)");
  st.bind(1, build_id).bind(2, cap);
  st.step();
  return static_cast<int>(st.int64(0));
}

int Store::waiting_launches_of(std::int64_t uid) {
  auto st = db_.prepare(
      "SELECT COUNT(*) FROM units JOIN builds ON builds.id = units.build_id WHERE builds.uid IS ? AND "
      "builds.state IN ('queued','running','paused') AND units.kind = 'external' AND units.state = 'queued'");
  st.bind(1, uid);
  st.step();
  return static_cast<int>(st.int64(0));
}

std::vector<BuildRecord> Store::status_builds(int recent) {
  auto out = active_builds();
  auto done = finished_builds(recent);
  // Oldest first, like a queue: finished builds precede active ones by id order.
  out.insert(out.end(), done.begin(), done.end());
  std::sort(out.begin(), out.end(), [](const BuildRecord& a, const BuildRecord& b) { return a.id < b.id; });
  return out;
}

std::vector<Store::Opened> Store::opened_since(const std::string& since) {
  auto st = db_.prepare(
      "SELECT uid, created_at, 0 FROM builds WHERE created_at >= ?1 "
      "UNION ALL SELECT b.uid, u.started_at, 1 FROM units u JOIN builds b ON b.id = u.build_id "
      "WHERE u.kind = 'external' AND u.started_at >= ?1 ORDER BY 2");
  st.bind(1, since);
  std::vector<Opened> out;
  while (st.step()) out.push_back(Opened{st.opt_int64(0), st.text(1), st.int64(2) != 0});
  return out;
}

std::vector<BuildRecord> Store::prunable_builds(const std::string& finished_by) {
  auto st = db_.prepare("SELECT " + std::string(kBuildColumns) +
                        " FROM builds WHERE state IN ('succeeded','failed','cancelled') AND pruned_at IS NULL "
                        "AND finished_at IS NOT NULL AND finished_at <= ? ORDER BY id");
  st.bind(1, finished_by);
  std::vector<BuildRecord> out;
  while (st.step()) out.push_back(read_build(st));
  return out;
}

std::vector<BuildRecord> Store::past_newest(int keep, bool count_pruned, int limit) {
  // The window over narrow rows, then the few past it read whole: a build's
  // row carries its command line and error, and this runs once a minute.
  // Newest by the order they finished in (finish_seq), not by the finish
  // time's wall-clock text: after the clock stepped back (a clock that ran
  // ahead, then NTP), every new build ranked oldest and lost its library,
  // then its record.
  auto st = db_.prepare("SELECT " + std::string(kBuildColumns) +
                        " FROM builds WHERE id IN (SELECT id FROM (SELECT id, finish_seq, row_number() OVER "
                        "(PARTITION BY uid ORDER BY finish_seq DESC, id DESC) AS newer FROM builds WHERE state IN "
                        "('succeeded','failed','cancelled') AND finished_at IS NOT NULL AND (?2 OR pruned_at IS "
                        "NULL)) WHERE newer > ?1 ORDER BY finish_seq, id LIMIT ?3) ORDER BY finish_seq, id");
  st.bind(1, static_cast<std::int64_t>(keep)).bind(2, count_pruned ? 1 : 0).bind(3, static_cast<std::int64_t>(limit));
  std::vector<BuildRecord> out;
  while (st.step()) out.push_back(read_build(st));
  return out;
}

std::vector<BuildRecord> Store::builds_past_newest(int keep) { return past_newest(keep, false, -1); }

std::vector<BuildRecord> Store::records_past_newest(int keep, int limit) { return past_newest(keep, true, limit); }

int Store::delete_build(std::int64_t id) {
  Transaction tx(db_);
  // The units' samples and events go with them (ON DELETE CASCADE).
  db_.prepare("DELETE FROM units WHERE build_id = ?").bind(1, id).run();
  const int units = db_.changes();
  db_.prepare("DELETE FROM builds WHERE id = ?").bind(1, id).run();
  tx.commit();
  return units;
}

std::int64_t Store::last_build_id() {
  auto st = db_.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'builds'");
  return st.step() ? st.int64(0) : 0;
}

void Store::mark_pruned(std::int64_t id, const std::string& at) {
  // A build server's curves are most of the database after a year: they go
  // with the outputs (the estimator's unit_history is separate and stays).
  Transaction tx(db_);
  db_.prepare("UPDATE builds SET pruned_at = ? WHERE id = ? AND pruned_at IS NULL").bind(1, at).bind(2, id).run();
  db_.prepare("DELETE FROM unit_samples WHERE unit_id IN (SELECT id FROM units WHERE build_id = ?)").bind(1, id).run();
  db_.prepare("DELETE FROM unit_events WHERE unit_id IN (SELECT id FROM units WHERE build_id = ?)").bind(1, id).run();
  // Command lines (up to 128 KiB each) are only ever needed to run or retry
  // a unit, and a pruned build can do neither.
  db_.prepare("UPDATE units SET argv = '[]' WHERE build_id = ?").bind(1, id).run();
  tx.commit();
}

std::vector<BuildRecord> Store::finished_builds(int limit) {
  return query_builds(db_, "WHERE state IN ('succeeded','failed','cancelled') ORDER BY id DESC LIMIT ?", limit);
}

std::vector<UnitRecord> Store::units(std::int64_t build_id) {
  auto st = db_.prepare("SELECT " + std::string(kUnitColumns) + " FROM units WHERE build_id = ? ORDER BY seq");
  st.bind(1, build_id);
  std::vector<UnitRecord> out;
  while (st.step()) out.push_back(read_unit(st));
  return out;
}

std::vector<UnitRecord> Store::unit_views(std::int64_t build_id) {
  // The same columns, argv read as a constant: no JSON of it is parsed. The
  // flags stay: they are part of the learning key a queued unit's estimate
  // is shown for (at most 2 KiB and a digest, see key_flags).
  static const std::string columns = [] {
    std::string c(kUnitColumns);
    c.replace(c.find(" argv,"), 6, " '[]',");
    return c;
  }();
  auto st = db_.prepare("SELECT " + columns + " FROM units WHERE build_id = ? ORDER BY seq");
  st.bind(1, build_id);
  std::vector<UnitRecord> out;
  while (st.step()) out.push_back(read_unit(st));
  return out;
}

std::vector<UnitRecord> Store::queued_units(std::int64_t build_id) {
  auto st = db_.prepare("SELECT " + std::string(kUnitColumns) +
                        " FROM units WHERE build_id = ? AND state = 'queued' ORDER BY seq");
  st.bind(1, build_id);
  std::vector<UnitRecord> out;
  while (st.step()) out.push_back(read_unit(st));
  return out;
}

bool Store::compiles_done(std::int64_t build_id) {
  auto st = db_.prepare(
      "SELECT NOT EXISTS (SELECT 1 FROM units WHERE build_id = ? AND kind = 'compile' AND state != 'succeeded')");
  st.bind(1, build_id);
  st.step();
  return st.int64(0) != 0;
}

bool Store::has_unfinished_units(std::int64_t build_id) {
  auto st = db_.prepare("SELECT EXISTS (SELECT 1 FROM units WHERE build_id = ? AND state IN ('queued','running'))");
  st.bind(1, build_id);
  st.step();
  return st.int64(0) != 0;
}

UnitSummary Store::unit_summary(std::int64_t build_id) {
  UnitSummary out;
  auto counts = db_.prepare("SELECT state, COUNT(*), SUM(cached != 0) FROM units WHERE build_id = ? GROUP BY state");
  counts.bind(1, build_id);
  while (counts.step()) {
    out.count(unit_state_from(counts.text(0)).value_or(UnitState::failed), static_cast<int>(counts.int64(1)));
    out.cache_hits += static_cast<int>(counts.int64(2));
  }
  // Each distinct arch list once, in the order of the first unit with it: the
  // same archs, in the same order, as walking every unit.
  auto archs = db_.prepare("SELECT archs FROM units WHERE build_id = ? GROUP BY archs ORDER BY MIN(seq)");
  archs.bind(1, build_id);
  while (archs.step()) out.add_archs(from_json_text(archs.text(0)));
  return out;
}

std::optional<UnitRecord> Store::unit_named(std::int64_t build_id, const std::string& name) {
  auto st = db_.prepare("SELECT " + std::string(kUnitColumns) + " FROM units WHERE build_id = ? AND name = ?");
  st.bind(1, build_id).bind(2, name);
  if (!st.step()) return std::nullopt;
  return read_unit(st);
}

std::optional<UnitRecord> Store::unit(std::int64_t unit_id) {
  auto st = db_.prepare("SELECT " + std::string(kUnitColumns) + " FROM units WHERE id = ?");
  st.bind(1, unit_id);
  if (!st.step()) return std::nullopt;
  return read_unit(st);
}

void Store::set_build_state(std::int64_t id, BuildState state, const std::optional<std::string>& finished_at,
                            const std::string& error) {
  // A build's finish (again, after a retry) is numbered after every other.
  db_.prepare(
         "UPDATE builds SET state = ?1, finished_at = ?2, error = ?3, finish_seq = CASE WHEN ?2 IS NULL THEN NULL "
         "ELSE (SELECT coalesce(max(finish_seq), 0) + 1 FROM builds) END WHERE id = ?4")
      .bind(1, to_string(state))
      .bind(2, finished_at)
      .bind(3, error)
      .bind(4, id)
      .run();
  if (finished_at) ++builds_finished_;
}

void Store::set_build_artifact(std::int64_t id, const std::string& artifact) {
  db_.prepare("UPDATE builds SET artifact = ? WHERE id = ?").bind(1, artifact).bind(2, id).run();
}

void Store::raise_build_peak(std::int64_t id, std::uint64_t peak) {
  db_.prepare("UPDATE builds SET peak_bytes = max(peak_bytes, ?) WHERE id = ?").bind(1, peak).bind(2, id).run();
}

void Store::start_unit(std::int64_t unit_id, int threads, std::uint64_t estimate, const std::string& started_at,
                       const std::string& estimate_source) {
  db_.prepare(
         "UPDATE units SET state = 'running', attempts = attempts + 1, threads = ?, estimate_bytes = ?, "
         "started_at = ?, finished_at = NULL, exit_code = NULL, wait_reason = '', pgid = NULL, pgid_start = NULL, "
         "estimate_source = ? "
         "WHERE id = ?")
      .bind(1, threads)
      .bind(2, estimate)
      .bind(3, started_at)
      .bind(4, estimate_source)
      .bind(5, unit_id)
      .run();
}

void Store::set_unit_pgid(std::int64_t unit_id, std::int64_t pgid, std::optional<std::uint64_t> leader_start) {
  db_.prepare("UPDATE units SET pgid = ?, pgid_start = ? WHERE id = ?")
      .bind(1, pgid)
      .bind(2, leader_start)
      .bind(3, unit_id)
      .run();
}

void Store::set_unit_node(std::int64_t unit_id, const std::string& node) {
  db_.prepare("UPDATE units SET node = ? WHERE id = ?").bind(1, node).bind(2, unit_id).run();
}

void Store::set_unit_peak_source(std::int64_t unit_id, const std::string& source) {
  db_.prepare("UPDATE units SET peak_source = ? WHERE id = ?").bind(1, source).bind(2, unit_id).run();
}

void Store::finish_unit(std::int64_t unit_id, UnitState state, std::optional<int> exit_code, std::uint64_t peak,
                        double duration_s, const std::string& finished_at,
                        const std::optional<HistoryRecord>& history) {
  Transaction tx(db_);
  db_.prepare(
         "UPDATE units SET state = ?, exit_code = ?, peak_bytes = ?, duration_s = ?, finished_at = ?, pgid = NULL, "
         "pgid_start = NULL "
         "WHERE id = ?")
      .bind(1, to_string(state))
      .bind(2, exit_code)
      .bind(3, peak)
      .bind(4, duration_s)
      .bind(5, finished_at)
      .bind(6, unit_id)
      .run();
  db_.prepare("UPDATE builds SET peak_bytes = max(peak_bytes, ?) WHERE id = (SELECT build_id FROM units WHERE id = ?)")
      .bind(1, peak)
      .bind(2, unit_id)
      .run();
  if (history) {
    db_.prepare(
           "INSERT INTO unit_history(key, source, content_hash, flags, archs, compiler, family, arch_count, threads, "
           "profile, scope) VALUES(?,?,?,?,?,?,?,?,?,?,?)")
        .bind(1, history->key)
        .bind(2, history->source)
        .bind(3, history->content_hash)
        .bind(4, history->flags)
        .bind(5, history->archs)
        .bind(6, history->compiler)
        .bind(7, history->family)
        .bind(8, history->arch_count)
        .bind(9, history->threads)
        .bind(10, history->profile)
        .bind(11, history->scope)
        .run();
  }
  tx.commit();
}

void Store::mark_unit_cached(std::int64_t unit_id, const std::string& at) {
  db_.prepare(
         "UPDATE units SET state = 'succeeded', cached = 1, exit_code = 0, started_at = ?, finished_at = ?, "
         "duration_s = 0, wait_reason = '', pgid = NULL, pgid_start = NULL WHERE id = ? AND state = 'queued'")
      .bind(1, at)
      .bind(2, at)
      .bind(3, unit_id)
      .run();
}

void Store::requeue_unit(std::int64_t unit_id, std::uint64_t attempt_peak, std::uint64_t floor) {
  db_.prepare(
         "UPDATE units SET state = 'queued', pgid = NULL, pgid_start = NULL, started_at = NULL, peak_bytes = ?, "
         "requeued_peak = max(requeued_peak, ?) WHERE id = ? AND state = 'running'")
      .bind(1, attempt_peak)
      .bind(2, floor)
      .bind(3, unit_id)
      .run();
}

int Store::set_pending_units(std::int64_t build_id, UnitState state, bool include_running) {
  std::string sql =
      "UPDATE units SET state = ?, pgid = NULL, pgid_start = NULL WHERE build_id = ? AND (state = 'queued'";
  sql += include_running ? " OR state = 'running')" : ")";
  db_.prepare(sql).bind(1, to_string(state)).bind(2, build_id).run();
  return db_.changes();
}

void Store::cancel_build(std::int64_t build_id, const std::string& finished_at, const std::string& why) {
  Transaction tx(db_);
  set_pending_units(build_id, UnitState::cancelled, true);
  set_build_state(build_id, BuildState::cancelled, finished_at, why);
  tx.commit();
}

int Store::requeue_failed_units(std::int64_t build_id) {
  db_.prepare(
         "UPDATE units SET state = 'queued', exit_code = NULL, finished_at = NULL "
         "WHERE build_id = ? AND state IN ('failed','cancelled')")
      .bind(1, build_id)
      .run();
  return db_.changes();
}

void Store::set_wait_reasons(const std::map<std::int64_t, std::string>& reasons) {
  if (reasons.empty()) return;
  // One transaction for them all: thousands of queued units each tick must
  // not cost thousands of commits (each a lock of the file) on the event loop.
  Transaction tx(db_);
  auto st = db_.prepare("UPDATE units SET wait_reason = ? WHERE id = ? AND wait_reason != ?");
  for (const auto& [id, reason] : reasons) st.bind(1, reason).bind(2, id).bind(3, reason).run();
  tx.commit();
}

std::vector<LeftRunning> Store::recover_running_units(const std::function<bool(const LeftRunning&)>& keep) {
  Transaction tx(db_);
  std::vector<LeftRunning> pgids;
  auto st = db_.prepare(
      "SELECT pgid, build_id, pgid_start, kind = 'external', id FROM units WHERE state = 'running' AND pgid IS NOT "
      "NULL ORDER BY pgid");
  while (st.step())
    pgids.push_back(LeftRunning{st.int64(0), st.int64(1), st.opt_int64(2), st.int64(3) != 0, st.int64(4)});
  db_.exec("CREATE TEMP TABLE IF NOT EXISTS kept_running(id INTEGER PRIMARY KEY); DELETE FROM kept_running");
  auto kept = db_.prepare("INSERT INTO kept_running(id) VALUES (?)");
  for (const auto& left : pgids)
    if (keep && keep(left)) kept.bind(1, left.unit_id).run();
  db_.exec(
      "UPDATE units SET state = 'queued', pgid = NULL, pgid_start = NULL, started_at = NULL WHERE state = 'running' "
      "AND id NOT IN (SELECT id FROM kept_running); DELETE FROM kept_running");
  tx.commit();
  return pgids;
}

void Store::add_sample(const MemorySample& s) {
  db_.prepare(
         "INSERT INTO samples(at, total, available, swap_free, fad_bytes, committed, psi_some_avg10, capacity) "
         "VALUES(?,?,?,?,?,?,?,?)")
      .bind(1, s.at)
      .bind(2, s.total)
      .bind(3, s.available)
      .bind(4, s.swap_free)
      .bind(5, s.fad_bytes)
      .bind(6, s.committed)
      .bind(7, s.psi_some_avg10)
      .bind(8, s.capacity)
      .run();
}

void Store::trim_samples(int keep) {
  db_.prepare("DELETE FROM samples WHERE id <= (SELECT max(id) FROM samples) - ?").bind(1, keep).run();
}

namespace {
constexpr std::string_view kHistoryColumns =
    "id, key, source, content_hash, flags, archs, compiler, family, arch_count, threads, profile, recorded_at, origin, "
    "scope";

HistoryRecord read_history(const Statement& st) {
  HistoryRecord h;
  h.id = st.int64(0);
  h.key = st.text(1);
  h.source = st.text(2);
  h.content_hash = st.text(3);
  h.flags = st.text(4);
  h.archs = st.text(5);
  h.compiler = st.text(6);
  h.family = st.text(7);
  h.arch_count = static_cast<int>(st.int64(8));
  h.threads = static_cast<int>(st.int64(9));
  h.profile = st.text(10);
  h.recorded_at = st.text(11);
  h.origin = st.text(12);
  h.scope = st.text(13);
  return h;
}
}  // namespace

std::vector<HistoryRecord> Store::history() {
  auto st = db_.prepare("SELECT " + std::string(kHistoryColumns) + " FROM unit_history ORDER BY id");
  std::vector<HistoryRecord> out;
  while (st.step()) out.push_back(read_history(st));
  return out;
}

std::int64_t Store::trim_history(std::size_t keep, std::size_t max_keys) {
  Transaction tx(db_);
  db_.prepare(
         "DELETE FROM unit_history WHERE id IN (SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY key, "
         "family ORDER BY origin = 'imported', id DESC) AS newness FROM unit_history) WHERE newness > ?)")
      .bind(1, static_cast<std::int64_t>(keep))
      .run();
  std::int64_t gone = db_.changes();
  if (max_keys < static_cast<std::size_t>(INT64_MAX)) {
    db_.prepare(
           "DELETE FROM unit_history WHERE (scope, key) IN (SELECT scope, key FROM (SELECT scope, key, row_number() "
           "OVER (PARTITION BY scope ORDER BY min(origin = 'imported'), max(id) DESC) AS recency FROM unit_history "
           "GROUP BY scope, key) "
           "WHERE recency > ?)")
        .bind(1, static_cast<std::int64_t>(max_keys))
        .run();
    gone += db_.changes();
  }
  tx.commit();
  return gone;
}

std::vector<HistoryRecord> Store::history_page(std::int64_t after_id, int limit) {
  auto st = db_.prepare("SELECT " + std::string(kHistoryColumns) +
                        " FROM unit_history WHERE id > ? AND scope = '' ORDER BY id LIMIT ?");
  st.bind(1, after_id).bind(2, limit);
  std::vector<HistoryRecord> out;
  while (st.step()) out.push_back(read_history(st));
  return out;
}

bool Store::import_history(const HistoryRecord& h) {
  Transaction tx(db_);
  auto same = db_.prepare("SELECT 1 FROM unit_history WHERE key = ? AND threads = ? AND profile = ? LIMIT 1");
  same.bind(1, h.key).bind(2, h.threads).bind(3, h.profile);
  if (same.step()) return false;
  db_.prepare(
         "INSERT INTO unit_history(key, source, content_hash, flags, archs, compiler, family, arch_count, threads, "
         "profile, recorded_at, origin) VALUES(?,?,?,?,?,?,?,?,?,?,?,'imported')")
      .bind(1, h.key)
      .bind(2, h.source)
      .bind(3, h.content_hash)
      .bind(4, h.flags)
      .bind(5, h.archs)
      .bind(6, h.compiler)
      .bind(7, h.family)
      .bind(8, h.arch_count)
      .bind(9, h.threads)
      .bind(10, h.profile)
      .bind(11, h.recorded_at)
      .run();
  tx.commit();
  return true;
}

std::optional<std::string> Store::meta(const std::string& key) {
  auto st = db_.prepare("SELECT value FROM meta WHERE key = ?");
  st.bind(1, key);
  if (!st.step()) return std::nullopt;
  return st.text(0);
}

void Store::set_meta(const std::string& key, const std::string& value) {
  db_.prepare("INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value")
      .bind(1, key)
      .bind(2, value)
      .run();
}

std::string damaged_database_advice(const std::string& path) {
  return "recover it with 'sqlite3 " + path +
         " .recover | sqlite3 NEW.db' and move NEW.db in its place, or move it away to start afresh";
}

bool Store::file_replaced() const {
  if (ino_ == 0) return false;  // an in-memory or unstatable database: nothing to compare
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0 || st.st_dev != dev_ || st.st_ino != ino_) return true;
  // The same file, emptied (`: > fad.db`, `truncate -s 0`) or written over:
  // SQLite writes its pages back into it at their offsets, around holes. A
  // database file starts with SQLite's magic for as long as it is one.
  static const std::string kMagic("SQLite format 3\0", 16);
  return db_.file_prefix(kMagic.size()) != kMagic;
}

}  // namespace fad
