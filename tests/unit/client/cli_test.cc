// parse_command: every subcommand, and every way a command line is a usage error.
#include <algorithm>

#include <catch2/catch.hpp>

#include "client/cli.h"
#include "client/run_command.h"
#include "client/exit_codes.h"

using namespace fad::client;

namespace {

ParseOutcome parse(std::vector<std::string> args) {
  args.insert(args.begin(), "fad");
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  return parse_command(static_cast<int>(argv.size()), argv.data());
}

Command command(std::vector<std::string> args) {
  auto outcome = parse(std::move(args));
  if (auto* early = std::get_if<EarlyExit>(&outcome)) FAIL("unexpected early exit: " << early->text);
  return std::get<Command>(outcome);
}

EarlyExit early(std::vector<std::string> args) {
  auto outcome = parse(std::move(args));
  REQUIRE(std::holds_alternative<EarlyExit>(outcome));
  return std::get<EarlyExit>(outcome);
}

// A usage error: exit 2, one "fad: ..." line on stderr.
std::string usage_error(std::vector<std::string> args) {
  EarlyExit e = early(std::move(args));
  CHECK(e.exit_code == kExitUsage);
  CHECK(e.to_stderr);
  CHECK(e.text.rfind("fad: ", 0) == 0);
  CHECK(std::count(e.text.begin(), e.text.end(), '\n') == 1);
  return e.text;
}

}  // namespace

TEST_CASE("submit parses archs, repeated and comma lists, deduplicated") {
  Command c = command({"submit", "--arch", "9.0", "--arch", "sm_120,8.0", "--arch", "90", "--kernels", "attn*",
                       "--nvcc", "/opt/nvcc", "--name", "nightly", "--wait", "--json", "--socket", "/s.sock"});
  CHECK(c.kind == CommandKind::submit);
  REQUIRE(c.archs.size() == 3);
  CHECK(c.archs[0].display() == "9.0");
  CHECK(c.archs[1].display() == "12.0");
  CHECK(c.archs[2].display() == "8.0");
  CHECK(c.kernels == "attn*");
  CHECK(c.nvcc == "/opt/nvcc");
  CHECK(c.name == "nightly");
  CHECK(c.wait);
  CHECK(c.json);
  CHECK(c.socket == "/s.sock");
}

TEST_CASE("submit defaults: no arch (GPUs decide), all kernels") {
  Command c = command({"submit"});
  CHECK(c.archs.empty());
  CHECK(c.kernels == "*");
  CHECK_FALSE(c.wait);
  CHECK_FALSE(c.socket);
}

TEST_CASE("bad arch syntax is a usage error naming the arch") {
  CHECK(usage_error({"submit", "--arch", "9.5x"}).find("9.5x") != std::string::npos);
  CHECK(usage_error({"submit", "--arch", "9.0,banana"}).find("banana") != std::string::npos);
  usage_error({"submit", "--arch"});
}

TEST_CASE("status with and without id") {
  Command all = command({"status", "--json"});
  CHECK(all.kind == CommandKind::status);
  CHECK_FALSE(all.id);
  CHECK(all.json);
  Command one = command({"status", "7", "--watch"});
  CHECK(one.id == 7);
  CHECK(one.watch);
}

TEST_CASE("ids must be positive integers") {
  for (const char* bad : {"0", "-3", "abc", "7x", "1.5", "-99999999999999999999"}) {
    INFO(bad);
    CHECK(usage_error({"cancel", bad}).find("positive integer") != std::string::npos);
  }
  CHECK(usage_error({"cancel", "99999999999999999999"}).find("is too large") != std::string::npos);
  usage_error({"status", "x"});
  usage_error({"logs", "0"});
}

TEST_CASE("logs takes an id, an optional unit and --follow") {
  Command c = command({"logs", "3", "attn_fwd_sm90", "--follow"});
  CHECK(c.kind == CommandKind::logs);
  CHECK(c.id == 3);
  CHECK(c.unit == "attn_fwd_sm90");
  CHECK(c.follow);
  CHECK_FALSE(command({"logs", "3"}).unit);
  usage_error({"logs"});
  CHECK(usage_error({"logs", "3", "u", "extra"}).find("'extra'") != std::string::npos);
}

