// roff rendering of a CLI11 definition; see man_page.h.
#include "client/man_page.h"

#include <sstream>

#include <CLI/CLI.hpp>

namespace fad::client {

namespace {

std::string bold(const std::string& text) { return "\\fB" + roff_escape(text) + "\\fR"; }
std::string italic(const std::string& text) { return "\\fI" + roff_escape(text) + "\\fR"; }

// "--arch ARCH" / "-o, --output FILE" in roff.
std::string option_term(const CLI::Option& opt) {
  std::string names;
  for (const auto& s : opt.get_snames()) names += (names.empty() ? "" : ", ") + bold("-" + s);
  for (const auto& l : opt.get_lnames()) names += (names.empty() ? "" : ", ") + bold("--" + l);
  if (opt.get_items_expected_max() != 0) {
    // CLI11 appends its validators' descriptions after ':'.
    std::string type = opt.get_type_name().substr(0, opt.get_type_name().find(':'));
    if (type.empty() || type == "TEXT") type = "VALUE";
    names += " " + italic(type);
  }
  return names;
}

void paragraph(std::ostringstream& out, const std::string& text) {
  if (auto tab = text.find('\t'); tab != std::string::npos) {
    out << ".TP\n" << bold(text.substr(0, tab)) << "\n" << roff_escape(text.substr(tab + 1)) << "\n";
  } else {
    out << ".PP\n" << roff_escape(text) << "\n";
  }
}

void options_of(std::ostringstream& out, const CLI::App& app) {
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->get_positional()) continue;
    out << ".TP\n" << option_term(*opt) << "\n" << roff_escape(opt->get_description()) << "\n";
  }
}

std::string usage_of(const std::string& path, const CLI::App& sub) {
  // Options first: after a command (fad run -- CMD, fad launch COMPILER)
  // they would be the command's own.
  bool any_option = false;
  std::string positionals;
  for (const CLI::Option* opt : sub.get_options()) {
    if (!opt->get_positional()) {
      any_option = true;
      continue;
    }
    const std::string name = opt->get_name();
    positionals += " " + (opt->get_required() ? italic(name) : "[" + italic(name) + "]");
  }
  return bold(path) + (any_option ? " [" + italic("OPTIONS") + "]" : "") + positionals;
}

void commands_of(std::ostringstream& out, const CLI::App& app, const std::string& prefix) {
  for (const CLI::App* sub : app.get_subcommands({})) {
    const std::string path = prefix + " " + sub->get_name();
    // A group that needs a subcommand (daemon, cache) is only its members; one
    // that works alone too (history, with export and import) is both.
    const bool group = !sub->get_subcommands({}).empty();
    if (!group || sub->get_require_subcommand_min() == 0) {
      out << ".SS " << usage_of(path, *sub) << "\n" << roff_escape(sub->get_description()) << "\n";
      for (const CLI::Option* opt : sub->get_options())
        if (opt->get_positional())
          out << ".TP\n" << italic(opt->get_name()) << "\n" << roff_escape(opt->get_description()) << "\n";
      options_of(out, *sub);
    }
    if (group) commands_of(out, *sub, path);
  }
}

}  // namespace

std::string roff_escape(const std::string& text) {
  std::string out;
  bool line_start = true;
  for (char c : text) {
    if (line_start && (c == '.' || c == '\'')) out += "\\&";
    if (c == '\\')
      out += "\\e";
    else if (c == '-')
      out += "\\-";
    else
      out += c;
    line_start = c == '\n';
  }
  return out;
}

std::string render_man_page(const CLI::App& app, const ManPage& page) {
  std::ostringstream out;
  std::string upper = page.name;
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  out << ".\\\" Generated from the program's command-line definition; do not edit.\n"
      << ".TH " << upper << " " << page.section << " \"\" \"" << roff_escape(page.version) << "\" \""
      << (page.section == 8 ? "System Administration" : "User Commands") << "\"\n";
  out << ".SH NAME\n" << roff_escape(page.name) << " \\- " << roff_escape(page.summary) << "\n";
  out << ".SH SYNOPSIS\n"
      << bold(page.synopsis.substr(0, page.synopsis.find(' ')))
      << roff_escape(page.synopsis.find(' ') == std::string::npos ? "" : page.synopsis.substr(page.synopsis.find(' ')))
      << "\n";
  out << ".SH DESCRIPTION\n";
  for (const auto& p : page.description) paragraph(out, p);
  if (!app.get_subcommands({}).empty()) {
    out << ".SH COMMANDS\nEvery command takes \\fB\\-\\-help\\fR.\n";
    commands_of(out, app, page.name);
  } else {
    out << ".SH OPTIONS\n";
    options_of(out, app);
  }
  for (const auto& [title, paragraphs] : page.sections) {
    out << ".SH " << roff_escape(title) << "\n";
    for (const auto& p : paragraphs) paragraph(out, p);
  }
  if (!page.see_also.empty()) {
    out << ".SH SEE ALSO\n";
    for (std::size_t i = 0; i < page.see_also.size(); ++i) {
      const std::string& ref = page.see_also[i];
      const auto paren = ref.find('(');
      out << (paren == std::string::npos ? roff_escape(ref)
                                         : bold(ref.substr(0, paren)) + roff_escape(ref.substr(paren)))
          << (i + 1 < page.see_also.size() ? ",\n" : "\n");
    }
  }
  return out.str();
}

}  // namespace fad::client
