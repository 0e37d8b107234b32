// Tests for common/protocol: framing, every parse_request error, responses,
// typed bodies (validation and to_json/from_json round trips), and the v1
// fixture that keeps old clients' requests parseable.
#include <catch2/catch.hpp>

#include <fstream>

#include "common/json_fields.h"
#include "common/protocol.h"

using fad::json;
using fad::parse_request;

namespace {

std::vector<std::string> fixture_lines(const std::string& name) {
  std::ifstream in(std::string(FAD_FIXTURES_DIR) + "/" + name);
  REQUIRE(in.good());
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

std::string request_error(std::string_view line) {
  auto r = parse_request(line);
  REQUIRE_FALSE(r.ok());
  return r.error();
}

}  // namespace

TEST_CASE("parse_request: a well-formed request", "[protocol]") {
  auto r = parse_request(R"({"v":1,"type":"cancel","body":{"id":3},"extra":true})");
  REQUIRE(r.ok());
  CHECK(r->type == "cancel");
  CHECK(r->body == json{{"id", 3}});
  auto no_body = parse_request("{\"v\":1,\"type\":\"shutdown\"}\r\n");
  REQUIRE(no_body.ok());
  CHECK(no_body->body == json::object());
}

TEST_CASE("parse_request: every error", "[protocol]") {
  std::string big = R"({"v":1,"type":"status","body":{"pad":")" + std::string(fad::kMaxMessageBytes, 'x') + "\"}}";
  CHECK(request_error(big) == "message too long (" + std::to_string(big.size()) + " bytes, limit 1048576)");
  CHECK(request_error("{\"v\":1,").rfind("malformed JSON: parse error at line 1", 0) == 0);
  CHECK(request_error("").rfind("malformed JSON: ", 0) == 0);
  CHECK(request_error("[1,2]") == "malformed JSON: a request must be an object");
  CHECK(request_error(R"({"type":"status"})") == "missing protocol version \"v\"");
  CHECK(request_error(R"({"v":7,"type":"status"})") == "unsupported protocol version 7 (this daemon speaks 1)");
  CHECK(request_error(R"({"v":"1","type":"status"})") == "unsupported protocol version \"1\" (this daemon speaks 1)");
  CHECK(request_error(R"({"v":1})") == "missing request \"type\"");
  CHECK(request_error(R"({"v":1,"type":""})") == "missing request \"type\"");
  CHECK(request_error(R"({"v":1,"type":5})") == "request \"type\" must be a string");
  CHECK(request_error(R"({"v":1,"type":"status","body":[]})") == "\"body\" must be an object");
  CHECK(request_error(R"({"v":1,"type":"status","body":"x"})") == "\"body\" must be an object");
  CHECK(request_error("{\"v\":1,\"type\":\"\xff\"}").rfind("malformed JSON: ", 0) == 0);  // invalid UTF-8
}

TEST_CASE("encode_request and parse_request round-trip", "[protocol]") {
  fad::Request req{"logs", json{{"id", 9}, {"unit", "u"}}};
  std::string line = fad::encode_request(req);
  CHECK(line.back() == '\n');
  CHECK(line.find('\n') == line.size() - 1);
  CHECK(json::parse(line)["v"] == 1);
  auto back = parse_request(line);
  REQUIRE(back.ok());
  CHECK(back->type == "logs");
  CHECK(back->body == req.body);
}

TEST_CASE("responses: ok and error round-trip", "[protocol]") {
  std::string ok = fad::encode_ok(json{{"id", 12}});
  CHECK(ok == "{\"ok\":true,\"result\":{\"id\":12},\"v\":1}\n");
  auto r = fad::parse_response(ok);
  REQUIRE(r.ok());
  CHECK(r->ok);
  CHECK(r->result == json{{"id", 12}});

  std::string err = fad::encode_error(fad::ErrorCode::not_found, "no build 12");
  auto e = fad::parse_response(err);
  REQUIRE(e.ok());
  CHECK_FALSE(e->ok);
  CHECK(e->code == fad::ErrorCode::not_found);
  CHECK(e->message == "no build 12");

  // Compiler output may be invalid UTF-8: encoding must not throw.
  std::string bad_utf8 = fad::encode_error(fad::ErrorCode::failed, "bad \xff byte");
  CHECK(fad::parse_response(bad_utf8)->message == "bad \xEF\xBF\xBD byte");
  CHECK_NOTHROW(fad::encode_ok(json{{"data", "\xc3"}}));
}

