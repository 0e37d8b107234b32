// CLI11 setup for fad. CLI11's own error printing and exit codes are replaced
// by one "fad: ..." line and exit 2, as the contract wants for usage errors.
#include "client/cli.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <sstream>

#include <CLI/CLI.hpp>

#include "client/exit_codes.h"
#include "common/duration.h"

namespace fad::client {
namespace {

/// The flag values CLI11 writes into, before they are checked and turned into a Command.
struct RawArgs {
  std::string socket, config, state_dir, kernels = "*", nvcc, name, id, unit, older_than, file, cache_dir;
  std::vector<std::string> archs;
  bool json = false, wait = false, watch = false, follow = false, dry_run = false;
  int limit = 20;
};

// Every subcommand accepts --socket and --config; the daemon side reads the same files.
void add_locations(CLI::App* sub, RawArgs& raw) {
  sub->add_option("--socket", raw.socket,
                  "fadd's Unix socket (default: $FAD_SOCKET, config, "
                  "$XDG_RUNTIME_DIR/fad/fad.sock)");
  sub->add_option("--config", raw.config, "config file (default: $FAD_CONFIG, ~/.config/fad/fad.json)");
}

void add_id(CLI::App* sub, RawArgs& raw, bool required) {
  auto* opt = sub->add_option("ID", raw.id, "build id");
  if (required) opt->required();
}

// The deepest subcommand CLI11 selected so far ("fad daemon start" -> start).
const CLI::App& deepest(const CLI::App& app) {
  const CLI::App* at = &app;
  while (!at->get_subcommands().empty()) at = at->get_subcommands().front();
  return *at;
}

// "fad daemon start" for messages.
std::string command_path(const CLI::App& app) {
  std::string path = "fad";
  for (const CLI::App* at = &app; !at->get_subcommands().empty();) {
    at = at->get_subcommands().front();
    path += " " + at->get_name();
  }
  return path;
}

std::string lower_first(std::string text) {
  // "Could not convert" -> "could not convert", but "ID is required" stays.
  auto at = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  if (text.size() > 1 && std::isupper(at(0)) && std::islower(at(1))) text[0] = static_cast<char>(std::tolower(at(0)));
  return text;
}

EarlyExit usage(const std::string& message, const std::string& path) {
  return EarlyExit{kExitUsage, "fad: " + message + " (see '" + path + " --help')\n", true};
}

// Turns a CLI11 parse error into the one line a user should see.
EarlyExit describe_parse_error(const CLI::App& app, const CLI::ParseError& e) {
  const std::string path = command_path(app);
  const CLI::App& at = deepest(app);
  // A command that needs a subcommand ("fad", "fad daemon") was given none it knows.
  const bool wants_command = at.get_require_subcommand_min() > 0 && at.get_subcommands().empty();
  std::vector<std::string> extras;
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    std::string what = e.what();
    auto colon = what.find(": ");
    std::istringstream words(colon == std::string::npos ? std::string() : what.substr(colon + 2));
    for (std::string w; words >> w;) extras.push_back(w);
  } else if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && wants_command) {
    extras = at.remaining();
    if (extras.empty()) return usage("missing command", path);
  }
  if (!extras.empty()) {
    const std::string& first = extras.front();
    if (first.size() > 1 && first[0] == '-') return usage("unknown option " + first, path);
    if (wants_command) return usage("unknown command '" + first + "'", path);
    return usage("unexpected argument '" + first + "'", path);
  }
  return usage(lower_first(e.what()), path);
}