TEST_CASE("build control commands need an id") {
  const std::pair<const char*, CommandKind> kinds[] = {{"cancel", CommandKind::cancel},
                                                       {"pause", CommandKind::pause},
                                                       {"resume", CommandKind::resume},
                                                       {"retry", CommandKind::retry}};
  for (const auto& [name, kind] : kinds) {
    INFO(name);
    Command c = command({name, "12"});
    CHECK(c.kind == kind);
    CHECK(c.id == 12);
    CHECK(c.path == std::string("fad ") + name);
    usage_error({name});
  }
}

TEST_CASE("history limit") {
  CHECK(command({"history"}).limit == 20);
  Command c = command({"history", "--limit", "5", "--json"});
  CHECK(c.kind == CommandKind::history);
  CHECK(c.limit == 5);
  CHECK(c.json);
  CHECK(usage_error({"history", "--limit", "0"}) ==
        "fad: --limit must be from 1 to 10000, got 0 (see 'fad history --help')\n");
  // fadd's most, said by the client in its own words (it once came back as
  // fadd's 'field "limit" must be...').
  CHECK(usage_error({"history", "--limit", "10001"}) ==
        "fad: --limit must be from 1 to 10000, got 10001 (see 'fad history --help')\n");
  CHECK(usage_error({"history", "--limit", "lots"}) ==
        "fad: --limit: expected a whole number in range, got 'lots' (see 'fad history --help')\n");
  CHECK(usage_error({"history", "--limit", "99999999999999"}).find("got '99999999999999'") != std::string::npos);
}

TEST_CASE("an empty value is a usage error, not the option's default") {
  CHECK(usage_error({"submit", "--nvcc", ""}) == "fad: --nvcc: the value is empty (see 'fad submit --help')\n");
  CHECK(usage_error({"submit", "--kernels", ""}).find("--kernels: the value is empty") != std::string::npos);
  usage_error({"submit", "--kernels="});
  CHECK(usage_error({"status", "--socket", ""}).find("--socket: the value is empty") != std::string::npos);
  CHECK(usage_error({"report", "3", "-o", ""}).find("--output: the value is empty") != std::string::npos);
  CHECK(usage_error({"history", "export", ""}).find("FILE: the value is empty") != std::string::npos);
  CHECK(usage_error({"daemon", "start", "--state-dir", ""}).find("--state-dir") != std::string::npos);
  // A name may be empty: the build is then named for what it builds.
  CHECK(command({"submit", "--arch", "9.0", "--name", ""}).name.empty());
  // Spaces only would be a blank row in every user's listing.
  CHECK(usage_error({"submit", "--name", "   "}) ==
        "fad: --name: only spaces (leave it empty for the default name) (see 'fad submit --help')\n");
}