TEST_CASE("parse_response: rejects what is not a response", "[protocol]") {
  CHECK(fad::parse_response("nope").error().rfind("malformed response from the daemon: ", 0) == 0);
  CHECK(fad::parse_response("[]").error() == "malformed response from the daemon: not an object");
  CHECK(fad::parse_response(R"({"v":2,"ok":true})").error().find("another protocol version") != std::string::npos);
  CHECK(fad::parse_response(R"({"v":1})").error() == "malformed response from the daemon: no \"ok\"");
  CHECK(fad::parse_response(R"({"v":1,"ok":false})").error() ==
        "malformed response from the daemon: no \"error\" object");
  CHECK(fad::parse_response(R"({"v":1,"ok":false,"error":{"code":"usage"}})").ok() == false);
  auto unknown = fad::parse_response(R"({"v":1,"ok":false,"error":{"code":"new_kind","message":"m"}})");
  REQUIRE(unknown.ok());
  CHECK(unknown->code == fad::ErrorCode::internal);
  auto no_result = fad::parse_response(R"({"v":1,"ok":true})");
  REQUIRE(no_result.ok());
  CHECK(no_result->result == json::object());
}

TEST_CASE("error codes and exit codes", "[protocol]") {
  using fad::ErrorCode;
  for (ErrorCode c :
       {ErrorCode::usage, ErrorCode::not_found, ErrorCode::failed, ErrorCode::internal, ErrorCode::busy}) {
    CHECK(fad::error_code_from_string(fad::to_string(c)) == c);
  }
  CHECK(fad::to_string(ErrorCode::not_found) == "not_found");
  CHECK(fad::exit_code_for(ErrorCode::usage) == 2);
  CHECK(fad::exit_code_for(ErrorCode::not_found) == 1);
  CHECK(fad::exit_code_for(ErrorCode::failed) == 1);
  CHECK(fad::exit_code_for(ErrorCode::internal) == 1);
  CHECK(fad::exit_code_for(ErrorCode::busy) == 3);  // as unreachable: a script's retry helps
  // A code this release does not know (a newer fadd's) is an error of fadd's own.
  CHECK(fad::error_code_from_string("overloaded") == ErrorCode::internal);
}

