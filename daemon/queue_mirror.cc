#include "daemon/queue_mirror.h"

#include "daemon/store.h"

namespace fad {

void QueueMirror::refresh(Store& store, double now) {
  const bool whole = !loaded_ || now - loaded_at_ >= kFullReloadS;
  // The marks are taken before reading, so a write after this read is seen next time.
  const auto changed = store.take_changed_builds();
  if (!whole && changed.empty()) return;
  loaded_ = false;
  builds_ = store.active_builds();
  std::map<std::int64_t, Queue> queues;
  for (const auto& b : builds_) {
    if (whole || !queues_.count(b.id) || changed.count(b.id)) reload(store, b.id);
    queues[b.id] = std::move(queues_[b.id]);
  }
  queues_ = std::move(queues);
  loaded_ = true;
  if (whole) loaded_at_ = now;
}

void QueueMirror::reload(Store& store, std::int64_t build_id) {
  Queue q;
  q.units = store.queued_units(build_id);
  q.compiles_done = store.compiles_done(build_id);
  queues_[build_id] = std::move(q);
}

}  // namespace fad
