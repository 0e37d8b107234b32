// Scheduling across the nodes of a cluster executor (Slurm). Each node is
// scheduled on its own by the same Scheduler and estimator as the local
// machine: its memory (what the allocation holds there) and cores, the units
// running on it, and the queue; a unit started on one node leaves the queue
// before the next node is considered. So the profile-aware admission that
// staggers peaks on one machine packs each node, and Slurm's per-step cgroup
// (--mem = estimate + margin) enforces it.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/size.h"
#include "daemon/engine.h"
#include "daemon/status_view.h"

namespace fad {

void Engine::schedule_nodes(double now, const std::vector<ExecutorNode>& nodes, std::vector<QueuedUnit> queue,
                            QueuedRecords& by_id, const std::map<std::int64_t, std::uint64_t>& budgets,
                            const std::string& hold) {
  node_view_.clear();
  std::uint64_t capacity = 0, committed = 0;
  if (nodes.empty()) {
    // No allocation yet (or slurmctld unreachable): the executor says why.
    const auto why = launcher_.wait_reason();
    std::map<std::int64_t, std::string> reasons;
    for (const auto& q : queue) reasons.emplace(q.id, why.empty() ? "waiting for cluster nodes" : why);
    write_wait_reasons(reasons, by_id);
    for (const auto& [id, r] : running_) committed += r.predicted.peak();
    last_capacity_ = 0;
    last_committed_ = committed;
    return;
  }
  std::map<std::int64_t, std::string> reasons;
  for (const auto& node : nodes) {
    std::uint64_t usage = 0;
    for (const auto& [id, r] : running_)
      if (r.node == node.name) usage += r.current;
    // What the allocation holds on the node is fad's; the node's other
    // tenants are Slurm's business (it confines them to their own share).
    MemorySnapshot snap;
    snap.total = node.memory;
    snap.available = node.memory > usage ? node.memory - usage : 0;
    SchedulerConfig config = scheduler_.config();
    config.cores = node.cpus;
    Scheduler scheduler(config, estimator_);
    if (auto stop = node_critical_stop_.find(node.name); stop != node_critical_stop_.end())
      scheduler.set_last_critical_stop(stop->second);
    auto plan = scheduler.decide(now, snap, queue, running_view(now, &node.name), budgets, hold);
    node_critical_stop_[node.name] = scheduler.last_critical_stop();
    capacity += plan.capacity;
    committed += plan.committed;
    node_view_[node.name] = NodeView{plan.capacity, plan.committed};
    apply_plan(plan, by_id, now, node.name, &reasons);
    // Every node is decided on, the queue drained or not: a node after the
    // last one a unit started on still needs its pressure steps, and its
    // figures in status (they read 0 of 0 while its units ran).
    queue.erase(
        std::remove_if(queue.begin(), queue.end(), [this](const QueuedUnit& q) { return running_.count(q.id); }),
        queue.end());
  }
  last_capacity_ = capacity;
  last_committed_ = committed;
  // A unit that started nowhere shows why it did not fit on the first node.
  std::map<std::int64_t, std::string> unplaced;
  for (const auto& q : queue)
    if (auto it = reasons.find(q.id); it != reasons.end()) unplaced.emplace(q.id, it->second);
  write_wait_reasons(unplaced, by_id);
}

json Engine::executor_json() const {
  auto text = launcher_.status_json();
  if (text.empty()) return json(nullptr);
  auto j = json::parse(text, nullptr, false);
  if (!j.is_object()) return json(nullptr);
  for (auto& node : j["nodes"]) {
    const auto name = node.value("name", "");
    auto view = node_view_.find(name);
    std::uint64_t committed = view == node_view_.end() ? 0 : view->second.committed;
    int running = 0;
    for (const auto& [id, r] : running_) running += r.node == name;
    node["committed_bytes"] = committed;
    node["capacity_bytes"] = view == node_view_.end() ? 0 : view->second.capacity;
    node["running_units"] = running;
  }
  return j;
}

}  // namespace fad
