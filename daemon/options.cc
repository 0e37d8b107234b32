// fadd's options; see options.h.
#include "daemon/options.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <iterator>
#include <utility>

#include <CLI/CLI.hpp>

#include "common/cli_flags.h"
#include "common/help_formatter.h"
#include "common/paths.h"
#include "common/size.h"
#include "common/suggest.h"

namespace fad {

std::unique_ptr<CLI::App> make_daemon_cli(DaemonFlags& f) {
  auto owned = std::make_unique<CLI::App>(
      "fadd: the fad build daemon. Schedules CUDA compile units by memory, not job count.", "fadd");
  CLI::App& app = *owned;
  wrap_help(app);
  app.set_help_flag("-h,--help", "Show this help and exit");
  auto opt = [&](const char* name, std::optional<std::string>& target, const char* type, const std::string& help) {
    app.add_option_function<std::string>(
           name, [&target](const std::string& v) { target = v; }, help)
        ->type_name(type);
  };
  opt("--config", f.config, "FILE",
      "Config file (JSON); default $FAD_CONFIG, else ~/.config/fad/fad.json, else " + system_config_path() +
          ", the first that is set or exists");
  opt("--state-dir", f.state_dir, "DIR",
      "State directory (database, logs, outputs); default $FAD_STATE_DIR, config state_dir, else "
      "$XDG_STATE_HOME/fad or ~/.local/state/fad");
  opt("--socket", f.socket, "PATH",
      "Unix socket path; default $FAD_SOCKET, config socket, else $XDG_RUNTIME_DIR/fad/fad.sock or "
      "/tmp/fad-UID/fad.sock");
  opt("--memory-budget", f.memory_budget, "SIZE|auto", "Memory fad may use: SIZE (e.g. 16G) or auto");
  opt("--reserve", f.reserve, "SIZE|PCT%", "Memory kept free for everything else: SIZE or PCT% (default 10%)");
  opt("--nvcc", f.nvcc, "PATH", "Default compiler (nvcc or an nvcc-compatible program)");
  opt("--log-level", f.log_level, "LEVEL", "trace|debug|info|warn|error");
  opt("--kernels-dir", f.kernels_dir, "DIR",
      "Directory of the bundled kernels (holding manifest.json); default $FAD_KERNELS_DIR, config kernels_dir, "
      "else the installed share/fad/kernels or the source tree fadd was built from");
  opt("--log-file", f.log_file, "FILE",
      "Log to this file instead of stderr, rotated past log_max_size (config, default 10M), "
      "keeping log_max_files (default 3) old files");
  opt("--executor", f.executor, "local|slurm",
      "Where units run: local (this machine) or slurm (job steps; see the slurm config key)");
  opt("--cores", f.cores_text, "N",
      "CPU cores fad plans with, 1 to 4096 (default: all); running units' nvcc threads never exceed it");
  app.add_flag("--check", f.check,
               "Check the command line, config, state dir, socket path and log file as a start would, then exit "
               "without starting: 0 when fadd would start with them, else the error a start would give");
  app.add_flag("--version", f.version, "Print the version and exit");
  return owned;
}

namespace {

// CLI11's "The following arguments were not expected: 4G --memry-budget" as
// the line a user acts on: the mistyped option (not the value after it) and
// the option it most likely was.
std::string describe_extras(const CLI::App& app, const std::string& what) {
  const std::vector<std::string> extras = unexpected_words(what);
  if (extras.empty()) return what;
  const auto option = first_option(extras);
  if (option == extras.end()) return "unexpected argument '" + extras.front() + "' (fadd takes only options)";
  std::vector<std::string> names;
  for (const CLI::Option* opt : app.get_options())
    for (const auto& n : opt->get_lnames()) names.push_back("--" + n);
  return unknown_option(*option, names);
}

/// A value CLI11 took that no user meant, as "OPTION: why"; nullopt if none.
std::optional<std::string> value_problem(const CLI::App& app) {
  for (const CLI::Option* o : app.get_options()) {
    if (is_flag(o)) continue;
    for (const auto& value : o->results()) {
      // An empty value is a mistake (an unset shell variable), never a request
      // for the default: `--state-dir ''` once started on ~/.local/state.
      if (value.empty()) return o->get_name() + ": the value is empty";
      // CLI11 takes the word after an option as its value whatever it is:
      // `--state-dir --socket S` would start on a state dir named "--socket".
      if (value.rfind("--", 0) == 0 || value == "-h" || value.rfind("-h=", 0) == 0)
        return o->get_name() + ": needs a value, got the option '" + value + "'";
    }
  }
  return std::nullopt;
}

/// Why `log_file` would write over fadd's own files in `state_dir` (its
/// database, the lock a second fadd reads, the disk reserve, the builds in
/// its subdirectories), or its rotation rename them; "" when it would not.
/// STATE/fadd.log is fadd's own default, and any other new name beside it is fine.
std::string log_file_clash(const std::string& log_file, const std::string& state_dir) {
  if (log_file.empty() || state_dir.empty()) return "";
  // Through links too: a link to STATE/fad.db had fadd append its log there.
  std::error_code ec;
  const std::filesystem::path log = std::filesystem::weakly_canonical(log_file, ec);
  const std::filesystem::path state = std::filesystem::weakly_canonical(state_dir, ec);
  const auto rel = log.lexically_relative(state);
  if (rel.empty() || *rel.begin() == "..") return "";  // not inside the state dir
  static const char* const kOwn[] = {"fad.db",    "fad.db-wal", "fad.db-shm", "fad.db-journal",
                                     "fadd.lock", "fadd.out",   "reserve"};
  const std::string name = rel.string();
  const bool clash =
      std::distance(rel.begin(), rel.end()) > 1 || std::find(std::begin(kOwn), std::end(kOwn), name) != std::end(kOwn);
  if (!clash) return "";
  return "--log-file: " + log_file + " is fadd's own in its state dir " + state_dir + "; give another name, e.g. " +
         (std::filesystem::path(state_dir) / "fadd.log").string();
}

}  // namespace

Result<DaemonFlags> parse_daemon_flags(int argc, const char* const* argv) {
  DaemonFlags f;
  auto owned = make_daemon_cli(f);
  CLI::App& app = *owned;
  std::vector<std::string> args(argv + std::min(argc, 1), argv + argc);
  for (const auto& a : args) {
    if (auto dash = dash_lookalike(a); !dash.empty()) return make_error(dash + " (see 'fadd --help')");
    // "--help=1", "--version=0": CLI11 would print the help or the version.
    if (auto flag = flag_value_problem(app, a)) return make_error(*flag + " (see 'fadd --help')");
  }
  // "--memory-budget= 2G" is the empty value, refused as such, not a 2G budget.
  // ("-h" is fadd's only short option, and a flag: "-h=" is refused above.)
  split_option_values(args, args.size());
  try {
    app.parse(std::vector<std::string>(args.rbegin(), args.rend()));  // CLI11 wants them reversed
  } catch (const CLI::CallForHelp&) {
    f.help = true;
    f.help_text = app.help();
    return f;
  } catch (const CLI::ExtrasError& e) {
    // `--state-dir --socket S`: S is extra because --socket was taken as a value.
    return make_error(value_problem(app).value_or(describe_extras(app, e.what())) + " (see 'fadd --help')");
  } catch (const CLI::ArgumentMismatch& e) {
    // An option given last, or twice.
    return make_error(option_count_problem(e.what()).value_or(e.what()) + " (see 'fadd --help')");
  } catch (const CLI::ParseError& e) {
    return make_error(std::string(e.what()) + " (see 'fadd --help')");
  }
  if (auto problem = value_problem(app)) return make_error(*problem + " (see 'fadd --help')");
  if (f.cores_text) {
    const std::string& text = *f.cores_text;
    int n = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc() || end != text.data() + text.size() || n < 1 || n > 4096)
      return make_error("--cores: expected a whole number from 1 to 4096, got '" + text + "' (see 'fadd --help')");
    f.cores = n;
  }
  return f;
}

