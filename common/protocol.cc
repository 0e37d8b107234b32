// Framing and typed bodies of the client-daemon protocol. Everything that can
// come from a peer is validated here, so a bad client line turns into an error
// response and never into an exception in the daemon.
#include "common/protocol.h"

#include "common/arch.h"
#include "common/json_fields.h"
#include "common/paths.h"
#include "common/text.h"

#include <limits>

namespace fad {
namespace {

/// Serialises without throwing: invalid UTF-8 (e.g. from compiler output) is replaced.
std::string dump_line(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"; }

/// Parses without throwing; the error carries nlohmann's message without its
/// tag. The depth is checked first: nlohmann's parser, copies and dump()
/// recurse once per level, and a line of 100,000 '[' would overflow the stack.
/// A key given twice in one object is refused: the last would win without a
/// word, and a message that says two things at once ("type" status and
/// cancel) is a broken or hostile peer's.
Result<json> parse_json(std::string_view text) {
  if (Status depth = check_nesting(text); !depth) return Error{depth.error()};
  try {
    std::vector<RepeatedKey> repeated;
    json parsed = parse_noting_repeats(text, repeated);
    if (!repeated.empty())
      return make_error("key \"" + one_line(repeated.front().key, 80) + "\" given twice in one object");
    return parsed;
  } catch (const json::exception& e) {
    // parse_error for bad syntax, out_of_range for numbers such as 1e400.
    std::string what = e.what();
    if (std::size_t tag = what.find("] "); what.rfind("[json.exception", 0) == 0 && tag != std::string::npos) {
      what = what.substr(tag + 2);
    }
    return make_error(what);
  }
}

constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

/// The required positive "id" of `body`.
Result<std::int64_t> positive_id(const json& body) {
  auto it = body.find("id");
  if (it == body.end()) return field_error("id", "a positive integer");
  auto id = integer_in(*it, 1, kInt64Max);
  if (!id) return field_error("id", "a positive integer");
  return *id;
}

}  // namespace

Status check_nesting(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character cannot end the string
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        return make_error("nesting deeper than " + std::to_string(max_depth) + " levels at byte " +
                          std::to_string(i + 1));
    } else if (c == ']' || c == '}') {
      --depth;  // unbalanced input is the parser's to reject
    }
  }
  return ok_status();
}

std::string_view to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::usage: return "usage";
    case ErrorCode::not_found: return "not_found";
    case ErrorCode::failed: return "failed";
    case ErrorCode::internal: return "internal";
    case ErrorCode::busy: return "busy";
  }
  return "internal";
}

ErrorCode error_code_from_string(std::string_view s) {
  if (s == "usage") return ErrorCode::usage;
  if (s == "not_found") return ErrorCode::not_found;
  if (s == "failed") return ErrorCode::failed;
  if (s == "busy") return ErrorCode::busy;
  return ErrorCode::internal;
}

int exit_code_for(ErrorCode code) {
  if (code == ErrorCode::usage) return 2;
  return code == ErrorCode::busy ? 3 : 1;
}

Result<Request> parse_request(std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.size() > kMaxMessageBytes) {
    return make_error("message too long (" + std::to_string(line.size()) + " bytes, limit " +
                      std::to_string(kMaxMessageBytes) + ")");
  }
  Result<json> parsed = parse_json(line);
  if (!parsed) return make_error("malformed JSON: " + parsed.error());
  const json& j = *parsed;
  if (!j.is_object()) return make_error("malformed JSON: a request must be an object");

  auto v = j.find("v");
  if (v == j.end() || v->is_null()) return make_error("missing protocol version \"v\"");
  if (!v->is_number_integer() || v->get<std::int64_t>() != kProtocolVersion) {
    return make_error("unsupported protocol version " + v->dump(-1, ' ', false, json::error_handler_t::replace) +
                      " (this daemon speaks " + std::to_string(kProtocolVersion) + ")");
  }

  auto type = j.find("type");
  if (type == j.end() || type->is_null() || (type->is_string() && type->get<std::string>().empty())) {
    return make_error("missing request \"type\"");
  }
  if (!type->is_string()) return make_error("request \"type\" must be a string");

  Request request;
  request.type = type->get<std::string>();
  auto body = j.find("body");
  if (body != j.end() && !body->is_null()) {
    if (!body->is_object()) return make_error("\"body\" must be an object");
    request.body = *body;
  }
  return request;
}