TEST_CASE("SubmitRequest", "[protocol]") {
  fad::SubmitRequest s;
  s.archs = {"9.0", "12.0a"};
  s.kernels = "fwd_*";
  s.nvcc = "/opt/nvcc";
  s.name = "n";
  auto back = fad::SubmitRequest::from_json(s.to_json());
  REQUIRE(back.ok());
  CHECK(back->archs == s.archs);
  CHECK(back->kernels == "fwd_*");
  CHECK(back->nvcc == s.nvcc);
  CHECK(back->name == "n");

  auto minimal = fad::SubmitRequest::from_json(json{{"archs", {"8.0"}}, {"future_field", 1}});
  REQUIRE(minimal.ok());
  CHECK(minimal->kernels == "*");
  CHECK_FALSE(minimal->nvcc.has_value());
  CHECK(minimal->name.empty());
  CHECK_FALSE(minimal->to_json().contains("nvcc"));
  CHECK(fad::SubmitRequest::from_json(minimal->to_json())->archs == std::vector<std::string>{"8.0"});

  const std::string archs_error = "field \"archs\" must be a non-empty array of strings";
  CHECK(fad::SubmitRequest::from_json(json::object()).error() == archs_error);
  CHECK(fad::SubmitRequest::from_json(json{{"archs", json::array()}}).error() == archs_error);
  CHECK(fad::SubmitRequest::from_json(json{{"archs", "9.0"}}).error() == archs_error);
  CHECK(fad::SubmitRequest::from_json(json{{"archs", {90}}}).error() == archs_error);
  CHECK(fad::SubmitRequest::from_json(json{{"archs", std::vector<std::string>(65, "9.0")}}).error() ==
        "field \"archs\" must be at most 64 archs");
  CHECK(fad::SubmitRequest::from_json(json{{"archs", std::vector<std::string>(64, "9.0")}}).ok());
  CHECK(fad::SubmitRequest::from_json(json{{"archs", {"9.0"}}, {"kernels", 1}}).error() ==
        "field \"kernels\" must be a non-empty string");
  CHECK(fad::SubmitRequest::from_json(json{{"archs", {"9.0"}}, {"nvcc", ""}}).error() ==
        "field \"nvcc\" must be a non-empty string");
  CHECK(fad::SubmitRequest::from_json(json{{"archs", {"9.0"}}, {"name", 3}}).error() ==
        "field \"name\" must be a string");
  CHECK(fad::SubmitRequest::from_json(json::array()).error() == "\"body\" must be an object");
  // A NUL would be stored whole but used cut: the listing would not say what ran.
  using namespace std::string_literals;
  CHECK(fad::SubmitRequest::from_json(json{{"archs", {"9.0"}}, {"nvcc", "/usr/bin/nvcc\0x"s}}).error() ==
        "field \"nvcc\": a path with a NUL byte");
  // Relative to what? fadd's working directory is not the caller's.
  CHECK(fad::SubmitRequest::from_json(json{{"archs", {"9.0"}}, {"nvcc", "../bin/nvcc"}}).error() ==
        "field \"nvcc\": '../bin/nvcc' is a relative path: give an absolute path or a bare name (looked up on PATH)");
  CHECK(fad::SubmitRequest::from_json(json{{"archs", {"9.0"}}, {"nvcc", "nvcc"}}));
  // Shown raw in every user's --json (a probe planted a terminal title and
  // U+009B, a CSI, there): a compiler's path holds no control or invisible
  // character, whoever submits it.
  CHECK(fad::SubmitRequest::from_json(json{{"archs", {"9.0"}}, {"nvcc", "/tmp/e\x1b]0;T\x07/nvcc"}}).error() ==
        "field \"nvcc\": '/tmp/e?]0;T?/nvcc' holds control or invisible characters ('?' here): rename the "
        "compiler's path");
  CHECK_FALSE(fad::SubmitRequest::from_json(json{{"archs", {"9.0"}},
                                                 {"nvcc",
                                                  "/tmp/b\xE2\x80\xAE"
                                                  "exe/nvcc"}}));
  CHECK_FALSE(fad::SubmitRequest::from_json(json{{"archs", {"9.0"}}, {"nvcc", "/tmp/\xC2\x9Bm/nvcc"}}));
  CHECK(fad::SubmitRequest::from_json(json{{"archs", {"9.0"}}, {"nvcc", "/opt/caf\xC3\xA9/nvcc"}}));
  CHECK(fad::SubmitRequest::from_json(json{{"archs", {"9.0"}}, {"kernels", "fwd_*\0zzz"s}}).error() ==
        "field \"kernels\" must be printable text (no control characters)");
  CHECK(fad::SubmitRequest::from_json(json{{"archs", {"9.0"}}, {"kernels", "fwd\x1b[2J"}}).error() ==
        "field \"kernels\" must be printable text (no control characters)");

  // Names are shown in every user's listing: one that could not fit it is refused.
  const std::string longest(fad::kMaxBuildNameBytes, 'n');
  CHECK(fad::SubmitRequest::from_json(json{{"archs", {"9.0"}}, {"name", longest}})->name == longest);
  CHECK(fad::SubmitRequest::from_json(json{{"archs", {"9.0"}}, {"name", longest + "n"}}).error() ==
        "field \"name\" must be at most 256 bytes");
  // ... and so is one that would write escape sequences to their terminals.
  for (const char* bad : {"\x1b]52;c;aGk=\x07", "two\nlines", "bell\x7f",
                          "c1\xC2\x9B"
                          "31mRED"})
    CHECK(fad::SubmitRequest::from_json(json{{"archs", {"9.0"}}, {"name", bad}}).error() ==
          "field \"name\" must be printable text (no control characters)");
  CHECK(fad::SubmitRequest::from_json(json{{"archs", {"9.0"}}, {"name", "caf\xC3\xA9 \xE2\x82\xAC"}}).ok());
  // Spaces only: a blank row; empty: no name, fadd names the build.
  CHECK(fad::SubmitRequest::from_json(json{{"archs", {"9.0"}}, {"name", "  "}}).error() ==
        "field \"name\" must be more than spaces");
  // No-break, ideographic and em spaces: blank too.
  for (const char* blank : {"\xC2\xA0\xC2\xA0", "\xE3\x80\x80", " \xE2\x80\x83 "})
    CHECK(fad::SubmitRequest::from_json(json{{"archs", {"9.0"}}, {"name", blank}}).error() ==
          "field \"name\" must be more than spaces");
  CHECK(fad::SubmitRequest::from_json(json{{"archs", {"9.0"}},
                                           {"name",
                                            "a\xC2\xA0"
                                            "b"}})
            .ok());
  CHECK(fad::SubmitRequest::from_json(json{{"archs", {"9.0"}}, {"name", ""}})->name.empty());
  CHECK(fad::SubmitRequest::from_json(json{{"archs", {"9.0"}}, {"kernels", std::string(257, '*')}}).error() ==
        "field \"kernels\" must be a glob of at most 256 bytes");
}

