// CLI11 setup for fad. CLI11's own error printing and exit codes are replaced
// by one "fad: ..." line and exit 2, as the contract wants for usage errors.
#include "client/cli.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <iterator>
#include <utility>

#include <CLI/CLI.hpp>

#include "client/cli_app.h"
#include "client/exit_codes.h"
#include "common/cli_flags.h"
#include "common/duration.h"
#include "common/help_formatter.h"
#include "common/json_fields.h"
#include "common/paths.h"
#include "common/protocol.h"
#include "common/suggest.h"
#include "common/text.h"

namespace fad::client {
namespace {

// Every subcommand accepts --socket, --config and --color; the daemon side reads the same files.
void add_locations(CLI::App* sub, RawArgs& raw) {
  sub->add_option("--socket", raw.socket,
                  "fadd's Unix socket (default: $FAD_SOCKET, config, "
                  "$XDG_RUNTIME_DIR/fad/fad.sock, else /tmp/fad-UID/fad.sock)")
      ->type_name("PATH");
  sub->add_option(
         "--config", raw.config,
         "config file (default: $FAD_CONFIG, ~/.config/fad/fad.json, else " + system_config_path() + ", where present)")
      ->type_name("FILE");
  sub->add_option("--color", raw.color, "colour states: auto (on a terminal, unless NO_COLOR is set), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->type_name("WHEN");
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
  // The message quotes the words given: a control or a stray byte in one
  // must reach the terminal as '?'.
  return EarlyExit{kExitUsage, "fad: " + shown_word(message) + " (see '" + path + " --help')\n", true};
}

// A flag is given or not; it takes no word after it (CLI11: expected 0 times a value).
// An option given an empty value ("--nvcc ''", "-o ''", an unset shell
// variable) would otherwise mean its default, silently. Only a name may be empty.
std::optional<std::string> empty_option(const CLI::App& app) {
  for (const CLI::App* at = &app;;) {
    for (const CLI::Option* opt : at->get_options()) {
      if (is_flag(opt) || opt->count() == 0 || opt->get_name() == "--name") continue;
      for (const auto& value : opt->results())
        if (value.empty()) return opt->get_name();
    }
    if (at->get_subcommands().empty()) return std::nullopt;
    at = at->get_subcommands().front();
  }
}

// CLI11 takes the word after an option as its value, whatever it is: `fad
// status --socket --json` asked for a socket named "--json". A value that is
// one of the command's own options was meant as that option; "OPTION: why".
std::optional<std::string> option_as_value(const CLI::App& app) {
  for (const CLI::App* at = &app;;) {
    std::vector<std::string> names;
    for (const CLI::Option* opt : at->get_options()) {
      for (const auto& n : opt->get_lnames()) names.push_back("--" + n);
      for (const auto& n : opt->get_snames()) names.push_back("-" + n);  // `report 1 -o -h` wrote a file "-h"
    }
    for (const CLI::Option* opt : at->get_options()) {
      // A positional's word after "--" is the user's ("fad status -- --json").
      if (is_flag(opt) || opt->count() == 0 || !opt->nonpositional()) continue;
      for (const auto& value : opt->results()) {
        if (value == "--") return opt->get_name() + ": needs a value, got '--'";  // `report 7 -o --` wrote "--"
        if (std::find(names.begin(), names.end(), value.substr(0, value.find('='))) != names.end())
          return opt->get_name() + ": needs a value, got the option '" + value + "'";
      }
    }
    if (at->get_subcommands().empty()) return std::nullopt;
    at = at->get_subcommands().front();
  }
}

// "--FLAG=VALUE" or "-F=VALUE" at args[i], where FLAG is a flag of the
// command the words before it name: the message and that command's path;
// nullopt otherwise.
std::optional<std::pair<std::string, std::string>> flag_given_a_value(const CLI::App& app,
                                                                      const std::vector<std::string>& args,
                                                                      std::size_t i) {
  if (args[i].find('=') == std::string::npos) return std::nullopt;
  const CLI::App* at = &app;
  std::string path = "fad";
  for (std::size_t k = 0; k < i; ++k) {
    if (args[k].empty() || args[k][0] == '-') continue;
    // A word that names no subcommand is a value or a positional: the command stays.
    for (const CLI::App* sub : at->get_subcommands({}))
      if (sub->get_name() == args[k]) {
        at = sub;
        path += " " + args[k];
        break;
      }
  }
  if (auto problem = flag_value_problem(*at, args[i])) return std::make_pair(*problem, path);
  return std::nullopt;
}

// Turns a CLI11 parse error into the one line a user should see.
// `words`: those after a "--" that ended the options, each a word whatever it
// looks like; `first_word`: the first word before them not an option ("" if none).
EarlyExit describe_parse_error(const CLI::App& app, const CLI::ParseError& e, const std::vector<std::string>& words,
                               const std::string& first_word) {
  const std::string path = command_path(app);
  const CLI::App& at = deepest(app);
  // What follows from an option taken as a value (an extra word, a number
  // that does not convert) is not what the user got wrong.
  if (auto taken = option_as_value(app)) return usage(*taken, path);
  if (auto empty = empty_option(app)) return usage(*empty + ": the value is empty", path);
  // An option given last, or twice.
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr)
    if (auto problem = option_count_problem(e.what())) return usage(*problem, path);
  // A command that needs a subcommand ("fad", "fad daemon") was given none it knows.
  const bool wants_command = at.get_require_subcommand_min() > 0 && at.get_subcommands().empty();
  // "fad -- status": the words after "--" are values, never the command.
  if (wants_command && first_word.empty() && !words.empty()) {
    std::vector<std::string> commands;
    for (const CLI::App* sub : at.get_subcommands({})) commands.push_back(sub->get_name());
    const bool named = std::find(commands.begin(), commands.end(), words.front()) != commands.end();
    return usage("missing command: the words after '--' are never one" +
                     (named ? "; did you mean '" + path + " " + words.front() + "'?" : std::string()),
                 path);
  }
  std::vector<std::string> extras;
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    extras = unexpected_words(e.what());
  } else if (dynamic_cast<const CLI::RequiredError*>(&e) != nullptr && wants_command) {
    extras = at.remaining();
    if (extras.empty()) return usage("missing command", path);
  }
  // "fad statuss --socket S": the mistyped command, not the option after it
  // (which its command would take).
  if (wants_command) {
    std::vector<std::string> commands;
    for (const CLI::App* sub : at.get_subcommands({})) commands.push_back(sub->get_name());
    // fad's own options are flags: its first other word was meant as the
    // command, close to one or not ("fad stat --socket S").
    if (&at == &app && !first_word.empty())
      return usage("unknown command '" + first_word + "'" + did_you_mean(suggest(first_word, commands)), path);
    for (const auto& word : extras)
      if (word.empty() || word[0] != '-')
        if (auto close = suggest(word, commands))
          return usage("unknown command '" + word + "'" + did_you_mean(close), path);
  }
  // "fad logs -- 1 2 3": one word too many, not an option named "--"; "fad
  // submit -- --arch": a word, not an option given before its command.
  extras.erase(std::remove(extras.begin(), extras.end(), "--"), extras.end());
  const auto is_word = [&](const std::string& w) { return std::find(words.begin(), words.end(), w) != words.end(); };
  if (!extras.empty()) {
    std::vector<std::string> maybe_options;
    std::copy_if(extras.begin(), extras.end(), std::back_inserter(maybe_options),
                 [&](const std::string& w) { return !is_word(w); });
    const auto option = first_option(maybe_options);
    const std::string& first = option != maybe_options.end() ? *option : extras.front();
    if (first.size() > 1 && first[0] == '-' && !is_word(first)) {
      std::vector<std::string> names;
      for (const CLI::Option* opt : at.get_options())
        for (const auto& n : opt->get_lnames()) names.push_back("--" + n);
      const std::string bare = first.substr(0, first.find('='));
      // "fad --socket S status": the command's own option, given before it.
      if (std::find(names.begin(), names.end(), bare) != names.end())
        return usage(bare + " goes after the command: '" + path + " " + bare + " ...'", path);
      return usage(unknown_option(first, names), path);
    }
    std::vector<std::string> commands;
    for (const CLI::App* sub : at.get_subcommands({})) commands.push_back(sub->get_name());
    if (wants_command) return usage("unknown command '" + first + "'" + did_you_mean(suggest(first, commands)), path);
    // "fad history exprt FILE": a command that may go without one, given one
    // close to a name (CLI11 lists the extras in no useful order).
    for (const auto& word : extras)
      if (auto close = suggest(word, commands))
        return usage("unknown command '" + word + "'" + did_you_mean(close), path);
    return usage("unexpected argument '" + first + "'", path);
  }
  // CLI11's "Could not convert: --limit = 99999999999999": a number out of range, or none.
  const std::string what = e.what(), prefix = "Could not convert: ";
  if (const auto eq = what.find(" = "); what.rfind(prefix, 0) == 0 && eq != std::string::npos)
    return usage(what.substr(prefix.size(), eq - prefix.size()) + ": expected a whole number in range, got '" +
                     what.substr(eq + 3) + "'",
                 path);
  return usage(lower_first(what), path);
}

// Builds the Command from what CLI11 filled in; checks what CLI11 cannot (ids, archs).
ParseOutcome finish(const CLI::App& app, RawArgs& raw, std::vector<std::string> fadd_args) {
  Command cmd;
  const CLI::App* sub = app.get_subcommands().front();
  cmd.path = command_path(app);
  if (auto empty = empty_option(app)) return usage(*empty + ": the value is empty", cmd.path);
  if (auto taken = option_as_value(app)) return usage(*taken, cmd.path);
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
                                                               {"restart", CommandKind::daemon_restart},
                                                               {"prune", CommandKind::prune},
                                                               {"export", CommandKind::history_export},
                                                               {"import", CommandKind::history_import},
                                                               {"doctor", CommandKind::doctor},
                                                               {"watch", CommandKind::watch},
                                                               {"report", CommandKind::report},
                                                               {"completions", CommandKind::completions}};
  if (is_entry_mode_command(sub->get_name()))
    return usage("'fad " + sub->get_name() + "' takes its own command line; see 'fad " + sub->get_name() + " --help'",
                 cmd.path);
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
  // The option `name` among fadd's arguments, alone or as "name=value".
  const auto names = [&](const std::string& name) {
    return std::any_of(fadd_args.begin(), fadd_args.end(),
                       [&](const std::string& a) { return a == name || a.rfind(name + "=", 0) == 0; });
  };
  // fad passes these to fadd itself, and waits for fadd where they say: given
  // to fadd alone, fadd would refuse them twice, or fad wait at the wrong socket.
  for (const char* own : {"--socket", "--state-dir", "--config"})
    if (names(own)) return usage(std::string(own) + " goes before '--': '" + cmd.path + " " + own + " ...'", cmd.path);
  // These make fadd print and exit: started so, it would exit "during
  // startup" (and a restart would have stopped the running one for it).
  for (const char* exits : {"--help", "-h", "--version", "--check"})
    if (names(exits))
      return usage(
          std::string(exits) + " makes fadd exit at once, so it starts nothing: run 'fadd " + exits + "' itself",
          cmd.path);
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
  if (const auto* name = sub->get_option_no_throw("--name"); name != nullptr && name->count() > 0)
    if (auto problem = build_name_problem(raw.name); !problem.empty()) return usage("--name: " + problem, cmd.path);
  cmd.name = raw.name;
  cmd.file = raw.file;
  if (!raw.unit.empty()) cmd.unit = raw.unit;
  cmd.dry_run = raw.dry_run;
  if (!raw.older_than.empty()) {
    auto age = parse_age(raw.older_than);
    if (!age) return usage("--older-than: " + age.error(), cmd.path);
    cmd.older_than_s = *age;
  }
  cmd.color = raw.color;
  if (!raw.output.empty()) cmd.output = raw.output;
  if (!raw.trace.empty()) cmd.trace = raw.trace;
  cmd.shell = raw.shell;

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
  // Said here, as every other flag is, not in fadd's words about the request.
  if (raw.limit <= 0 || raw.limit > HistoryRequest::kMaxLimit)
    return usage(
        "--limit must be from 1 to " + std::to_string(HistoryRequest::kMaxLimit) + ", got " + std::to_string(raw.limit),
        cmd.path);
  cmd.limit = raw.limit;
  return cmd;
}

}  // namespace

