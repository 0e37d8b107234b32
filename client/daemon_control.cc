// Background start uses a single fork + setsid (no double fork) so that fad
// can waitpid() the child and tell "fadd exited at startup" from "still
// starting". Once fad exits, fadd is reparented and keeps running.
#include "client/daemon_control.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>

#include "client/exit_codes.h"
#include "common/file_read.h"
#include "common/lock_file.h"
#include "common/meminfo.h"
#include "common/process_exists.h"
#include "common/program_output.h"
#include "common/shell_words.h"
#include "common/text.h"

namespace fad::client {
namespace {

namespace fs = std::filesystem;

constexpr auto kPollInterval = std::chrono::milliseconds(100);
constexpr auto kStartTimeout = std::chrono::seconds(15);
// fadd gives its compilers 5 s after SIGTERM before SIGKILL; the rest is margin
// for a loaded machine.
constexpr auto kStopTimeout = std::chrono::seconds(60);
constexpr std::size_t kLogTailLines = 20;

/// One line of /proc/PID/stat; empty when there is no such process (or no /proc).
std::string proc_stat_line(long pid) {
  std::string line;
  if (pid > 0) std::getline(std::ifstream("/proc/" + std::to_string(pid) + "/stat"), line);
  return line;
}

// The daemon's pid from a status answer, for messages; "?" if absent.
std::string pid_of(const Response& response) {
  const json& r = response.result;
  if (r.is_object() && r.contains("daemon") && r["daemon"].is_object() && r["daemon"].contains("pid"))
    return r["daemon"]["pid"].dump();
  return "?";
}

// The daemon's state dir from a status answer; empty if absent (older fadd).
std::string state_dir_of(const Response& response) {
  const json& r = response.result;
  if (r.is_object() && r.contains("daemon") && r["daemon"].is_object() && r["daemon"].contains("state_dir") &&
      r["daemon"]["state_dir"].is_string())
    return r["daemon"]["state_dir"].get<std::string>();
  return "";
}

/// Two spellings of one directory (a trailing slash, a symlink, "..").
bool same_dir(const std::string& a, const std::string& b) {
  const auto norm = [](const std::string& p) {
    std::error_code ec;
    fs::path c = fs::weakly_canonical(p, ec);
    c = (ec ? fs::path(p) : c).lexically_normal();
    return c.has_filename() || c == c.root_path() ? c : c.parent_path();
  };
  return norm(a) == norm(b);
}

/// The state dir of the fadd that answered, when the user named another with
/// --state-dir (that fadd is not the one meant); nullopt otherwise.
std::optional<std::string> other_state_dir(const Response& running, const Locations& locations) {
  std::string theirs = state_dir_of(running);
  if (!locations.state_dir_named || theirs.empty() || same_dir(theirs, locations.state_dir)) return std::nullopt;
  return theirs;
}

std::string pid_text(long pid) { return pid > 0 ? std::to_string(pid) : "?"; }

// Nothing at all at the socket's path (not even a dead socket file).
bool socket_missing(const std::string& socket) {
  struct stat st {};
  return ::lstat(socket.c_str(), &st) != 0 && errno == ENOENT;
}

std::string lock_path_in(const std::string& state_dir) {
  return (fs::path(state_dir) / std::string(kLockFileName)).string();
}

// The pid fadd wrote into its lock file; 0 when unreadable.
long pid_in_lock(const std::string& lock_path) { return read_lock_text(lock_path).pid; }

long pid_in_lock_of(const DaemonWatch& watch, const std::string& lock) {
  return watch.holder ? watch.holder(lock) : pid_in_lock(lock);
}

/// A socket path with its directory's links resolved: /var/run/fad/fad.sock
/// and /run/fad/fad.sock name one socket, which may be missing for a moment.
fs::path resolved_socket(const std::string& socket) {
  std::error_code ec;
  const fs::path path = fs::absolute(socket, ec);
  const fs::path dir = fs::weakly_canonical(path.parent_path(), ec);
  return ec ? path : dir / path.filename();
}

/// The other socket the fadd holding `lock` says it listens at, when that is
/// not `socket` (the same path, or another name of the same file, is none).
std::optional<std::string> other_socket_in_lock(const DaemonWatch& watch, const std::string& lock,
                                                const std::string& socket) {
  const std::string serving = watch.serving ? watch.serving(lock) : "";
  if (serving.empty() || resolved_socket(socket) == resolved_socket(serving)) return std::nullopt;
  std::error_code ec;
  if (fs::equivalent(socket, serving, ec) && !ec) return std::nullopt;
  return serving;
}

// A Response when something answers at the socket; nullopt when nothing does.
// A failure waiting cannot mend (a socket fad refuses to trust, no
// permission on it) goes to `refused` when given.
std::optional<Response> probe(Context& ctx, std::optional<CallFailure>* refused = nullptr) {
  CallResult reply = ctx.send(Request{"status", json::object()});
  if (auto* response = std::get_if<Response>(&reply)) return std::move(*response);
  if (auto& failure = std::get<CallFailure>(reply); refused && !failure.retryable) *refused = std::move(failure);
  return std::nullopt;
}

// A start or stop refused by the socket (not trusted, no permission) says so
// at once: it would otherwise take its fadd for one that does not answer, or
// for none, and say nothing of why.
std::optional<int> say_refused(const std::optional<CallFailure>& refused, Context& ctx) {
  if (!refused) return std::nullopt;
  ctx.err << "fad: " << refused->message << "\n";
  return refused->exit_code;
}

std::string read_from(const std::string& path, std::uintmax_t offset) {
  auto text = read_file_slice(path, offset, kSmallFileCap);
  return text ? std::move(*text) : std::string();
}

std::string self_exe() {
  std::error_code ec;
  auto path = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : path.string();
}

// Forks fadd into its own session with stdin from /dev/null and output to `log_fd`.
// Returns the child's pid, or -1 with errno set.
pid_t spawn_detached(const std::vector<std::string>& argv, int log_fd) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) return -1;
  pid_t pid = ::fork();
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    ::setsid();
    ::dup2(null_fd, STDIN_FILENO);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::execv(args[0], args.data());
    const char msg[] = "fad: cannot exec fadd\n";
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::close(null_fd);
  return pid;
}