TEST_CASE("StatusRequest", "[protocol]") {
  auto all = fad::StatusRequest::from_json(json::object());
  REQUIRE(all.ok());
  CHECK_FALSE(all->id.has_value());
  CHECK(all->to_json() == json::object());
  fad::StatusRequest one;
  one.id = 42;
  CHECK(fad::StatusRequest::from_json(one.to_json())->id == 42);
  CHECK_FALSE(fad::StatusRequest::from_json(json{{"id", nullptr}})->id.has_value());
  for (json bad : {json(0), json(-1), json("7"), json(1.5), json(true)}) {
    INFO(bad.dump());
    CHECK(fad::StatusRequest::from_json(json{{"id", bad}}).error() == "field \"id\" must be a positive integer");
  }
}

TEST_CASE("BuildRequest", "[protocol]") {
  fad::BuildRequest b;
  b.id = 9007199254740993;  // beyond double precision: must stay exact
  CHECK(fad::BuildRequest::from_json(b.to_json())->id == 9007199254740993);
  CHECK(fad::BuildRequest::from_json(json::object()).error() == "field \"id\" must be a positive integer");
  CHECK(fad::BuildRequest::from_json(json{{"id", 0}}).error() == "field \"id\" must be a positive integer");
  CHECK(fad::BuildRequest::from_json(json{{"id", 18446744073709551615ull}}).error() ==
        "field \"id\" must be a positive integer");
  CHECK(fad::BuildRequest::from_json(json{{"id", 3}, {"reason", "x"}})->id == 3);
}

