// fad run; see run_command.h.
#include "client/run_command.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <optional>
#include <thread>

#include "client/cli.h"
#include "client/command_leftovers.h"
#include "client/connection.h"
#include "client/exit_codes.h"
#include "client/launcher.h"
#include "client/progress.h"
#include "client/shim_dir.h"
#include "common/exit_status.h"
#include "common/json_fields.h"
#include "common/launch_protocol.h"
#include "common/process_exists.h"
#include "common/size.h"
#include "common/suggest.h"
#include "common/text.h"

namespace fad::client {

namespace fs = std::filesystem;

const char* const kRunHelp =
    "Usage: fad run [--budget SIZE] [--name NAME] [--socket PATH] -- CMD [ARGS...]\n"
    "Runs a build command with every nvcc call scheduled by fadd.\n"
    "  --budget SIZE   memory this build's compiles may hold together (e.g. 12G)\n"
    "  --name NAME     the build's name in 'fad status' (default: the command)\n"
    "  --socket PATH   fadd's socket\n"
    "  --config FILE   the config file to find fadd's socket in\n"
    "  --color WHEN    auto, always or never (fad run adds no colour of its own)\n"
    "Sets PYTORCH_NVCC, CMAKE_CUDA_COMPILER_LAUNCHER, CUDACXX (when unset), an nvcc\n"
    "shim first on PATH, LD_PRELOAD (every exec of an nvcc goes through fad launch),\n"
    "MAX_JOBS (when unset, and fadd answers) and unsets NVCC_THREADS.\n";

namespace {
pid_t g_child = 0;
/// A SIGINT, SIGTERM or SIGHUP that came before the command started: the
/// command is then never started.
volatile sig_atomic_t g_early_signal = 0;
/// The first one passed on to the command: fadd records the build cancelled
/// when the command then fails.
volatile sig_atomic_t g_passed_on = 0;
/// Set as the command is reaped: a signal after that has nobody to go to
/// (the pid may be another process's by then) and interrupted nothing.
volatile sig_atomic_t g_command_ended = 0;
/// "/proc/PID/stat" and "/proc/PID/status" of the command, written before a
/// signal can reach forward().
char g_child_stat[64] = {};
char g_child_status[64] = {};

/// Reads up to `size` bytes of `path`; -1 when it cannot. Async-signal-safe.
ssize_t read_proc(const char* path, char* buf, std::size_t size) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  const ssize_t n = ::read(fd, buf, size);
  ::close(fd);
  return n;
}

/// Whether the zombie command's other threads run on ("Threads:" above 1):
/// its main thread exited, the process did not. Async-signal-safe.
bool threads_left() {
  char buf[4096];
  const ssize_t n = read_proc(g_child_status, buf, sizeof buf);
  static constexpr char kKey[] = "\nThreads:";
  for (ssize_t i = 0; i + static_cast<ssize_t>(sizeof kKey) < n; ++i) {
    if (std::memcmp(buf + i, kKey, sizeof kKey - 1) != 0) continue;
    long threads = 0;
    for (ssize_t j = i + static_cast<ssize_t>(sizeof kKey) - 1; j < n && buf[j] != '\n'; ++j)
      if (buf[j] >= '0' && buf[j] <= '9') threads = threads * 10 + (buf[j] - '0');
    return threads > 1;
  }
  return false;
}

/// Whether the command has exited, not yet reaped (its stat says 'Z' and no
/// thread of it runs): a signal then stopped nothing. Async-signal-safe:
/// open, read and close only.
bool child_exited() {
  char buf[1024];
  const ssize_t n = read_proc(g_child_stat, buf, sizeof buf);
  if (n < 0) return true;
  for (ssize_t i = n - 1; i > 0; --i)
    if (buf[i] == ')') return i + 2 < n && (buf[i + 2] == 'X' || (buf[i + 2] == 'Z' && !threads_left()));
  return n <= 0;
}

void forward(int sig) {
  const int saved_errno = errno;
  if (g_command_ended) {
    // (nothing to pass on to)
  } else if (g_child > 0) {
    if (!child_exited()) {
      ::kill(g_child, sig);
      ::kill(g_child, SIGCONT);  // a stopped command acts on it once continued
      if (g_passed_on == 0) g_passed_on = sig;
    }
  } else {
    g_early_signal = sig;
  }
  errno = saved_errno;
}

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP};