// The user's own --log-file among fadd's args: the last one, as fadd takes it
// ("" when the last is given no value, which fadd refuses); nullopt for none.
std::optional<std::string> users_log_file(const std::vector<std::string>& extra) {
  std::optional<std::string> own;
  for (std::size_t i = 0; i < extra.size(); ++i) {
    if (extra[i] == "--log-file")
      own = i + 1 < extra.size() ? extra[++i] : "";
    else if (extra[i].rfind("--log-file=", 0) == 0)
      own = extra[i].substr(std::string("--log-file=").size());
  }
  return own;
}

// The fadd `fad daemon start` would run, found as it finds it; nullopt (and
// said) when there is none.
std::optional<std::string> fadd_to_run(Context& ctx) {
  const char* path_env = std::getenv("PATH");
  auto fadd = find_fadd(self_exe(), path_env ? path_env : "");
  if (!fadd) ctx.err << "fad: cannot find fadd next to fad or on PATH\n";
  return fadd;
}

}  // namespace

std::vector<std::string> fadd_argv(const std::string& fadd_path, const Locations& locations,
                                   const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {fadd_path, "--socket", locations.socket, "--state-dir", locations.state_dir};
  if (locations.config) {
    argv.push_back("--config");
    argv.push_back(*locations.config);
  }
  if (!users_log_file(extra)) {
    argv.push_back("--log-file");
    argv.push_back(fadd_log_path(locations, {}));
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

std::string fadd_log_path(const Locations& locations, const std::vector<std::string>& extra) {
  const auto own = users_log_file(extra);
  if (!own || own->empty()) return (fs::path(locations.state_dir) / "fadd.log").string();
  std::error_code ec;
  return fs::absolute(*own, ec).lexically_normal().string();
}

std::string last_lines(std::string_view text, std::size_t n) {
  if (text.empty() || n == 0) return "";
  std::string body(text);
  if (body.back() != '\n') body += '\n';
  std::size_t pos = body.size() - 1;  // the final newline
  for (std::size_t seen = 0; pos > 0; --pos)
    if (body[pos - 1] == '\n' && ++seen == n) break;
  return body.substr(pos);
}

std::optional<std::string> find_fadd(const std::string& self, const std::string& path_env) {
  auto executable = [](const fs::path& p) { return ::access(p.c_str(), X_OK) == 0 && !fs::is_directory(p); };
  if (!self.empty()) {
    fs::path beside = fs::path(self).parent_path() / "fadd";
    if (executable(beside)) return beside.string();
  }
  std::istringstream dirs(path_env);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (dir.empty()) continue;
    fs::path candidate = fs::path(dir) / "fadd";
    if (executable(candidate)) return candidate.string();
  }
  return std::nullopt;
}

int check_new_fadd(const Command& cmd, const Locations& locations, const std::string& meanwhile, Context& ctx) {
  auto fadd = fadd_to_run(ctx);
  if (!fadd) return kExitFailed;
  // First, not last: "-- --cores" must read as a missing value, not as a
  // value "--check" (the start, without it, would say the former).
  std::vector<std::string> argv = fadd_argv(*fadd, locations, cmd.fadd_args);
  argv.insert(argv.begin() + 1, "--check");
  const ProgramRun checked = run_program(argv, static_cast<int>(kStartTimeout.count()));
  if (checked.started && !checked.timed_out && checked.exit_code == 0) return kExitOk;
  std::string why = !checked.started ? checked.error
                    : checked.timed_out
                        ? *fadd + " --check did not answer within " + std::to_string(kStartTimeout.count()) + " s"
                        : checked.output;
  std::vector<std::string> lines;
  std::istringstream said(why);
  for (std::string line; std::getline(said, line);) {
    if (line.rfind("fadd: ", 0) == 0) line.erase(0, 6);
    if (line.find_first_not_of(' ') != std::string::npos) lines.push_back(line);
  }
  const std::string who = meanwhile.empty() ? "fadd" : "a new fadd";
  if (lines.size() == 1) {
    ctx.err << "fad: " << who << " would not start: " << lines.front() << (meanwhile.empty() ? "" : "; " + meanwhile)
            << "\n";
  } else {
    // A config file with several bad keys: fadd's one line for each.
    ctx.err << "fad: " << who << " would not start" << (meanwhile.empty() ? "" : "; " + meanwhile) << ":\n";
    for (const auto& line : lines) ctx.err << "  " << line << "\n";
  }
  // fadd's 2 is a usage error (a bad flag, a bad config), as at a start.
  return checked.started && !checked.timed_out && checked.exit_code == kExitUsage ? kExitUsage : kExitFailed;
}

namespace {

/// A fadd asked to stop closes its socket at its next tick (poll_interval_ms,
/// at most a few seconds on a loaded machine): one still answering after this
/// long is running, and a start says so.
constexpr auto kStoppingAnswers = std::chrono::seconds(5);

/// How long a stop waits for the lock once the fadd it asked has exited.
constexpr auto kLockAfterExit = std::chrono::seconds(5);

/// What became of a fadd that holds the state dir's lock and does not answer yet.
enum class OtherStart {
  answers,   ///< it answers at the socket now
  running,   ///< it went on answering though its lock says it is stopping: it runs
  gone,      ///< it let go of the lock (a restart beside this one stopped it): try again
  stuck,     ///< it still holds the lock and does not answer: refused
  stopping,  ///< it is stopping and has not exited within kStopTimeout: refused
};

/// Another start on this state dir (a second terminal, a restart beside this
/// one) got there first by moments: its fadd holds the lock and answers
/// shortly. Waits for that while the lock's holder is young enough to be
/// starting (or has not written its pid yet): one serving another socket
/// never answers here, and is not waited for. A holder that wrote that it is
/// stopping (a stop or restart beside this start) is waited for as a stop
/// waits, up to kStopTimeout: its compilers may take the kill grace to end.
/// (Not asked whether it is stopped: a fadd exiting under a leak checker is
/// briefly in tracing stop.)
OtherStart wait_for_other_start(const DaemonWatch& watch, const std::string& lock, Context& ctx) {
  auto deadline = ctx.now() + kStartTimeout;
  const double starting_s = std::chrono::duration<double>(kStartTimeout).count();
  long stopping_pid = 0;  // the holder seen stopping, whose exit is waited for
  std::optional<std::chrono::steady_clock::time_point> answering_since;
  while (true) {
    // A fadd that was asked to stop still answers until its next tick; one
    // that goes on answering is not stopping, whatever its lock file says
    // (written by hand, or by a fadd that crashed and came back).
    const bool answers = probe(ctx).has_value();
    const bool locked = watch.locked(lock);
    const long holder = locked ? watch.holder(lock) : 0;
    const bool holder_stopping = holder > 0 && watch.stopping && watch.stopping(lock);
    if (answers && !holder_stopping) return OtherStart::answers;
    if (answers && !answering_since) answering_since = ctx.now();
    if (!answers) answering_since.reset();
    if (answering_since && ctx.now() - *answering_since >= kStoppingAnswers) return OtherStart::running;
    if (!locked) return OtherStart::gone;
    if (holder > 0 && !watch.alive(holder)) return OtherStart::gone;
    if (holder_stopping && holder != stopping_pid) {
      stopping_pid = holder;
      deadline = ctx.now() + kStopTimeout;
    }
    if (ctx.now() >= deadline) return stopping_pid > 0 ? OtherStart::stopping : OtherStart::stuck;
    if (!holder_stopping && holder > 0)
      if (const double age = watch.age_s(holder); age < 0 || age > starting_s) return OtherStart::stuck;
    ctx.sleep(kPollInterval);
  }
}

/// Starts beside other starts and restarts try again at most this often (each
/// round waits for another fadd that then went away).
constexpr int kStartRounds = 5;

int start_daemon(const Command& cmd, const Locations& locations, Context& ctx, const DaemonWatch& watch, bool beaten,
                 int round = 1) {
  // Said when another start got there first: this one's fadd did not run.
  const std::string first = beaten ? "; another start got there first" : "";
  const std::string lock = lock_path_in(locations.state_dir);
  // Another start's fadd holds the lock: once it answers (or goes away), this
  // start begins again; nullopt when it stays silent or the rounds are spent.
  const auto after_other_start = [&]() -> std::optional<int> {
    if (round >= kStartRounds) return std::nullopt;
    const OtherStart other = wait_for_other_start(watch, lock, ctx);
    if (other == OtherStart::stopping) {
      const long pid = pid_in_lock_of(watch, lock);
      ctx.err << "fad: fadd (pid " << pid_text(pid) << ") holds state dir " << locations.state_dir
              << " and is stopping, but has not exited in " << kStopTimeout.count() << " s; ";
      // As a stop says it (at the deadline only: see run_daemon_stop).
      if (pid > 0 && watch.stopped && watch.stopped(pid))
        ctx.err << "it is stopped (SIGSTOP, or a debugger) and cannot exit until continued: 'kill -CONT " << pid
                << "', then run this again\n";
      else
        ctx.err << "see " << fadd_log_path(locations, cmd.fadd_args) << "\n";
      return kExitFailed;
    }
    if (other == OtherStart::stuck) return std::nullopt;
    // The last round takes the answering fadd as it is: "already running".
    if (other == OtherStart::running) return start_daemon(cmd, locations, ctx, watch, false, kStartRounds);
    return start_daemon(cmd, locations, ctx, watch, other == OtherStart::answers, round + 1);
  };
  std::optional<CallFailure> refused;
  auto running = probe(ctx, &refused);
  if (const auto rc = say_refused(refused, ctx)) return *rc;
  if (running) {
    if (auto theirs = other_state_dir(*running, locations)) {
      // The user asked for a fadd on that state dir; this one keeps another.
      ctx.err << "fad: the fadd at " << ctx.socket << " (pid " << pid_of(*running) << ") uses state dir " << *theirs
              << ", not " << locations.state_dir << "; give a second fadd its own socket with --socket\n";
      return kExitFailed;
    }
    // Asked to stop (a stop or restart beside this start), it answers until
    // its next tick: this start waits for it to go, then starts one.
    if (watch.stopping && watch.stopping(lock) && watch.locked(lock))
      if (const auto rc = after_other_start()) return *rc;
    if (!cmd.fadd_args.empty()) {
      // The arguments would be dropped without a word: a typo among them
      // would surface only at the next start, perhaps unattended.
      const std::string meanwhile = "fadd (pid " + pid_of(*running) + ") keeps running as it was";
      if (int rc = check_new_fadd(cmd, locations, meanwhile, ctx); rc != kExitOk) return rc;
      ctx.out << "fadd is already running (pid " << pid_of(*running) << first
              << "); the arguments after -- apply at a start: use 'fad daemon restart -- ...' to apply them now\n";
      return kExitOk;
    }
    ctx.out << "fadd is already running (pid " << pid_of(*running) << first << ")\n";
    return kExitOk;
  }
  // A fadd on this state dir at another socket: said here, before its
  // fadd.out (its crash report) is emptied for a fadd that would be refused.
  // A lock whose recorded fadd is dead is a crashed one's child letting go:
  // fadd itself waits for that.
  // The pid is read once the lock is seen held: a fadd starting writes it after locking.
  const bool lock_held = watch.locked(lock);
  const auto holder = pid_in_lock_of(watch, lock);
  if ((lock_held && watch.alive(holder)) || watch.locked(locations.state_dir)) {
    if (lock_held)
      if (const auto rc = after_other_start()) return *rc;
    ctx.err << "fad: another fadd (pid " << pid_text(holder) << ") holds state dir " << locations.state_dir
            << " but does not answer at " << ctx.socket;
    if (const auto other = other_socket_in_lock(watch, lock, ctx.socket))
      ctx.err << " (it listens at " << printable(*other) << ")";
    else
      ctx.err << (socket_missing(ctx.socket) ? " (nothing is at that path: if its socket was deleted, fadd makes it "
                                               "again within 10 s; or it serves another socket, or is stopped)"
                                             : " (it serves another socket, or is stopped)");
    ctx.err << "; stop it first, or give this one its own --state-dir\n";
    return kExitFailed;
  }
  // Asked before anything is made or emptied: a state dir under a directory
  // another user controls must not have fad create, or truncate through a
  // planted link, what fadd itself would then refuse to touch.
  if (int rc = check_new_fadd(cmd, locations, "", ctx); rc != kExitOk) return rc;
  auto fadd = fadd_to_run(ctx);
  if (!fadd) return kExitFailed;
  std::error_code ec;
  fs::create_directories(locations.state_dir, ec);
  // fadd logs to the rotated fadd.log itself; fadd.out catches only what it
  // prints outside its log (usage errors, a crash report), so it is emptied at
  // each start and never grows.
  const std::string log_path = fadd_log_path(locations, cmd.fadd_args);
  const std::string out_path = (fs::path(locations.state_dir) / "fadd.out").string();
  // A second name for another file (a hard link planted there) is dropped,
  // not emptied: O_TRUNC would empty that file too.
  if (struct stat st{}; ::lstat(out_path.c_str(), &st) == 0 && (st.st_nlink > 1 || !S_ISREG(st.st_mode)))
    ::unlink(out_path.c_str());
  int out_fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (out_fd < 0) {
    ctx.err << "fad: cannot open " << out_path << ": " << std::strerror(errno) << "\n";
    return kExitFailed;
  }
  const auto log_start = fs::file_size(log_path, ec);  // show only this run's lines on failure
  const bool log_existed = !ec;
  pid_t pid = spawn_detached(fadd_argv(*fadd, locations, cmd.fadd_args), out_fd);
  const int spawn_errno = errno;
  ::close(out_fd);
  if (pid < 0) {
    ctx.err << "fad: cannot start " << *fadd << ": " << std::strerror(spawn_errno) << "\n";
    return kExitFailed;
  }

  const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      // Refused the lock another start's fadd took a moment before (the lock
      // names a fadd that is neither this one nor the one before): not a
      // failure, even if a restart beside this one has stopped that one since.
      if (const long other = watch.holder(lock); other > 0 && other != pid && other != holder)
        if (const auto rc = after_other_start()) return *rc;
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      if (code == 0) {
        // fadd exits 0 only when asked to stop (fad refuses the flags that
        // make it exit at once): it came up, and another stop or restart,
        // polling faster than this start, stopped it before this start saw it
        // answer.
        ctx.out << "fadd started (pid " << pid << ") and was stopped again since, by another stop or restart\n";
        return kExitOk;
      }
      ctx.err << "fad: fadd exited during startup (status " << code << ")\n";
      const std::string printed = last_lines(read_from(out_path, 0), kLogTailLines);
      // A log rotated since (or written over) is shorter than where it began: read it all.
      const auto log_now = fs::file_size(log_path, ec);
      const bool same_log = log_existed && !ec && log_now >= log_start;
      const std::string logged = last_lines(read_from(log_path, same_log ? log_start : 0), kLogTailLines);
      if (!printed.empty()) ctx.err << "last lines of " << out_path << ":\n" << printed;
      if (!logged.empty()) ctx.err << "last lines of " << log_path << ":\n" << logged;
      // fadd's 2 is the contract's usage error (a bad flag, a bad config):
      // a script told 1 would retry what only an edit fixes.
      return code == kExitUsage ? kExitUsage : kExitFailed;
    }
    // Only this start's own fadd (or its child: a wrapper script that does not
    // exec it): another start's answering first means this one's will find
    // the lock taken and exit (seen above).
    const auto answered = probe(ctx);
    const long answering = answered ? std::strtol(pid_of(*answered).c_str(), nullptr, 10) : 0;
    if (answering > 0 && (answering == pid || parse_stat_ppid(proc_stat_line(answering)) == pid)) {
      ctx.out << "fadd started (pid " << pid << "), socket " << locations.socket << ", log " << log_path << "\n";
      return kExitOk;
    }
    ctx.sleep(kPollInterval);
  }
  ctx.err << "fad: fadd (pid " << pid << ") did not answer at " << locations.socket << " within "
          << kStartTimeout.count() << " s; see " << log_path << "\n";
  return kExitFailed;
}

}  // namespace

