// Manual pages (roff, man(7) macros) generated from the CLI11 definitions of
// fad and fadd, so the manual lists exactly the commands and options the
// programs accept. The prose around them (exit codes, environment, files) is
// passed in. Pure; man/mangen.cc writes the files at build time.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace CLI {
class App;
}

namespace fad::client {

struct ManPage {
  std::string name;                      ///< "fad"
  int section = 1;                       ///< 1 for fad, 8 for fadd
  std::string version;                   ///< "fad 0.1.0"
  std::string summary;                   ///< one line for NAME
  std::string synopsis;                  ///< plain text, e.g. "fad COMMAND [OPTIONS]"
  std::vector<std::string> description;  ///< paragraphs of plain text
  /// Further sections after the commands and options: title and paragraphs.
  /// A paragraph "TERM\tTEXT" becomes a tagged paragraph.
  std::vector<std::pair<std::string, std::vector<std::string>>> sections;
  std::vector<std::string> see_also;  ///< "fadd(8)"
};

/// The page: NAME, SYNOPSIS, DESCRIPTION, then COMMANDS (each subcommand of
/// `app` with its arguments and options) or OPTIONS (for a program without
/// subcommands), then `page.sections`, then SEE ALSO.
std::string render_man_page(const CLI::App& app, const ManPage& page);

/// Plain text made safe for roff: backslashes escaped, hyphens as \-, and a
/// leading '.' or '\'' protected so it is not read as a request.
std::string roff_escape(const std::string& text);

}  // namespace fad::client