bool is_entry_mode_command(const std::string& name) { return name == "run" || name == "launch"; }

std::unique_ptr<CLI::App> make_cli_app(RawArgs& raw) {
  auto owned = std::make_unique<CLI::App>(
      "fad: the client of fadd, the resource-aware CUDA kernel build daemon. Builds are queued and followed with "
      "the commands below; 'fad COMMAND --help' shows one command's options.",
      "fad");
  CLI::App& app = *owned;
  wrap_help(app);  // before the subcommands: each takes its parent's formatter
  app.set_version_flag("--version", std::string("fad ") + FAD_VERSION);
  app.require_subcommand(1);

  auto* submit = app.add_subcommand("submit", "queue a build of the bundled kernels; prints its id");
  submit
      ->add_option("--arch", raw.archs,
                   "target arch (12.0, sm_90a, ...); repeat or comma list; "
                   "default: the local GPUs")
      ->allow_extra_args(false)
      ->type_name("ARCH");
  submit->add_option("--kernels", raw.kernels, "glob over kernel unit names (default *)")->type_name("GLOB");
  submit->add_option("--nvcc", raw.nvcc, "nvcc (or compatible) program to compile with")->type_name("PATH");
  submit->add_option("--name", raw.name, "a label for the build")->type_name("NAME");
  submit->add_flag("--wait", raw.wait,
                   "follow the build (a live progress line on a terminal) and exit with its result");
  submit->add_flag("--json", raw.json, "print JSON (with --wait: the finished build, as 'fad status ID --json')");
  add_locations(submit, raw);

  auto* watch = app.add_subcommand("watch",
                                   "follow a build to its end with a live progress line; default: your newest build "
                                   "still queued, running or paused");
  add_id(watch, raw, false);
  add_locations(watch, raw);

  auto* status = app.add_subcommand("status", "daemon memory view and builds; with ID, that build's units");
  add_id(status, raw, false);
  status->add_flag("--json", raw.json, "print JSON");
  status->add_flag("--watch", raw.watch,
                   "redraw every second until interrupted (in a pipe: each changed view, every few seconds)");
  add_locations(status, raw);

  auto* logs = app.add_subcommand("logs", "compiler output of a build, or of one of its units");
  add_id(logs, raw, true);
  logs->add_option("UNIT", raw.unit, "unit name (default: the whole build)");
  logs->add_flag("--follow", raw.follow, "keep printing until the build finishes");
  add_locations(logs, raw);

  auto* report = app.add_subcommand(
      "report", "write a build's memory timeline, unit chart and table as one self-contained HTML file");
  add_id(report, raw, true);
  report->add_option("-o,--output", raw.output, "the HTML file to write (default: fad-report-ID.html; - for stdout)")
      ->type_name("FILE");
  report->add_option("--trace", raw.trace, "also write Chrome/Perfetto trace-event JSON to this file")
      ->type_name("FILE");
  report->add_flag("--json", raw.json, "print the report's data as JSON instead");
  add_locations(report, raw);

  const std::pair<const char*, const char*> kControls[] = {
      {"cancel", "cancel a build: its compilers get SIGTERM, then SIGKILL"},
      {"pause", "freeze a build's running compilers (SIGSTOP; they keep their memory) and start nothing new"},
      {"resume", "continue a paused build's compilers and start its units again"},
      {"retry", "requeue a failed or cancelled build's failed and cancelled units"}};
  for (const auto& [name, help] : kControls) {
    auto* sub = app.add_subcommand(name, help);
    add_id(sub, raw, true);
    sub->add_flag("--json", raw.json, "print JSON: the build's id and state, and whether fadd has recorded it");
    add_locations(sub, raw);
  }

  auto* history = app.add_subcommand("history", "finished builds with queue time, run time and peak memory");
  history->add_option("--limit", raw.limit, "how many of the newest builds (by ID), 1 to 10000 (default 20)")
      ->type_name("N");
  history->add_flag("--json", raw.json, "print JSON");
  add_locations(history, raw);
  auto* history_export = history->add_subcommand("export", "write the learnt unit profiles to FILE (versioned JSON)");
  history_export->add_option("FILE", raw.file, "file to write; - for stdout")->required()->type_name("FILE");
  add_locations(history_export, raw);
  auto* history_import =
      history->add_subcommand("import", "add unit profiles from FILE (written by 'fad history export')");
  history_import->add_option("FILE", raw.file, "file to read; - for stdin")->required()->type_name("FILE");
  add_locations(history_import, raw);

  auto* prune = app.add_subcommand("prune", "delete finished builds' outputs and logs older than an age");
  prune->add_option("--older-than", raw.older_than, "age such as 30d, 12h, 2w (default: the retention config key)")
      ->type_name("AGE");
  prune->add_flag("--dry-run", raw.dry_run, "list what would be deleted, delete nothing");
  prune->add_flag("--json", raw.json, "print JSON");
  add_locations(prune, raw);

  auto* cache = app.add_subcommand("cache", "the compile cache: its statistics, or empty it");
  cache->require_subcommand(1);
  for (const auto& [name, help] : {std::pair{"stats", "size, entries, hits and misses of the compile cache"},
                                   std::pair{"clear", "remove every entry of the compile cache"}}) {
    auto* sub = cache->add_subcommand(name, help);
    sub->add_flag("--json", raw.json, "print JSON");
    sub->add_option("--cache-dir", raw.cache_dir,
                    "the cache directory (default: $FAD_CACHE_DIR, config, $XDG_CACHE_HOME/fad, else ~/.cache/fad)")
        ->type_name("DIR");
    add_locations(sub, raw);
  }

  // Parsed by entry_modes.cc before CLI11; defined here for help, completion and the manual.
  auto* run = app.add_subcommand("run",
                                 "run a build command (pip, cmake, ninja...) with every nvcc call it makes "
                                 "scheduled by fadd; usage: fad run [OPTIONS] -- CMD [ARGS...]");
  run->add_option("--budget", raw.budget, "memory this build's compiles may hold together (e.g. 12G)")
      ->type_name("SIZE");
  run->add_option("--name", raw.name, "the build's name in 'fad status' (default: the command)")->type_name("NAME");
  add_locations(run, raw);
  run->add_option("CMD", raw.passthrough, "the build command and its arguments, after --");
  auto* launch = app.add_subcommand("launch",
                                    "run one compiler call under fadd's memory scheduling (a compiler "
                                    "launcher); usage: fad launch [--socket PATH] [--config FILE] [--color WHEN] [--] "
                                    "COMPILER [ARGS...]");
  add_locations(launch, raw);
  launch->add_option("COMPILER", raw.passthrough, "the compiler and its arguments");

  auto* doctor = app.add_subcommand("doctor", "check nvcc, GPUs, host compiler, torch, memory, cgroups, disk, fadd");
  doctor->add_option("--arch", raw.archs, "also check that nvcc can build these archs; repeat or comma list")
      ->allow_extra_args(false)
      ->type_name("ARCH");
  doctor->add_option("--nvcc", raw.nvcc, "nvcc (or compatible) program to check (default: config, PATH)")
      ->type_name("PATH");
  doctor->add_option("--state-dir", raw.state_dir, "state directory whose free space to check")->type_name("DIR");
  doctor->add_flag("--json", raw.json, "print JSON");
  add_locations(doctor, raw);

  auto* daemon = app.add_subcommand("daemon", "start or stop fadd without systemd");
  daemon->require_subcommand(1);
  auto* start = daemon->add_subcommand("start", "start fadd in the background; args after -- go to fadd");
  add_locations(start, raw);
  start->add_option("--state-dir", raw.state_dir, "fadd's state directory (db, logs, outputs)")->type_name("DIR");
  // CLI11 2.1 writes its own usage line, without the "-- FADD-ARGS" it cannot parse.
  auto fadd_args = [](const std::string& verb) {
    return "After --, fadd's own options (see 'fadd --help'), e.g.\n  fad daemon " + verb +
           " -- --memory-budget 12G --cores 8";
  };
  start->footer(fadd_args("start"));
  auto* stop = daemon->add_subcommand("stop", "ask fadd to stop and wait until it has exited");
  add_locations(stop, raw);
  stop->add_option("--state-dir", raw.state_dir, "fadd's state directory, when its status does not say")
      ->type_name("DIR");
  auto* restart = daemon->add_subcommand("restart", "stop fadd, then start it again; args after -- go to fadd");
  add_locations(restart, raw);
  restart->add_option("--state-dir", raw.state_dir, "fadd's state directory (db, logs, outputs)")->type_name("DIR");
  restart->footer(fadd_args("restart"));

  auto* completions = app.add_subcommand(
      "completions", "print a completion script: eval \"$(fad completions bash)\", or see the manual");
  completions->add_option("SHELL", raw.shell, "bash, zsh or fish")
      ->required()
      ->check(CLI::IsMember({"bash", "zsh", "fish"}));
  add_locations(completions, raw);  // unused, but every subcommand takes them: an alias may add them

  return owned;
}

