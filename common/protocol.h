// The client-daemon protocol: one JSON object per line over a Unix stream socket.
// Every request carries the protocol version "v"; the daemon answers each request
// with exactly one response line. Pure code: no sockets here (the transport lives
// in daemon/session and client/connection), so every message is tested on text.
//
// Request:  {"v":1,"type":"submit","body":{...}}
// Response: {"v":1,"ok":true,"result":{...}}
//           {"v":1,"ok":false,"error":{"code":"usage","message":"..."}}
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace fad {

using json = nlohmann::json;

inline constexpr int kProtocolVersion = 1;
/// Longest accepted line (request or response), newline excluded.
inline constexpr std::size_t kMaxMessageBytes = 1u << 20;
/// Deepest accepted nesting of arrays and objects in a line. Checked by a flat
/// scan before the JSON parser (which recurses per level) ever sees the line.
inline constexpr int kMaxNesting = 32;

/// Fails when `text`, read as JSON, nests arrays and objects deeper than
/// `max_depth` (brackets inside strings do not count). No recursion.
Status check_nesting(std::string_view text, int max_depth = kMaxNesting);

/// Why a request failed; the client maps it to the contract's exit codes.
enum class ErrorCode {
  usage,      ///< bad request: malformed, unknown type, bad arch  -> exit 2
  not_found,  ///< no such build or unit                           -> exit 1
  failed,     ///< the operation could not be done (state forbids) -> exit 1
  internal,   ///< the daemon hit an error of its own              -> exit 1
  busy,       ///< fadd refused the connection (too many open): try again later -> exit 3
};
std::string_view to_string(ErrorCode code);
ErrorCode error_code_from_string(std::string_view s);  ///< unknown -> internal
/// The contract's exit code for an error response: usage -> 2, busy -> 3
/// (as if fadd could not be reached: retrying later helps), others -> 1.
int exit_code_for(ErrorCode code);

/// A request as framed on the wire: its type and its body object.
struct Request {
  std::string type;
  json body = json::object();
};

/// Parses one request line. Fails (with a message fit to send back) on bad JSON,
/// a number JSON cannot hold (1e400), nesting deeper than kMaxNesting, a missing
/// or unsupported "v", a non-string "type", a non-object "body", or a line over
/// kMaxMessageBytes. Never throws.
Result<Request> parse_request(std::string_view line);
/// Encodes a request as one line, newline included.
std::string encode_request(const Request& request);

struct Response {
  bool ok = true;
  json result = json::object();
  ErrorCode code = ErrorCode::internal;
  std::string message;
};
/// Parses one response line; fails only when the line is not a valid response
/// (nesting deeper than kMaxNesting included). Never throws.
Result<Response> parse_response(std::string_view line);
std::string encode_ok(const json& result);                           ///< newline included
std::string encode_error(ErrorCode code, std::string_view message);  ///< newline included

// ---- Typed request bodies: one per message type. from_json() validates
// ---- every field and names the bad one; to_json() is its inverse.

/// "submit": queue a build of the bundled kernels.
struct SubmitRequest {
  std::vector<std::string> archs;  ///< display form ("9.0", "12.0a"); non-empty
  std::string kernels = "*";       ///< glob over unit names
  std::optional<std::string> nvcc;
  std::string name;
  static Result<SubmitRequest> from_json(const json& body);
  json to_json() const;
};

/// "status": the daemon view and all builds, or one build with its units.
struct StatusRequest {
  std::optional<std::int64_t> id;
  static Result<StatusRequest> from_json(const json& body);
  json to_json() const;
};

/// "cancel", "pause", "resume", "retry": act on one build. "report": the data
/// `fad report` draws (the build, its units' attempts with memory samples,
/// unit events, machine samples); the client renders it.
struct BuildRequest {
  std::int64_t id = 0;
  static Result<BuildRequest> from_json(const json& body);
  json to_json() const;
};

/// "logs": a slice of a unit's (or the whole build's) compiler output.
/// The response is {"data": "...", "offset": next_offset, "done": bool}; `done`
/// is true once the build is finished and everything was returned.
struct LogsRequest {
  std::int64_t id = 0;
  std::optional<std::string> unit;
  std::uint64_t offset = 0;
  std::uint64_t max_bytes = 256 * 1024;
  static Result<LogsRequest> from_json(const json& body);
  json to_json() const;
};

/// "history": finished builds, newest first.
struct HistoryRequest {
  static constexpr int kMaxLimit = 10000;  ///< builds in one answer, at most
  int limit = 20;
  static Result<HistoryRequest> from_json(const json& body);
  json to_json() const;
};

/// "prune": delete finished builds' outputs and logs (STATE/builds/ID/) older
/// than an age; their rows stay, marked pruned. The response is
/// {"dry_run": bool, "older_than_s": N, "bytes": freed, "builds": [{"id", "name",
/// "finished_at", "bytes"}]}.
struct PruneRequest {
  std::optional<std::int64_t> older_than_s;  ///< nullopt: the daemon's `retention`
  bool dry_run = false;                      ///< only list what would go
  static Result<PruneRequest> from_json(const json& body);
  json to_json() const;
};

// "shutdown" has an empty body: the daemon answers, then stops as on SIGTERM.

}  // namespace fad
