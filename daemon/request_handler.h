// Turns one request line into one response line by calling the engine. Knows
// nothing of sockets (the session owns the socket), so every bad message is
// tested on plain strings.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "daemon/engine.h"

namespace fad {

class RequestHandler {
 public:
  /// `on_shutdown` runs after a "shutdown" request was answered.
  RequestHandler(Engine& engine, std::function<void()> on_shutdown);

  /// The response line (newline included). Never throws: malformed input and
  /// internal failures become error responses.
  std::string handle(std::string_view line);

 private:
  Response dispatch(const Request& req);
  Engine& engine_;
  std::function<void()> on_shutdown_;
};

}  // namespace fad
