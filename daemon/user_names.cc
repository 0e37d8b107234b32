// Remembered login names; see user_names.h.
#include "daemon/user_names.h"

namespace fad {

UserNames::UserNames(Lookup lookup, Clock::duration ttl) : lookup_(std::move(lookup)), ttl_(ttl) {}

std::string UserNames::name(uid_t uid, Clock::time_point now) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = entries_.find(uid); it != entries_.end() && now - it->second.looked_up < ttl_) return it->second.name;
  }
  // Looked up without the lock: a slow directory holds up only this caller.
  const auto found = lookup_(uid);
  std::string name = found ? *found : std::to_string(uid);
  std::lock_guard lock(mutex_);
  if (entries_.size() >= kMaxRemembered && !entries_.count(uid)) {
    // Full: expired answers go; if all are fresh (a thousand users named
    // within the ttl), all go, and the next listing looks them up again.
    std::erase_if(entries_, [&](const auto& e) { return now - e.second.looked_up >= ttl_; });
    if (entries_.size() >= kMaxRemembered) entries_.clear();
  }
  entries_[uid] = Entry{name, now};
  return name;
}

std::size_t UserNames::remembered() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

}  // namespace fad
