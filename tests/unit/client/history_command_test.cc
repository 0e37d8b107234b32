// fad history export / import against a scripted fadd: the file format, the
// paging, and bad files as usage errors.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "client/cli.h"
#include "client/commands.h"
#include "client/exit_codes.h"

using namespace fad::client;
using fad::json;
namespace fs = std::filesystem;

namespace {

struct Scripted {
  std::deque<json> answers;
  std::vector<fad::Request> seen;
  std::ostringstream out, err;
  Context context() {
    return Context{[this](const fad::Request& r) -> CallResult {
                     seen.push_back(r);
                     if (answers.empty()) return CallFailure{kExitUnreachable, "cannot reach fadd at /s: gone"};
                     json a = answers.front();
                     answers.pop_front();
                     return fad::Response{true, std::move(a), fad::ErrorCode::internal, ""};
                   },
                   "/s",
                   out,
                   err,
                   [](std::chrono::milliseconds) {},
                   []() -> fad::Result<std::vector<fad::Arch>> { return fad::make_error("no GPU"); }};
  }
};

json profile(const std::string& source, std::uint64_t mib) {
  const std::uint64_t bytes = mib << 20;
  return {{"source", source},
          {"content_hash", "h"},
          {"flags", "-O3"},
          {"archs", "90"},
          {"compiler", "13.0"},
          {"family", "fam"},
          {"arch_count", 1},
          {"threads", 1},
          {"duration_s", 60.0},
          {"points", json::array({json::array({0.0, bytes / 2}), json::array({10.0, bytes})})},
          {"recorded_at", "2026-01-01T00:00:00Z"},
          {"origin", "local"}};
}

Command file_command(CommandKind kind, const std::string& file) {
  Command c;
  c.kind = kind;
  c.file = file;
  return c;
}

struct TempFile {
  fs::path path = fs::temp_directory_path() / ("fad-history-test-" + std::to_string(::getpid()) + ".json");
  ~TempFile() { fs::remove(path); }
};

}  // namespace

TEST_CASE("history export and import parse their FILE") {
  const char* exp[] = {"fad", "history", "export", "out.json"};
  auto c = std::get<Command>(parse_command(4, exp));
  CHECK(c.kind == CommandKind::history_export);
  CHECK(c.file == "out.json");
  const char* imp[] = {"fad", "history", "import", "in.json", "--socket", "/s"};
  c = std::get<Command>(parse_command(6, imp));
  CHECK(c.kind == CommandKind::history_import);
  CHECK(c.file == "in.json");
  CHECK(c.socket == std::optional<std::string>("/s"));
  const char* plain[] = {"fad", "history", "--limit", "3"};
  CHECK(std::get<Command>(parse_command(4, plain)).kind == CommandKind::history);
  const char* missing[] = {"fad", "history", "import"};
  auto e = std::get<EarlyExit>(parse_command(3, missing));
  CHECK(e.exit_code == kExitUsage);
}

TEST_CASE("history export pages through fadd and writes a versioned file that import reads back") {
  TempFile file;
  Scripted d;
  d.answers = {json{{"profiles", {profile("a.cu", 100), profile("b.cu", 200)}},
                    {"left_out", 1},
                    {"left_out_reason", "x.cu: field \"flags\" must be printable text\x1b[2J"},
                    {"next_after", 2}},
               json{{"profiles", {profile("c.cu", 300)}},
                    {"left_out", 2},
                    {"left_out_reason", "y.cu: another"},
                    {"next_after", nullptr}}};
  auto ctx = d.context();
  REQUIRE(run_history_export(file_command(CommandKind::history_export, file.path.string()), ctx) == kExitOk);
  REQUIRE(d.seen.size() == 2);
  CHECK(d.seen[0].type == "history_export");
  CHECK(d.seen[1].body["after"] == 2);
  // What fadd left out (import would refuse it) is counted over every page,
  // and the first one named with its reason, made safe for a terminal.
  CHECK(d.out.str() == "exported 3 unit profile(s) to " + file.path.string() +
                           " (3 left out, which import would refuse; the first, x.cu: field \"flags\" must be "
                           "printable text?[2J)\n");
  json doc = json::parse(std::ifstream(file.path));
  CHECK(doc["format"] == "fad-history");
  CHECK(doc["version"] == 1);
  CHECK(doc["profiles"].size() == 3);
  CHECK_FALSE(fs::exists(file.path.string() + ".tmp"));

  Scripted back;
  back.answers = {json{{"imported", 2}, {"skipped", 1}}};
  auto ctx2 = back.context();
  REQUIRE(run_history_import(file_command(CommandKind::history_import, file.path.string()), ctx2) == kExitOk);
  REQUIRE(back.seen.size() == 1);
  CHECK(back.seen[0].type == "history_import");
  CHECK(back.seen[0].body["profiles"].size() == 3);
  // Archs as fadd writes them, whatever their spelling in the file: a key
  // matches by its text.
  CHECK(back.seen[0].body["profiles"][0]["archs"] == "9.0");
  CHECK(back.out.str() == "imported 2 unit profile(s) from " + file.path.string() + " (1 already known)\n");
  doc["profiles"][0]["archs"] = "sm_90, 120 ,9.0";
  std::ofstream(file.path) << doc.dump();
  back.answers = {json{{"imported", 3}, {"skipped", 0}}};
  REQUIRE(run_history_import(file_command(CommandKind::history_import, file.path.string()), ctx2) == kExitOk);
  CHECK(back.seen[1].body["profiles"][0]["archs"] == "9.0,12.0");

  // An empty file is still a request: fadd decides who may import.
  std::ofstream(file.path) << R"({"format": "fad-history", "version": 1, "profiles": []})";
  Scripted empty;
  auto ctx3 = empty.context();
  CHECK(run_history_import(file_command(CommandKind::history_import, file.path.string()), ctx3) ==
        kExitUnreachable);  // the scripted fadd has no answer: the request was sent
  REQUIRE(empty.seen.size() == 1);
  CHECK(empty.seen[0].body["profiles"].empty());
}

