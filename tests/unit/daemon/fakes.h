// Test doubles for the daemon core: a hand-driven clock, a settable memory
// probe, a launcher that only records, a temp dir, and a fixture wiring the
// real Engine and Store to them over a tiny kernels tree written by the test.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "common/arch.h"
#include "daemon/clock.h"
#include "daemon/engine.h"
#include "daemon/memory_probe.h"
#include "daemon/process_launcher.h"
#include "daemon/store.h"
#include "daemon/toolchain.h"
#include "tests/temp_dir.h"

namespace fad::test {

namespace fs = std::filesystem;

/// Runs `io` until `done()` holds or 20 s passed (the caller checks which).
template <typename Done>
void run_until(boost::asio::io_context& io, Done done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    io.restart();
    io.run_for(std::chrono::milliseconds(20));
  }
}

inline void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

inline std::string slurp(const fs::path& path) { return read_small_file(path.string()); }

class FakeClock final : public Clock {
 public:
  double now() const override { return now_; }
  std::string wall() const override { return wall_; }
  void advance(double seconds) { now_ += seconds; }
  double now_ = 1000;
  std::string wall_ = "2026-01-02T03:04:05Z";
};

class FakeMemoryProbe final : public MemoryProbe {
 public:
  FakeMemoryProbe() {
    snap.total = 64ull << 30;
    snap.available = 60ull << 30;
    snap.swap_total = 0;
    snap.swap_free = 0;
  }
  MemorySnapshot sample() override { return snap; }
  MemorySnapshot snap;
};

/// Records every launch and signal; the test ends processes by hand.
class RecordingLauncher final : public ProcessLauncher {
 public:
  struct Launch {
    LaunchSpec spec;
    int pgid = 0;
    std::function<void(ExitInfo)> on_exit;
    bool ended = false;
  };

  Result<int> launch(const LaunchSpec& spec, std::function<void(ExitInfo)> on_exit) override {
    if (fail_next) {
      fail_next = false;
      return make_error("cannot start " + (spec.argv.empty() ? std::string("?") : spec.argv[0]) + ": test failure");
    }
    const int pgid = next_pgid++;
    launches.push_back(Launch{spec, pgid, std::move(on_exit), false});
    return pgid;
  }
  void signal_group(int pgid, int sig) override { signals.emplace_back(pgid, sig); }
  std::uint64_t group_memory(int pgid) override {
    auto it = memory.find(pgid);
    return it == memory.end() ? 0 : it->second;
  }
  bool group_alive(int pgid) override { return !gone.count(pgid); }
  std::optional<ProcessInfo> process_info(int pid) override {
    ++process_info_calls;
    auto it = processes.find(pid);
    if (it == processes.end()) return std::nullopt;
    return it->second;
  }
  std::vector<unsigned> group_owners(int pgid) override {
    std::vector<unsigned> owners;
    for (const auto& [pid, info] : processes)
      if (info.pgid == pgid) owners.push_back(info.uid);
    return owners;
  }
  bool group_stopped(int pgid) override {
    int living = 0, stopped = 0;
    for (const auto& [pid, info] : processes)
      if (info.pgid == pgid && !info.zombie) ++living, stopped += info.stopped;
    return living > 0 && stopped == living;
  }
  bool group_pending(int pgid) override { return pending.count(pgid) > 0; }
  void adopt(int pgid) override { adopted.insert(pgid); }
  std::vector<std::pair<int, Leftovers>> released;  ///< each release, in order
  GroupAccount release(int pgid, Leftovers leftovers) override {
    adopted.erase(pgid);
    released.emplace_back(pgid, leftovers);
    return {released_peak, released_oom_killed, released_lost};
  }
  // A cluster executor when `cluster` is set: its nodes, why nothing starts,
  // and the step command a launcher gets.
  std::optional<std::vector<ExecutorNode>> nodes() override { return cluster; }
  std::string wait_reason() override { return cluster_wait; }
  std::vector<std::string> step_command(const LaunchSpec& spec) override {
    return {"srun", "--nodelist=" + spec.node, "--mem=" + std::to_string(spec.estimate_bytes), "--"};
  }
  void adopt_unit(int pgid, std::int64_t unit_id) override {
    adopted.insert(pgid);
    adopted_units[pgid] = unit_id;
  }
  bool drops_rights() const override { return can_drop_rights; }
  std::string status_json() override {
    if (!cluster) return "";
    std::string nodes;
    for (const auto& n : *cluster) nodes += (nodes.empty() ? "" : ",") + std::string("{\"name\":\"") + n.name + "\"}";
    return "{\"kind\":\"test\",\"nodes\":[" + nodes + "]}";
  }

