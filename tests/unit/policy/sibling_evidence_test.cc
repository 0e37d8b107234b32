// Spikes and running siblings, on the recorded nvcc trace: a cold build learns
// from a family's first unit as soon as it is past its spike.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

#include "policy/estimator.h"
#include "policy/sibling_evidence.h"
#include "policy/spikes.h"

namespace fad {
namespace {

constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kGiB = 1ull << 30;

/// The recorded trace of one real nvcc unit (one arch, one thread), up to `until` seconds.
Profile trace_until(double until) {
  std::ifstream in(std::string(FAD_TRACES_DIR) + "/fwd128_fp16_sm90_t1.tsv");
  REQUIRE(in);
  Profile p;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line);
    double t = 0, mib = 0;
    f >> t >> mib;
    if (t > until) break;
    p.points.emplace_back(t, static_cast<std::uint64_t>(mib * kMiB));
    p.duration_s = t;
  }
  return p;
}

UnitKey sibling(const std::string& name, int arch_count = 1) {
  UnitKey k;
  k.source = name + ".cu";
  k.content_hash = "h-" + name;
  k.flags = "-O3";
  k.archs = arch_count == 1 ? "90" : "80,90";
  k.compiler = "13.0";
  k.family = "flash_fwd_hdim_fp_sm";
  k.arch_count = arch_count;
  return k;
}

TEST_CASE("spikes: the trace's cicc spike counts, the preprocessor's bump and the declining plateau do not") {
  const std::uint64_t quarter = 5 * kGiB / 4;                     // a quarter of the 5 GiB it was admitted with
  CHECK(summarize_spikes(trace_until(60), quarter).spikes == 0);  // still climbing
  auto s = summarize_spikes(trace_until(70), quarter);
  CHECK(s.spikes == 1);
  CHECK(s.peak == 4131 * kMiB);
  CHECK(s.last_drop_at == 66);
  auto all = summarize_spikes(trace_until(400), quarter);
  CHECK(all.spikes == 1);
  CHECK(all.since_drop == 1604 * kMiB);  // its plateau
  // Admitted with an accurate 4 GiB estimate, the 0.65 GiB bump at 6 s is still no spike.
  CHECK(summarize_spikes(trace_until(20), kGiB).spikes == 0);
  CHECK(arch_turns(1, 2) == 2);
  CHECK(arch_turns(2, 2) == 1);
  CHECK(arch_turns(4, 3) == 1);
}