int run_daemon_start(const Command& cmd, const Locations& locations, Context& ctx, const DaemonWatch& watch) {
  return start_daemon(cmd, locations, ctx, watch, false);
}

int run_daemon_start(const Command& cmd, const Locations& locations, Context& ctx) {
  return run_daemon_start(cmd, locations, ctx, real_daemon_watch());
}

DaemonWatch real_daemon_watch() {
  DaemonWatch w;
  w.alive = [](long pid) {
    if (pid <= 0) return false;
    // A zombie has exited; only its parent's wait is missing (a test harness,
    // a shell that started fadd in the foreground).
    if (const std::string line = proc_stat_line(pid); !line.empty()) return parse_stat_state(line) != 'Z';
    return process_exists(static_cast<pid_t>(pid));
  };
  w.holder = pid_in_lock;
  w.stopped = [](long pid) {
    const auto state = parse_stat_state(proc_stat_line(pid));
    return state == 'T' || state == 't';
  };
  w.age_s = [](long pid) {
    const auto start = parse_stat_start_ticks(proc_stat_line(pid));
    double uptime = -1;
    std::ifstream("/proc/uptime") >> uptime;
    const long ticks = ::sysconf(_SC_CLK_TCK);
    if (!start || uptime < 0 || ticks <= 0) return -1.0;
    return uptime - static_cast<double>(*start) / static_cast<double>(ticks);
  };
  w.stopping = [](const std::string& lock_path) { return read_lock_text(lock_path).stopping; };
  w.serving = [](const std::string& lock_path) { return read_lock_text(lock_path).socket; };
  w.locked = lock_held;
  return w;
}