TEST_CASE("an option given where a value was due is named, not taken as the value") {
  // CLI11 alone asked for a socket named "--json", or a build named "--wait".
  CHECK(usage_error({"status", "--socket", "--json"}) ==
        "fad: --socket: needs a value, got the option '--json' (see 'fad status --help')\n");
  CHECK(usage_error({"submit", "--arch", "9.0", "--name", "--wait"}) ==
        "fad: --name: needs a value, got the option '--wait' (see 'fad submit --help')\n");
  CHECK(usage_error({"daemon", "start", "--state-dir", "--socket", "/x"}) ==
        "fad: --state-dir: needs a value, got the option '--socket' (see 'fad daemon start --help')\n");
  CHECK(usage_error({"history", "--limit", "--json"}) ==
        "fad: --limit: needs a value, got the option '--json' (see 'fad history --help')\n");
  CHECK(usage_error({"logs", "1", "--socket"}) == "fad: --socket: needs a value (see 'fad logs --help')\n");
  CHECK(usage_error({"submit", "--name", "a", "--name", "b"}) ==
        "fad: --name: given more than once; give it once (see 'fad submit --help')\n");
  // A flag is given or not: CLI11 read "--wait=no" as on, "--json=0" as off.
  CHECK(usage_error({"submit", "--arch", "9.0", "--wait=no"}) ==
        "fad: --wait: a flag takes no value, got 'no' (see 'fad submit --help')\n");
  CHECK(usage_error({"status", "--json=1"}) ==
        "fad: --json: a flag takes no value, got '1' (see 'fad status --help')\n");
  CHECK(usage_error({"prune", "--dry-run="}) == "fad: --dry-run: a flag takes no value (see 'fad prune --help')\n");
  CHECK(usage_error({"cache", "stats", "--cache-dir", "/c", "--json=1"}) ==
        "fad: --json: a flag takes no value, got '1' (see 'fad cache stats --help')\n");
  CHECK(usage_error({"status", "-h=1"}) == "fad: -h: a flag takes no value, got '1' (see 'fad status --help')\n");
  CHECK(usage_error({"-h="}) == "fad: -h: a flag takes no value (see 'fad --help')\n");
  // Where the command has no such flag, it is an unknown option; after "--", a word.
  CHECK(usage_error({"logs", "--json=1", "3"}) == "fad: unknown option --json=1 (see 'fad logs --help')\n");
  CHECK(usage_error({"status", "--", "--json=1"}).find("build id must be a positive integer") != std::string::npos);
  // "--opt=$UNSET": the empty value is one, not the word after it.
  CHECK(usage_error({"submit", "--arch", "9.0", "--kernels=", "fwd_a"}) ==
        "fad: --kernels: the value is empty (see 'fad submit --help')\n");
  CHECK(usage_error({"logs", "--socket=", "12"}) == "fad: --socket: the value is empty (see 'fad logs --help')\n");
  // A short option is an option too: `report 1 -o -h` wrote a file named "-h".
  CHECK(usage_error({"report", "3", "-o", "-h"}) ==
        "fad: --output: needs a value, got the option '-h' (see 'fad report --help')\n");
  CHECK(usage_error({"report", "3", "-o=-o"}) ==
        "fad: --output: needs a value, got the option '-o' (see 'fad report --help')\n");
  CHECK(usage_error({"report", "3", "-o", "--"}) ==
        "fad: --output: needs a value, got '--' (see 'fad report --help')\n");
  // Arguments that make fadd print and exit start no daemon.
  CHECK(usage_error({"daemon", "restart", "--", "--version"}) ==
        "fad: --version makes fadd exit at once, so it starts nothing: run 'fadd --version' itself (see 'fad daemon "
        "restart --help')\n");
  CHECK(usage_error({"daemon", "start", "--", "--cores", "2", "--check"}).find("--check makes fadd exit at once") !=
        std::string::npos);
  CHECK(usage_error({"daemon", "start", "--", "-h"}).find("-h makes fadd exit at once") != std::string::npos);
  // "-o=FILE": CLI11 took "=FILE" as the value and wrote a file named so.
  CHECK(command({"report", "3", "-o=r.html"}).output == "r.html");
  CHECK(usage_error({"report", "3", "-o="}) == "fad: --output: the value is empty (see 'fad report --help')\n");
  CHECK(usage_error({"submit", "--name=", "fwd_a", "--arch", "9.0"}) ==
        "fad: unexpected argument 'fwd_a' (see 'fad submit --help')\n");
  CHECK(command({"submit", "--name=", "--arch", "9.0"}).name.empty());
  // A value that only looks like an option is the user's to choose.
  CHECK(command({"submit", "--arch", "9.0", "--name", "--nightly"}).name == "--nightly");
}

