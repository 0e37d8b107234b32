// Wiring of fadd; see daemon.h.
#include "daemon/daemon.h"

#include <grp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <spdlog/spdlog.h>

#include "common/cache_settings.h"
#include "common/oom_victim.h"
#include "common/size.h"
#include "daemon/boost_launcher.h"
#include "daemon/child_setup.h"
#include "daemon/clock.h"
#include "daemon/disk_space.h"
#include "daemon/engine.h"
#include "daemon/exec_helper.h"
#include "daemon/instance_lock.h"
#include "daemon/manifest.h"
#include "daemon/memory_probe.h"
#include "daemon/request_handler.h"
#include "daemon/root_only_path.h"
#include "daemon/server.h"
#include "daemon/settings_check.h"
#include "daemon/slurm_executor.h"
#include "daemon/store.h"
#include "daemon/systemd_notify.h"
#include "daemon/toolchain.h"
#include "daemon/unit_cgroup.h"

namespace fad {

namespace asio = boost::asio;

namespace {

/// How long a stopping fadd keeps trying to write what finished (a full
/// disk) before it exits without: well inside systemd's stop timeout.
constexpr auto kUnwrittenGrace = std::chrono::seconds(10);
/// How often fadd looks whether its socket file is still there (a cleaner of
/// old files in /tmp may delete it while fadd runs for weeks): one lstat, and
/// well within the 60 s a `fad daemon stop` waits for a fadd to answer.
constexpr auto kSocketCheckEvery = std::chrono::seconds(10);

/// The lock file looked at with the socket, for the same cleaners: said when
/// made again, and a failure once until it changes.
void keep_lock_file(InstanceLock& lock, std::string& last_error) {
  const auto kept = lock.keep_file();
  if (kept && *kept) spdlog::warn("{} (fadd's lock file) was deleted or replaced; fadd made it again", lock.path());
  if (!kept && kept.error() != last_error) spdlog::error("{}", kept.error());
  last_error = kept ? "" : kept.error();
}

/// The first directory above `dir` (from the root down) that users other
/// than its owner may not pass through (no o+x), if any.
std::optional<std::string> first_closed_ancestor(const std::string& dir) {
  std::error_code ec;
  const std::filesystem::path full = std::filesystem::absolute(dir, ec);
  std::filesystem::path at = full.root_path();
  for (const auto& part : full.relative_path()) {
    at /= part;
    if (at == full) break;
    struct stat st {};
    if (::stat(at.c_str(), &st) == 0 && (st.st_mode & S_IXOTH) == 0) return at.string();
  }
  return std::nullopt;
}

/// What to add to a database error at start when the state dir's filesystem
/// is full: SQLite says only "disk I/O error".
std::string full_disk_hint(const std::string& state_dir) {
  if (!disk_nearly_full(state_dir)) return "";
  return " (the filesystem holding " + state_dir + " is full: free some space there, then start fadd again)";
}

EngineOptions engine_options(const DaemonOptions& o) {
  const Config& c = o.config;
  EngineOptions e;
  e.state_dir = o.state_dir;
  e.kernels_dir = o.kernels_dir;
  e.nvcc = c.nvcc.empty() ? "nvcc" : c.nvcc;
  e.scheduler.budget = c.memory_budget;
  e.scheduler.reserve = c.reserve;
  e.scheduler.swap_use = c.swap_use;
  e.scheduler.max_parallel_units = c.max_parallel_units;
  e.scheduler.nvcc_threads = c.nvcc_threads;
  e.scheduler.cores = o.cores > 0 ? o.cores : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  e.estimator.prior_per_thread = c.unit_memory_prior;
  e.daemon_uid = ::geteuid();
  e.retention_s = c.retention_s;
  e.max_builds_per_user = c.max_builds_per_user;
  e.max_launches_per_user_per_hour = c.max_launches_per_user_per_hour;
  e.keep_builds_per_user = c.keep_builds_per_user;
  e.keep_records_per_user = c.keep_records_per_user;
  e.max_builds_per_user_per_hour = c.max_builds_per_user_per_hour;
  e.unit_max_file_size = c.unit_max_file_size;
  e.unit_max_log_size = c.unit_max_log_size;
  e.unit_time_limit_s = static_cast<double>(c.unit_time_limit_s);
  e.disk_reserve_bytes = c.state_disk_reserve;
  if (auto cache = resolve_cache_settings(c, process_env()))
    e.cache = *cache;
  else
    spdlog::warn("compiling without the compile cache: {}", cache.error());
  return e;
}

/// Descriptors are what sessions cost: take all the hard limit allows.
void raise_fd_limit() {
  rlimit lim{};
  if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &lim);
  }
}

