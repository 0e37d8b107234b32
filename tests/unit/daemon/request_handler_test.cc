// RequestHandler on plain strings: every bad message becomes a "usage" error
// response, never an exception; good ones reach the engine.
#include <catch2/catch.hpp>

#include "common/protocol.h"
#include "daemon/request_handler.h"
#include "fakes.h"

namespace fad {
namespace {

using Catch::Contains;

struct HandlerFixture : test::EngineFixture {
  int shutdowns = 0;
  std::unique_ptr<RequestHandler> handler;
  HandlerFixture() {
    make_engine().recover();
    handler = std::make_unique<RequestHandler>(*engine, [this] { ++shutdowns; });
  }
  /// Handles `line` (from `caller`, else this process's user) and parses the
  /// response: exactly one line, ending with one newline.
  Response call(std::string_view line, std::optional<Caller> caller = std::nullopt, bool unread = false) {
    std::vector<std::string> answers;
    REQUIRE_NOTHROW(handler->handle(
        line, caller.value_or(me), [&](std::string a) { answers.push_back(a); }, unread));
    REQUIRE(answers.size() == 1);
    const std::string& out = answers.front();
    REQUIRE_FALSE(out.empty());
    CHECK(out.back() == '\n');
    CHECK(out.find('\n') == out.size() - 1);
    auto r = parse_response(out);
    REQUIRE(r);
    return *r;
  }
  void expect_usage(std::string_view line, const std::string& fragment) {
    auto r = call(line);
    CHECK_FALSE(r.ok);
    CHECK(r.code == ErrorCode::usage);
    CHECK_THAT(r.message, Contains(fragment));
  }
};

}  // namespace

TEST_CASE("request handler: malformed messages are usage errors", "[request_handler]") {
  HandlerFixture f;
  f.expect_usage("this is not json\n", "malformed JSON");
  f.expect_usage("", "malformed JSON");
  f.expect_usage("[1,2]\n", "object");
  f.expect_usage(R"({"type":"status"})", "version");
  f.expect_usage(R"({"v":2,"type":"status"})", "version");
  f.expect_usage(R"({"v":"1","type":"status"})", "version");
  f.expect_usage(R"({"v":1})", "type");
  f.expect_usage(R"({"v":1,"type":7})", "type");
  f.expect_usage(R"({"v":1,"type":"status","body":[]})", "body");
  f.expect_usage(R"({"v":1,"type":"frobnicate","body":{}})", "frobnicate");
  CHECK(f.shutdowns == 0);
}

TEST_CASE("request handler: an oversized line is a usage error", "[request_handler]") {
  HandlerFixture f;
  std::string line = R"({"v":1,"type":"status","body":{"pad":")";
  line += std::string(kMaxMessageBytes, 'x');
  line += "\"}}\n";
  f.expect_usage(line, "too long");
}

TEST_CASE("request handler: bad body fields are usage errors naming the request", "[request_handler]") {
  HandlerFixture f;
  f.expect_usage(R"({"v":1,"type":"submit","body":{}})", "archs");
  f.expect_usage(R"({"v":1,"type":"submit","body":{"archs":"9.0"}})", "archs");
  f.expect_usage(R"({"v":1,"type":"submit","body":{"archs":[9]}})", "submit");
  f.expect_usage(R"({"v":1,"type":"submit","body":{"archs":["9.0"],"kernels":5}})", "kernels");
  f.expect_usage(R"({"v":1,"type":"cancel","body":{}})", "cancel");
  f.expect_usage(R"({"v":1,"type":"pause","body":{"id":"one"}})", "id");
  f.expect_usage(R"({"v":1,"type":"retry","body":{"id":-3}})", "id");
  f.expect_usage(R"({"v":1,"type":"logs","body":{"id":1,"offset":-1}})", "offset");
  f.expect_usage(R"({"v":1,"type":"status","body":{"id":"x"}})", "id");
  // An arch the compiler cannot build is also the user's error.
  f.expect_usage(R"({"v":1,"type":"submit","body":{"archs":["5.0"]}})", "5.0");
  CHECK(f.store->status_builds(10).empty());
}