std::string default_kernels_dir(const EnvLookup& env) {
  if (auto dir = env("FAD_KERNELS_DIR")) return *dir;
  std::error_code ec;
  if (std::filesystem::exists(std::string(FAD_DEFAULT_KERNELS_DIR) + "/manifest.json", ec))
    return FAD_DEFAULT_KERNELS_DIR;
  return FAD_SOURCE_KERNELS_DIR;
}

Result<DaemonOptions> resolve_daemon_options(const DaemonFlags& f, const EnvLookup& env, unsigned uid) {
  DaemonOptions o;
  std::optional<std::string> config_path = f.config ? f.config : env("FAD_CONFIG");
  if (!config_path) config_path = default_config_path(env);
  if (config_path) {
    auto cfg = load_config(*config_path);
    if (!cfg) return make_error(cfg.error());
    o.config = *cfg;
    o.config_path = *config_path;
  }
  Config& c = o.config;
  if (f.memory_budget) {
    if (*f.memory_budget == "auto") {
      c.memory_budget.reset();
    } else {
      auto b = parse_size(*f.memory_budget);
      if (!b) return make_error("--memory-budget: " + b.error());
      if (auto problem = memory_size_problem(*b, *f.memory_budget, "budget"); !problem.empty())
        return make_error("--memory-budget: " + problem + " (or 'auto')");
      c.memory_budget = *b;
    }
  }
  if (f.reserve) {
    auto r = parse_reserve(*f.reserve);
    if (!r) return make_error("--reserve: " + r.error());
    c.reserve = *r;
  }
  if (f.nvcc) {
    if (auto problem = program_path_problem(*f.nvcc); !problem.empty()) return make_error("--nvcc: " + problem);
    c.nvcc = *f.nvcc;
  }
  if (f.executor) {
    if (auto wrong = parse_executor(*f.executor, c.executor); !wrong.empty()) return make_error("--executor: " + wrong);
  }
  if (f.cores) o.cores = *f.cores;
  if (f.log_file) {
    std::error_code ec;
    o.log_file = std::filesystem::absolute(*f.log_file, ec).lexically_normal().string();
    // "new.log/": the logger would make a directory of that name, then fail.
    if (std::filesystem::path(o.log_file).filename().empty())
      return make_error("--log-file: " + *f.log_file + " names a directory (it ends in '/'); give a file");
    if (std::filesystem::is_directory(o.log_file, ec))
      return make_error("--log-file: " + o.log_file + " is a directory; give a file in it, e.g. " +
                        (std::filesystem::path(o.log_file) / "fadd.log").string());
    // A FIFO would hang fadd's start on its open, and rotation renames what
    // the path names: /dev/null among them.
    if (std::filesystem::exists(o.log_file, ec) && !std::filesystem::is_regular_file(o.log_file, ec))
      return make_error("--log-file: " + o.log_file + " is not a regular file; give a file fadd may create and rotate");
  }
  if (f.log_level) {
    if (!is_log_level(*f.log_level))
      return make_error("--log-level: '" + *f.log_level + "' is not one of trace, debug, info, warn, error");
    c.log_level = *f.log_level;
  }
  o.socket = resolve_path(f.socket, env, "FAD_SOCKET", c.socket, default_socket_path(env, uid));
  if (auto problem = socket_path_problem(o.socket); !problem.empty()) return make_error(problem);
  o.state_dir = resolve_path(f.state_dir, env, "FAD_STATE_DIR", c.state_dir, default_state_dir(env));
  o.kernels_dir = resolve_path(f.kernels_dir, env, "FAD_KERNELS_DIR", c.kernels_dir, default_kernels_dir(env));
  std::error_code ec;
  o.state_dir = std::filesystem::absolute(o.state_dir, ec).lexically_normal().string();
  o.kernels_dir = std::filesystem::absolute(o.kernels_dir, ec).lexically_normal().string();
  if (!o.state_dir.empty() && o.state_dir.size() > 1 && o.state_dir.back() == '/') o.state_dir.pop_back();
  if (!o.kernels_dir.empty() && o.kernels_dir.size() > 1 && o.kernels_dir.back() == '/') o.kernels_dir.pop_back();
  if (auto problem = log_file_clash(o.log_file, o.state_dir); !problem.empty()) return make_error(problem);
  // Appended to, the config would no longer parse: every later start fails.
  if (!o.log_file.empty() && !o.config_path.empty() && std::filesystem::equivalent(o.log_file, o.config_path, ec) &&
      !ec)
    return make_error("--log-file: " + o.log_file + " is the config file " + o.config_path + "; give another file");
  return o;
}

std::string memory_settings_problem(const Config& config, const MemorySnapshot& memory) {
  const bool in_cgroup = memory.cgroup_limit && *memory.cgroup_limit < memory.total;
  const std::uint64_t basis = memory.basis();
  if (basis == 0 || config.reserve.resolve(basis) < basis) return "";
  return "reserve " + format_size(config.reserve.bytes) + " is all of the " + format_size(basis) + " of memory " +
         (in_cgroup ? "fadd's cgroup allows" : "this machine has") +
         ": fad could start nothing; set a smaller --reserve or reserve (e.g. 10%)";
}

}  // namespace fad
