// How fad marks a compiler as the kernel's first choice when memory runs out.
// fadd reruns a compile the OOM killer ends; it cannot rerun itself, a
// launcher waiting on it, a step wrapper that must report, or the build tool.
#pragma once

namespace fad {

/// The oom_score_adj of a compiler fad can rerun. At 500 the kernel takes it
/// before any process of ordinary score that is less than half the memory
/// limit's size larger.
inline constexpr const char* kOomVictimScore = "500";

/// The oom_score_adj fadd takes as root when nobody chose one: its systemd
/// unit's OOMScoreAdjust, for a fadd started by hand.
inline constexpr int kDaemonOomScore = -500;

/// Raises the calling process's oom_score_adj to kOomVictimScore (no
/// privilege needed to raise it; exec keeps it). Async-signal-safe, for a
/// child between fork and exec; does nothing where /proc is not writable.
void become_oom_victim() noexcept;

}  // namespace fad