TEST_CASE("a '--' ends the options of any command but daemon start and restart") {
  CHECK(command({"logs", "--", "3"}).id == std::optional<std::int64_t>(3));
  CHECK(command({"history", "import", "--", "-f"}).file == "-f");  // a file named -f
  CHECK(command({"history", "import", "--", "--f="}).file == "--f=");
  CHECK(command({"history", "import", "--",
                 "\xe2\x80\x94"
                 "g"})
            .file ==
        "\xe2\x80\x94"
        "g");
  CHECK(usage_error({"status", "--", "--json"}) ==
        "fad: build id must be a positive integer, got '--json' (see 'fad status --help')\n");
  // One word too many after it is that word, not an option named "--" nor
  // one given before its command.
  CHECK(usage_error({"logs", "--", "1", "2", "3"}) == "fad: unexpected argument '3' (see 'fad logs --help')\n");
  CHECK(usage_error({"submit", "--", "--arch"}) == "fad: unexpected argument '--arch' (see 'fad submit --help')\n");
  CHECK(usage_error({"submit", "--arhc", "9.0"}) ==
        "fad: unknown option --arhc; did you mean '--arch'? (see 'fad submit --help')\n");
  CHECK(usage_error({"daemon", "stop", "--", "x"}).find("only for 'fad daemon start' and 'fad daemon restart'") !=
        std::string::npos);
}

TEST_CASE("an option pasted with an em dash is named as such, by fad and fad run") {
  // CLI11 took "—socket" for a value and named the word after it.
  CHECK(usage_error({"status", "\xe2\x80\x94socket", "/x"}) ==
        "fad: '\xe2\x80\x94socket' starts with an em dash, not '-': did you mean '--socket'? (see 'fad --help')\n");
  fad::client::RunOptions options;
  CHECK(fad::client::parse_run_args({"\xe2\x80\x94name", "x", "--", "make"}, &options) ==
        "'\xe2\x80\x94name' starts with an em dash, not '-': did you mean '--name'? (see 'fad run --help')");
}

TEST_CASE("a mistyped command is named, not an option given after it") {
  CHECK(usage_error({"statuss", "--socket", "/x"}) ==
        "fad: unknown command 'statuss'; did you mean 'status'? (see 'fad --help')\n");
  CHECK(usage_error({"daemon", "strat", "--state-dir", "/x"}) ==
        "fad: unknown command 'strat'; did you mean 'start'? (see 'fad daemon --help')\n");
  // Close to none, or given before the option's value: still the command.
  CHECK(usage_error({"frob", "--socket", "/x"}) == "fad: unknown command 'frob' (see 'fad --help')\n");
  CHECK(usage_error({"stat", "--socket", "/x"}).rfind("fad: unknown command 'stat'", 0) == 0);
  // A command's own option before it is still named so.
  CHECK(usage_error({"--socket", "/x", "status"}) ==
        "fad: --socket goes after the command: 'fad status --socket ...' (see 'fad status --help')\n");
}

TEST_CASE("a word quoted back in a usage error reaches the terminal printable") {
  // Bug: `fad $'\xff'` wrote the stray byte back, `fad $'\e[2J'` an escape
  // sequence that cleared the screen.
  CHECK(usage_error({"\xff"}) == "fad: unknown command '?' (see 'fad --help')\n");
  CHECK(usage_error({"\x1b[2Jx"}) == "fad: unknown command '?[2Jx' (see 'fad --help')\n");
  CHECK(usage_error({"status", "--fr\x1bob"}).find("unknown option --fr?ob") != std::string::npos);
  CHECK(usage_error({"submit", "--arch", "9\n0"}).find("invalid arch '9?0'") != std::string::npos);
}

TEST_CASE("a command given only after -- is named as such") {
  // Bug: CLI11's own "A subcommand is required".
  CHECK(usage_error({"--", "status"}) ==
        "fad: missing command: the words after '--' are never one; did you mean 'fad status'? (see 'fad --help')\n");
  CHECK(usage_error({"--", "frob"}) == "fad: missing command: the words after '--' are never one (see 'fad --help')\n");
  CHECK(usage_error({"daemon", "--", "stop"}).find("missing command") != std::string::npos);
}