int run_daemon_stop(const Locations& locations, Context& ctx, const DaemonWatch& watch) {
  std::optional<CallFailure> refused;
  auto running = probe(ctx, &refused);
  if (const auto rc = say_refused(refused, ctx)) return *rc;
  long pid = 0;
  std::string state_dir = locations.state_dir;
  // The fadd that answered, as this stop sees it: refused when it keeps
  // another state dir (--state-dir names one fadd, the socket reached another:
  // stopping it would stop the wrong one).
  auto take_answer = [&](const Response& answer) {
    if (auto theirs = other_state_dir(answer, locations)) {
      ctx.err << "fad: the fadd at " << ctx.socket << " uses state dir " << *theirs << ", not " << locations.state_dir
              << "; name the socket of the one to stop with --socket\n";
      return false;
    }
    const std::string theirs = state_dir_of(answer);
    if (!theirs.empty()) state_dir = theirs;
    pid = std::strtol(pid_of(answer).c_str(), nullptr, 10);
    return true;
  };
  // One that goes away mid-request (another stop or restart asked it too) is
  // on its way out: waited for as if this stop had asked.
  auto ask = [&]() -> std::optional<int> {
    const CallResult reply = ctx.send(Request{"shutdown", json::object()});
    const auto* failure = std::get_if<CallFailure>(&reply);
    const auto* response = std::get_if<Response>(&reply);
    if ((failure && !failure->gone) || (response && !response->ok)) return report(ctx, reply);
    return std::nullopt;
  };
  if (running && !take_answer(*running)) return kExitFailed;
  std::string lock = lock_path_in(state_dir);
  if (!running) {
    // Nothing answers, but a fadd may still be on its way out (after SIGTERM or
    // an earlier stop): a start now would find the state dir locked.
    if (!watch.locked(lock)) {
      ctx.out << "fadd is not running (nothing answers at " << ctx.socket << ")\n";
      return kExitOk;
    }
    pid = pid_in_lock_of(watch, lock);
    if (locations.socket_named && !locations.state_dir_named) {
      // The lock is the default state dir's, the socket the user's own: the
      // fadd holding it may serve any socket, so it is not waited for.
      ctx.out << "fadd is not running at " << ctx.socket << " (nothing answers there); the fadd holding " << lock
              << " (pid " << pid_text(pid)
              << ") serves another socket or is exiting: name its state dir with --state-dir to stop it\n";
      return kExitOk;
    }
    // One that wrote it listens elsewhere is neither starting nor stopping:
    // waiting would wait the whole timeout for an exit nobody asked for.
    if (const auto other = other_socket_in_lock(watch, lock, ctx.socket);
        other && !(watch.stopping && watch.stopping(lock))) {
      // What the lock says is its writer's word: shown printable.
      ctx.err << "fad: the fadd holding " << lock << " (pid " << pid_text(pid) << ") listens at " << printable(*other)
              << ", not " << ctx.socket << "; to stop it: fad daemon stop --socket " << shell_word(printable(*other))
              << "\n";
      return kExitFailed;
    }
    ctx.out << "fadd does not answer at " << ctx.socket << " but still holds " << lock << " (pid " << pid_text(pid)
            << "); waiting for it to exit"
            << (locations.state_dir_named ? " (if it serves another socket, name it with --socket)" : "") << "\n";
    ctx.out.flush();
  } else if (auto failed = ask()) {
    return *failed;
  }
  auto deadline = ctx.now() + kStopTimeout;
  bool alive = true, locked = true;
  std::optional<std::chrono::steady_clock::time_point> exited_at;  // the asked fadd's pid seen gone
  while (true) {
    alive = pid > 0 && watch.alive(pid);
    locked = watch.locked(lock);
    if (!alive && !locked) {
      ctx.out << "fadd stopped (pid " << pid_text(pid) << ")\n";
      return kExitOk;
    }
    if (running && !alive && pid > 0 && !exited_at) exited_at = ctx.now();
    // Gone, and its lock already another fadd's (a restart beside this
    // one): waiting for that lock would wait for the wrong fadd.
    if (!alive && locked && pid > 0 && watch.holder)
      if (const long next = watch.holder(lock); next > 0 && next != pid && watch.alive(next)) {
        ctx.out << "fadd stopped (pid " << pid << "); another fadd (pid " << next << ") has since started on "
                << state_dir << "\n";
        return kExitOk;
      }
    if (!running && (pid <= 0 || alive)) {
      // Never asked: the fadd holding the lock may be one still starting up
      // (a stop right after a start, or beside a restart), which takes the
      // lock before it listens and would never exit on its own. Once it
      // answers, it is asked like any other.
      if ((running = probe(ctx))) {
        if (!take_answer(*running)) return kExitFailed;
        lock = lock_path_in(state_dir);
        ctx.out << "fadd (pid " << pid_text(pid) << ") now answers at " << ctx.socket << ": asking it to stop\n";
        ctx.out.flush();
        if (auto failed = ask()) return *failed;
        deadline = ctx.now() + kStopTimeout;
        continue;
      }
      if (pid <= 0) pid = pid_in_lock_of(watch, lock);  // written a moment after the lock is taken
    }
    // A child it forked an instant before exiting lets go within
    // milliseconds; past this, what holds the lock is not fadd's.
    if (exited_at && ctx.now() - *exited_at >= kLockAfterExit) break;
    if (ctx.now() >= deadline) break;
    ctx.sleep(kPollInterval);
  }
  const std::string who = "fadd (pid " + pid_text(pid) + ")";
  if (running && !alive && pid > 0 && locked) {
    ctx.err << "fad: " << who << " has exited, but " << lock << " is still locked by another process ('fuser " << lock
            << "' names it); a start fails while it holds on\n";
    return kExitFailed;
  }
  if (alive && watch.stopped && watch.stopped(pid)) {
    // Not another socket's fadd, nor a slow one: it cannot act on anything.
    // Said only at the deadline: an exiting fadd under a leak checker is
    // briefly in tracing stop too, and was once taken for a stopped one.
    ctx.err << "fad: " << who << " is stopped (SIGSTOP, or a debugger) and cannot exit until continued: "
            << "'kill -CONT " << pid << "', then run this again\n";
    return kExitFailed;
  }
  // Only what still holds on is named: a lock this user cannot open reads as free.
  std::string holding = alive ? "the process is still running" : "";
  if (locked) holding += std::string(holding.empty() ? "" : ", ") + lock + " is still locked";
  if (!running) {
    // Never asked: it answers at no socket named here.
    ctx.err << "fad: " << who << " has not exited in " << kStopTimeout.count() << " s (" << holding
            << ") and does not answer at " << ctx.socket
            << ": if it serves another socket, name that one with --socket; see "
            << (fs::path(state_dir) / "fadd.log").string() << "\n";
    return kExitFailed;
  }
  ctx.err << "fad: " << who << " has not exited " << kStopTimeout.count() << " s after being asked to stop (" << holding
          << "); see " << (fs::path(state_dir) / "fadd.log").string() << "\n";
  return kExitFailed;
}

int run_daemon_restart(const Command& cmd, const Locations& locations, Context& ctx) {
  // The new fadd keeps the state dir of the one it replaces, unless one is
  // named (and then stop checks that it is the running one's): started on the
  // default, it would come back with none of its builds or history.
  Locations again = locations;
  std::optional<CallFailure> refused;
  const auto running = probe(ctx, &refused);
  if (const auto rc = say_refused(refused, ctx)) return *rc;
  if (!locations.state_dir_named && running)
    if (const std::string theirs = state_dir_of(*running); !theirs.empty()) again.state_dir = theirs;
  // Asked before the stop, whether or not fadd answered (a stopped or busy
  // one may not, and still be stopped below): a typo in the new arguments, or
  // a fadd that cannot be found, must not leave the machine with no daemon.
  const std::string meanwhile = running ? "fadd (pid " + pid_of(*running) + ") keeps running" : "nothing was stopped";
  if (int rc = check_new_fadd(cmd, again, meanwhile, ctx); rc != kExitOk) return rc;
  if (int rc = run_daemon_stop(locations, ctx); rc != kExitOk) return rc;
  return run_daemon_start(cmd, again, ctx);
}

}  // namespace fad::client
