// Completion scripts; see completions.h. Each shell's script is a plain
// listing of commands and options with their help text: no calls back into
// fad at completion time, so completing never waits on fadd.
#include "client/completions.h"

#include <ostream>
#include <sstream>
#include <vector>

#include "client/cli_app.h"
#include "client/exit_codes.h"
#include "common/text.h"

namespace fad::client {

namespace {

struct OptionInfo {
  std::string name;  ///< "--arch"
  std::string help;
  bool takes_value = false;
  std::vector<std::string> values;  ///< fixed choices, if any
};

struct CommandInfo {
  std::string path;  ///< "submit", "daemon start"
  std::string help;
  std::vector<OptionInfo> options;
  std::vector<std::string> values;  ///< fixed choices of its positional (completions SHELL)
};

// Fixed choices are written into our own IsMember checks; CLI11 keeps no list
// of them, so they are named here beside the options that carry them.
std::vector<std::string> fixed_values(const std::string& option) {
  if (option == "--color") return {"auto", "always", "never"};
  if (option == "SHELL") return {"bash", "zsh", "fish"};
  return {};
}

void collect(const CLI::App& app, const std::string& prefix, std::vector<CommandInfo>& out) {
  for (const CLI::App* sub : app.get_subcommands({})) {
    CommandInfo info;
    info.path = prefix.empty() ? sub->get_name() : prefix + " " + sub->get_name();
    info.help = sub->get_description();
    for (const CLI::Option* opt : sub->get_options()) {
      if (opt->get_positional()) {
        auto values = fixed_values(opt->get_name());
        info.values.insert(info.values.end(), values.begin(), values.end());
        continue;
      }
      for (const auto& long_name : opt->get_lnames()) {
        OptionInfo o;
        o.name = "--" + long_name;
        o.help = opt->get_description();
        o.takes_value = opt->get_items_expected_max() != 0;
        o.values = fixed_values(o.name);
        info.options.push_back(std::move(o));
      }
    }
    out.push_back(info);
    collect(*sub, info.path, out);
  }
}

// Up to the first ';' outside parentheses: "freeze a build's running
// compilers (SIGSTOP; ...)" keeps its parenthesis whole.
std::string first_sentence(std::string help) {
  int depth = 0;
  for (std::size_t i = 0; i < help.size(); ++i) {
    depth += help[i] == '(' ? 1 : help[i] == ')' ? -1 : 0;
    if (help[i] == ';' && depth <= 0) {
      help.resize(i);
      break;
    }
  }
  return help;
}

// The members' own names of group `c` ("start stop restart" of "daemon").
std::vector<std::string> member_names(const std::vector<CommandInfo>& commands, const CommandInfo& c) {
  std::vector<std::string> names;
  for (const auto& sub : commands)
    if (sub.path.rfind(c.path + " ", 0) == 0) names.push_back(sub.path.substr(c.path.size() + 1));
  return names;
}

// Inside single quotes, for any of the three shells.
std::string single_quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : " ") + n;
  return out;
}

std::string bash_script(const std::vector<CommandInfo>& commands) {
  std::vector<std::string> top, members;
  std::ostringstream cases;
  for (const auto& c : commands) {
    if (c.path.find(' ') == std::string::npos)
      top.push_back(c.path);
    else
      members.push_back(single_quoted(c.path));
    std::vector<std::string> words = c.values;
    for (const auto& o : c.options) words.push_back(o.name);
    for (const auto& sub : commands)
      if (sub.path.rfind(c.path + " ", 0) == 0 && sub.path.find(' ', c.path.size() + 1) == std::string::npos)
        words.push_back(sub.path.substr(c.path.size() + 1));
    cases << "    " << single_quoted(c.path) << ") words=" << single_quoted(join_names(words)) << " ;;\n";
  }
  std::ostringstream s;
  s << "# bash completion for fad; load with: eval \"$(fad completions bash)\"\n"
    << "_fad() {\n"
    << "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
    << "  local path='' words='' i w\n"
    << "  if [[ $prev == --color ]]; then COMPREPLY=($(compgen -W 'auto always never' -- \"$cur\")); return; fi\n"
    << "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
    << "    w=${COMP_WORDS[i]}\n"
    << "    case $w in -*) continue ;; esac\n"
    << "    if [[ -z $path ]]; then path=$w\n"
    << "    elif [[ $path != *' '* ]]; then\n"
    << "      case \"$path $w\" in " << join(members, "|") << ") path=\"$path $w\" ;; esac\n"
    << "    fi\n"
    << "  done\n"
    << "  case $path in\n"
    << "    '') words=" << single_quoted(join_names(top) + " --help --version") << " ;;\n"
    << cases.str() << "  esac\n"
    << "  COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n"
    << "}\n"
    << "complete -o default -F _fad fad\n";
  return s.str();
}