TEST_CASE("daemon start and stop, with args for fadd after --") {
  Command start =
      command({"daemon", "start", "--state-dir", "/st", "--config", "/c.json", "--", "--log-level", "debug"});
  CHECK(start.kind == CommandKind::daemon_start);
  CHECK(start.path == "fad daemon start");
  CHECK(start.state_dir == "/st");
  CHECK(start.config == "/c.json");
  CHECK(start.fadd_args == std::vector<std::string>{"--log-level", "debug"});
  CHECK(command({"daemon", "stop", "--socket", "/s"}).kind == CommandKind::daemon_stop);
  usage_error({"daemon"});
  CHECK(usage_error({"daemon", "reload"}).find("unknown command 'reload'") != std::string::npos);
  // Elsewhere "--" ends the options: x is status's ID.
  CHECK(usage_error({"status", "--", "x"}).find("build id must be a positive integer, got 'x'") != std::string::npos);
  // Bug: a number past the largest id was told it is not a positive integer.
  CHECK(usage_error({"status", "99999999999999999999999"}) ==
        "fad: build id 99999999999999999999999 is too large (no build has an id over 9223372036854775807) (see 'fad "
        "status --help')\n");
  CHECK(command({"status", "9223372036854775807"}).id == 9223372036854775807);
}

TEST_CASE("daemon restart takes start's arguments") {
  Command restart = command({"daemon", "restart", "--state-dir", "/st", "--", "--cores", "2"});
  CHECK(restart.kind == CommandKind::daemon_restart);
  CHECK(restart.path == "fad daemon restart");
  CHECK(restart.state_dir == "/st");
  CHECK(restart.fadd_args == std::vector<std::string>{"--cores", "2"});
  // fad gives fadd its socket, state dir and config itself: named after '--'
  // too, fadd would refuse them twice.
  CHECK(usage_error({"daemon", "start", "--", "--config", "/c.json"}) ==
        "fad: --config goes before '--': 'fad daemon start --config ...' (see 'fad daemon start --help')\n");
  CHECK(usage_error({"daemon", "restart", "--", "--socket=/s"}).find("--socket goes before '--'") != std::string::npos);
  CHECK(usage_error({"daemon", "start", "--", "--state-dir", "/d"}).find("--state-dir goes before") !=
        std::string::npos);
  CHECK(command({"daemon", "stop", "--state-dir", "/st"}).state_dir == "/st");
}

TEST_CASE("prune: an age with a unit, --dry-run, --json") {
  Command plain = command({"prune"});
  CHECK(plain.kind == CommandKind::prune);
  CHECK_FALSE(plain.older_than_s.has_value());
  CHECK_FALSE(plain.dry_run);
  Command c = command({"prune", "--older-than", "2w", "--dry-run", "--json"});
  CHECK(c.older_than_s == std::optional<std::int64_t>(14 * 86400));
  CHECK(c.dry_run);
  CHECK(c.json);
  CHECK(command({"prune", "--older-than", "0s"}).older_than_s == std::optional<std::int64_t>(0));
  CHECK(usage_error({"prune", "--older-than", "30"}) ==
        "fad: --older-than: invalid age '30': use a whole number with s, m, h, d or w (e.g. 30d, 12h) "
        "(see 'fad prune --help')\n");
  usage_error({"prune", "--older-than", "-3d"});
  usage_error({"prune", "--older-than", "1.5d"});
}