TEST_CASE("request handler: deep nesting and unrepresentable numbers are usage errors", "[request_handler]") {
  HandlerFixture f;
  // 100,000 levels (200 KB) crashed the old parser with SIGSEGV; 1e400 threw
  // out_of_range past the handler and left the session unanswered.
  f.expect_usage(std::string(100000, '[') + std::string(100000, ']'), "nesting deeper than 32");
  f.expect_usage("{\"v\":" + std::string(50000, '[') + "1" + std::string(50000, ']') + "}", "nesting");
  f.expect_usage(R"({"v":1e400,"type":"status"})", "number");
  f.expect_usage(R"({"v":1,"type":"status","body":{"id":1e400}})", "number");
  f.expect_usage(R"({"v":1,"type":"cancel","body":{"id":-1e400}})", "number");
  f.expect_usage(R"({"v":1,"type":"cancel","body":{"id":18446744073709551616}})", "id");
  // Brackets inside strings do not count as nesting.
  auto r = f.call(R"({"v":1,"type":"status","body":{"pad":")" + std::string(1000, '[') + R"("}})");
  CHECK(r.ok);
}

TEST_CASE("request handler: another user cannot act on a build or stop fadd", "[request_handler]") {
  HandlerFixture f;
  SubmitRequest submit;
  submit.archs = {"9.0"};
  auto r = f.call(encode_request(Request{"submit", submit.to_json()}));
  REQUIRE(r.ok);
  const auto id = r.result.at("id").get<std::int64_t>();
  const Caller other{f.me.uid + 4242, f.me.gid, 1};
  for (const char* verb : {"cancel", "pause", "resume", "retry"}) {
    r = f.call(encode_request(Request{verb, BuildRequest{id}.to_json()}), other);
    CHECK_FALSE(r.ok);
    CHECK(r.code == ErrorCode::failed);
    CHECK_THAT(r.message, Contains("belongs to") && Contains(std::string("may ") + verb));
  }
  r = f.call(R"({"v":1,"type":"shutdown"})", other);
  CHECK_FALSE(r.ok);
  CHECK_THAT(r.message, Contains("may stop this fadd") || Contains("may stop it"));
  CHECK(f.shutdowns == 0);
  // Everyone may look.
  CHECK(f.call(encode_request(Request{"status", StatusRequest{}.to_json()}), other).ok);
  CHECK(f.build_state(id) == BuildState::queued);
}

TEST_CASE("request handler: other failures keep their own codes", "[request_handler]") {
  HandlerFixture f;
  auto r = f.call(R"({"v":1,"type":"cancel","body":{"id":99}})");
  CHECK_FALSE(r.ok);
  CHECK(r.code == ErrorCode::not_found);
  r = f.call(R"({"v":1,"type":"status","body":{"id":99}})");
  CHECK(r.code == ErrorCode::not_found);
}

TEST_CASE("request handler: a database that cannot be written is named as the cause, not as an internal error",
          "[request_handler]") {
  HandlerFixture f;
  const auto id = f.submit();
  f.store->set_build_state(id, BuildState::failed, "2026-01-01T00:00:00Z");
  f.store->db().exec(
      "CREATE TEMP TRIGGER full BEFORE UPDATE ON builds BEGIN SELECT RAISE(FAIL, 'database or disk is full'); END");
  auto r = f.call(R"({"v":1,"type":"retry","body":{"id":)" + std::to_string(id) + "}}\n");
  CHECK_FALSE(r.ok);
  CHECK(r.message ==
        "the retry failed: fadd cannot use its database (step: database or disk is full); try again once it can");
}