/// A root fadd started by hand takes what its systemd unit would give it: if
/// memory runs out the kernel should end a compiler (fadd reruns it) or
/// anything else before the daemon that records and requeues builds. A score
/// someone chose (not 0) is theirs; without root, fadd cannot lower its own.
void lower_own_oom_score() {
  if (::geteuid() != 0) return;
  int score = 1;
  if (!(std::ifstream("/proc/self/oom_score_adj") >> score) || score != 0) return;
  // A container's root often may not (no CAP_SYS_RESOURCE outside it):
  // compilers still go first at 500, so this is only worth a note.
  std::ofstream out("/proc/self/oom_score_adj");
  if (!(out << kDaemonOomScore << std::flush))
    spdlog::info("fadd keeps oom_score_adj 0: this root may not lower it to {}", kDaemonOomScore);
}

/// Who may reach the socket, from the config; fails on a group that vanished.
Result<ServerOptions> server_options(const Config& c) {
  ServerOptions s;
  s.socket_mode = static_cast<mode_t>(c.socket_mode);
  if (c.socket_group) {
    const group* g = ::getgrnam(c.socket_group->c_str());
    if (!g) return make_error("socket_group: no group named '" + *c.socket_group + "' on this machine");
    s.socket_group = g->gr_gid;
  }
  return s;
}

}  // namespace

