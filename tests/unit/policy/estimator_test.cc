// Estimator: each fallback level, thread scaling, newest-first learning, and
// learning from a family's first finished unit during a cold build.
#include "policy/estimator.h"

#include <catch2/catch.hpp>

namespace fad {
namespace {

constexpr std::uint64_t kGiB = 1ull << 30;

UnitKey key(std::string source, std::string family, std::string flags = "-O3", int arch_count = 1) {
  UnitKey k;
  k.source = std::move(source);
  k.content_hash = "h-" + k.source;
  k.flags = std::move(flags);
  k.archs = arch_count == 1 ? "90" : "80,90";
  k.compiler = "13.0";
  k.family = std::move(family);
  k.arch_count = arch_count;
  return k;
}

/// A trace-like profile: a spike of `peak` for the first fifth, then 30%.
Profile spiky(std::uint64_t peak, double duration) {
  Profile p;
  p.points = {{0, peak / 4}, {duration * 0.1, peak}, {duration * 0.2, peak * 3 / 10}};
  p.duration_s = duration;
  return p;
}

Observation obs(const UnitKey& k, int threads, Profile p) { return Observation{k, threads, std::move(p)}; }

TEST_CASE("Estimator: never-seen unit gets the flat configured prior per thread") {
  Estimator est({5 * kGiB, 120});
  auto e = est.estimate(key("a.cu", "fam", "-O3", 2), 2, std::nullopt);
  CHECK(e.source == EstimateSource::prior);
  CHECK(e.peak() == 10 * kGiB);
  CHECK(e.profile.at(0) == 10 * kGiB);  // flat: no optimistic early dip
  CHECK(e.profile.duration_s == 120);
  CHECK(e.duration_guessed);  // the prior's time: no ETA rests on it
  // Threads beyond the arch count compile nothing more in parallel.
  CHECK(est.estimate(key("a.cu", "fam"), 4, std::nullopt).peak() == 5 * kGiB);
  CHECK(to_string(EstimateSource::prior) == "prior");
}

TEST_CASE("Estimator: what one user's units showed teaches only that user's units, shared history teaches all") {
  Estimator est({5 * kGiB, 120});
  auto scoped = [](UnitKey k, const std::string& scope) {
    k.scope = scope;
    return k;
  };
  const UnitKey bundled = key("src/fwd.cu", "fwd");
  // User 4002 sends a bundled unit's key and runs a program that takes 1 MiB:
  // exact key, same source and family are all claimed.
  for (int i = 0; i < 3; ++i) est.learn(obs(scoped(bundled, "uid:4002"), 1, Profile::flat(1 << 20, 2)));
  CHECK(est.estimate(scoped(bundled, "uid:4002"), 1, std::nullopt).source == EstimateSource::exact);
  for (const auto& victim : {bundled, scoped(bundled, "uid:4001"), key("src/fwd_other.cu", "fwd")}) {
    INFO(victim.exact());
    const auto e = est.estimate(victim, 1, std::nullopt);
    CHECK(e.source == EstimateSource::prior);
    CHECK(e.peak() == 5 * kGiB);
  }
  // What fadd measured in the shared scope informs every user's units, after their own.
  est.learn(obs(bundled, 1, spiky(4 * kGiB, 300)));
  CHECK(est.estimate(bundled, 1, std::nullopt).peak() == 4 * kGiB);
  const auto alice = est.estimate(scoped(bundled, "uid:4001"), 1, std::nullopt);
  CHECK(alice.source == EstimateSource::exact);
  CHECK(alice.peak() == 4 * kGiB);
  CHECK(est.estimate(scoped(key("src/fwd_other.cu", "fwd"), "uid:4001"), 1, std::nullopt).source ==
        EstimateSource::family);
  CHECK(est.estimate(scoped(bundled, "uid:4002"), 1, std::nullopt).peak() == 1 << 20);  // its own come first
  // The shared scope keeps its key format: history recorded before scopes existed still matches.
  CHECK(bundled.exact().rfind("src/fwd.cu\x1f", 0) == 0);
  CHECK(scoped(bundled, "uid:4002").exact() != bundled.exact());
}

TEST_CASE("Estimator: manifest prior beats the configured prior") {
  Estimator est({5 * kGiB, 120});
  auto e = est.estimate(key("a.cu", "fam", "-O3", 2), 2, ManifestPrior{3 * kGiB, 200});
  CHECK(e.source == EstimateSource::manifest);
  CHECK(e.peak() == 6 * kGiB);
  CHECK(e.profile.duration_s == 100);
  CHECK_FALSE(e.duration_guessed);  // measured on a reference machine
  // A manifest with a peak and no duration: the time is the prior's guess.
  auto peak_only = est.estimate(key("a.cu", "fam", "-O3", 2), 2, ManifestPrior{3 * kGiB, 0});
  CHECK(peak_only.source == EstimateSource::manifest);
  CHECK(peak_only.profile.duration_s == 120);
  CHECK(peak_only.duration_guessed);
}

TEST_CASE("Estimator: exact key returns the learnt profile") {
  Estimator est({5 * kGiB, 120});
  est.learn(obs(key("a.cu", "fam"), 1, spiky(4 * kGiB, 300)));
  auto e = est.estimate(key("a.cu", "fam"), 1, ManifestPrior{9 * kGiB, 10});
  CHECK(e.source == EstimateSource::exact);
  CHECK(e.peak() == 4 * kGiB);
  CHECK(e.profile.at(100) == 4 * kGiB * 3 / 10);
  CHECK(e.profile.duration_s == 300);
  CHECK_FALSE(e.duration_guessed);
  CHECK(est.observation_count() == 1);
}

TEST_CASE("Estimator: pointwise max of the newest three observations") {
  Estimator est({5 * kGiB, 120});
  auto k = key("a.cu", "fam");
  for (std::uint64_t peak : {9, 1, 2, 3}) est.learn(obs(k, 1, spiky(peak * kGiB, 100)));
  CHECK(est.estimate(k, 1, std::nullopt).peak() == 3 * kGiB);  // the 9 GiB run is too old
  est.learn(obs(k, 1, spiky(1 * kGiB, 200)));
  auto e = est.estimate(k, 1, std::nullopt);
  CHECK(e.peak() == 3 * kGiB);
  CHECK(e.profile.duration_s == 200);  // the longest of the newest three
  CHECK(est.observation_count() == 5);
}

TEST_CASE("Estimator: same source with other flags, with a safety margin") {
  Estimator est({5 * kGiB, 120});
  est.learn(obs(key("a.cu", "fam", "-O3"), 1, spiky(4 * kGiB, 300)));
  auto e = est.estimate(key("a.cu", "fam", "-O2 -G"), 1, std::nullopt);
  CHECK(e.source == EstimateSource::same_source);
  CHECK(e.peak() == Approx(4.4 * kGiB).epsilon(0.001));
  // Twice the archs at one thread: same memory, twice the time.
  auto two = est.estimate(key("a.cu", "fam", "-O3 -x", 2), 1, std::nullopt);
  CHECK(two.profile.duration_s == Approx(600));
  CHECK(two.peak() == Approx(4.4 * kGiB).epsilon(0.001));
}

TEST_CASE("Estimator: family fallback uses the family's highest peak, with margin") {
  Estimator est({5 * kGiB, 120});
  est.learn(obs(key("hdim64.cu", "fwd"), 1, spiky(3 * kGiB, 200)));
  est.learn(obs(key("hdim96.cu", "fwd"), 1, spiky(4 * kGiB, 250)));
  est.learn(obs(key("bwd.cu", "bwd"), 1, spiky(9 * kGiB, 250)));
  auto e = est.estimate(key("hdim128.cu", "fwd"), 1, ManifestPrior{8 * kGiB, 100});
  CHECK(e.source == EstimateSource::family);
  CHECK(e.peak() == Approx(4.4 * kGiB).epsilon(0.001));
  CHECK(e.profile.duration_s == 250);
}

TEST_CASE("Estimator: learning mid-build, a family's first unit informs the rest") {
  Estimator est({5 * kGiB, 120});
  auto sibling = key("hdim128_split1.cu", "fwd_hdim128");
  CHECK(est.estimate(sibling, 1, std::nullopt).source == EstimateSource::prior);
  // The first unit of the family finishes while its siblings are still queued.
  est.learn(obs(key("hdim128_split0.cu", "fwd_hdim128"), 1, spiky(4 * kGiB, 300)));
  auto e = est.estimate(sibling, 1, std::nullopt);
  CHECK(e.source == EstimateSource::family);
  CHECK(e.profile.at(150) < 2 * kGiB);  // a plateau, not the flat 5 GiB prior
  CHECK(e.peak() < 5 * kGiB);
}

TEST_CASE("Estimator: thread scaling by effective parallelism") {
  Estimator est({5 * kGiB, 120});
  auto k = key("two.cu", "fam", "-O3", 2);
  SECTION("up: linear memory, inverse time") {
    est.learn(obs(k, 1, spiky(4 * kGiB, 200)));
    auto e = est.estimate(k, 2, std::nullopt);
    CHECK(e.peak() == 8 * kGiB);
    CHECK(e.profile.duration_s == Approx(100));
    CHECK(est.estimate(k, 8, std::nullopt).peak() == 8 * kGiB);  // only 2 archs
  }
  SECTION("down: memory shrinks less than linearly (measured 7.05 -> 4.1 GiB)") {
    est.learn(obs(k, 2, spiky(6 * kGiB, 240)));
    auto e = est.estimate(k, 1, std::nullopt);
    CHECK(e.peak() == 4 * kGiB);  // 6 * (1 + 1) / (2 + 1)
    CHECK(e.profile.duration_s == Approx(480));
    // Both archs at once made one spike (24-48 s); one at a time makes one
    // per arch, each as long as the measured one, not one twice as long.
    CHECK(e.profile.at(30) == 4 * kGiB);
    CHECK(e.profile.at(60) < 2 * kGiB);
    CHECK(e.profile.at(150) < 2 * kGiB);
    CHECK(e.profile.at(270) == 4 * kGiB);
  }
  SECTION("archs that do not divide over the threads: each turn keeps its length") {
    // One arch measured in 200 s; three at two threads compile in two turns
    // (two archs, then one), each about one arch's time.
    est.learn(obs(key("one.cu", "fam"), 1, spiky(4 * kGiB, 200)));
    auto e = est.estimate(key("three.cu", "fam", "-O3", 3), 2, std::nullopt);
    CHECK(e.profile.duration_s == Approx(400));
    CHECK(e.profile.at(30) == e.peak());
    CHECK(e.profile.at(230) == e.peak());
  }
}

TEST_CASE("Estimator: a family member measured at the asked parallelism tempers the others' linear scaling") {
  Estimator est({5 * kGiB, 120});
  // Two archs each: one sibling compiled them in turn (1 thread), one at once (2).
  est.learn(obs(key("split0.cu", "fwd", "-O3", 2), 1, spiky(4 * kGiB, 400)));
  const auto queued = key("split2.cu", "fwd", "-O3", 2);
  // Only the one-thread sibling known: scaled up linearly, the safe side.
  CHECK(est.estimate(queued, 2, std::nullopt).peak() == Approx(8.8 * kGiB).epsilon(0.001));
  // A sibling measured at two threads went to 7 GiB, not 8: linear scaling is
  // high, so the scaled one counts at 0.85 (6.8 GiB) and the measured 7 wins.
  est.learn(obs(key("split1.cu", "fwd", "-O3", 2), 2, spiky(7 * kGiB, 220)));
  auto at_two = est.estimate(queued, 2, std::nullopt);
  CHECK(at_two.source == EstimateSource::family);
  CHECK(at_two.peak() == Approx(1.1 * 7 * kGiB).epsilon(0.001));
  CHECK(at_two.profile.duration_s == 220);
  // One thread keeps its own measurement (7 GiB scaled down is 4.67, counted whole).
  CHECK(est.estimate(queued, 1, std::nullopt).peak() == Approx(1.1 * 7 * 2 / 3 * kGiB).epsilon(0.001));
}

TEST_CASE("Estimator: a small member measured at the asked parallelism never hides a large one measured otherwise") {
  // A family is a file name without its digits: head dims 32 and 256 share one.
  Estimator est({5 * kGiB, 120});
  est.learn(obs(key("fwd_hdim32.cu", "fwd_hdim", "-O3", 2), 2, spiky(3 * kGiB, 100)));
  est.learn(obs(key("fwd_hdim256.cu", "fwd_hdim", "-O3", 2), 1, spiky(8 * kGiB, 600)));
  const auto queued = key("fwd_hdim192.cu", "fwd_hdim", "-O3", 2);
  const auto at_two = est.estimate(queued, 2, std::nullopt);
  // The large one at two threads: 16 GiB linearly, counted at 0.85, with the margin.
  CHECK(at_two.peak() == Approx(1.1 * 0.85 * 16 * kGiB).epsilon(0.001));
  CHECK(at_two.peak() > est.estimate(queued, 1, std::nullopt).peak());  // more at once never needs less
}

TEST_CASE("Estimator: ignores empty observations") {
  Estimator est({5 * kGiB, 120});
  est.learn(obs(key("a.cu", "fam"), 1, Profile{}));
  CHECK(est.observation_count() == 0);
  CHECK(est.estimate(key("a.cu", "fam"), 1, std::nullopt).source == EstimateSource::prior);
}

TEST_CASE("Estimator: imported profiles stand in until the machine measured the key itself") {
  Estimator est({5 * kGiB, 120});
  auto k = key("a.cu", "fam");
  Observation imported{k, 1, spiky(8 * kGiB, 300), true};
  est.learn(imported);
  auto e = est.estimate(k, 1, std::nullopt);
  CHECK(e.source == EstimateSource::exact);
  CHECK(e.imported);
  CHECK(e.peak() == 8 * kGiB);
  CHECK(estimate_source_id(e.source, e.imported) == "imported_exact");
  // The first local measurement replaces it, even though the import is newer below.
  est.learn(obs(k, 1, spiky(4 * kGiB, 200)));
  est.learn(imported);
  e = est.estimate(k, 1, std::nullopt);
  CHECK_FALSE(e.imported);
  CHECK(e.peak() == 4 * kGiB);
  CHECK(estimate_source_id(e.source, e.imported) == "exact");
  // A sibling known only from imports gets a family estimate marked imported.
  auto sib = est.estimate(key("b.cu", "fam"), 1, std::nullopt);
  CHECK(sib.source == EstimateSource::family);
  CHECK_FALSE(sib.imported);
  CHECK(estimate_source_id(EstimateSource::same_source, false) == "same_source");
  CHECK(estimate_source_id(EstimateSource::running_sibling, false) == "running_sibling");
}

TEST_CASE("Estimator: a never-seen unit's prior takes the prior's time per arch compiled in turn") {
  Estimator est({5 * kGiB, 120});
  auto two = key("two.cu", "fam", "-O3", 2);
  CHECK(est.estimate(two, 1, std::nullopt).profile.duration_s == 240);
  CHECK(est.estimate(two, 2, std::nullopt).profile.duration_s == 120);
  CHECK_FALSE(est.knows_family(two));
  est.learn(obs(key("one.cu", "fam"), 1, spiky(kGiB, 50)));
  CHECK(est.knows_family(two));
}

}  // namespace
}  // namespace fad

