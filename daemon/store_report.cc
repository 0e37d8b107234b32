// The Store's report data: unit attempts with their memory samples, unit
// events and machine samples over a build's life; see store.h. Kept apart from
// store.cc so the build and unit records there stay short.
#include "daemon/store.h"

namespace fad {

void Store::add_unit_attempt(const UnitAttempt& a) {
  db_.prepare(
         "INSERT INTO unit_samples(unit_id, attempt, started_at, ended_at, outcome, threads, estimate_bytes, "
         "peak_bytes, points) VALUES(?,?,?,?,?,?,?,?,?)")
      .bind(1, a.unit_id)
      .bind(2, a.attempt)
      .bind(3, a.started_at)
      .bind(4, a.ended_at)
      .bind(5, a.outcome)
      .bind(6, a.threads)
      .bind(7, a.estimate_bytes)
      .bind(8, a.peak_bytes)
      .bind(9, a.points)
      .run();
}

void Store::add_unit_event(const UnitEvent& e) {
  Transaction tx(db_);  // one fsync for the event and its trim, not two
  db_.prepare("INSERT INTO unit_events(unit_id, at, kind, detail) VALUES(?,?,?,?)")
      .bind(1, e.unit_id)
      .bind(2, e.at)
      .bind(3, e.kind)
      .bind(4, e.detail)
      .run();
  // A user who pauses and resumes a build in a loop writes an event per
  // running unit each time: only the latest kMaxEventsPerUnit are kept.
  db_.prepare(
         "DELETE FROM unit_events WHERE rowid IN (SELECT rowid FROM unit_events WHERE unit_id = ? "
         "ORDER BY rowid DESC LIMIT -1 OFFSET ?)")
      .bind(1, e.unit_id)
      .bind(2, static_cast<std::int64_t>(kMaxEventsPerUnit))
      .run();
  tx.commit();
}

std::vector<UnitAttempt> Store::unit_attempts(std::int64_t build_id) {
  auto st = db_.prepare(
      "SELECT s.unit_id, s.attempt, s.started_at, s.ended_at, s.outcome, s.threads, s.estimate_bytes, s.peak_bytes, "
      "s.points FROM unit_samples s JOIN units u ON u.id = s.unit_id WHERE u.build_id = ? ORDER BY s.id");
  st.bind(1, build_id);
  std::vector<UnitAttempt> out;
  while (st.step()) {
    UnitAttempt a;
    a.unit_id = st.int64(0);
    a.attempt = static_cast<int>(st.int64(1));
    a.started_at = st.real(2);
    a.ended_at = st.real(3);
    a.outcome = st.text(4);
    a.threads = static_cast<int>(st.int64(5));
    a.estimate_bytes = static_cast<std::uint64_t>(st.int64(6));
    a.peak_bytes = static_cast<std::uint64_t>(st.int64(7));
    a.points = st.text(8);
    out.push_back(std::move(a));
  }
  return out;
}

std::vector<UnitEvent> Store::unit_events(std::int64_t build_id) {
  auto st = db_.prepare(
      "SELECT e.unit_id, e.at, e.kind, e.detail FROM unit_events e JOIN units u ON u.id = e.unit_id "
      "WHERE u.build_id = ? ORDER BY e.id");
  st.bind(1, build_id);
  std::vector<UnitEvent> out;
  while (st.step()) out.push_back(UnitEvent{st.int64(0), st.real(1), st.text(2), st.text(3)});
  return out;
}

std::vector<MemorySample> Store::samples_between(const std::string& from, const std::string& to) {
  // RFC 3339 UTC strings of one fixed width order as their times do.
  auto st = db_.prepare(
      "SELECT at, total, available, swap_free, fad_bytes, committed, psi_some_avg10, capacity FROM samples "
      "WHERE at >= ? AND at <= ? ORDER BY id");
  st.bind(1, from).bind(2, to);
  std::vector<MemorySample> out;
  while (st.step()) {
    MemorySample s;
    s.at = st.text(0);
    s.total = static_cast<std::uint64_t>(st.int64(1));
    s.available = static_cast<std::uint64_t>(st.int64(2));
    s.swap_free = static_cast<std::uint64_t>(st.int64(3));
    s.fad_bytes = static_cast<std::uint64_t>(st.int64(4));
    s.committed = static_cast<std::uint64_t>(st.int64(5));
    if (!st.is_null(6)) s.psi_some_avg10 = st.real(6);
    s.capacity = static_cast<std::uint64_t>(st.int64(7));
    out.push_back(std::move(s));
  }
  return out;
}

void Store::mark_build_started(std::int64_t build_id, const std::string& at) {
  db_.prepare("UPDATE builds SET started_at = ? WHERE id = ? AND started_at IS NULL")
      .bind(1, at)
      .bind(2, build_id)
      .run();
}

std::optional<std::string> Store::build_started_at(std::int64_t build_id) {
  auto st = db_.prepare("SELECT started_at FROM builds WHERE id = ?");
  st.bind(1, build_id);
  if (!st.step()) return std::nullopt;
  return st.opt_text(0);
}

}  // namespace fad