int run_daemon(const DaemonOptions& o) {
  namespace fs = std::filesystem;
  // systemd's readiness socket is fadd's alone: compilers must not inherit it.
  const auto notifier = SystemdNotifier::from_env(process_env());
  ::unsetenv("NOTIFY_SOCKET");
  // 0. Descriptors fadd inherited never reach a compiler; files fadd makes
  //    are its own unless it hands them to a build's owner.
  cloexec_from(3);
  ::umask(077);
  raise_fd_limit();
  auto server_opts = server_options(o.config);
  if (!server_opts) {
    spdlog::critical("{}", server_opts.error());
    return 1;
  }
  // Another fadd on this socket (with another state dir): refused before
  // anything is made or said. The listen below checks again.
  if (socket_answers(o.socket)) {
    spdlog::critical("another fadd is already running on {} (stop it with 'fad daemon stop')", o.socket);
    return 1;
  }
  if (auto usable = socket_path_usable(o.socket); !usable) {
    spdlog::critical("{}", usable.error());
    return 1;
  }

  // 1. The state dir, private to its owner: it holds compiler logs and outputs.
  //    A root fadd serves several users: they may pass through it (0711) to
  //    their own builds' files, never list it.
  //    Only fadd's user (or root) may be able to change it: fadd deletes,
  //    moves and chmods inside it, and another user who could swap an entry
  //    for a link would choose what. Asked before creating it (nothing is
  //    made in a directory someone else controls) and after.
  const auto state_dir_problem = [&] {
    auto ok = state_dir_safe(o.state_dir);
    if (!ok) spdlog::critical("{}", ok.error());
    return !ok;
  };
  if (state_dir_problem()) return 1;
  std::error_code ec;
  if (!fs::exists(o.state_dir, ec)) {
    fs::create_directories(o.state_dir, ec);
    if (ec) {
      spdlog::critical("cannot create state dir {}: {}", o.state_dir, ec.message());
      return 1;
    }
    if (state_dir_problem()) return 1;  // what was just made, under this umask
  }
  if (::geteuid() == 0) {
    fs::create_directories(o.state_dir + "/builds", ec);
    for (const auto& dir : {o.state_dir, o.state_dir + "/builds"}) {
      struct stat st {};
      if (::stat(dir.c_str(), &st) == 0 && st.st_uid == 0) ::chmod(dir.c_str(), 0711);
    }
    // Other users' builds run as them and write there: a directory above
    // that they cannot pass through fails each of their builds.
    if (const auto closed = first_closed_ancestor(o.state_dir))
      spdlog::warn(
          "state dir {} is under {}, which other users cannot pass through: their builds will fail "
          "with 'Permission denied' (allow o+x on it, or move the state dir)",
          o.state_dir, *closed);
  }

  // 2. One daemon per state dir.
  auto lock = InstanceLock::acquire(o.state_dir);
  if (!lock) {
    spdlog::critical("{}", lock.error());
    return 1;
  }

  lower_own_oom_score();  // after the lock: a refused start says one line

  // 3. The database, migrated to this version's schema.
  std::unique_ptr<Store> store;
  try {
    store = std::make_unique<Store>(o.state_dir + "/fad.db");
  } catch (const StoreError& e) {
    spdlog::critical("{}{}", e.what(), full_disk_hint(o.state_dir));
    return 1;
  }

  // 4. The engine with the real clock, memory probe and process launcher.
  //    Before anything listens: compilers a previous fadd left behind are
  //    killed (its unit cgroups here, its process groups in recover()), and
  //    units it left running are requeued.
  asio::io_context io;
  SystemClock clock;
  ProcMemoryProbe probe;
  std::string no_cgroups;
  auto cgroups = CgroupManager::detect(&no_cgroups);
  if (cgroups) {
    spdlog::info("measuring units with per-unit memory cgroups under {}", cgroups->base());
    // The hard floor under the budget: a wrong estimate can only get a fad
    // unit OOM-killed (it is rerun), never the host or other users' processes.
    const auto limit = units_memory_limit(engine_options(o).scheduler, probe.sample());
    if (auto st = cgroups->set_limit(limit.high, limit.max); !st)
      spdlog::warn("fad's units have no hard memory limit: {}", st.error());
    else
      spdlog::info("fad's units together are limited to {} (budget {})", format_size(limit.max),
                   format_size(limit.high));
  } else
    spdlog::info("measuring units by polling /proc ({})", no_cgroups);
  // Every compiler and probe starts through fad-exec, so that fadd never waits
  // on the exec of a program on a filesystem that stopped answering.
  const std::string exec_helper = find_exec_helper();
  if (exec_helper.empty())
    spdlog::warn(
        "fad-exec is not installed beside fadd (nor in ../libexec/fad): compilers are started directly, "
        "and one on a filesystem that does not answer stalls fadd until it does");
  // The executor: compilers run here, or as Slurm job steps on a cluster.
  std::unique_ptr<ProcessLauncher> launcher;
  if (o.config.executor == ExecutorKind::slurm) {
    std::vector<std::string> shared{o.kernels_dir};
    if (!o.config.nvcc.empty() && o.config.nvcc.front() == '/') shared.push_back(o.config.nvcc);
    spdlog::info("running units as Slurm job steps ({})",
                 o.config.slurm.job_per_unit ? "one job per unit" : "in one allocation");
    launcher = std::make_unique<SlurmExecutor>(io, clock, o.config.slurm, o.state_dir, std::move(shared));
  } else {
    launcher = std::make_unique<BoostLauncher>(io, cgroups.get(), exec_helper);
  }
  ToolchainProber toolchains(io, std::chrono::seconds(30), 8, exec_helper);
  // Under Slurm, units run on the nodes; probes still run here.
  toolchains.set_cgroups(cgroups.get());
  Engine engine(
      engine_options(o), *store, clock, probe, *launcher,
      [&toolchains](const ToolchainQuery& query, ToolchainCallback done) { toolchains.get(query, std::move(done)); });
  if (const Config& c = o.config;
      c.keep_records_per_user > 0 && (c.keep_builds_per_user == 0 || c.keep_records_per_user < c.keep_builds_per_user))
    spdlog::warn(
        "keep_records_per_user {} is below keep_builds_per_user {}: builds past each user's newest {} lose their "
        "outputs with their records, an hour after they finished",
        c.keep_records_per_user,
        c.keep_builds_per_user == 0 ? std::string("(no limit)") : std::to_string(c.keep_builds_per_user),
        c.keep_records_per_user);
  // Deleting pruned builds' trees runs on a thread of its own (tree_remover.h).
  TreeWorker tree_worker(io);
  engine.set_tree_remover(tree_worker.remover());
  try {
    engine.recover();
  } catch (const StoreError& e) {
    spdlog::critical("recovering state from {}/fad.db: {}{}", o.state_dir, e.what(), full_disk_hint(o.state_dir));
    return 1;
  }

  // 5. The socket.
  bool stopping = false;
  bool shutdown_requested = false;
  RequestHandler handler(engine, [&shutdown_requested, &lock] {
    // Said in the lock at once, before the answer goes out: the socket
    // closes at the next tick, and a start in between must see a fadd that
    // is stopping, not one already running.
    shutdown_requested = true;
    lock->note_stopping();
  });
  Server server(io, handler, *server_opts);
  if (auto st = server.listen(o.socket); !st) {
    spdlog::critical("{}", st.error());
    return 1;
  }
  lock->note_listening(o.socket);

  // 6. SIGTERM/SIGINT: stop admitting, stop running units (requeued), then exit.
  auto begin_stop = [&](const char* why) {
    if (stopping) return;
    stopping = true;
    spdlog::info("stopping ({}): {} running unit(s) will be requeued", why, engine.running_count());
    if (auto sent = notifier.notify("STOPPING=1"); !sent) spdlog::warn("{}", sent.error());
    lock->note_stopping();
    server.close();
    engine.begin_shutdown();
  };
  asio::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&](boost::system::error_code sec, int sig) {
    if (!sec) begin_stop(sig == SIGTERM ? "SIGTERM" : "SIGINT");
  });
  // SIGHUP (a closed terminal, a reload by habit) must not end an unattended
  // daemon and its builds; nor SIGUSR1/SIGUSR2 (sent by habit to ask for a
  // log reopen or a dump) or SIGALRM, whose default is to kill without a
  // word. fadd reads its settings once, at start.
  asio::signal_set ignored(io, SIGHUP, SIGUSR1, SIGUSR2);
  ignored.add(SIGALRM);
  std::function<void()> ignore_signals = [&] {
    ignored.async_wait([&](boost::system::error_code sec, int sig) {
      if (sec) return;
      if (sig == SIGHUP)
        spdlog::warn(
            "SIGHUP ignored: fadd reads its settings only at start; to apply changed ones, fad daemon restart");
      else
        spdlog::warn("{} ignored: fadd has no use for it (SIGTERM stops it)", sig == SIGUSR1   ? "SIGUSR1"
                                                                              : sig == SIGUSR2 ? "SIGUSR2"
                                                                                               : "SIGALRM");
      ignore_signals();
    });
  };
  ignore_signals();

  // 7. The loop: one tick per poll interval; exit once stopped and idle.
  const auto interval = std::chrono::milliseconds(std::max(10, o.config.poll_interval_ms));
  asio::steady_timer timer(io);
  std::optional<std::chrono::steady_clock::time_point> idle_since;
  auto socket_checked = std::chrono::steady_clock::now();
  std::string lock_file_error;  // said once, not every look
  std::function<void()> tick = [&] {
    if (shutdown_requested) begin_stop("shutdown request");
    if (const auto now = std::chrono::steady_clock::now(); !stopping && now - socket_checked >= kSocketCheckEvery) {
      socket_checked = now;
      server.keep_socket();
      keep_lock_file(*lock, lock_file_error);
    }
    engine.tick();
    if (stopping && engine.idle()) {
      // What finished but could not be written yet (a full disk) is lost
      // with the process: a few more seconds of tries, then say so plainly.
      const auto now = std::chrono::steady_clock::now();
      if (!idle_since) idle_since = now;
      const std::size_t unwritten = engine.unwritten_count();
      if (unwritten == 0 || now - *idle_since >= kUnwrittenGrace) {
        if (unwritten > 0)
          spdlog::error(
              "stopping with {} unit end(s), cancel(s) or prune mark(s) the database in {} did not take (a full "
              "disk or a damaged file: see the errors above): those units (and the cancelled builds) run again, "
              "and those builds are pruned again, at the next start",
              unwritten, o.state_dir);
        launcher->shutdown();
        signals.cancel();
        ignored.cancel();
        io.stop();
        return;
      }
    }
    timer.expires_after(interval);
    timer.async_wait([&](boost::system::error_code tec) {
      if (!tec) tick();
    });
  };
  tick();
  // An extra pass right after a unit ends or a build arrives: a free slot is
  // filled now, not a poll interval later. Coalesced: one pending pass at most.
  bool wake_pending = false;
  engine.set_request_charge(
      [&server](uid_t uid, std::chrono::steady_clock::duration cost) { server.charge(uid, cost); });
  engine.set_wake([&] {
    if (wake_pending || stopping) return;
    wake_pending = true;
    asio::post(io, [&] {
      wake_pending = false;
      engine.tick();
    });
  });

  spdlog::info("fadd {} listening on {} (state {}, kernels {}, budget {}, reserve {})", FAD_VERSION, o.socket,
               o.state_dir, o.kernels_dir,
               o.config.memory_budget ? format_size(*o.config.memory_budget) : std::string("auto"),
               o.config.reserve.bytes ? format_size(o.config.reserve.bytes)
                                      : std::to_string(static_cast<int>(o.config.reserve.percent)) + "%");
  // Said now, not first at a user's `fad submit`: whoever starts fadd can
  // mend it. Builds of other projects (`fad run`) do not need it.
  if (auto manifest = load_manifest(o.kernels_dir); !manifest)
    spdlog::warn("fad submit of the bundled kernels will fail: {}", manifest.error());
  // Under systemd (Type=notify): started means listening.
  if (auto sent =
          notifier.notify("READY=1\nSTATUS=listening on " + o.socket + "\nMAINPID=" + std::to_string(::getpid()));
      !sent)
    spdlog::warn("{}", sent.error());
  // A client that hangs up mid-answer must not kill the daemon with SIGPIPE.
  ::signal(SIGPIPE, SIG_IGN);
  // An unexpected exception escaping a handler is logged and the loop goes on:
  // the daemon outlives any one request or unit.
  for (;;) {
    try {
      io.run();
      break;
    } catch (const std::exception& e) {
      spdlog::error("unexpected error in the event loop (continuing): {}", e.what());
    }
  }
  spdlog::info("fadd stopped");
  return 0;
}

}  // namespace fad