std::string encode_request(const Request& request) {
  json j = {{"v", kProtocolVersion}, {"type", request.type}, {"body", request.body}};
  return dump_line(j);
}

Result<Response> parse_response(std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  Result<json> parsed = parse_json(line);
  if (!parsed) return make_error("malformed response from the daemon: " + parsed.error());
  const json& j = *parsed;
  if (!j.is_object()) return make_error("malformed response from the daemon: not an object");
  auto v = j.find("v");
  if (v == j.end() || !v->is_number_integer() || v->get<std::int64_t>() != kProtocolVersion) {
    return make_error("the daemon speaks another protocol version (this client speaks " +
                      std::to_string(kProtocolVersion) + "); restart it with the matching fadd");
  }
  auto ok = j.find("ok");
  if (ok == j.end() || !ok->is_boolean()) return make_error("malformed response from the daemon: no \"ok\"");

  Response response;
  response.ok = ok->get<bool>();
  if (response.ok) {
    auto result = j.find("result");
    if (result != j.end() && !result->is_null()) response.result = *result;
    return response;
  }
  auto error = j.find("error");
  if (error == j.end() || !error->is_object()) {
    return make_error("malformed response from the daemon: no \"error\" object");
  }
  auto code = error->find("code");
  auto message = error->find("message");
  if (code == error->end() || !code->is_string() || message == error->end() || !message->is_string()) {
    return make_error("malformed response from the daemon: \"error\" needs a string code and message");
  }
  response.code = error_code_from_string(code->get<std::string>());
  response.message = message->get<std::string>();
  return response;
}

std::string encode_ok(const json& result) {
  return dump_line(json{{"v", kProtocolVersion}, {"ok", true}, {"result", result}});
}

std::string encode_error(ErrorCode code, std::string_view message) {
  json error = {{"code", std::string(to_string(code))}, {"message", std::string(message)}};
  return dump_line(json{{"v", kProtocolVersion}, {"ok", false}, {"error", error}});
}

// ---- typed bodies

Result<SubmitRequest> SubmitRequest::from_json(const json& body) {
  if (Status s = require_object(body); !s) return Error{s.error()};
  SubmitRequest r;
  auto archs = body.find("archs");
  if (archs == body.end() || !archs->is_array() || archs->empty()) {
    return field_error("archs", "a non-empty array of strings");
  }
  if (archs->size() > kMaxArchs) return field_error("archs", "at most " + std::to_string(kMaxArchs) + " archs");
  for (const json& a : *archs) {
    if (!a.is_string() || a.get<std::string>().empty()) return field_error("archs", "a non-empty array of strings");
    r.archs.push_back(a.get<std::string>());
  }
  Result<std::optional<std::string>> kernels = optional_string(body, "kernels", false);
  if (!kernels) return Error{kernels.error()};
  // Shown in every user's listing, as a name is.
  if (*kernels && (*kernels)->size() > kMaxBuildNameBytes)
    return field_error("kernels", "a glob of at most " + std::to_string(kMaxBuildNameBytes) + " bytes");
  // A NUL would be stored and shown, yet the glob matched and the program
  // run would be the text cut at it: not what the listing says.
  if (*kernels && has_control(**kernels)) return field_error("kernels", "printable text (no control characters)");
  if (*kernels) r.kernels = **kernels;
  Result<std::optional<std::string>> nvcc = optional_string(body, "nvcc", false);
  if (!nvcc) return Error{nvcc.error()};
  // fadd's working directory is not the client's: a path is sent absolute
  // (fad submit makes it so), a bare name is looked up on PATH.
  if (*nvcc)
    if (auto problem = program_path_problem(**nvcc); !problem.empty()) return make_error("field \"nvcc\": " + problem);
  r.nvcc = *nvcc;
  Result<std::string> name = build_name_field(body);
  if (!name) return Error{name.error()};
  r.name = *name;
  return r;
}