TEST_CASE("unknown options and commands: one line pointing at the right help") {
  CHECK(usage_error({"submit", "--foo"}) == "fad: unknown option --foo (see 'fad submit --help')\n");
  CHECK(usage_error({"frob"}) == "fad: unknown command 'frob' (see 'fad --help')\n");
  CHECK(usage_error({"stauts"}) == "fad: unknown command 'stauts'; did you mean 'status'? (see 'fad --help')\n");
  CHECK(usage_error({"hisotry"}).find("did you mean 'history'?") != std::string::npos);
  CHECK(usage_error({"status", "--jsno"}) ==
        "fad: unknown option --jsno; did you mean '--json'? (see 'fad status --help')\n");
  CHECK(usage_error({"daemon", "strat"}).find("did you mean 'start'?") != std::string::npos);
  CHECK(usage_error({"--foo"}).find("unknown option --foo") != std::string::npos);
  CHECK(usage_error({}).find("missing command") != std::string::npos);
  CHECK(usage_error({"daemon", "start", "--bar"}).find("'fad daemon start --help'") != std::string::npos);
  // A mistyped option with its value apart: the option is named, not the value.
  CHECK(usage_error({"submit", "--arhc", "9.0"}) ==
        "fad: unknown option --arhc; did you mean '--arch'? (see 'fad submit --help')\n");
  CHECK(usage_error({"submit", "--kernals", "fwd_a"}).find("unknown option --kernals; did you mean '--kernels'?") !=
        std::string::npos);
  // A name JSON cannot carry unchanged.
  CHECK(usage_error({"submit", "--name", "bad\xff name"}) ==
        "fad: --name: not valid UTF-8 (see 'fad submit --help')\n");
  CHECK(usage_error({"submit", "--name", "\xc0\xaf"}).find("not valid UTF-8") != std::string::npos);  // overlong '/'
  // Said in the option's words, not in fadd's protocol's ("field \"name\"").
  const std::string longest(256, 'n'), too_long(257, 'n');
  CHECK(command({"submit", "--name", longest.c_str()}).name == longest);
  CHECK(usage_error({"submit", "--name", too_long.c_str()}) ==
        "fad: --name: at most 256 bytes, got 257 (see 'fad submit --help')\n");
  // A command's own option before the command.
  CHECK(usage_error({"--socket", "/x/s", "status"}) ==
        "fad: --socket goes after the command: 'fad status --socket ...' (see 'fad status --help')\n");
  // A command that may go without a subcommand, given one close to a name.
  CHECK(usage_error({"history", "exprt", "f.json"}).find("unknown command 'exprt'; did you mean 'export'?") !=
        std::string::npos);
}

TEST_CASE("help and version go to stdout with exit 0") {
  EarlyExit top = early({"--help"});
  CHECK(top.exit_code == 0);
  CHECK_FALSE(top.to_stderr);
  CHECK(top.text.find("submit") != std::string::npos);
  // Every command is listed, run and launch included.
  for (const char* sub : {"submit", "watch", "status", "logs", "report", "cancel", "pause", "resume", "retry",
                          "history", "run", "launch", "doctor", "daemon", "completions"}) {
    INFO(sub);
    CHECK(top.text.find(std::string("\n  ") + sub + " ") != std::string::npos);
  }
  CHECK(top.text.find("freeze a build's running compilers") != std::string::npos);  // pause, truthfully
  for (const char* sub :
       {"submit", "status", "logs", "cancel", "pause", "resume", "retry", "history", "daemon", "watch", "report"}) {
    INFO(sub);
    EarlyExit h = early({sub, "--help"});
    CHECK(h.exit_code == 0);
    CHECK(h.text.find(std::string("fad ") + sub) != std::string::npos);
    if (std::string(sub) != "daemon") CHECK(h.text.find("--socket") != std::string::npos);
  }
  CHECK(early({"daemon", "start", "--help"}).text.find("--state-dir") != std::string::npos);
  // How to hand fadd its own options, which the usage line cannot show.
  CHECK(early({"daemon", "start", "--help"}).text.find("fad daemon start -- --memory-budget 12G") != std::string::npos);
  CHECK(early({"daemon", "restart", "--help"}).text.find("fad daemon restart -- --memory-budget") != std::string::npos);
  EarlyExit v = early({"--version"});
  CHECK(v.exit_code == 0);
  CHECK(v.text == std::string("fad ") + FAD_VERSION + "\n");
}

TEST_CASE("cache stats and clear, with --json and --cache-dir") {
  auto stats = command({"cache", "stats", "--json"});
  CHECK(stats.kind == CommandKind::cache_stats);
  CHECK(stats.json);
  CHECK_FALSE(stats.cache_dir);
  auto clear = command({"cache", "clear", "--cache-dir", "/srv/cache"});
  CHECK(clear.kind == CommandKind::cache_clear);
  CHECK(clear.cache_dir == std::string("/srv/cache"));
  CHECK(usage_error({"cache"}).find("missing command") != std::string::npos);
  CHECK(usage_error({"cache", "wipe"}).find("'wipe'") != std::string::npos);
}