// Builds the Command from what CLI11 filled in; checks what CLI11 cannot (ids, archs).
ParseOutcome finish(const CLI::App& app, RawArgs& raw, std::vector<std::string> fadd_args) {
  Command cmd;
  const CLI::App* sub = app.get_subcommands().front();
  cmd.path = command_path(app);
  static const std::pair<const char*, CommandKind> kKinds[] = {{"submit", CommandKind::submit},
                                                               {"status", CommandKind::status},
                                                               {"logs", CommandKind::logs},
                                                               {"cancel", CommandKind::cancel},
                                                               {"pause", CommandKind::pause},
                                                               {"resume", CommandKind::resume},
                                                               {"retry", CommandKind::retry},
                                                               {"history", CommandKind::history},
                                                               {"start", CommandKind::daemon_start},
                                                               {"stop", CommandKind::daemon_stop},
                                                               {"doctor", CommandKind::doctor},
                                                               {"restart", CommandKind::daemon_restart},
                                                               {"prune", CommandKind::prune},
                                                               {"export", CommandKind::history_export},
                                                               {"import", CommandKind::history_import}};
  if (sub->get_name() == "cache") {
    sub = sub->get_subcommands().front();
    cmd.kind = sub->get_name() == "stats" ? CommandKind::cache_stats : CommandKind::cache_clear;
  }
  if (sub->get_name() == "daemon" || (sub->get_name() == "history" && !sub->get_subcommands().empty()))
    sub = sub->get_subcommands().front();
  for (const auto& [name, kind] : kKinds)
    if (sub->get_name() == name) cmd.kind = kind;

  if (!fadd_args.empty() && cmd.kind != CommandKind::daemon_start && cmd.kind != CommandKind::daemon_restart)
    return usage("arguments after '--' are only for 'fad daemon start' and 'fad daemon restart'", cmd.path);
  cmd.fadd_args = std::move(fadd_args);

  if (!raw.socket.empty()) cmd.socket = raw.socket;
  if (!raw.config.empty()) cmd.config = raw.config;
  if (!raw.state_dir.empty()) cmd.state_dir = raw.state_dir;
  if (!raw.cache_dir.empty()) cmd.cache_dir = raw.cache_dir;
  cmd.json = raw.json;
  cmd.wait = raw.wait;
  cmd.watch = raw.watch;
  cmd.follow = raw.follow;
  cmd.kernels = raw.kernels;
  if (!raw.nvcc.empty()) cmd.nvcc = raw.nvcc;
  cmd.name = raw.name;
  cmd.file = raw.file;
  if (!raw.unit.empty()) cmd.unit = raw.unit;
  cmd.dry_run = raw.dry_run;
  if (!raw.older_than.empty()) {
    auto age = parse_age(raw.older_than);
    if (!age) return usage("--older-than: " + age.error(), cmd.path);
    cmd.older_than_s = *age;
  }

  if (!raw.id.empty()) {
    auto id = parse_build_id(raw.id);
    if (!id) return usage(id.error(), cmd.path);
    cmd.id = *id;
  }
  if (!raw.archs.empty()) {
    auto archs = parse_arch_list(raw.archs);
    if (!archs) return usage(archs.error(), cmd.path);
    cmd.archs = std::move(*archs);
  }
  if (raw.limit <= 0) return usage("--limit must be a positive integer, got " + std::to_string(raw.limit), cmd.path);
  cmd.limit = raw.limit;
  return cmd;
}

}  // namespace

Result<std::int64_t> parse_build_id(const std::string& text) {
  std::int64_t id = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || id <= 0)
    return make_error("build id must be a positive integer, got '" + text + "'");
  return id;
}

