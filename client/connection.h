// The client end of the transport: one request line out, one response line
// back, over fadd's Unix stream socket. A fresh connection per request keeps
// polling loops simple and survives a daemon restart between polls.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <variant>

#include "common/protocol.h"

namespace fad::client {

/// Why no response came back, with the exit code the contract gives it:
/// 3 when fadd is not there (or vanished mid-request), 1 for a garbled answer.
struct CallFailure {
  int exit_code = 3;
  std::string message;  ///< one line, no "fad: " prefix
  /// Worth trying again later: fadd is absent, restarting or busy. False when
  /// waiting cannot help (no permission on the socket, a garbled answer).
  bool retryable = true;
  /// fadd answered, refusing the connection: too many are open. Its own
  /// connections close within seconds, so a moment later it is served.
  bool busy = false;
  /// Nothing accepted the connection, or it closed before the answer: fadd is
  /// not there, or went away mid-request (exiting, asked by someone else).
  bool gone = false;
  /// The failure without advice, for a message that gives its own ("lost
  /// contact with fadd: ...; retrying"); empty when `message` is all there is.
  std::string cause{};
};

using CallResult = std::variant<Response, CallFailure>;

/// Who answered on a connection, as the kernel says (SO_PEERCRED). pid is 0
/// when the answering process is not visible from here (another pid namespace).
struct Peer {
  uid_t uid = 0;
  pid_t pid = 0;
  bool operator==(const Peer&) const = default;
};

/// Sends one request and returns fadd's answer. Commands take this rather than
/// a socket so that tests can answer with canned responses.
using Sender = std::function<CallResult(const Request&)>;

/// The one-line message for a daemon that cannot be reached, telling how to start it.
std::string unreachable_message(const std::string& socket_path, const std::string& reason);
/// The same without the advice: "cannot reach fadd at PATH: REASON".
std::string unreachable_cause(const std::string& socket_path, const std::string& reason);

/// The one-line message for a socket this user may not connect to: who may,
/// and what to ask for (the socket's group when it is group-accessible).
std::string permission_message(const std::string& socket_path);

/// How long a request waits for fadd's answer: $FAD_TIMEOUT seconds (a
/// positive integer) or 60 s. The error quotes a bad value.
Result<std::chrono::milliseconds> request_timeout(const std::optional<std::string>& fad_timeout);

/// Connects to `socket_path`, sends `request`, reads one line of at most
/// kMaxMessageBytes. Gives up after `timeout` without an answer (exit code 3).
/// Refuses (exit code 3) a socket whose directory another user could have
/// planted (common/socket_dir.h) without connecting at all. `answered_by`,
/// when given, receives the uid and pid the kernel gives for the other end
/// of this very connection (SO_PEERCRED): who sent the answer. A signal arriving
/// while it waits ends the wait early only when `stop` says so.
CallResult call_daemon(const std::string& socket_path, const Request& request,
                       std::chrono::milliseconds timeout = std::chrono::seconds(60),
                       std::optional<Peer>* answered_by = nullptr, const std::function<bool()>& stop = {});

/// A Sender bound to one socket path (`stop` as for call_daemon).
Sender socket_sender(std::string socket_path, std::chrono::milliseconds timeout = std::chrono::seconds(60),
                     std::function<bool()> stop = {});

}  // namespace fad::client
