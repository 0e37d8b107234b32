// Completion scripts generated from the CLI definition, run in the real
// shells where they are installed: bash completes through its own
// `complete -F` function, fish through `complete -C`, zsh loads the script.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "client/cli_app.h"
#include "client/completions.h"

using namespace fad::client;
namespace fs = std::filesystem;

namespace {

std::string script(const std::string& shell) {
  RawArgs raw;
  auto app = make_cli_app(raw);
  auto s = completion_script(*app, shell);
  REQUIRE(s);
  return *s;
}

bool have(const std::string& program) {
  return std::system(("command -v " + program + " >/dev/null 2>&1").c_str()) == 0;
}

// Runs `command` through sh, returns stdout; the exit status in `rc`.
std::string capture(const std::string& command, int* rc = nullptr) {
  std::string out;
  FILE* p = ::popen(command.c_str(), "r");
  REQUIRE(p);
  std::array<char, 4096> buf{};
  for (std::size_t n; (n = std::fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
  const int status = ::pclose(p);
  if (rc) *rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

struct ScriptFile {
  fs::path path;
  explicit ScriptFile(const std::string& shell)
      : path(fs::temp_directory_path() / ("fad-completion-" + std::to_string(::getpid()) + "." + shell)) {
    std::ofstream(path) << script(shell);
  }
  ~ScriptFile() { fs::remove(path); }
};

// The words bash offers for the command line `words` (the last one being completed).
std::string bash_complete(const ScriptFile& f, const std::string& words) {
  return capture("bash -c 'source " + f.path.string() + "; COMP_WORDS=(" + words +
                 "); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _fad; echo \"${COMPREPLY[*]}\"' 2>&1");
}

}  // namespace

TEST_CASE("completion scripts name every command and option, and no other shell has one") {
  for (const char* shell : {"bash", "zsh", "fish"}) {
    INFO(shell);
    const std::string s = script(shell);
    for (const char* word : {"submit", "watch", "status", "report", "run", "launch", "completions", "--arch", "--wait",
                             "--trace", "--follow", "--limit", "start", "stop", "--state-dir", "never"}) {
      // fish names options without their dashes: "-l arch".
      const std::string w = std::string(shell) == "fish" && word[0] == '-' ? "-l " + std::string(word + 2) : word;
      CHECK(s.find(w) != std::string::npos);
    }
  }
  RawArgs raw;
  auto app = make_cli_app(raw);
  CHECK_FALSE(completion_script(*app, "tcsh"));
}

TEST_CASE("bash: commands, a command's options, daemon's subcommands and --color values complete") {
  if (!have("bash")) {
    WARN("SKIP: bash is not installed");
    return;
  }
  ScriptFile f("bash");
  CHECK(bash_complete(f, "fad sta") == "status\n");
  CHECK(bash_complete(f, "fad re") == "report resume retry\n");
  const std::string submit = bash_complete(f, "fad submit --a");
  CHECK(submit == "--arch\n");
  CHECK(bash_complete(f, "fad daemon s") == "start stop\n");
  CHECK(bash_complete(f, "fad daemon start --st") == "--state-dir\n");
  CHECK(bash_complete(f, "fad status --color n") == "never\n");
  CHECK(bash_complete(f, "fad completions f") == "fish\n");
  // Every group's members, not only daemon's. Bug: 'cache stats --' gave
  // --help alone and 'history export --' history's own --limit and --json.
  CHECK(bash_complete(f, "fad cache stats --c") == "--cache-dir --config --color\n");
  CHECK(bash_complete(f, "fad history export --") == "--help --socket --config --color\n");
  CHECK(bash_complete(f, "fad history --limit 5 export --s") == "--socket\n");
  CHECK(bash_complete(f, "fad history --l") == "--limit\n");
  CHECK(bash_complete(f, "fad run --c") == "--config --color\n");
}

TEST_CASE("fish: the script loads and completes commands and options") {
  if (!have("fish")) {
    WARN("SKIP: fish is not installed (scripts/setup.sh installs it)");
    return;
  }
  ScriptFile f("fish");
  int rc = 0;
  capture("fish --no-execute " + f.path.string(), &rc);
  CHECK(rc == 0);
  const std::string commands = capture("fish -c 'source " + f.path.string() + "; complete -C \"fad wa\"'");
  CHECK(commands.rfind("watch\t", 0) == 0);
  const std::string options = capture("fish -c 'source " + f.path.string() + "; complete -C \"fad report 7 --tr\"'");
  CHECK(options.find("--trace") != std::string::npos);
  const std::string daemon = capture("fish -c 'source " + f.path.string() + "; complete -C \"fad daemon \"'");
  CHECK(daemon.find("start") != std::string::npos);
  CHECK(daemon.find("stop") != std::string::npos);
  // A group's own options stop once one of its members is named.
  const std::string exported =
      capture("fish -c 'source " + f.path.string() + "; complete -C \"fad history export --\"'");
  CHECK(exported.find("--socket") != std::string::npos);
  CHECK(exported.find("--limit") == std::string::npos);
  CHECK(capture("fish -c 'source " + f.path.string() + "; complete -C \"fad history --\"'").find("--limit") !=
        std::string::npos);
  // A description is cut at a ';' outside parentheses only.
  const std::string pause = capture("fish -c 'source " + f.path.string() + "; complete -C \"fad pau\"'");
  CHECK(std::count(pause.begin(), pause.end(), '(') == std::count(pause.begin(), pause.end(), ')'));
}

TEST_CASE("zsh: the script parses and defines its completion function") {
  if (!have("zsh")) {
    WARN("SKIP: zsh is not installed (scripts/setup.sh installs it)");
    return;
  }
  ScriptFile f("zsh");
  int rc = 0;
  capture("zsh -n " + f.path.string(), &rc);
  CHECK(rc == 0);
  const std::string out = capture("zsh -f -c 'autoload -U compinit && compinit -u -D; source " + f.path.string() +
                                      "; print -r -- ${+functions[_fad]} ${_comps[fad]}' 2>&1",
                                  &rc);
  CHECK(rc == 0);
  CHECK(out == "1 _fad\n");
}
