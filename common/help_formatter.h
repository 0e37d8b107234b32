// CLI11's help with its descriptions wrapped to the terminal: fad's and
// fadd's option texts run to 170 characters, which an 80-column terminal
// breaks mid-word and without indent. Header-only, for the programs that
// parse with CLI11 (fad and fadd); common itself does not use CLI11.
#pragma once

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "common/text.h"

namespace fad {

/// Wraps option, subcommand and program descriptions (and footers) to
/// `width` columns in all; the description column keeps its indent.
class WrappingFormatter : public CLI::Formatter {
 public:
  explicit WrappingFormatter(std::size_t width) : width_(width) {}

  std::string make_option_desc(const CLI::Option* opt) const override {
    return wrap_words(CLI::Formatter::make_option_desc(opt), described_width());
  }
  std::string make_subcommand(const CLI::App* sub) const override {
    std::stringstream out;
    CLI::detail::format_help(out, sub->get_display_name(true), wrap_words(sub->get_description(), described_width()),
                             get_column_width());
    return out.str();
  }
  std::string make_description(const CLI::App* app) const override {
    return wrap_words(CLI::Formatter::make_description(app), width_);
  }
  std::string make_footer(const CLI::App* app) const override {
    return wrap_words(CLI::Formatter::make_footer(app), width_);
  }

 private:
  // At least 30 columns for a description, however narrow the terminal.
  std::size_t described_width() const {
    return std::max<std::size_t>(width_ - std::min(width_, get_column_width()), 30);
  }
  std::size_t width_;
};

/// The width help is wrapped to: the terminal's on standard output (at most
/// 120, at least 60), else 80.
inline std::size_t help_width() {
  winsize ws{};
  if (::isatty(STDOUT_FILENO) && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return std::clamp<std::size_t>(ws.ws_col, 60, 120);
  return 80;
}

/// Gives `app` (and the subcommands added after) the wrapping formatter.
inline void wrap_help(CLI::App& app, std::size_t width = help_width()) {
  app.formatter(std::make_shared<WrappingFormatter>(width));
}

}  // namespace fad
