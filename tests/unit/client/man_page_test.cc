// Manual pages from the CLI definition: every command and option appears,
// text is escaped for roff, and groff renders the page without warnings.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "client/cli_app.h"
#include "client/man_page.h"

using namespace fad::client;
namespace fs = std::filesystem;

namespace {
ManPage page() {
  ManPage p;
  p.name = "fad";
  p.section = 1;
  p.version = "fad 9.9";
  p.summary = "a client";
  p.synopsis = "fad COMMAND [OPTIONS]";
  p.description = {"First paragraph.", ".starts with a dot and has a back\\slash"};
  p.sections = {{"EXIT STATUS", {"0\tsuccess", "2\tusage error"}}};
  p.see_also = {"fadd(8)"};
  return p;
}
}  // namespace

TEST_CASE("roff_escape protects requests, hyphens and backslashes") {
  CHECK(roff_escape("--arch") == "\\-\\-arch");
  CHECK(roff_escape(".TH evil") == "\\&.TH evil");
  CHECK(roff_escape("'quote") == "\\&'quote");
  CHECK(roff_escape("a\\b") == "a\\eb");
  CHECK(roff_escape("x\n.y") == "x\n\\&.y");
}

TEST_CASE("the fad page lists every command with its options, from the CLI definition") {
  RawArgs raw;
  auto app = make_cli_app(raw);
  const std::string roff = render_man_page(*app, page());
  CHECK(roff.find(".TH FAD 1 \"\" \"fad 9.9\" \"User Commands\"\n") != std::string::npos);
  CHECK(roff.find(".SH NAME\nfad \\- a client\n") != std::string::npos);
  for (const char* cmd : {"fad submit", "fad watch", "fad status", "fad logs", "fad report", "fad cancel", "fad pause",
                          "fad resume", "fad retry", "fad history", "fad run", "fad launch", "fad doctor",
                          "fad daemon start", "fad daemon stop", "fad completions"}) {
    INFO(cmd);
    CHECK(roff.find(".SS \\fB" + roff_escape(cmd) + "\\fR") != std::string::npos);
  }
  CHECK(roff.find("\\fB\\-\\-arch\\fR \\fIARCH\\fR") != std::string::npos);
  CHECK(roff.find("\\fB\\-o\\fR, \\fB\\-\\-output\\fR \\fIFILE\\fR") != std::string::npos);
  CHECK(roff.find("\\fB\\-\\-wait\\fR\n") != std::string::npos);  // a flag takes no value
  // Options before a command's own arguments, which would otherwise take them.
  CHECK(roff.find(".SS \\fBfad run\\fR [\\fIOPTIONS\\fR] [\\fICMD\\fR]") != std::string::npos);
  CHECK(roff.find("\\fB\\-\\-color\\fR \\fIWHEN\\fR") != std::string::npos);
  CHECK(roff.find("\\&.starts with a dot and has a back\\eslash") != std::string::npos);
  CHECK(roff.find(".TP\n\\fB2\\fR\nusage error\n") != std::string::npos);
  CHECK(roff.find(".SH SEE ALSO\n\\fBfadd\\fR(8)\n") != std::string::npos);
}

TEST_CASE("groff renders the page without a warning") {
  if (std::system("command -v groff >/dev/null 2>&1") != 0) {
    WARN("SKIP: groff is not installed; the page's syntax was not checked");
    return;
  }
  RawArgs raw;
  auto app = make_cli_app(raw);
  const fs::path file = fs::temp_directory_path() / ("fad-man-" + std::to_string(::getpid()) + ".1");
  std::ofstream(file) << render_man_page(*app, page());
  const std::string cmd = "groff -man -ww -z " + file.string() + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p);
  char buf[512];
  std::string out;
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  const int status = ::pclose(p);
  fs::remove(file);
  CHECK(out.empty());
  CHECK(status == 0);
}