  /// The unit name of a launch: its log file is ".../logs/<name>.log".
  static std::string name_of(const Launch& l) { return fs::path(l.spec.log_path).stem().string(); }

  /// The newest launch of `name`; nullptr when never launched.
  Launch* find(const std::string& name) {
    for (auto it = launches.rbegin(); it != launches.rend(); ++it)
      if (name_of(*it) == name) return &*it;
    return nullptr;
  }
  int pgid_of(const std::string& name) {
    auto* l = find(name);
    return l ? l->pgid : -1;
  }
  int launch_count(const std::string& name) const {
    int n = 0;
    for (const auto& l : launches)
      if (name_of(l) == name) ++n;
    return n;
  }
  /// Names of launches that have not ended, in launch order.
  std::vector<std::string> live() const {
    std::vector<std::string> out;
    for (const auto& l : launches)
      if (!l.ended) out.push_back(name_of(l));
    return out;
  }
  std::vector<int> signals_to(int pgid) const {
    std::vector<int> out;
    for (const auto& [p, s] : signals)
      if (p == pgid) out.push_back(s);
    return out;
  }
  /// Ends the newest launch of `name`, running the daemon's exit callback.
  void exit(const std::string& name, int code, bool signaled = false) { exit_with(name, ExitInfo{code, signaled}); }
  void exit_with(const std::string& name, ExitInfo info) {
    auto* l = find(name);
    if (!l || l->ended) throw std::logic_error("no live launch of " + name);
    l->ended = true;
    auto cb = l->on_exit;  // the callback may launch more, moving `launches`
    cb(info);
  }
  /// After a simulated daemon crash: the old callbacks point at a dead engine.
  void forget_callbacks() {
    for (auto& l : launches) {
      l.on_exit = nullptr;
      l.ended = true;
    }
  }

  std::vector<Launch> launches;
  std::vector<std::pair<int, int>> signals;  ///< (pgid, signal)
  std::map<int, std::uint64_t> memory;       ///< group_memory per pgid
  std::set<int> gone;                        ///< groups group_alive() reports as vanished
  std::set<int> pending;                     ///< groups waiting in a cluster's queue
  std::set<int> adopted;                     ///< external groups being accounted
  std::map<int, ProcessInfo> processes;      ///< what process_info() reports per pid
  int process_info_calls = 0;
  std::uint64_t released_peak = 0;                   ///< what release() reports as the exact peak
  bool released_oom_killed = false;                  ///< what release() reports about the OOM killer
  bool released_lost = false;                        ///< what release() reports about a lost node
  std::optional<std::vector<ExecutorNode>> cluster;  ///< set: a cluster executor with these nodes
  std::string cluster_wait;                          ///< its wait reason
  bool can_drop_rights = true;                       ///< false: runs units with fadd's rights (Slurm)
  std::map<int, std::int64_t> adopted_units;         ///< adopt_unit's pgid -> unit
  int next_pgid = 1000;
  bool fail_next = false;
};

inline Toolchain fake_toolchain() {
  Toolchain tc;
  tc.path = "/opt/fake/nvcc";
  tc.version = "V13.0-test";
  for (int n : {75, 80, 86, 87, 89, 90, 100, 103, 110, 120, 121}) tc.archs.push_back(Arch{n, 0});
  return tc;
}

/// Writes a kernels dir: manifest "fad_test" with units a_one, a_two, b_one,
/// b_two (sources src/<name>.cu) and one header include/common.cuh.
inline void write_kernels(const fs::path& dir) {
  write_file(dir / "manifest.json", R"({
  "version": 1,
  "library": "fad_test",
  "include_dirs": ["include"],
  "flags": ["-O3", "-std=c++17"],
  "link_flags": ["-lcudart"],
  "units": [
    {"name": "a_one", "source": "src/a_one.cu", "family": "a", "prior": {"peak_bytes": 104857600, "duration_s": 10}},
    {"name": "a_two", "source": "src/a_two.cu", "family": "a", "flags": ["-DTWO"], "prior": {"peak_bytes": 104857600, "duration_s": 10}},
    {"name": "b_one", "source": "src/b_one.cu", "family": "b", "prior": {"peak_bytes": 104857600, "duration_s": 10}},
    {"name": "b_two", "source": "src/b_two.cu", "family": "b", "prior": {"peak_bytes": 104857600, "duration_s": 10}}
  ]
})");
  for (const char* n : {"a_one", "a_two", "b_one", "b_two"})
    write_file(dir / "src" / (std::string(n) + ".cu"),
               std::string("#include \"common.cuh\"\n__global__ void ") + n + "() {}\n");
  write_file(dir / "include" / "common.cuh", "#pragma once\n");
}