sigset_t forwarded_signals() {
  sigset_t set;
  ::sigemptyset(&set);
  for (int sig : kForwarded) ::sigaddset(&set, sig);
  return set;
}

// How often fad run looks at its build while the command runs, and how long
// the build must be held up before the terminal is told.
constexpr auto kWatchEvery = std::chrono::seconds(2);
constexpr double kStallNoteS = 5;
// How long a stopped command's leftovers have after their SIGTERM, as fadd
// gives a cancelled compiler.
constexpr auto kLeftoverGrace = std::chrono::seconds(5);

std::optional<json> build_status(const std::string& socket, std::int64_t id) {
  StatusRequest req;
  req.id = id;
  auto reply = call_daemon(socket, Request{"status", req.to_json()}, std::chrono::seconds(10));
  auto* r = std::get_if<Response>(&reply);
  if (!r || !r->ok) return std::nullopt;
  auto builds = r->result.find("builds");
  if (builds == r->result.end() || !builds->is_array() || builds->empty()) return std::nullopt;
  return builds->front();
}

// How the command ended, beside the exit code fad run returns.
struct CommandEnd {
  bool cancelled = false;    ///< its build was cancelled (fad cancel), seen while it ran or after
  bool stopped = false;      ///< fad run sent it the cancel's SIGTERM while it ran
  bool exited_zero = false;  ///< the command itself exited 0
};