TEST_CASE("LogsRequest", "[protocol]") {
  fad::LogsRequest l;
  l.id = 5;
  l.unit = "flash_fwd";
  l.offset = 1234;
  l.max_bytes = 4096;
  auto back = fad::LogsRequest::from_json(l.to_json());
  REQUIRE(back.ok());
  CHECK(back->id == 5);
  CHECK(back->unit == std::optional<std::string>("flash_fwd"));
  CHECK(back->offset == 1234);
  CHECK(back->max_bytes == 4096);

  auto whole = fad::LogsRequest::from_json(json{{"id", 5}});
  REQUIRE(whole.ok());
  CHECK_FALSE(whole->unit.has_value());
  CHECK(whole->offset == 0);
  CHECK(whole->max_bytes == 256 * 1024);
  CHECK_FALSE(whole->to_json().contains("unit"));
  CHECK(fad::LogsRequest::from_json(whole->to_json())->max_bytes == 256 * 1024);

  CHECK(fad::LogsRequest::from_json(json{{"unit", "u"}}).error() == "field \"id\" must be a positive integer");
  CHECK(fad::LogsRequest::from_json(json{{"id", 5}, {"offset", -1}}).error() ==
        "field \"offset\" must be a non-negative integer");
  CHECK(fad::LogsRequest::from_json(json{{"id", 5}, {"offset", "0"}}).error() ==
        "field \"offset\" must be a non-negative integer");
  CHECK(fad::LogsRequest::from_json(json{{"id", 5}, {"unit", 1}}).error() ==
        "field \"unit\" must be a non-empty string");
  CHECK(fad::LogsRequest::from_json(json{{"id", 5}, {"max_bytes", 0}}).error() ==
        "field \"max_bytes\" must be an integer from 1 to 524288");
  CHECK(fad::LogsRequest::from_json(json{{"id", 5}, {"max_bytes", 524289}}).ok() == false);
}

TEST_CASE("HistoryRequest", "[protocol]") {
  CHECK(fad::HistoryRequest::from_json(json::object())->limit == 20);
  fad::HistoryRequest h;
  h.limit = 10000;
  CHECK(fad::HistoryRequest::from_json(h.to_json())->limit == 10000);
  CHECK(fad::HistoryRequest::from_json(json{{"limit", 1}})->limit == 1);
  for (json bad : {json(0), json(10001), json(-3), json("5"), json(2.5)}) {
    INFO(bad.dump());
    CHECK(fad::HistoryRequest::from_json(json{{"limit", bad}}).error() ==
          "field \"limit\" must be an integer from 1 to 10000");
  }
}

TEST_CASE("protocol v1 fixture: every request type stays parseable", "[protocol]") {
  std::vector<std::string> types;
  for (const std::string& line : fixture_lines("protocol_v1_requests.jsonl")) {
    INFO(line);
    auto req = parse_request(line);
    REQUIRE(req.ok());
    types.push_back(req->type);
    const std::string& t = req->type;
    if (t == "submit") {
      auto s = fad::SubmitRequest::from_json(req->body);
      REQUIRE(s.ok());
      CHECK(s->archs == std::vector<std::string>{"9.0", "12.0a"});
      CHECK(s->kernels == "fwd_*");
      CHECK(s->name == "nightly");
      CHECK(s->to_json() == req->body);
    } else if (t == "status") {
      auto s = fad::StatusRequest::from_json(req->body);
      REQUIRE(s.ok());
      CHECK(s->to_json() == req->body);
    } else if (t == "cancel" || t == "pause" || t == "resume" || t == "retry" || t == "report") {
      auto b = fad::BuildRequest::from_json(req->body);
      REQUIRE(b.ok());
      CHECK(b->id == 7);
    } else if (t == "logs") {
      auto l = fad::LogsRequest::from_json(req->body);
      REQUIRE(l.ok());
      CHECK(l->unit == std::optional<std::string>("flash_fwd_hdim128_fp16_sm90"));
      CHECK(l->offset == 4096);
      CHECK(l->max_bytes == 65536);
      CHECK(l->to_json() == req->body);
    } else if (t == "history") {
      CHECK(fad::HistoryRequest::from_json(req->body)->limit == 50);
    } else if (t == "prune") {
      auto p = fad::PruneRequest::from_json(req->body);
      REQUIRE(p.ok());
      CHECK(p->older_than_s == std::optional<std::int64_t>(2592000));
      CHECK(p->dry_run);
      CHECK(p->to_json() == req->body);
    } else {
      CHECK(t == "shutdown");
      CHECK(req->body == json::object());
    }
  }
  CHECK(types == std::vector<std::string>{"submit", "status", "status", "cancel", "pause", "resume", "retry", "logs",
                                          "history", "report", "shutdown", "prune"});
}