TEST_CASE("sibling evidence: a unit past its spike predicts its siblings' peak and shape with a margin") {
  SiblingEvidence ev({120});
  ev.replace({{sibling("split0"), 1, trace_until(60), 5 * kGiB}});
  CHECK_FALSE(ev.predict(sibling("split1"), 1));  // not past its spike yet
  const SoFar seen = ev.so_far(sibling("split1"), 1);
  CHECK(seen.peak == 3840 * kMiB);
  CHECK(ev.peak_so_far(sibling("split1"), 1) == seen.peak);
  CHECK(ev.peak_so_far(sibling("split1"), 2) == ev.so_far(sibling("split1"), 2).peak);
  CHECK(seen.age == Approx(trace_until(60).duration_s));
  CHECK(seen.timeline.peak() == 3763 * kMiB);  // its newest sample (3840 MiB at 60 s) has no width yet
  CHECK(ev.confirmed("flash_fwd_hdim_fp_sm") == 0);

  ev.replace({{sibling("split0"), 1, trace_until(70), 5 * kGiB}});
  auto p = ev.predict(sibling("split1"), 1);
  REQUIRE(p);
  CHECK(ev.confirmed("flash_fwd_hdim_fp_sm") == 1);
  CHECK(p->peak() == Approx(1.25 * 4131 * kMiB).epsilon(0.001));
  CHECK(p->at(5) < 2 * kGiB);                                           // climbing, as measured
  CHECK(p->at(100) == Approx(1.25 * 0.4 * 4131 * kMiB).epsilon(0.01));  // the plateau, not the spike
  CHECK(p->duration_s == 120);  // no sibling finished: at least the prior's duration
  // Another family learns nothing from it.
  UnitKey other = sibling("bwd");
  other.family = "flash_bwd_hdim_fp_sm";
  CHECK_FALSE(ev.predict(other, 1));

  SECTION("the margin shrinks as more siblings confirm the peak") {
    ev.replace({{sibling("split0"), 1, trace_until(70), 5 * kGiB},
                {sibling("split2"), 1, trace_until(90), 5 * kGiB},
                {sibling("split3"), 1, trace_until(80), 5 * kGiB},
                {sibling("split4"), 1, trace_until(75), 5 * kGiB}});
    auto q = ev.predict(sibling("split1"), 1);
    REQUIRE(q);
    CHECK(q->peak() == Approx(1.125 * 4131 * kMiB).epsilon(0.001));  // 1 + 0.25 / sqrt(4)
  }
  SECTION("a sibling at the asked parallelism tempers another's linear scaling, never hides it") {
    // Two archs: one sibling compiles them in turn, another both at once.
    // Alone, the in-turn one scaled up linearly says 2 x 4131 MiB.
    ev.replace({{sibling("turns", 2), 1, trace_until(70), 5 * kGiB}});
    auto scaled = ev.predict(sibling("next", 2), 2);
    REQUIRE(scaled);
    CHECK(scaled->peak() == Approx(1.25 * 2 * 4131 * kMiB).epsilon(0.001));
    // Beside one measured at two threads, it counts at 0.85 of that: the
    // at-once one's 1.8x wins (the margin is for two confirming siblings).
    const double two = 1 + 0.25 / std::sqrt(2.0);
    ev.replace({{sibling("turns", 2), 1, trace_until(70), 5 * kGiB},
                {sibling("once", 2), 2, trace_until(70).scaled(1.8, 1.0), 8 * kGiB}});
    auto q = ev.predict(sibling("next", 2), 2);
    REQUIRE(q);
    CHECK(q->peak() == Approx(two * 1.8 * 4131 * kMiB).epsilon(0.001));
    // A lower at-once one does not hide the other: 0.85 x 2 x 4131 MiB.
    ev.replace({{sibling("turns", 2), 1, trace_until(70), 5 * kGiB},
                {sibling("once", 2), 2, trace_until(70).scaled(1.2, 1.0), 8 * kGiB}});
    auto low = ev.predict(sibling("next", 2), 2);
    REQUIRE(low);
    CHECK(low->peak() == Approx(two * 1.7 * 4131 * kMiB).epsilon(0.001));
  }
  SECTION("a sibling compiling two archs in turns has a second spike to come: flat at the peak") {
    ev.replace({{sibling("two0", 2), 1, trace_until(70), 5 * kGiB}});
    auto q = ev.predict(sibling("two1", 2), 1);
    REQUIRE(q);
    CHECK(q->at(100) == Approx(1.25 * 4131 * kMiB).epsilon(0.001));
  }
}

TEST_CASE("Estimator: a cold build admits a family's siblings on a running unit's evidence") {
  Estimator est({5 * kGiB, 120});
  CHECK(est.estimate(sibling("split1"), 1, std::nullopt).source == EstimateSource::prior);
  // A sibling climbing past the prior raises the guess to what it reached.
  Profile high = Profile::flat(6 * kGiB, 30);
  est.observe_running({{sibling("split0"), 1, high, 5 * kGiB}});
  auto guess = est.estimate(sibling("split1"), 1, std::nullopt);
  CHECK(guess.source == EstimateSource::prior);
  CHECK(guess.peak() == 6 * kGiB);
  // Past its spike: the siblings' estimate is the measured peak with the margin.
  est.observe_running({{sibling("split0"), 1, trace_until(70), 5 * kGiB}});
  auto e = est.estimate(sibling("split1"), 1, std::nullopt);
  CHECK(e.source == EstimateSource::running_sibling);
  CHECK(e.peak() == Approx(1.25 * 4131 * kMiB).epsilon(0.001));
  CHECK(est.knows_family(sibling("split1")));
  // Once it is gone and nothing finished, nothing is known again.
  est.observe_running({});
  CHECK(est.estimate(sibling("split1"), 1, std::nullopt).source == EstimateSource::prior);
  CHECK_FALSE(est.knows_family(sibling("split1")));
}

TEST_CASE("Estimator: a duration from a running sibling is a guess, also where it raises a family's estimate") {
  Estimator est({5 * kGiB, 120});
  est.observe_running({{sibling("split0"), 1, trace_until(70), 5 * kGiB}});
  auto running = est.estimate(sibling("split1"), 1, std::nullopt);
  CHECK(running.source == EstimateSource::running_sibling);
  CHECK(running.duration_guessed);
  // A small sibling finished in 30 s; the running one, higher and 70 s old,
  // raises it to its height (with the family margin) and to 1.5x its age, a
  // guess; its spike is where the running one's was (60-66 s), not only
  // where the small one's was, stretched.
  est.learn({sibling("small"), 1, trace_until(400).scaled(0.5, 0.1)});
  auto raised = est.estimate(sibling("split1"), 1, std::nullopt);
  CHECK(raised.source == EstimateSource::family);
  CHECK(raised.peak() == Approx(1.1 * 4131 * kMiB).epsilon(0.001));
  CHECK(raised.profile.at(62) >= 4131 * kMiB);
  CHECK(raised.profile.duration_s == Approx(105));
  CHECK(raised.duration_guessed);
  // One that finished in 302 s is longer than the guess: measured, not guessed.
  est.learn({sibling("long"), 1, trace_until(400).scaled(0.5, 1.0)});
  auto measured = est.estimate(sibling("split1"), 1, std::nullopt);
  CHECK(measured.profile.duration_s == Approx(302));
  CHECK_FALSE(measured.duration_guessed);
}