std::string zsh_escape_brackets(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '[' || c == ']' || c == ':' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

std::string zsh_script(const std::vector<CommandInfo>& commands) {
  std::ostringstream s;
  s << "#compdef fad\n# zsh completion for fad; load with: source <(fad completions zsh)\n"
    << "_fad() {\n  local -a commands\n  commands=(\n";
  for (const auto& c : commands)
    if (c.path.find(' ') == std::string::npos)
      s << "    " << single_quoted(c.path + ":" + first_sentence(c.help)) << "\n";
  s << "  )\n  if (( CURRENT == 2 )); then _describe 'fad command' commands; return; fi\n"
    << "  local cmd=$words[2]\n";
  // Groups (daemon, cache, history): past their own word, their member's case.
  for (const auto& c : commands) {
    if (c.path.find(' ') != std::string::npos) continue;
    bool group = false;
    for (const auto& sub : commands) group |= sub.path.rfind(c.path + " ", 0) == 0;
    if (group)
      s << "  [[ $cmd == " << c.path << " && CURRENT -gt 3 && $words[3] != -* ]] && cmd=\"" << c.path
        << " $words[3]\"\n";
  }
  s << "  case $cmd in\n";
  for (const auto& c : commands) {
    s << "    " << single_quoted(c.path) << ")\n";
    std::vector<std::string> subs;
    for (const auto& sub : commands)
      if (sub.path.rfind(c.path + " ", 0) == 0)
        subs.push_back(sub.path.substr(c.path.size() + 1) + ":" + first_sentence(sub.help));
    bool own_options = false;
    for (const auto& o : c.options) own_options |= o.name != "--help";
    if (!subs.empty() && own_options) {
      // A group that also runs alone (history): its options, or a member.
      std::vector<std::string> names;
      for (const auto& sub : subs) names.push_back(sub.substr(0, sub.find(':')));
      s << "      _arguments";
      for (const auto& o : c.options) {
        std::string spec = o.name + "[" + zsh_escape_brackets(first_sentence(o.help)) + "]";
        if (o.takes_value) spec += ":" + o.name.substr(2) + ":_files";
        s << " " << single_quoted(spec);
      }
      s << " " << single_quoted("1:command:(" + join_names(names) + ")") << " ;;\n";
      continue;
    }
    if (!subs.empty()) {
      s << "      local -a subs; subs=(";
      for (const auto& sub : subs) s << " " << single_quoted(sub);
      s << " )\n      _describe 'fad " << c.path << " command' subs ;;\n";
      continue;
    }
    s << "      _arguments";
    for (const auto& o : c.options) {
      std::string spec = o.name + "[" + zsh_escape_brackets(first_sentence(o.help)) + "]";
      if (o.takes_value)
        spec += ":" + o.name.substr(2) + ":" + (o.values.empty() ? "_files" : "(" + join_names(o.values) + ")");
      s << " " << single_quoted(spec);
    }
    if (!c.values.empty()) s << " " << single_quoted("1:value:(" + join_names(c.values) + ")");
    s << " ;;\n";
  }
  s << "  esac\n}\ncompdef _fad fad\n";
  return s.str();
}

std::string fish_script(const std::vector<CommandInfo>& commands) {
  std::ostringstream s;
  s << "# fish completion for fad; load with: fad completions fish | source\n"
    << "complete -c fad -f\n";
  std::vector<std::string> top;
  for (const auto& c : commands)
    if (c.path.find(' ') == std::string::npos) top.push_back(c.path);
  for (const auto& c : commands) {
    const auto space = c.path.find(' ');
    if (space == std::string::npos) {
      s << "complete -c fad -n " << single_quoted("not __fish_seen_subcommand_from " + join_names(top)) << " -a "
        << single_quoted(c.path) << " -d " << single_quoted(first_sentence(c.help)) << "\n";
    } else {
      const std::string parent = c.path.substr(0, space), name = c.path.substr(space + 1);
      std::vector<std::string> siblings;
      for (const auto& sib : commands)
        if (sib.path.rfind(parent + " ", 0) == 0) siblings.push_back(sib.path.substr(space + 1));
      s << "complete -c fad -n "
        << single_quoted("__fish_seen_subcommand_from " + parent + "; and not __fish_seen_subcommand_from " +
                         join_names(siblings))
        << " -a " << single_quoted(name) << " -d " << single_quoted(first_sentence(c.help)) << "\n";
    }
    const std::string last = c.path.substr(c.path.rfind(' ') == std::string::npos ? 0 : c.path.rfind(' ') + 1);
    // A group's own options (history's --limit) stop once a member is named.
    const auto members = member_names(commands, c);
    const std::string when =
        single_quoted("__fish_seen_subcommand_from " + last +
                      (members.empty() ? "" : "; and not __fish_seen_subcommand_from " + join_names(members)));
    for (const auto& o : c.options) {
      s << "complete -c fad -n " << when << " -l " << o.name.substr(2);
      if (o.takes_value) s << (o.values.empty() ? " -r -F" : " -x -a " + single_quoted(join_names(o.values)));
      s << " -d " << single_quoted(first_sentence(o.help)) << "\n";
    }
    if (!c.values.empty()) s << "complete -c fad -n " << when << " -a " << single_quoted(join_names(c.values)) << "\n";
  }
  return s.str();
}

}  // namespace

std::optional<std::string> completion_script(const CLI::App& app, const std::string& shell) {
  std::vector<CommandInfo> commands;
  collect(app, "", commands);
  if (shell == "bash") return bash_script(commands);
  if (shell == "zsh") return zsh_script(commands);
  if (shell == "fish") return fish_script(commands);
  return std::nullopt;
}

int run_completions(const Command& cmd, Context& ctx) {
  RawArgs raw;
  auto app = make_cli_app(raw);
  auto script = completion_script(*app, cmd.shell);
  if (!script) {
    ctx.err << "fad: no completion for shell '" << cmd.shell << "'; bash, zsh and fish are supported\n";
    return kExitUsage;
  }
  ctx.out << *script;
  return kExitOk;
}

}  // namespace fad::client