// Waits for the command; meanwhile, once per stretch in which the build (when
// fadd opened one) has compiles queued and none running for a few seconds,
// says why on stderr. Returns the exit code fad run returns.
int wait_and_watch(pid_t child, const std::string& socket, std::optional<std::int64_t> id, CommandEnd* end) {
  using Clock = std::chrono::steady_clock;
  auto next_look = Clock::now() + kWatchEvery;
  std::optional<Clock::time_point> stalled_since;
  bool told = false, stopping = false, killed = false;
  Clock::time_point stop_sent;
  const sigset_t forwarded = forwarded_signals();
  for (;;) {
    // Reaped with the signals held: one that comes after the command exited
    // (while fadd is asked about the build) did not stop it, and the build
    // it failed is not recorded cancelled.
    // What the command left running comes to fad run as it exits (its
    // subreaper) and is reaped here too.
    sigset_t mask;
    ::sigprocmask(SIG_BLOCK, &forwarded, &mask);
    const std::optional<int> ended = reap_children(child);
    if (ended) g_command_ended = 1;
    ::sigprocmask(SIG_SETMASK, &mask, nullptr);
    if (ended) {
      const int status = *ended;
      end->cancelled = end->stopped = stopping;
      end->exited_zero = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      // Cancelled, the command exits as stopped by SIGTERM, whatever it said:
      // a make whose compiles fadd ended exits 2 before this fad run sees
      // the cancel, and a CI job could not tell a cancel from a broken build.
      if (stopping) return 128 + SIGTERM;
      if (id)
        if (const auto build = build_status(socket, *id); build && build->value("state", "") == "cancelled") {
          // As recorded: a cancel seen only after the exit still ends the
          // build cancelled, so the exit code says so too.
          end->cancelled = true;
          return 128 + SIGTERM;
        }
      return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
    }
    if (!process_exists(child)) return 1;  // reaped by nobody here: cannot happen, but never spin
    if (id && Clock::now() >= next_look) {
      next_look = Clock::now() + kWatchEvery;
      auto build = build_status(socket, *id);
      if (build && !stopping && build->value("state", "") == "cancelled") {
        // `fad cancel` of this build stops its command, as Ctrl-C would:
        // its later compiles would otherwise run around fadd.
        std::cerr << "fad run: build " << *id << " was cancelled; stopping the command\n";
        ::kill(child, SIGTERM);
        ::kill(child, SIGCONT);
        stopping = true;
        stop_sent = Clock::now();
      }
      auto note = build ? stall_note(*build) : std::nullopt;
      if (!note) {
        stalled_since.reset();
        told = false;
      } else {
        if (!stalled_since) stalled_since = Clock::now();
        if (!told && std::chrono::duration<double>(Clock::now() - *stalled_since).count() >= kStallNoteS) {
          std::cerr << "fad: " << *note << "\n";
          told = true;
        }
      }
    }
    // A command that ignores the cancel's SIGTERM would compile on around
    // fadd: it gets what fadd gives a cancelled compiler, SIGKILL 5 s later.
    if (stopping && !killed && Clock::now() - stop_sent >= kLeftoverGrace) {
      std::cerr << "fad run: the command did not stop within " << kLeftoverGrace.count()
                << " s of its SIGTERM; killing it\n";
      ::kill(child, SIGKILL);
      killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// A busy fadd (its connections all taken for now) is asked again: a build
// left open would end failed once fadd found this fad run gone. Returns the
// last failure when fadd never took the close.
std::optional<CallFailure> close_build(const std::string& socket, const CloseBuildRequest& close) {
  // A busy fadd answers within seconds; one restarting (systemctl restart,
  // its compilers given their kill grace) or whose deleted socket it makes
  // again (every 10 s) is back within seconds too. One that stays away ends
  // the build itself later ("fad run (pid N) ended without reporting its
  // command's exit").
  constexpr auto kAbsentFor = std::chrono::seconds(30);
  const auto start = std::chrono::steady_clock::now();
  bool said = false;
  for (auto pause = std::chrono::milliseconds(100);; pause = std::min(pause * 2, std::chrono::milliseconds(2000))) {
    const auto r = call_daemon(socket, Request{"close_build", close.to_json()});
    const auto* failure = std::get_if<CallFailure>(&r);
    if (!failure) return std::nullopt;
    if (!failure->retryable) return *failure;
    const auto waited = std::chrono::steady_clock::now() - start;
    if (waited >= (failure->busy ? std::chrono::seconds(60) : kAbsentFor)) return *failure;
    if (!said && !failure->busy) {
      std::cerr << "fad: cannot reach fadd to close build " << close.id << " ("
                << (failure->cause.empty() ? failure->message : failure->cause) << "); retrying for up to "
                << kAbsentFor.count() << " s\n";
      said = true;
    }
    std::this_thread::sleep_for(pause);
  }
}

/// The options fad run and fad launch both take, and those only fad run takes.
const std::vector<std::string> kEntryOptions = {"--socket", "--config", "--color", "--help"};
const std::vector<std::string> kRunOptions = {"--budget", "--name"};

/// Every word fad run and fad launch read as one of their own options.
bool entry_option_word(const std::string& word) {
  auto is = [&](const std::string& own) { return word == own || (word.size() > 2 && word.rfind(own + "=", 0) == 0); };
  return word == "-h" || word == "--" || std::any_of(kEntryOptions.begin(), kEntryOptions.end(), is) ||
         std::any_of(kRunOptions.begin(), kRunOptions.end(), is);
}

/// The value of option `name` at args[i] ("--name=V", or "--name V" taking
/// the next word); "" and `error` set when there is none. The next word is
/// not taken when it is one of our own options: `fad run --socket --name x
/// -- make` would otherwise run "x" outside fadd.
std::string entry_option_value(const std::vector<std::string>& args, std::size_t& i, const std::string& name,
                               const std::string& mode, std::string* error) {
  const std::string& a = args[i];
  const std::string see = " (see 'fad " + mode + " --help')";
  if (a.size() > name.size() && a[name.size()] == '=') {
    // "--name=--socket" as fad's other commands take it: meant as the option.
    std::string value = a.substr(name.size() + 1);
    if (value != "--" && entry_option_word(value))
      *error = name + ": needs a value, got the option '" + value + "'" + see;
    return value;
  }
  if (i + 1 >= args.size()) {
    *error = name + ": needs a value" + see;
    return {};
  }
  // No socket, config or budget starts with "--" (`--socket --json` once ran
  // the build without fadd); a name may.
  if (entry_option_word(args[i + 1]) || (name != "--name" && args[i + 1].rfind("--", 0) == 0)) {
    *error = name + ": needs a value, got " + (args[i + 1] == "--" ? "'--'" : "the option '" + args[i + 1] + "'") + see;
    return {};
  }
  return args[++i];
}

}  // namespace

bool take_entry_option(const std::vector<std::string>& args, std::size_t& i, EntryOptions* out, std::string* error,
                       const std::string& mode) {
  const std::string& a = args[i];
  const std::string name = a.rfind("--", 0) == 0 ? a.substr(0, a.find('=')) : a;
  if (name != "--socket" && name != "--config" && name != "--color") return false;
  const std::string see = " (see 'fad " + mode + " --help')";
  if (!out->given.insert(name).second) {
    *error = name + ": given more than once; give it once" + see;
    return true;
  }
  const std::string value = entry_option_value(args, i, name, mode, error);
  if (!error->empty()) return true;
  if (value.empty())
    *error = name + ": the value is empty" + see;
  else if (name == "--color" && value != "auto" && value != "always" && value != "never")
    *error = "--color must be auto, always or never, got '" + value + "'" + see;
  else if (name == "--socket")
    out->socket = value;
  else if (name == "--config")
    out->config = value;  // --color is checked, and has nothing to colour here
  return true;
}

std::string unknown_entry_option(const std::string& option, const std::vector<std::string>& own,
                                 const std::string& mode) {
  std::vector<std::string> names = kEntryOptions;
  names.insert(names.end(), own.begin(), own.end());
  return unknown_option(option, names) + " (see 'fad " + mode + " --help')";
}

std::string parse_run_args(const std::vector<std::string>& args, RunOptions* out) {
  out->entry.given.clear();
  std::size_t i = 0;
  for (; i < args.size(); ++i) {
    const auto& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    std::string error;
    if (take_entry_option(args, i, &out->entry, &error, "run")) {
      if (!error.empty()) return error;
      continue;
    }
    const std::string name = a.rfind("--", 0) == 0 ? a.substr(0, a.find('=')) : a;
    if (name == "--budget" || name == "--name") {
      if (!out->entry.given.insert(name).second)
        return name + ": given more than once; give it once (see 'fad run --help')";
      const std::string v = entry_option_value(args, i, name, "run", &error);
      if (!error.empty()) return error;
      if (name == "--budget") {
        auto size = parse_size(v);
        const std::string see = " (see 'fad run --help')";
        if (v.empty()) return "--budget: the value is empty" + see;
        if (!size) return "--budget: " + size.error() + see;
        if (auto problem = memory_size_problem(*size, v, "budget"); !problem.empty())
          return "--budget: " + problem + see;
        out->budget = v;
      } else {
        // Checked here, not only by fadd: without fadd the command would
        // run, and the same line fail once fadd is back.
        if (auto problem = build_name_problem(v); !problem.empty())
          return "--name: " + problem + " (see 'fad run --help')";
        out->name = v;
      }
    } else if (a == "--help" || a == "-h") {
      return "help";
    } else if (a.rfind("-", 0) == 0) {
      return unknown_entry_option(a, kRunOptions, "run");
    } else if (auto dash = dash_lookalike(a); !dash.empty()) {
      return dash + " (see 'fad run --help')";  // not a command named "—name"
    } else {
      break;  // the command starts here
    }
  }
  out->command.assign(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
  if (out->command.empty()) return "no command to run (usage: fad run [OPTIONS] -- CMD [ARGS...])";
  if (out->command.front().empty()) return "the command to run is empty (usage: fad run [OPTIONS] -- CMD [ARGS...])";
  return {};
}

std::string intercept_library() {
  if (const char* lib = std::getenv("FAD_INTERCEPT_LIB"); lib && *lib) return lib;
  const fs::path bin = fs::path(self_exe()).parent_path();
  for (const fs::path& candidate :
       {bin / "libfad-intercept.so", bin / ".." / FAD_INSTALL_LIBDIR / "fad" / "libfad-intercept.so"}) {
    std::error_code ec;
    if (fs::exists(candidate, ec)) return fs::canonical(candidate, ec).string();
  }
  return {};
}

int run_build_command(const RunOptions& o) {
  // From the start a Ctrl-C is fad run's to pass on: one before the command
  // starts (while fadd is asked, too) closes the build at once, not 30 s
  // after fadd finds this fad run gone. fad run must see these signals to
  // pass them on; the command gets the dispositions and mask fad run was
  // given. One it was started ignoring (nohup's SIGHUP) stays ignored by
  // both: it neither keeps the command from starting nor cancels the build.
  struct sigaction given[std::size(kForwarded)] = {};
  struct sigaction sa {};
  sa.sa_handler = forward;
  for (std::size_t k = 0; k < std::size(kForwarded); ++k) {
    ::sigaction(kForwarded[k], nullptr, &given[k]);
    if (given[k].sa_handler != SIG_IGN) ::sigaction(kForwarded[k], &sa, nullptr);
  }
  const sigset_t forwarded = forwarded_signals();
  sigset_t given_mask;
  ::sigprocmask(SIG_UNBLOCK, &forwarded, &given_mask);
  auto early_stop = [] { return g_early_signal != 0; };
  auto not_run = [&] {
    std::cerr << "fad run: " << signal_name(g_early_signal) << " before the command started; it was not run\n";
    return 128 + g_early_signal;
  };

  // 1. Open the build. Without fadd the command still runs, its compiles
  //    routed through launchers that wait for memory on their own.
  if (early_stop()) return not_run();
  OpenBuildRequest open{o.name, join(o.command, " "), std::nullopt};
  if (!o.budget.empty()) open.budget_bytes = *parse_size(o.budget);
  // A Ctrl-C ends the wait for a stopped or hung fadd at once; fadd does not
  // carry out a request whose client hung up before it was read.
  auto opened =
      call_daemon(o.entry.socket, Request{"open_build", open.to_json()}, std::chrono::seconds(60), nullptr, early_stop);
  std::optional<std::int64_t> id;
  const auto* answer = std::get_if<Response>(&opened);
  if (answer && answer->ok) id = answer->result.at("id").get<std::int64_t>();
  if (!id && early_stop()) return not_run();
  // A request fadd calls malformed would be as wrong without it: no fallback.
  if (answer && !answer->ok && answer->code == ErrorCode::usage) {
    std::cerr << "fad run: " << answer->message << "\n";
    return kExitUsage;
  }
  if (id)
    std::cerr << "fad run: build " << *id << " (follow it with 'fad watch " << *id << "' or 'fad status " << *id
              << "')\n";
  else
    std::cerr << "fad: "
              << (answer ? "fadd refused the build (" + answer->message + ")"
                         : "fadd is not reachable at " + o.entry.socket)
              << "; running the command with its compiles admitted one at a time, more as memory allows "
                 "(MAX_JOBS is left as it is)\n";

  // 2. The environment that routes nvcc through fad.
  const std::string fad = self_exe();
  const std::string shim_dir = make_shim_dir("/tmp", fad);
  const char* shim = shim_dir.empty() ? nullptr : shim_dir.c_str();
  const std::string nvcc = real_nvcc(shim_dir);
  if (id) ::setenv("FAD_BUILD_ID", std::to_string(*id).c_str(), 1);
  ::setenv("FAD_SOCKET", o.entry.socket.c_str(), 1);
  if (!nvcc.empty()) {
    ::setenv("FAD_REAL_NVCC", nvcc.c_str(), 1);
    ::setenv("CUDACXX", nvcc.c_str(), 0);  // CMake records the real compiler, not the shim
  }
  if (shim) {
    const std::string path = std::string(shim) + ":" + (std::getenv("PATH") ? std::getenv("PATH") : "");
    ::setenv("PATH", path.c_str(), 1);
    ::setenv("PYTORCH_NVCC", (std::string(shim) + "/nvcc").c_str(), 1);
  }
  ::setenv("CMAKE_CUDA_COMPILER_LAUNCHER", (fad + ";launch").c_str(), 0);
  // Scripts that set PYTORCH_NVCC themselves or call nvcc by path: every exec
  // of an nvcc in the command's process tree goes through fad launch.
  if (const std::string lib = intercept_library(); !lib.empty()) {
    const char* preload = std::getenv("LD_PRELOAD");
    ::setenv("LD_PRELOAD", (lib + (preload && *preload ? std::string(" ") + preload : "")).c_str(), 1);
    ::setenv("FAD_INTERCEPT_FAD", fad.c_str(), 1);
#if defined(__SANITIZE_ADDRESS__)
    // fad built with ASan (tests) must accept the preloaded library before its runtime.
    const char* asan = std::getenv("ASAN_OPTIONS");
    ::setenv("ASAN_OPTIONS", ((asan && *asan ? std::string(asan) + ":" : "") + "verify_asan_link_order=0").c_str(), 1);
#endif
  } else {
    std::cerr << "fad: libfad-intercept.so not found beside " << fad
              << "; nvcc calls that bypass PATH and PYTORCH_NVCC run unscheduled\n";
  }
  // Enough candidates for fad to choose from; fad, not the job count, bounds
  // memory. Only with fadd: the fallback admits one compile at a time anyway.
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  if (id) ::setenv("MAX_JOBS", std::to_string(4 * cores).c_str(), 0);
  ::unsetenv("NVCC_THREADS");

  // 3. Run the command, passing Ctrl-C on. Signals wait across the fork:
  //    one that comes then reaches the command once fad run knows its pid,
  //    and kills the child as it would the command.
  int code = 1;
  adopt_orphans();
  // What this process has already (a script's `exec fad run` leaves its
  // children here) is not the command's to leave behind.
  const std::vector<ProcessId> inherited = current_descendants();
  ::sigprocmask(SIG_BLOCK, &forwarded, nullptr);
  if (!early_stop()) {
    g_child = ::fork();
    if (g_child == 0) {
      for (std::size_t k = 0; k < std::size(kForwarded); ++k) ::sigaction(kForwarded[k], &given[k], nullptr);
      ::sigprocmask(SIG_SETMASK, &given_mask, nullptr);
      ::_exit(exec_direct(o.command));
    }
    if (g_child > 0) {
      std::snprintf(g_child_stat, sizeof g_child_stat, "/proc/%d/stat", static_cast<int>(g_child));
      std::snprintf(g_child_status, sizeof g_child_status, "/proc/%d/status", static_cast<int>(g_child));
    }
  }
  ::sigprocmask(SIG_UNBLOCK, &forwarded, nullptr);
  CommandEnd end;
  if (g_child > 0) {
    code = wait_and_watch(g_child, o.entry.socket, id, &end);
    // Stopped, the command may have left its children running (a kill of
    // this pid reaches the command's process only): they end with it, as do
    // a cancelled build's, whatever its command said once fad run stopped
    // it. A command that exited 0 after a signal (one it handled) or before
    // fad run saw a cancel did its work: what it left is its own, as when it
    // exits on its own.
    if (end.stopped || ((end.cancelled || g_passed_on != 0) && !end.exited_zero))
      if (const std::size_t ended = end_leftovers(inherited, kLeftoverGrace))
        std::cerr << "fad run: ended " << ended << (ended == 1 ? " process" : " processes")
                  << " the stopped command left running\n";
  } else if (g_early_signal != 0) {
    code = not_run();
  }

  // 4. Close the build with the command's result, and the signal it was
  //    stopped with (the user's Ctrl-C: cancelled, not failed).
  if (id) {
    const int interrupted_by = g_early_signal != 0 ? g_early_signal : g_passed_on;
    if (const auto unclosed = close_build(o.entry.socket, CloseBuildRequest{*id, std::min(code, 255), interrupted_by}))
      std::cerr << "fad: build " << *id << " stays open (" << unclosed->message
                << "); fadd ends it as failed once it finds this fad run gone\n";
    else if (auto build = build_status(o.entry.socket, *id))
      std::cerr << render_run_summary(*build);
  }
  if (shim) {
    std::error_code ec;
    fs::remove_all(shim, ec);
  }
  return code;
}

}  // namespace fad::client