json SubmitRequest::to_json() const {
  json j = {{"archs", archs}, {"kernels", kernels}, {"name", name}};
  if (nvcc) j["nvcc"] = *nvcc;
  return j;
}

Result<StatusRequest> StatusRequest::from_json(const json& body) {
  if (Status s = require_object(body); !s) return Error{s.error()};
  StatusRequest r;
  auto id = body.find("id");
  if (id != body.end() && !id->is_null()) {
    auto value = integer_in(*id, 1, kInt64Max);
    if (!value) return field_error("id", "a positive integer");
    r.id = *value;
  }
  return r;
}

json StatusRequest::to_json() const {
  json j = json::object();
  if (id) j["id"] = *id;
  return j;
}

Result<BuildRequest> BuildRequest::from_json(const json& body) {
  if (Status s = require_object(body); !s) return Error{s.error()};
  Result<std::int64_t> id = positive_id(body);
  if (!id) return Error{id.error()};
  BuildRequest r;
  r.id = *id;
  return r;
}

json BuildRequest::to_json() const { return json{{"id", id}}; }

Result<LogsRequest> LogsRequest::from_json(const json& body) {
  if (Status s = require_object(body); !s) return Error{s.error()};
  LogsRequest r;
  Result<std::int64_t> id = positive_id(body);
  if (!id) return Error{id.error()};
  r.id = *id;
  Result<std::optional<std::string>> unit = optional_string(body, "unit", false);
  if (!unit) return Error{unit.error()};
  r.unit = *unit;
  if (auto offset = body.find("offset"); offset != body.end()) {
    auto value = integer_in(*offset, 0, kInt64Max);
    if (!value) return field_error("offset", "a non-negative integer");
    r.offset = static_cast<std::uint64_t>(*value);
  }
  if (auto max_bytes = body.find("max_bytes"); max_bytes != body.end()) {
    // Half the line limit leaves room for JSON escaping of the data.
    auto value = integer_in(*max_bytes, 1, static_cast<std::int64_t>(kMaxMessageBytes / 2));
    if (!value) return field_error("max_bytes", "an integer from 1 to " + std::to_string(kMaxMessageBytes / 2));
    r.max_bytes = static_cast<std::uint64_t>(*value);
  }
  return r;
}

json LogsRequest::to_json() const {
  json j = {{"id", id}, {"offset", offset}, {"max_bytes", max_bytes}};
  if (unit) j["unit"] = *unit;
  return j;
}

Result<HistoryRequest> HistoryRequest::from_json(const json& body) {
  if (Status s = require_object(body); !s) return Error{s.error()};
  HistoryRequest r;
  if (auto limit = body.find("limit"); limit != body.end()) {
    auto value = integer_in(*limit, 1, kMaxLimit);
    if (!value) return field_error("limit", "an integer from 1 to " + std::to_string(kMaxLimit));
    r.limit = static_cast<int>(*value);
  }
  return r;
}

json HistoryRequest::to_json() const { return json{{"limit", limit}}; }

Result<PruneRequest> PruneRequest::from_json(const json& body) {
  if (Status s = require_object(body); !s) return Error{s.error()};
  PruneRequest r;
  if (auto age = body.find("older_than_s"); age != body.end() && !age->is_null()) {
    auto value = integer_in(*age, 0, kInt64Max);
    if (!value) return field_error("older_than_s", "a non-negative integer (seconds)");
    r.older_than_s = *value;
  }
  if (auto dry = body.find("dry_run"); dry != body.end()) {
    if (!dry->is_boolean()) return field_error("dry_run", "true or false");
    r.dry_run = dry->get<bool>();
  }
  return r;
}

json PruneRequest::to_json() const {
  json j = {{"dry_run", dry_run}};
  if (older_than_s) j["older_than_s"] = *older_than_s;
  return j;
}

}  // namespace fad