TEST_CASE("Estimator: a user's running unit is evidence for that user's siblings only") {
  Estimator est({5 * kGiB, 120});
  auto of = [](const std::string& name, const std::string& scope) {
    UnitKey k = sibling(name);
    k.scope = scope;
    return k;
  };
  // User 4002 runs "a sibling" that is past a tiny spike (a sleep pretending to be nvcc).
  Profile tiny = trace_until(70).scaled(0.001, 1.0);
  est.observe_running({{of("split0", "uid:4002"), 1, tiny, 4 * kMiB}});
  CHECK(est.estimate(of("split1", "uid:4002"), 1, std::nullopt).source == EstimateSource::running_sibling);
  CHECK(est.knows_family(of("split1", "uid:4002")));
  // Nobody else's estimate moves: not the shared scope's, not another user's.
  for (const auto& scope : {std::string(), std::string("uid:4001")}) {
    INFO(scope);
    const auto e = est.estimate(of("split1", scope), 1, std::nullopt);
    CHECK(e.source == EstimateSource::prior);
    CHECK(e.peak() == 5 * kGiB);
    CHECK_FALSE(est.knows_family(of("split1", scope)));
  }
  // A shared (trusted) sibling informs everyone's units.
  est.observe_running({{sibling("split0"), 1, trace_until(70), 5 * kGiB}});
  CHECK(est.estimate(of("split1", "uid:4001"), 1, std::nullopt).source == EstimateSource::running_sibling);
}

}  // namespace
}  // namespace fad

namespace fad {
namespace {

TEST_CASE("Estimator: a running sibling above the finished ones raises their estimate's height, not its shape") {
  Estimator est({5 * kGiB, 120});
  est.learn({sibling("done"), 1, trace_until(400)});
  const Estimate alone = est.estimate(sibling("split1"), 1, std::nullopt);
  REQUIRE(alone.source == EstimateSource::family);
  // A sibling 5% higher than the finished one, past its spike at 70 s: its
  // prediction is smeared over the speeds it may run at and carries the
  // evidence margin; the family's measured timeline is kept, 5% higher.
  est.observe_running({{sibling("split0"), 1, trace_until(70).scaled(1.05, 1.0), 5 * kGiB}});
  const Estimate raised = est.estimate(sibling("split1"), 1, std::nullopt);
  CHECK(raised.source == EstimateSource::family);
  CHECK(raised.peak() == Approx(1.05 * static_cast<double>(alone.peak())).epsilon(0.002));
  CHECK(raised.profile.mean() == Approx(1.05 * alone.profile.mean()).epsilon(0.01));
  CHECK(raised.profile.duration_s == Approx(alone.profile.duration_s));
  CHECK_FALSE(raised.duration_guessed);
  // One below the finished units changes nothing.
  est.observe_running({{sibling("split0"), 1, trace_until(70).scaled(0.9, 1.0), 5 * kGiB}});
  CHECK(est.estimate(sibling("split1"), 1, std::nullopt).profile.mean() == Approx(alone.profile.mean()));
}

}  // namespace
}  // namespace fad

namespace fad {
namespace {

TEST_CASE("Estimator: a running sibling compiled in fewer turns than asked says only how high, not when") {
  // Both archs at once, past its one spike: asked at one thread (two turns),
  // the second turn's spike would come at a time only guessed, so the
  // prediction is flat at the peak; asked at two threads it keeps its shape.
  Estimator est({5 * kGiB, 120});
  est.observe_running({{sibling("split0", 2), 2, trace_until(70), 5 * kGiB}});
  const auto turns = est.estimate(sibling("split1", 2), 1, std::nullopt);
  REQUIRE(turns.source == EstimateSource::running_sibling);
  CHECK(turns.profile.at(0) == turns.peak());
  CHECK(turns.profile.at(0.9 * turns.profile.duration_s) == turns.peak());
  const auto at_once = est.estimate(sibling("split1", 2), 2, std::nullopt);
  CHECK(at_once.profile.at(0) < at_once.peak() / 2);
}

}  // namespace
}  // namespace fad
