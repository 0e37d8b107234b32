// systemd's readiness protocol (sd_notify) without libsystemd: one datagram
// such as "READY=1" to the AF_UNIX socket named by $NOTIFY_SOCKET, a path or,
// when it starts with '@', a name in the abstract namespace. With Type=notify
// systemd reports fadd started only once it listens, so units ordered after it
// and `systemctl start` never race the socket.
#pragma once

#include <string>
#include <string_view>

#include "common/paths.h"
#include "common/result.h"

namespace fad {

class SystemdNotifier {
 public:
  /// Reads $NOTIFY_SOCKET; inactive (every notify a no-op) when it is unset,
  /// as when fadd runs outside systemd.
  static SystemdNotifier from_env(const EnvLookup& env);
  /// `address`: "/path/to/socket", "@abstract-name", or empty for inactive.
  explicit SystemdNotifier(std::string address) : address_(std::move(address)) {}

  bool active() const { return !address_.empty(); }
  const std::string& address() const { return address_; }

  /// Sends `state` (newline-separated KEY=VALUE lines, e.g. "READY=1") as one
  /// datagram. Inactive: does nothing and succeeds. Fails naming the address
  /// when it is malformed or the send fails; callers log it and go on.
  Status notify(std::string_view state) const;

 private:
  std::string address_;
};

}  // namespace fad