TEST_CASE("watch, report and completions parse, and --color is checked") {
  Command w = command({"watch"});
  CHECK(w.kind == CommandKind::watch);
  CHECK_FALSE(w.id);
  CHECK(command({"watch", "4"}).id == 4);
  Command r = command({"report", "7", "-o", "out.html", "--trace", "t.json"});
  CHECK(r.kind == CommandKind::report);
  CHECK(r.id == 7);
  CHECK(r.output == std::optional<std::string>("out.html"));
  CHECK(r.trace == std::optional<std::string>("t.json"));
  CHECK(command({"report", "7", "--output", "x"}).output == std::optional<std::string>("x"));
  CHECK_FALSE(command({"report", "7"}).output);
  usage_error({"report"});
  Command c = command({"completions", "zsh"});
  CHECK(c.kind == CommandKind::completions);
  CHECK(c.shell == "zsh");
  usage_error({"completions"});
  CHECK(usage_error({"completions", "tcsh"}).find("tcsh") != std::string::npos);
  // The options every subcommand takes, completions too (they were refused).
  CHECK(command({"completions", "--color", "never", "bash"}).shell == "bash");
  CHECK(command({"completions", "bash", "--socket", "/x"}).shell == "bash");
  CHECK(command({"status"}).color == "auto");
  CHECK(command({"status", "--color", "never"}).color == "never");
  CHECK(command({"history", "--color=always"}).color == "always");
  usage_error({"status", "--color", "sometimes"});
}

TEST_CASE("run and launch are listed but take their own command line") {
  CHECK(usage_error({"run", "x"}).find("takes its own command line") != std::string::npos);
}