ParseOutcome parse_command(int argc, const char* const* argv) {
  std::vector<std::string> args(argv + std::min(argc, 1), argv + argc);
  // Everything after the first "--" goes to fadd untouched (daemon start only).
  std::vector<std::string> fadd_args;
  if (auto dd = std::find(args.begin(), args.end(), "--"); dd != args.end()) {
    fadd_args.assign(dd + 1, args.end());
    args.erase(dd, args.end());
  }

  RawArgs raw;
  CLI::App app{"fad: the client of fadd, the resource-aware CUDA kernel build daemon", "fad"};
  app.set_version_flag("--version", std::string("fad ") + FAD_VERSION);
  app.require_subcommand(1);

  auto* submit = app.add_subcommand("submit", "queue a build of the bundled kernels; prints its id");
  submit
      ->add_option("--arch", raw.archs,
                   "target arch (12.0, sm_90a, ...); repeat or comma list; "
                   "default: the local GPUs")
      ->allow_extra_args(false);
  submit->add_option("--kernels", raw.kernels, "glob over kernel unit names (default *)");
  submit->add_option("--nvcc", raw.nvcc, "nvcc (or compatible) program to compile with");
  submit->add_option("--name", raw.name, "a label for the build");
  submit->add_flag("--wait", raw.wait, "follow the build and exit with its result");
  submit->add_flag("--json", raw.json, "print JSON");
  add_locations(submit, raw);

  auto* status = app.add_subcommand("status", "daemon memory view and builds; with ID, that build's units");
  add_id(status, raw, false);
  status->add_flag("--json", raw.json, "print JSON");
  status->add_flag("--watch", raw.watch, "redraw every second until interrupted");
  add_locations(status, raw);

  auto* logs = app.add_subcommand("logs", "compiler output of a build, or of one of its units");
  add_id(logs, raw, true);
  logs->add_option("UNIT", raw.unit, "unit name (default: the whole build)");
  logs->add_flag("--follow", raw.follow, "keep printing until the build finishes");
  add_locations(logs, raw);

  const std::pair<const char*, const char*> kControls[] = {{"cancel", "cancel a build"},
                                                           {"pause", "stop admitting a build's units"},
                                                           {"resume", "resume a paused build"},
                                                           {"retry", "requeue a build's failed units"}};
  for (const auto& [name, help] : kControls) {
    auto* sub = app.add_subcommand(name, help);
    add_id(sub, raw, true);
    add_locations(sub, raw);
  }

  auto* history = app.add_subcommand("history", "finished builds with duration and peak memory");
  history->add_option("--limit", raw.limit, "how many builds (default 20)");
  history->add_flag("--json", raw.json, "print JSON");
  add_locations(history, raw);
  auto* history_export = history->add_subcommand("export", "write the learnt unit profiles to FILE (versioned JSON)");
  history_export->add_option("FILE", raw.file, "file to write")->required();
  add_locations(history_export, raw);
  auto* history_import =
      history->add_subcommand("import", "add unit profiles from FILE (written by 'fad history export')");
  history_import->add_option("FILE", raw.file, "file to read")->required();
  add_locations(history_import, raw);

  auto* daemon = app.add_subcommand("daemon", "start or stop fadd without systemd");
  daemon->require_subcommand(1);
  auto* start = daemon->add_subcommand("start", "start fadd in the background; args after -- go to fadd");
  add_locations(start, raw);
  start->add_option("--state-dir", raw.state_dir, "fadd's state directory (db, logs, outputs)");
  auto* stop = daemon->add_subcommand("stop", "ask fadd to stop and wait until it has exited");
  add_locations(stop, raw);
  stop->add_option("--state-dir", raw.state_dir, "fadd's state directory, when its status does not say");
  auto* restart = daemon->add_subcommand("restart", "stop fadd, then start it again; args after -- go to fadd");
  add_locations(restart, raw);
  restart->add_option("--state-dir", raw.state_dir, "fadd's state directory (db, logs, outputs)");

  auto* prune = app.add_subcommand("prune", "delete finished builds' outputs and logs older than an age");
  prune->add_option("--older-than", raw.older_than, "age such as 30d, 12h, 2w (default: the retention config key)");
  prune->add_flag("--dry-run", raw.dry_run, "list what would be deleted, delete nothing");
  prune->add_flag("--json", raw.json, "print JSON");
  add_locations(prune, raw);

  auto* doctor = app.add_subcommand("doctor", "check nvcc, GPUs, host compiler, torch, memory, cgroups, disk, fadd");
  doctor->add_option("--arch", raw.archs, "also check that nvcc can build these archs; repeat or comma list")
      ->allow_extra_args(false);
  doctor->add_option("--nvcc", raw.nvcc, "nvcc (or compatible) program to check (default: config, PATH)");
  doctor->add_option("--state-dir", raw.state_dir, "state directory whose free space to check");
  doctor->add_flag("--json", raw.json, "print JSON");
  add_locations(doctor, raw);

  auto* cache = app.add_subcommand("cache", "the compile cache: its statistics, or empty it");
  cache->require_subcommand(1);
  for (const auto& [name, help] : {std::pair{"stats", "size, entries, hits and misses of the compile cache"},
                                   std::pair{"clear", "remove every entry of the compile cache"}}) {
    auto* sub = cache->add_subcommand(name, help);
    sub->add_flag("--json", raw.json, "print JSON");
    sub->add_option("--cache-dir", raw.cache_dir,
                    "the cache directory (default: $FAD_CACHE_DIR, config, ~/.cache/fad)");
    add_locations(sub, raw);
  }

  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 wants them reversed
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    return EarlyExit{kExitOk, app.help(), false};
  } catch (const CLI::CallForAllHelp&) {
    return EarlyExit{kExitOk, app.help("", CLI::AppFormatMode::All), false};
  } catch (const CLI::CallForVersion& e) {
    return EarlyExit{kExitOk, std::string(e.what()) + "\n", false};
  } catch (const CLI::ParseError& e) {
    return describe_parse_error(app, e);
  }
  return finish(app, raw, std::move(fadd_args));
}

}  // namespace fad::client
