// Turns one request line into one response line by calling the engine. Knows
// nothing of sockets (the session owns the socket), so every bad message is
// tested on plain strings. Most answers are immediate; a submit is answered
// once its compiler was probed, through the same callback.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "daemon/caller.h"
#include "daemon/engine.h"

namespace fad {

class RequestHandler {
 public:
  /// Delivers the response line (newline included).
  using ReplyLine = std::function<void(std::string)>;

  /// `on_shutdown` runs after a "shutdown" request was accepted.
  RequestHandler(Engine& engine, std::function<void()> on_shutdown);

  /// Calls `reply` exactly once with the response line, now or later (a
  /// submit waits for its compiler probe). Never throws: malformed input and
  /// internal failures become error responses. With `unread` (the client has
  /// hung up), a request that only reads (status, report, ...) is answered
  /// with an error without being computed: a flood of expensive reads from
  /// clients that left must not hold up the event loop. A submit or retry is
  /// not carried out either: its client already said it failed. Others
  /// (cancel, pause, ...) still run.
  void handle(std::string_view line, const Caller& caller, ReplyLine reply, bool unread = false);

 private:
  void dispatch(const Request& req, const Caller& caller, Reply done);
  Engine& engine_;
  std::function<void()> on_shutdown_;
};

}  // namespace fad