TEST_CASE("prune request: optional age and dry run, bad values named", "[protocol]") {
  auto empty = fad::PruneRequest::from_json(json::object());
  REQUIRE(empty.ok());
  CHECK_FALSE(empty->older_than_s.has_value());
  CHECK_FALSE(empty->dry_run);
  CHECK(fad::PruneRequest::from_json(json{{"older_than_s", 0}})->older_than_s == std::optional<std::int64_t>(0));
  for (json bad : {json(-1), json("30d"), json(1.5), json(1e300)}) {
    INFO(bad.dump());
    CHECK(fad::PruneRequest::from_json(json{{"older_than_s", bad}}).error() ==
          "field \"older_than_s\" must be a non-negative integer (seconds)");
  }
  CHECK(fad::PruneRequest::from_json(json{{"dry_run", 1}}).error() == "field \"dry_run\" must be true or false");
  CHECK_FALSE(fad::PruneRequest::from_json(json::array()).ok());
}

TEST_CASE("parse_request: nesting deeper than 32 levels is refused before parsing", "[protocol]") {
  using Catch::Contains;
  // 100,000 levels used to overflow the stack in the recursive parser.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  CHECK_THAT(request_error(deep), Contains("malformed JSON: nesting deeper than 32 levels at byte 33"));
  std::string at_limit = R"({"v":1,"type":"status","body":{"x":)" + std::string(29, '[') + std::string(29, ']') + "}}";
  CHECK(parse_request(at_limit).ok());
  std::string over = R"({"v":1,"type":"status","body":{"x":)" + std::string(31, '[') + std::string(31, ']') + "}}";
  CHECK_THAT(request_error(over), Contains("nesting deeper than 32"));
  // Brackets in strings, escaped quotes included, are text.
  CHECK(fad::check_nesting(R"({"a":"[[[[\"[[[[", "b":"\\"})", 1).ok());
  CHECK_FALSE(fad::check_nesting(R"({"a":"\\", "b":[1]})", 1).ok());
  CHECK_FALSE(fad::parse_response(deep).ok());
}

TEST_CASE("parse_request: numbers JSON cannot hold are errors, never exceptions", "[protocol]") {
  using Catch::Contains;
  std::string e;
  REQUIRE_NOTHROW(e = request_error(R"({"v":1e400,"type":"status"})"));
  CHECK_THAT(e, Contains("malformed JSON") && Contains("number overflow"));
  REQUIRE_NOTHROW(e = request_error(R"({"v":1,"type":"status","body":{"id":-1e999}})"));
  CHECK_THAT(e, Contains("number overflow"));
  CHECK_FALSE(fad::parse_response(R"({"v":1,"ok":true,"result":{"x":1e400}})").ok());
}

TEST_CASE("parse_request: a key given twice in one object is refused, not the last one taken", "[protocol]") {
  // The last "type" would win: a status that is really a cancel.
  CHECK(request_error(R"({"v":1,"type":"status","type":"cancel","body":{"id":1}})") ==
        "malformed JSON: key \"type\" given twice in one object");
  CHECK(request_error(R"({"v":1,"type":"cancel","body":{"id":1,"id":2}})") ==
        "malformed JSON: key \"id\" given twice in one object");
  // The same key in two objects is two keys; a key with controls is shown safely.
  CHECK(parse_request(R"({"v":1,"type":"status","body":{"type":{"type":1}}})").ok());
  CHECK(request_error("{\"v\":1,\"type\":\"status\",\"\\u001b[2J\":1,\"\\u001b[2J\":2}") ==
        "malformed JSON: key \"?[2J\" given twice in one object");
  CHECK_FALSE(fad::parse_response(R"({"v":1,"ok":true,"ok":false})").ok());
}