inline const std::vector<std::string> kCompileUnits{"a_one", "a_two", "b_one", "b_two"};

/// The real Engine and Store over fakes, in a temp dir.
struct EngineFixture {
  TempDir tmp{"fad-engine"};
  std::string kernels = tmp / "kernels";
  std::string state = tmp / "state";
  FakeClock clock;
  FakeMemoryProbe probe;
  RecordingLauncher launcher;
  std::unique_ptr<Store> store;
  std::unique_ptr<Engine> engine;
  EngineOptions options;
  int toolchain_lookups = 0;
  /// The compilers the engine asked for, and as whom (uid; -1 for fadd itself).
  std::vector<std::pair<std::string, long>> toolchain_queries;
  /// The caller of requests in tests: this process's own user.
  Caller me{::geteuid(), ::getegid(), ::getpid()};

  EngineFixture() {
    write_kernels(kernels);
    fs::create_directories(state);
    options.state_dir = state;
    options.kernels_dir = kernels;
    options.nvcc = "nvcc";
    options.scheduler.cores = 16;
    options.scheduler.nvcc_threads = 2;
    options.daemon_uid = ::geteuid();
    store = std::make_unique<Store>(state + "/fad.db");
  }
  ~EngineFixture() {
    engine.reset();
    launcher.forget_callbacks();
  }

  /// Builds the engine with the current `options` (tests tweak them first).
  Engine& make_engine() {
    engine = std::make_unique<Engine>(
        options, *store, clock, probe, launcher, [this](const ToolchainQuery& query, ToolchainCallback done) {
          ++toolchain_lookups;
          toolchain_queries.emplace_back(query.nvcc, query.run_as ? long(query.run_as->uid) : -1L);
          done(Result<Toolchain>(fake_toolchain()));
        });
    return *engine;
  }

  /// A submit answered at once (the fake toolchain lookup answers at once).
  Response submit_as(const Caller& caller, const SubmitRequest& req) {
    std::optional<Response> answer;
    engine->submit(caller, req, [&answer](Response r) { answer = std::move(r); });
    if (!answer) throw std::logic_error("submit did not answer");
    return *answer;
  }

  /// Submits a build for 9.0 and 12.0 and returns its id.
  std::int64_t submit(std::vector<std::string> archs = {"9.0", "12.0"}, std::string glob = "*") {
    SubmitRequest req;
    req.archs = std::move(archs);
    req.kernels = std::move(glob);
    req.name = "test";
    auto r = submit_as(me, req);
    if (!r.ok) throw std::runtime_error("submit failed: " + r.message);
    return r.result.at("id").get<std::int64_t>();
  }

  std::optional<UnitRecord> unit(std::int64_t build, const std::string& name) {
    for (auto& u : store->units(build))
      if (u.name == name) return u;
    return std::nullopt;
  }
  BuildState build_state(std::int64_t build) { return store->build(build)->state; }
  /// A build as `fad status` lists it (its units counted) and as `fad status
  /// ID` shows it (its units read), without the latter's unit list.
  std::pair<nlohmann::json, nlohmann::json> listed_and_detailed(std::int64_t build) {
    nlohmann::json listed;
    const auto listing = engine->status(me, StatusRequest{});
    for (const auto& b : listing.result.at("builds"))
      if (b.at("id") == build) listed = b;
    auto detailed = engine->status(me, StatusRequest{build}).result.at("builds").at(0);
    detailed.erase("unit_list");
    detailed.erase("units_left_out");
    return {listed, detailed};
  }
  std::string build_dir(std::int64_t build) const { return state + "/builds/" + std::to_string(build); }
  std::string artifact(std::int64_t build) const { return build_dir(build) + "/lib/libfad_test.so"; }
  /// Runs a just-submitted build to its end: its compiles start and exit 0,
  /// then its link, which leaves the library behind.
  void finish_build(std::int64_t build) {
    engine->tick();
    for (const auto& name : kCompileUnits) launcher.exit(name, 0);
    engine->tick();
    write_file(artifact(build) + ".tmp", "ELF");
    launcher.exit("link", 0);
  }
};

/// What fadd logs while it lives, instead of the console.
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    spdlog::set_default_logger(
        std::make_shared<spdlog::logger>("capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(out_)));
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;
  std::size_t count(const std::string& part) const {
    const std::string text = out_.str();
    std::size_t n = 0;
    for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
    return n;
  }

 private:
  std::ostringstream out_;
  std::shared_ptr<spdlog::logger> previous_;
};

}  // namespace fad::test