TEST_CASE("history export - writes the document to stdout, and says so on stderr") {
  Scripted d;
  d.answers = {json{{"profiles", {profile("a.cu", 100)}}, {"left_out", 0}, {"next_after", nullptr}}};
  auto ctx = d.context();
  const fs::path dash = fs::current_path() / "-";
  REQUIRE_FALSE(fs::exists(dash));
  REQUIRE(run_history_export(file_command(CommandKind::history_export, "-"), ctx) == kExitOk);
  CHECK_FALSE(fs::exists(dash));
  const json doc = json::parse(d.out.str());
  CHECK(doc["format"] == "fad-history");
  CHECK(doc["profiles"].size() == 1);
  CHECK(d.err.str() == "exported 1 unit profile(s) to stdout\n");
}

TEST_CASE("history import - reads what export - wrote, from stdin") {
  Scripted d;
  d.answers = {
      json{{"profiles", {profile("a.cu", 100), profile("b.cu", 200)}}, {"left_out", 0}, {"next_after", nullptr}}};
  auto ctx = d.context();
  REQUIRE(run_history_export(file_command(CommandKind::history_export, "-"), ctx) == kExitOk);

  Scripted back;
  back.answers = {json{{"imported", 2}, {"skipped", 0}}};
  auto ctx2 = back.context();
  std::size_t asked = 0;
  ctx2.read_stdin = [&](std::size_t max) -> fad::Result<std::string> {
    asked = max;
    return d.out.str();
  };
  REQUIRE(run_history_import(file_command(CommandKind::history_import, "-"), ctx2) == kExitOk);
  CHECK(asked == 256u << 20);  // the cap a file has
  REQUIRE(back.seen.size() == 1);
  CHECK(back.seen[0].body["profiles"].size() == 2);
  CHECK(back.out.str() == "imported 2 unit profile(s) from standard input\n");

  // Bad input on stdin is named as such, and nothing is sent.
  Scripted bad;
  auto ctx3 = bad.context();
  ctx3.read_stdin = [](std::size_t) -> fad::Result<std::string> { return std::string("{not json"); };
  CHECK(run_history_import(file_command(CommandKind::history_import, "-"), ctx3) == kExitUsage);
  CHECK(bad.err.str() == "fad: standard input: not valid JSON\n");
  ctx3.read_stdin = [](std::size_t) -> fad::Result<std::string> { return std::string("\n"); };
  bad.err.str("");
  CHECK(run_history_import(file_command(CommandKind::history_import, "-"), ctx3) == kExitUsage);
  CHECK(bad.err.str() == "fad: standard input is empty: no history file came\n");
  ctx3.read_stdin = [](std::size_t) -> fad::Result<std::string> {
    return fad::make_error("cannot read standard input: it holds more than the 268435456 bytes fad reads");
  };
  bad.err.str("");
  CHECK(run_history_import(file_command(CommandKind::history_import, "-"), ctx3) == kExitUsage);
  CHECK(bad.err.str() == "fad: cannot read standard input: it holds more than the 268435456 bytes fad reads\n");
  CHECK(bad.seen.empty());
}

TEST_CASE("history export never writes through a link planted beside its FILE") {
  // Root exporting into a directory another user can write: a link at the
  // name a fixed temporary file would have must not redirect the write.
  TempFile file, precious;
  std::ofstream(precious.path.string() + "-target") << "keep";
  const fs::path target = precious.path.string() + "-target";
  fs::create_symlink(target, file.path.string() + ".tmp");
  Scripted d;
  d.answers = {json{{"profiles", {profile("a.cu", 100)}}, {"next_after", nullptr}}};
  auto ctx = d.context();
  REQUIRE(run_history_export(file_command(CommandKind::history_export, file.path.string()), ctx) == kExitOk);
  std::ifstream in(target);
  std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(kept == "keep");
  CHECK_FALSE(fs::is_symlink(file.path));
  CHECK(json::parse(std::ifstream(file.path))["profiles"].size() == 1);
  fs::remove(file.path.string() + ".tmp");
  fs::remove(target);
}