namespace fad {
namespace {

TEST_CASE("Estimator: remembered answers never outlive what they rest on") {
  // The estimator remembers answers between passes (a queue of thousands asks
  // about each unit twice per tick): what it remembers must track learning,
  // the running units, and everything an answer depends on.
  Estimator est({5 * kGiB, 120});
  const UnitKey a = key("a.cu", "fam"), b = key("b.cu", "fam"), wide = key("c.cu", "fam", "-O3", 2);
  CHECK(est.estimate(a, 1, std::nullopt).source == EstimateSource::prior);
  CHECK(est.estimate(a, 1, ManifestPrior{kGiB, 60}).peak() == kGiB);  // same family, its own manifest
  CHECK(est.estimate(b, 1, ManifestPrior{2 * kGiB, 60}).peak() == 2 * kGiB);
  CHECK(est.estimate(wide, 2, std::nullopt).peak() == 10 * kGiB);  // two archs at once
  CHECK(est.estimate(a, 2, std::nullopt).peak() == 5 * kGiB);      // one arch: threads add nothing
  // Learning `a` itself: `a` is exact from now on, its sibling `b` is family.
  est.learn(obs(a, 1, spiky(3 * kGiB, 100)));
  CHECK(est.estimate(a, 1, std::nullopt).source == EstimateSource::exact);
  CHECK(est.estimate(a, 1, std::nullopt).peak() == 3 * kGiB);
  CHECK(est.estimate(b, 1, ManifestPrior{2 * kGiB, 60}).source == EstimateSource::family);
  // A running sibling above the family's finished units raises the family's
  // estimate at the next pass, and stops doing so once it is gone.
  const std::uint64_t family_peak = est.estimate(b, 1, std::nullopt).peak();
  est.observe_running({{key("d.cu", "fam"), 1, spiky(8 * kGiB, 100), 5 * kGiB}});  // past its spike
  CHECK(est.estimate(b, 1, std::nullopt).peak() > family_peak);
  est.observe_running({});
  CHECK(est.estimate(b, 1, std::nullopt).peak() == family_peak);
}

}  // namespace
}  // namespace fad