TEST_CASE("fad help shows the overview, fad help COMMAND that command's help, an unknown one is a usage error") {
  auto all = early({"help"});
  CHECK(all.exit_code == 0);
  CHECK(all.text.find("Subcommands:") != std::string::npos);
  auto one = early({"help", "logs"});
  CHECK(one.exit_code == 0);
  CHECK(one.text.find("Usage: fad logs") != std::string::npos);
  CHECK(early({"help", "daemon", "start"}).text.find("Usage: fad daemon start") != std::string::npos);
  auto bad = early({"help", "nosuch"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.text == "fad: unknown command 'nosuch' (see 'fad --help')\n");
  CHECK(early({"help", "stauts"}).text == "fad: unknown command 'stauts'; did you mean 'status'? (see 'fad --help')\n");
  CHECK(early({"help", "daemon", "strat"}).text ==
        "fad: unknown command 'strat'; did you mean 'start'? (see 'fad daemon --help')\n");
}

TEST_CASE("every command's help fits 80 columns off a terminal") {
  // Descriptions ran to 175 characters, broken mid-word by the terminal.
  for (std::vector<std::string> path : std::vector<std::vector<std::string>>{
           {}, {"submit"}, {"status"}, {"watch"}, {"history"}, {"daemon", "start"}, {"cache", "stats"}, {"doctor"}}) {
    path.push_back("--help");
    const EarlyExit help = early(path);
    REQUIRE(help.exit_code == kExitOk);
    std::size_t start = 0, lines = 0;
    for (std::size_t end; (end = help.text.find('\n', start)) != std::string::npos; start = end + 1, ++lines) {
      const std::string line = help.text.substr(start, end - start);
      const bool one_word = line.find(' ', line.find_first_not_of(' ')) == std::string::npos;
      INFO(path.front() << ": " << line);
      CHECK((line.size() <= 80 || one_word));
    }
    CHECK(lines > 5);
  }
}

TEST_CASE("fad run: an empty command is a usage error, before any build is opened") {
  fad::client::RunOptions options;
  CHECK(fad::client::parse_run_args({"--", ""}, &options).rfind("the command to run is empty", 0) == 0);
  CHECK(fad::client::parse_run_args({"--"}, &options).rfind("no command to run", 0) == 0);
  fad::client::RunOptions ok;
  CHECK(fad::client::parse_run_args({"--name", "n", "--", "ninja", ""}, &ok).empty());
  CHECK(ok.command == std::vector<std::string>{"ninja", ""});  // the command's own empty argument is its business
  // A forgotten value is not filled with the next option: "--socket --name
  // x -- make" once ran x, outside fadd.
  fad::client::RunOptions taken;
  CHECK(fad::client::parse_run_args({"--socket", "--name", "x", "--", "make"}, &taken) ==
        "--socket: needs a value, got the option '--name' (see 'fad run --help')");
  CHECK(fad::client::parse_run_args({"--name", "--", "make"}, &taken) ==
        "--name: needs a value, got '--' (see 'fad run --help')");
  CHECK(fad::client::parse_run_args({"--budget", "--name=x", "--", "make"}, &taken) ==
        "--budget: needs a value, got the option '--name=x' (see 'fad run --help')");
  // "--name=--socket" is as much the option as "--name --socket".
  CHECK(fad::client::parse_run_args({"--name=--socket", "--", "true"}, &taken) ==
        "--name: needs a value, got the option '--socket' (see 'fad run --help')");
  CHECK(fad::client::parse_run_args({"--socket", "--json", "--", "true"}, &taken) ==
        "--socket: needs a value, got the option '--json' (see 'fad run --help')");
  CHECK(fad::client::parse_run_args({"--name", "--nightly", "--", "true"}, &taken).empty());  // a name may
  CHECK(fad::client::parse_run_args({"--socket=-h", "--", "true"}, &taken) ==
        "--socket: needs a value, got the option '-h' (see 'fad run --help')");
  CHECK(fad::client::parse_run_args({"--budget", "", "--", "make"}, &taken) ==
        "--budget: the value is empty (see 'fad run --help')");
  CHECK(fad::client::parse_run_args({"--budget=0", "--", "make"}, &taken) ==
        "--budget: must be at least 1M (see 'fad run --help')");
  CHECK(fad::client::parse_run_args({"--budget", "1X", "--", "make"}, &taken).rfind("--budget: invalid size '1X'", 0) ==
        0);
  // --opt=VALUE, as for every other command.
  fad::client::RunOptions inline_values;
  CHECK(fad::client::parse_run_args({"--name=nightly", "--budget=1G", "--socket=/s", "--", "make"}, &inline_values)
            .empty());
  CHECK(inline_values.name == "nightly");
  CHECK(inline_values.budget == "1G");
  CHECK(inline_values.entry.socket == "/s");
  CHECK(inline_values.command == std::vector<std::string>{"make"});
  // Given twice, which was meant is the user's to say, as for fad submit
  // (fad run took the last).
  fad::client::RunOptions twice;
  CHECK(fad::client::parse_run_args({"--name", "a", "--name=b", "--", "make"}, &twice) ==
        "--name: given more than once; give it once (see 'fad run --help')");
  CHECK(fad::client::parse_run_args({"--socket=/a", "--budget", "1G", "--socket", "/b", "--", "make"}, &twice) ==
        "--socket: given more than once; give it once (see 'fad run --help')");
  CHECK(fad::client::parse_run_args({"--name", "a", "--", "make", "--name", "b"}, &twice).empty());
  CHECK(twice.command == std::vector<std::string>{"make", "--name", "b"});
  CHECK(fad::client::parse_run_args({"--socket"}, &twice) == "--socket: needs a value (see 'fad run --help')");
  CHECK(fad::client::parse_run_args({"--config=", "--", "make"}, &twice) ==
        "--config: the value is empty (see 'fad run --help')");
  // fad run checks --name by the same rules as fad submit.
  fad::client::RunOptions blank;
  CHECK(fad::client::parse_run_args({"--name", " ", "--", "ninja"}, &blank) ==
        "--name: only spaces (leave it empty for the default name) (see 'fad run --help')");
  CHECK(fad::client::parse_run_args({"--name", std::string(257, 'n'), "--", "ninja"}, &blank) ==
        "--name: at most 256 bytes, got 257 (see 'fad run --help')");
}
