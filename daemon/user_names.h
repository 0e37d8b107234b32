// Login names for uids, remembered for a while. fadd names users in every
// listing (each build's owner), log line and refusal; each lookup may ask a
// directory service (LDAP, NIS, SSSD) on the event loop, so `fad status` over
// a thousand builds would be a thousand network round trips. Names change
// rarely; an answer is kept for `ttl`, and the table is bounded however many
// uids callers bring (a root fadd serves every user of a machine).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace fad {

class UserNames {
 public:
  using Clock = std::chrono::steady_clock;
  /// The name of a uid from the passwd database; nullopt when it has none.
  using Lookup = std::function<std::optional<std::string>(uid_t)>;

  static constexpr std::size_t kMaxRemembered = 1024;

  explicit UserNames(Lookup lookup, Clock::duration ttl = std::chrono::minutes(1));

  /// The login name of `uid`, or the number as text when it has none. Safe
  /// from any thread.
  std::string name(uid_t uid, Clock::time_point now);
  std::size_t remembered() const;

 private:
  struct Entry {
    std::string name;
    Clock::time_point looked_up;
  };
  Lookup lookup_;
  Clock::duration ttl_;
  mutable std::mutex mutex_;
  std::map<uid_t, Entry> entries_;
};

}  // namespace fad
