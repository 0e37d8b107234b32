// Typed bodies of the launch messages; see launch_protocol.h. Like every
// request body, anything a peer sends is validated and named when wrong.
#include "common/launch_protocol.h"

#include "common/arch.h"
#include "common/json_fields.h"
#include "common/size.h"

#include <algorithm>
#include <limits>

namespace fad {

namespace {
Result<std::int64_t> int_field(const json& body, const char* field, std::int64_t lo, std::int64_t hi,
                               const char* what) {
  if (Status s = require_object(body); !s) return Error{s.error()};
  auto it = body.find(field);
  std::optional<std::int64_t> v = it == body.end() ? std::nullopt : integer_in(*it, lo, hi);
  if (!v) return field_error(field, what);
  return *v;
}

/// A string field: required ones must be non-empty; optional ones default to "".
Result<std::string> string_field(const json& body, const char* field, bool required) {
  auto v = optional_string(body, field, !required);
  if (!v) return Error{v.error()};
  if (!*v && required) return field_error(field, "a non-empty string");
  return v->value_or("");
}

Result<std::vector<std::string>> strings_field(const json& body, const char* field, bool non_empty) {
  auto it = body.find(field);
  std::vector<std::string> out;
  if (it == body.end() || it->is_null()) {
    if (non_empty) return field_error(field, "a non-empty array of strings");
    return out;
  }
  if (!it->is_array()) return field_error(field, "an array of strings");
  for (const auto& e : *it) {
    if (!e.is_string()) return field_error(field, "an array of strings");
    out.push_back(e.get<std::string>());
  }
  if (non_empty && out.empty()) return field_error(field, "a non-empty array of strings");
  return out;
}

constexpr std::int64_t kMaxId = std::numeric_limits<std::int64_t>::max();

/// An optional bounded string field whose every byte passes `allowed`.
Result<std::optional<std::string>> bounded_field(const json& body, const char* field, std::size_t max_bytes,
                                                 bool (*allowed)(unsigned char), const char* what) {
  auto v = optional_string(body, field, false);
  if (!v) return Error{v.error()};
  if (!*v) return v;
  if ((*v)->size() > max_bytes)
    return field_error(field, std::string(what) + " of at most " + std::to_string(max_bytes) + " bytes");
  for (unsigned char c : **v)
    if (!allowed(c)) return field_error(field, what);
  return v;
}

bool hash_char(unsigned char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == ':' || c == '.' ||
         c == '_' || c == '+' || c == '/' || c == '=' || c == '-';
}
bool printable_char(unsigned char c) { return c >= 0x20 && c != 0x7f; }

/// The optional signal a client got and passed on (fad run to its command, a
/// launcher to its compiler): 0 when absent, as older clients never send it.
Result<int> interrupt_signal_field(const json& body) {
  if (!body.contains("interrupt_signal")) return 0;
  auto sig = int_field(body, "interrupt_signal", 0, 64, "a signal number (0..64)");
  if (!sig) return make_error(sig.error());
  return static_cast<int>(*sig);
}
}  // namespace

Result<OpenBuildRequest> OpenBuildRequest::from_json(const json& body) {
  if (Status s = require_object(body); !s) return Error{s.error()};
  OpenBuildRequest r;
  auto name = build_name_field(body);
  if (!name) return make_error(name.error());
  auto command = string_field(body, "command", false);
  if (!command) return make_error(command.error());
  r.name = *name;
  r.command = *command;
  if (body.contains("budget_bytes") && !body["budget_bytes"].is_null()) {
    auto b = int_field(body, "budget_bytes", static_cast<std::int64_t>(kMinMemorySize), kMaxId,
                       "a size in bytes, at least 1 MiB (1048576)");
    if (!b) return make_error(b.error());
    r.budget_bytes = static_cast<std::uint64_t>(*b);
  }
  return r;
}

json OpenBuildRequest::to_json() const {
  json j{{"name", name}, {"command", command}};
  if (budget_bytes) j["budget_bytes"] = *budget_bytes;
  return j;
}

Result<CloseBuildRequest> CloseBuildRequest::from_json(const json& body) {
  auto id = int_field(body, "id", 1, kMaxId, "a positive integer");
  if (!id) return make_error(id.error());
  auto code = int_field(body, "exit_code", -1, 255, "an exit code (-1..255)");
  if (!code) return make_error(code.error());
  auto sig = interrupt_signal_field(body);
  if (!sig) return make_error(sig.error());
  return CloseBuildRequest{*id, static_cast<int>(*code), *sig};
}

json CloseBuildRequest::to_json() const {
  json j{{"id", id}, {"exit_code", exit_code}};
  if (interrupt_signal != 0) j["interrupt_signal"] = interrupt_signal;
  return j;
}

Result<LaunchRequest> LaunchRequest::from_json(const json& body) {
  if (Status s = require_object(body); !s) return Error{s.error()};
  LaunchRequest r;
  if (body.contains("build_id") && !body["build_id"].is_null()) {
    auto id = int_field(body, "build_id", 1, kMaxId, "a positive integer");
    if (!id) return make_error(id.error());
    r.build_id = *id;
  }
  auto session = int_field(body, "session", 0, kMaxId, "a session id (integer >= 0)");
  if (!session) return make_error(session.error());
  r.session = *session;
  for (auto [field, target] : {std::pair{"cwd", &r.cwd}, std::pair{"source", &r.source}}) {
    auto v = string_field(body, field, true);
    if (!v) return make_error(v.error());
    *target = *v;
  }
  auto output = string_field(body, "output", false);
  if (!output) return make_error(output.error());
  r.output = *output;
  for (auto [field, path] :
       {std::pair{"cwd", &r.cwd}, std::pair{"source", &r.source}, std::pair{"output", &r.output}}) {
    if (path->find('\0') != std::string::npos) return field_error(field, "a path without NUL bytes");
    if (path->size() > kMaxPathBytes)
      return field_error(field, "a path of at most " + std::to_string(kMaxPathBytes) + " bytes");
    // The launcher sends absolute paths (output may be absent); anything else
    // would be read against fadd's own directory, not the caller's.
    if (!path->empty() && path->front() != '/') return field_error(field, "an absolute path");
    if (path != &r.cwd && !path->empty() && path->back() == '/')
      return field_error(field, "the path of a file, not of a directory");
    const auto slash = path->rfind('/');
    const std::size_t name = path->size() - (slash == std::string::npos ? 0 : slash + 1);
    if (name > kMaxFileNameBytes)
      return field_error(field, "a path whose file name is at most " + std::to_string(kMaxFileNameBytes) + " bytes");
  }
  auto argv = strings_field(body, "argv", true);
  if (!argv) return make_error(argv.error());
  std::size_t argv_bytes = 0;
  for (const auto& a : *argv) argv_bytes += a.size() + 1;
  if (argv_bytes > kMaxLaunchArgvBytes)
    return field_error("argv", "at most " + std::to_string(kMaxLaunchArgvBytes / 1024) + " KiB of arguments");
  if (argv->front().empty()) return field_error("argv", "an array whose first string names the compiler");
  r.argv = std::move(*argv);
  auto archs = strings_field(body, "archs", false);
  if (!archs) return make_error(archs.error());
  // They end up in every user's listing: real archs only, as many as nvcc can name.
  if (archs->size() > kMaxLaunchArchs)
    return field_error("archs", "at most " + std::to_string(kMaxLaunchArchs) + " archs");
  // Kept as fad writes them ("9.0"), once each: a build's listing does not
  // show one arch two ways ("9.0,sm_90").
  for (const auto& a : *archs) {
    const auto arch = parse_arch(a);
    if (!arch) return field_error("archs", "archs such as \"9.0\" or \"sm_90a\"");
    if (std::find(r.archs.begin(), r.archs.end(), arch->display()) == r.archs.end()) r.archs.push_back(arch->display());
  }
  auto hash =
      bounded_field(body, "content_hash", kMaxContentHashBytes, hash_char, "a hash (letters, digits and :._+/=-)");
  if (!hash) return make_error(hash.error());
  r.content_hash = *hash;
  auto version =
      bounded_field(body, "compiler_version", kMaxCompilerVersionBytes, printable_char, "one printable line");
  if (!version) return make_error(version.error());
  r.compiler_version = *version;
  if (body.contains("source_bytes") && !body["source_bytes"].is_null()) {
    auto bytes = int_field(body, "source_bytes", 0, kMaxId, "a size in bytes (integer >= 0)");
    if (!bytes) return make_error(bytes.error());
    r.source_bytes = static_cast<std::uint64_t>(*bytes);
  }
  if (auto it = body.find("cached"); it != body.end() && !it->is_null()) {
    if (!it->is_boolean()) return make_error("field \"cached\" must be a boolean");
    r.cached = it->get<bool>();
  }
  return r;
}

json LaunchRequest::to_json() const {
  json j{{"session", session}, {"cwd", cwd}, {"argv", argv}, {"source", source}, {"output", output}, {"archs", archs}};
  if (build_id) j["build_id"] = *build_id;
  if (content_hash) j["content_hash"] = *content_hash;
  if (compiler_version) j["compiler_version"] = *compiler_version;
  if (source_bytes) j["source_bytes"] = *source_bytes;
  if (cached) j["cached"] = true;
  return j;
}

Result<UnitRequest> UnitRequest::from_json(const json& body) {
  auto id = int_field(body, "unit_id", 1, kMaxId, "a positive integer");
  if (!id) return make_error(id.error());
  return UnitRequest{*id};
}

json UnitRequest::to_json() const { return json{{"unit_id", unit_id}}; }

Result<LaunchStartedRequest> LaunchStartedRequest::from_json(const json& body) {
  auto id = int_field(body, "unit_id", 1, kMaxId, "a positive integer");
  if (!id) return make_error(id.error());
  auto pid = int_field(body, "pid", 2, std::numeric_limits<int>::max(), "a process id (> 1)");
  if (!pid) return make_error(pid.error());
  return LaunchStartedRequest{*id, static_cast<int>(*pid)};
}

json LaunchStartedRequest::to_json() const { return json{{"unit_id", unit_id}, {"pid", pid}}; }

Result<LaunchFinishedRequest> LaunchFinishedRequest::from_json(const json& body) {
  auto id = int_field(body, "unit_id", 1, kMaxId, "a positive integer");
  if (!id) return make_error(id.error());
  auto code = int_field(body, "exit_code", -1, 255, "an exit code (-1..255)");
  if (!code) return make_error(code.error());
  LaunchFinishedRequest r{*id, static_cast<int>(*code), false};
  if (auto it = body.find("signaled"); it != body.end()) {
    if (!it->is_boolean()) return make_error("field \"signaled\" must be a boolean");
    r.signaled = it->get<bool>();
  }
  auto sig = interrupt_signal_field(body);
  if (!sig) return make_error(sig.error());
  r.interrupt_signal = *sig;
  return r;
}

json LaunchFinishedRequest::to_json() const {
  json j{{"unit_id", unit_id}, {"exit_code", exit_code}, {"signaled", signaled}};
  if (interrupt_signal != 0) j["interrupt_signal"] = interrupt_signal;
  return j;
}

}  // namespace fad
