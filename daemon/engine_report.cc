// What the engine keeps for reports and live status: each attempt's span and
// thinned memory samples, unit events, live measurements of running units and
// estimates of queued ones, and the `report` request that returns them.
#include <algorithm>

#include <spdlog/spdlog.h>

#include "common/time_text.h"
#include "daemon/engine.h"
#include "daemon/planner.h"
#include "daemon/report_view.h"
#include "daemon/responses.h"

namespace fad {

namespace {
// Samples stored per attempt: enough to draw a unit's rise and fall, bounded
// so a database years old stays small (about 2 KiB per attempt).
constexpr std::size_t kStoredPoints = 120;
// One report answer stays well inside one protocol line.
constexpr std::size_t kReportPoints = 16000;
constexpr std::size_t kReportSamples = 1500;
constexpr std::size_t kReportBytes = kMaxMessageBytes * 3 / 4;
}  // namespace

void Engine::record_attempt(const Running& r, const char* outcome, std::uint64_t peak) {
  try {
    UnitAttempt a;
    a.unit_id = r.unit.id;
    a.attempt = r.attempt;
    a.started_at = r.started_epoch;
    a.ended_at = std::max(r.started_epoch, epoch_now());
    a.outcome = outcome;
    a.threads = r.threads;
    a.estimate_bytes = r.estimate_bytes;
    a.peak_bytes = peak;
    Profile p = r.measured.points.size() > kStoredPoints ? r.measured.thinned(kStoredPoints) : r.measured;
    // Polling can miss a short spike its cgroup caught: the highest sample is
    // lifted to the true peak, and a unit shorter than one sample is drawn at it.
    p.lift_peak_to(peak);
    p.duration_s = a.ended_at - a.started_at;
    a.points = p.serialize();
    // Behind rows already held, so a report lists them in the order they ended.
    if (unwritten_attempts_.empty()) {
      try {
        store_.add_unit_attempt(a);
        return;
      } catch (const StoreError& e) {
        spdlog::error("recording an attempt of {}: {} (kept, retried each tick)", r.unit.name, e.what());
      }
    }
    // A full disk can last for days of compiles: a bounded number is held
    // (a report's samples are a few KiB each), the oldest given up first.
    if (unwritten_attempts_.size() >= kMaxHeldAttempts) {
      spdlog::warn("giving up the report samples of unit {}'s attempt {}: {} attempts are waiting for the disk",
                   unwritten_attempts_.front().unit_id, unwritten_attempts_.front().attempt, kMaxHeldAttempts);
      unwritten_attempts_.pop_front();
    }
    unwritten_attempts_.push_back(std::move(a));
  } catch (const std::exception& e) {
    spdlog::error("recording an attempt of {}: {}", r.unit.name, e.what());
  }
}

void Engine::retry_unwritten_attempts() {
  while (!unwritten_attempts_.empty()) {
    store_.add_unit_attempt(unwritten_attempts_.front());  // throws again while the disk is full
    unwritten_attempts_.pop_front();
  }
}

void Engine::record_event(std::int64_t unit_id, const char* kind, const std::string& detail) {
  try {
    store_.add_unit_event(UnitEvent{unit_id, epoch_now(), kind, detail});
  } catch (const StoreError& e) {
    spdlog::error("recording a {} event: {}", kind, e.what());
  }
}

LiveUnits Engine::running_live(const std::vector<UnitRecord>& units) {
  LiveUnits live;
  const double now = clock_.now();
  for (const auto& u : units) {
    auto it = running_.find(u.id);
    if (it == running_.end()) continue;
    const Running& r = it->second;
    LiveUnit l;
    l.running = true;
    l.current_bytes = r.current;
    l.peak_bytes = r.peak;
    l.elapsed_s = r.external && r.pgid == 0 ? 0 : r.run_time(now);  // what its predicted duration counts
    if (r.predicted.duration_s > 0 && !r.duration_guessed) l.predicted_duration_s = r.predicted.duration_s;
    if (r.paused)
      l.state = "paused";
    else if (r.suspended)
      l.state = "suspended";
    else if (r.pending)
      l.state = "pending";
    live.emplace(u.id, std::move(l));
  }
  return live;
}

QueuedLive Engine::queued_live(const BuildRecord& b) {
  return [this, paused = this->paused(b), id = b.id](const UnitRecord& u) {
    // The estimate at the fewest threads the scheduler would grant: the one
    // its wait reason ("needs 6.2 GiB, ...") quotes.
    const QueuedUnit q = queued_unit(u);
    const auto& config = scheduler_.config();
    const int threads = config.nvcc_threads > 0 ? std::min(config.nvcc_threads, std::max(1, q.key.arch_count)) : 1;
    const Estimate est = estimator_.estimate(q.key, threads, q.manifest_prior);
    LiveUnit l;
    l.estimate_bytes = std::max(est.peak(), q.requeued_peak);
    l.estimate_source = estimate_source_id(est.source, est.imported);
    // The scheduler's own forecast from its last decision, when it made one.
    if (auto f = forecasts_.find(u.id); f != forecasts_.end()) {
      l.estimate_source = estimate_source_id(f->second.source, f->second.imported);
      if (f->second.duration_s > 0 && !f->second.duration_guessed) l.predicted_duration_s = f->second.duration_s;
    } else if (est.profile.duration_s > 0 && !est.duration_guessed) {
      l.predicted_duration_s = est.profile.duration_s;
    }
    if (paused)
      l.wait_reason = "build paused ('fad resume " + std::to_string(id) + "')";
    else if (!storage_problem_.empty())
      l.wait_reason = wait_reason_now(u);
    return std::optional<LiveUnit>(std::move(l));
  };
}

Response Engine::report(const Caller& caller, std::int64_t id) {
  auto b = store_.build(id);
  if (!b) return no_build(id);
  (void)caller;  // unit names and timings, no compiler output: anyone may read it, as with status
  ReportInput in;
  in.build = *b;
  in.build_started_at = store_.build_started_at(id);
  in.units = store_.unit_views(id);
  in.live = running_live(in.units);
  in.queued = queued_live(*b);
  in.attempts = store_.unit_attempts(id);
  for (const auto& [uid, r] : running_) {
    if (r.unit.build_id != id) continue;
    UnitAttempt a;
    a.unit_id = uid;
    a.attempt = r.attempt;
    a.started_at = r.started_epoch;
    a.outcome = r.paused ? "paused" : r.suspended ? "suspended" : "running";
    a.threads = r.threads;
    a.estimate_bytes = r.estimate_bytes;
    a.peak_bytes = r.peak;
    Profile p = r.measured.points.size() > kStoredPoints ? r.measured.thinned(kStoredPoints) : r.measured;
    a.points = p.serialize();
    in.attempts.push_back(std::move(a));
  }
  in.events = store_.unit_events(id);
  in.machine = store_.samples_between(b->created_at, b->finished_at.value_or(clock_.wall()));
  // Today's memory_budget says nothing of a finished build, which may have
  // run under another: its limit over time is in the samples' capacity.
  if (!is_final(b->state)) in.budget_bytes = scheduler_.config().budget;
  in.now = epoch_now();
  // The unit rows may take half the answer (a build of thousands of launched
  // compiles leaves the rest out, counted, as fad status does); the samples
  // are thinned in proportion until the whole fits one protocol line with
  // room to spare. Each pass costs a build of the document: usually one.
  const auto size_of = [](const json& data) {
    return data.dump(-1, ' ', false, json::error_handler_t::replace).size();
  };
  std::size_t points = kReportPoints, samples = kReportSamples;
  json data = report_json(in, points, samples, kReportBytes / 2);
  for (std::size_t size = size_of(data); size > kReportBytes && points > 64; size = size_of(data)) {
    const double scale = 0.8 * static_cast<double>(kReportBytes) / static_cast<double>(size);
    points = std::max<std::size_t>(64, static_cast<std::size_t>(static_cast<double>(points) * scale));
    samples = std::max<std::size_t>(64, static_cast<std::size_t>(static_cast<double>(samples) * scale));
    data = report_json(in, points, samples, kReportBytes / 2);
  }
  add_owner(data["build"], *b);
  return ok_response(std::move(data));
}

}  // namespace fad