TEST_CASE("history import refuses bad files with one line and exit 2, before talking to fadd") {
  TempFile file;
  Scripted d;
  auto ctx = d.context();
  auto import = [&] {
    d.err.str("");
    return run_history_import(file_command(CommandKind::history_import, file.path.string()), ctx);
  };
  CHECK(import() == kExitUsage);  // missing
  CHECK(d.err.str().find("cannot read") != std::string::npos);
  std::ofstream(file.path) << "{not json";
  CHECK(import() == kExitUsage);
  CHECK(d.err.str().find("not valid JSON") != std::string::npos);
  std::ofstream(file.path) << std::string(100000, '[') + std::string(100000, ']');
  CHECK(import() == kExitUsage);
  CHECK(d.err.str().find(file.path.string() + ": nesting deeper than 32 levels at byte 33") != std::string::npos);
  std::ofstream(file.path) << R"({"format": "something-else", "version": 1, "profiles": []})";
  CHECK(import() == kExitUsage);
  CHECK(d.err.str().find("not a fad history file") != std::string::npos);
  std::ofstream(file.path) << R"({"format": "fad-history", "version": 99, "profiles": []})";
  CHECK(import() == kExitUsage);
  CHECK(d.err.str().find("newer than this fad reads") != std::string::npos);
  json doc = {{"format", "fad-history"}, {"version", 1}, {"profiles", {profile("a.cu", 1), profile("b.cu", 1)}}};
  doc["profiles"][1]["points"][0][0] = 12.0;  // the first point after the second
  std::ofstream(file.path) << doc.dump();
  CHECK(import() == kExitUsage);
  CHECK(d.err.str().find("profiles[1]: field \"points[1]\"") != std::string::npos);
  const std::string line = d.err.str();
  CHECK(std::count(line.begin(), line.end(), '\n') == 1);
  // Names end up in listings: no terminal controls, no bidi overrides.
  for (const std::string bad : {"a\x1b[2J.cu", "a\xe2\x80\xaeu.c"}) {
    doc["profiles"][1] = profile("b.cu", 1);
    doc["profiles"][1]["family"] = bad;
    std::ofstream(file.path) << doc.dump();
    CHECK(import() == kExitUsage);
    CHECK(d.err.str().find("profiles[1]: field \"family\" must be printable text") != std::string::npos);
  }
  // A time every export writes out again must be one.
  doc["profiles"][1] = profile("b.cu", 1);
  doc["profiles"][1]["recorded_at"] = "not a time";
  std::ofstream(file.path) << doc.dump();
  CHECK(import() == kExitUsage);
  CHECK(d.err.str().find("profiles[1]: field \"recorded_at\"") != std::string::npos);
  // Archs no compile has would match nothing, for ever.
  doc["profiles"][1] = profile("b.cu", 1);
  doc["profiles"][1]["archs"] = "sm_zz";
  std::ofstream(file.path) << doc.dump();
  CHECK(import() == kExitUsage);
  CHECK(d.err.str().find("profiles[1]: field \"archs\" must be GPU architectures such as \"8.0,9.0\"") !=
        std::string::npos);
  // A peak no compile has would steer every estimate that uses it: a free
  // unit fills the machine, a petabyte one runs alone.
  doc["profiles"][1] = profile("b.cu", 1);
  doc["profiles"][1]["points"] = json::array({json::array({0.0, 0}), json::array({10.0, 60 * 1024})});
  std::ofstream(file.path) << doc.dump();
  CHECK(import() == kExitUsage);
  CHECK(d.err.str().find("profiles[1]: field \"points\" must be a memory profile whose peak is at least 64 KiB") !=
        std::string::npos);
  doc["profiles"][1]["points"] = json::array({json::array({0.0, 1ull << 20}), json::array({10.0, 1ull << 50})});
  std::ofstream(file.path) << doc.dump();
  CHECK(import() == kExitUsage);
  CHECK(d.err.str().find("profiles[1]: field \"points[1]\" must be a [seconds, bytes] pair within the duration, "
                         "bytes at most 1 TiB") != std::string::npos);
  doc["profiles"][1] = profile("b.cu", 1);
  fs::remove(file.path);
  fs::create_directory(file.path);
  CHECK(import() == kExitUsage);
  CHECK(d.err.str().find("cannot read history file " + file.path.string() + ": it is a directory") !=
        std::string::npos);
  fs::remove(file.path);
  CHECK(d.seen.empty());
}
