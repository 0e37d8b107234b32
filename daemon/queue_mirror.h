// The queued units of the active builds, kept in memory between scheduling
// passes. Each pass used to re-read and decode every open build's units from
// the database: 200 queued builds of the bundled library kept an idle fadd
// half a core busy. The mirror re-reads only the builds the store marks as
// changed (Store::take_changed_builds), and everything at most every
// kFullReloadS seconds, so that nothing the marks miss stays stale for long.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "daemon/model.h"

namespace fad {

class Store;

class QueueMirror {
 public:
  static constexpr double kFullReloadS = 30;

  struct Queue {
    bool compiles_done = true;      ///< every compile succeeded: the link may start
    std::vector<UnitRecord> units;  ///< queued, in order
  };

  /// Brings the mirror up to date with the store. A read that throws leaves
  /// the mirror to be reloaded whole on the next call.
  void refresh(Store& store, double now);
  /// The active builds, oldest first.
  const std::vector<BuildRecord>& builds() const { return builds_; }
  /// The queue of each active build, by build id.
  std::map<std::int64_t, Queue>& queues() { return queues_; }

 private:
  void reload(Store& store, std::int64_t build_id);

  bool loaded_ = false;
  double loaded_at_ = 0;
  std::vector<BuildRecord> builds_;
  std::map<std::int64_t, Queue> queues_;
};

}  // namespace fad