TEST_CASE("request handler: shutdown is answered, then the callback runs", "[request_handler]") {
  HandlerFixture f;
  auto r = f.call(R"({"v":1,"type":"shutdown","body":{}})"
                  "\n");
  CHECK(r.ok);
  CHECK(f.shutdowns == 1);
  r = f.call(R"({"v":1,"type":"shutdown"})");
  CHECK(r.ok);
  CHECK(f.shutdowns == 2);
}

TEST_CASE("request handler: submit and status round-trip", "[request_handler]") {
  HandlerFixture f;
  SubmitRequest submit;
  submit.archs = {"9.0", "12.0"};
  submit.name = "rt";
  auto r = f.call(encode_request(Request{"submit", submit.to_json()}));
  REQUIRE(r.ok);
  const auto id = r.result.at("id").get<std::int64_t>();
  f.engine->tick();

  r = f.call(encode_request(Request{"status", StatusRequest{}.to_json()}));
  REQUIRE(r.ok);
  REQUIRE(r.result.at("builds").size() == 1);
  CHECK(r.result["builds"][0]["id"] == id);
  CHECK(r.result["builds"][0]["name"] == "rt");
  CHECK(r.result["builds"][0]["state"] == "running");
  CHECK(r.result["daemon"]["running_units"] == 4);

  StatusRequest one;
  one.id = id;
  r = f.call(encode_request(Request{"status", one.to_json()}));
  REQUIRE(r.ok);
  CHECK(r.result["builds"][0]["unit_list"].size() == 5);

  BuildRequest cancel;
  cancel.id = id;
  r = f.call(encode_request(Request{"cancel", cancel.to_json()}));
  REQUIRE(r.ok);
  CHECK(r.result["state"] == "cancelled");
  r = f.call(encode_request(Request{"history", HistoryRequest{}.to_json()}));
  REQUIRE(r.ok);
  CHECK(r.result["builds"].size() == 1);
}

TEST_CASE("request handler: reads and new work for a client that hung up are not done, other changes still happen",
          "[request_handler]") {
  HandlerFixture f;
  SubmitRequest submit;
  submit.archs = {"9.0"};
  auto r = f.call(encode_request(Request{"submit", submit.to_json()}));
  REQUIRE(r.ok);
  const auto id = r.result.at("id").get<std::int64_t>();
  for (const std::string& line : {encode_request(Request{"status", StatusRequest{}.to_json()}),
                                  encode_request(Request{"report", BuildRequest{id}.to_json()}),
                                  encode_request(Request{"history", HistoryRequest{}.to_json()}),
                                  std::string(R"({"v":1,"type":"logs","body":{"id":1}})"),
                                  std::string(R"({"v":1,"type":"history_export","body":{}})")}) {
    INFO(line);
    r = f.call(line, std::nullopt, true);
    CHECK_FALSE(r.ok);
    CHECK_THAT(r.message, Contains("the client hung up") && Contains("not computed"));
    CHECK(f.call(line).ok != r.ok);  // the same request from a client still there is answered
  }
  // A cancel sent before hanging up is still carried out.
  r = f.call(encode_request(Request{"cancel", BuildRequest{id}.to_json()}), std::nullopt, true);
  CHECK(r.ok);
  CHECK(f.build_state(id) == BuildState::cancelled);
  // A submit or retry its client gave up on (it timed out and said so) is
  // not: the user would not know its number, and would submit again.
  r = f.call(encode_request(Request{"retry", BuildRequest{id}.to_json()}), std::nullopt, true);
  CHECK_FALSE(r.ok);
  CHECK(r.message == "the client hung up; retry not carried out");
  CHECK(f.build_state(id) == BuildState::cancelled);
  r = f.call(encode_request(Request{"submit", submit.to_json()}), std::nullopt, true);
  CHECK_FALSE(r.ok);
  CHECK(r.message == "the client hung up; submit not carried out");
  r = f.call(encode_request(Request{"history", HistoryRequest{}.to_json()}));
  REQUIRE(r.ok);
  CHECK(r.result["builds"].size() == 1);
}

}  // namespace fad