Result<std::int64_t> parse_build_id(const std::string& text) {
  std::int64_t id = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (ec == std::errc::result_out_of_range && end == text.data() + text.size() && text.front() != '-')
    return make_error("build id " + text + " is too large (no build has an id over " +
                      std::to_string(std::numeric_limits<std::int64_t>::max()) + ")");
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || id <= 0)
    return make_error("build id must be a positive integer, got '" + text + "'");
  return id;
}

ParseOutcome parse_command(int argc, const char* const* argv) {
  std::vector<std::string> args(argv + std::min(argc, 1), argv + argc);
  // Everything after the first "--" goes to fadd untouched (daemon start and
  // restart); for any other command "--" ends the options, as everywhere
  // ("fad logs -- 3", "fad history import -- -file").
  std::vector<std::string> fadd_args;
  if (auto dd = std::find(args.begin(), args.end(), "--"); dd != args.end()) {
    // (Any daemon command: 'daemon stop -- x' is told that only start and
    // restart pass arguments on.)
    if (std::find(args.begin(), dd, "daemon") != dd) {
      fadd_args.assign(dd + 1, args.end());
      args.erase(dd, args.end());
    }
  }

  // Options only: after a "--" that ends them, every word is the user's.
  const auto options_end = [&] {
    return static_cast<std::size_t>(std::find(args.begin(), args.end(), "--") - args.begin());
  };
  // "—socket" pasted from a document: CLI11 would take it for a value.
  for (std::size_t i = 0; i < options_end(); ++i)
    if (auto dash = dash_lookalike(args[i]); !dash.empty()) return usage(dash, "fad");

  RawArgs raw;
  auto owned = make_cli_app(raw);
  CLI::App& app = *owned;

  // "--json=1", "--json=0": CLI11 reads a value given to a flag as on or
  // off, so "--wait=no" would silently not wait. A flag is given or not.
  for (std::size_t i = 0; i < options_end(); ++i)
    if (auto given = flag_given_a_value(app, args, i)) return usage(given->first, given->second);

  // "--name=$UNSET": CLI11 reads "--opt=" as "--opt" and takes the next
  // word as its value; "-o=FILE" it reads as the value "=FILE". Split, the
  // empty value is one, and checked as such.
  split_option_values(args, options_end());

  // `fad help [COMMAND...]`, as git and cargo have it: COMMAND's --help.
  if (!args.empty() && args.front() == "help") {
    args.erase(args.begin());
    // Each word must name a command of the one before ("fad help daemon
    // strat" is no help for "daemon").
    std::string path = "fad";
    const CLI::App* at = &app;
    for (const auto& word : args) {
      std::vector<std::string> commands;
      for (const CLI::App* sub : at->get_subcommands({})) commands.push_back(sub->get_name());
      if (commands.empty()) break;
      const auto found = std::find(commands.begin(), commands.end(), word);
      if (found == commands.end())
        return usage("unknown command '" + word + "'" + did_you_mean(suggest(word, commands)), path);
      at = at->get_subcommand(word);
      path += " " + word;
    }
    args.push_back("--help");
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
    const auto end = args.begin() + static_cast<std::ptrdiff_t>(options_end());  // "--", or the end
    const std::vector<std::string> words(end == args.end() ? end : end + 1, args.end());
    const auto first_word =
        std::find_if(args.begin(), end, [](const std::string& a) { return a.empty() || a[0] != '-'; });
    return describe_parse_error(app, e, words, first_word != end ? *first_word : std::string());
  }
  return finish(app, raw, std::move(fadd_args));
}

}  // namespace fad::client
