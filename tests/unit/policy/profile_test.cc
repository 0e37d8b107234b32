// Profile: step-function semantics, serialization round trip, thinning that
// keeps peaks, and the load operations the scheduler relies on.
#include "policy/profile.h"

#include <catch2/catch.hpp>

namespace fad {
namespace {

constexpr std::uint64_t kGiB = 1ull << 30;

Profile spike() {
  Profile p;
  p.points = {{0, 1 * kGiB}, {10, 4 * kGiB}, {20, 2 * kGiB}};
  p.duration_s = 100;
  return p;
}

TEST_CASE("Profile::at is a step function held from the earlier point") {
  Profile p = spike();
  CHECK(p.at(-1) == 0);
  CHECK(p.at(0) == 1 * kGiB);
  CHECK(p.at(9.99) == 1 * kGiB);
  CHECK(p.at(10) == 4 * kGiB);
  CHECK(p.at(19) == 4 * kGiB);
  CHECK(p.at(50) == 2 * kGiB);
  CHECK(p.at(99.9) == 2 * kGiB);
  CHECK(p.at(100) == 0);
  CHECK(p.at(1000) == 0);
}

TEST_CASE("Profile::at holds the first value before the first sample") {
  Profile p;
  p.points = {{2, 300}, {4, 500}};
  p.duration_s = 10;
  CHECK(p.at(0) == 300);
  CHECK(p.at(1.5) == 300);
  CHECK(Profile().at(0) == 0);
}

TEST_CASE("Profile::peak_from and mean") {
  Profile p = spike();
  CHECK(p.peak() == 4 * kGiB);
  CHECK(p.peak_from(15) == 4 * kGiB);
  CHECK(p.peak_from(20) == 2 * kGiB);
  CHECK(p.peak_from(100) == 0);
  // (10 * 1 + 10 * 4 + 80 * 2) / 100 = 2.1 GiB
  CHECK(p.mean() == Approx(2.1 * kGiB));
  CHECK(Profile::flat(5, 10).mean() == Approx(5));
}

TEST_CASE("Profile::scaled multiplies memory and time") {
  Profile p = spike().scaled(2, 0.5);
  CHECK(p.duration_s == 50);
  CHECK(p.at(5) == 8 * kGiB);
  CHECK(p.at(9.9) == 8 * kGiB);
  CHECK(p.at(10) == 4 * kGiB);
}

TEST_CASE("Profile::lift_peak_to raises the highest point only, and never lowers") {
  Profile p;
  p.points = {{0, kGiB}, {5, 3 * kGiB}, {9, 2 * kGiB}};
  p.duration_s = 10;
  p.lift_peak_to(4 * kGiB);
  CHECK(p.points == std::vector<std::pair<double, std::uint64_t>>{{0, kGiB}, {5, 4 * kGiB}, {9, 2 * kGiB}});
  p.lift_peak_to(2 * kGiB);  // already above
  CHECK(p.peak() == 4 * kGiB);
  Profile empty;
  empty.lift_peak_to(0);
  CHECK(empty.points.empty());
  empty.lift_peak_to(kGiB);
  CHECK(empty.points == std::vector<std::pair<double, std::uint64_t>>{{0, kGiB}});
}

TEST_CASE("Profile::thinned keeps each window's maximum") {
  Profile p;
  for (int i = 0; i < 100; ++i) p.points.emplace_back(i, i == 37 ? 9 * kGiB : kGiB);
  p.duration_s = 100;
  Profile thin = p.thinned(10);
  CHECK(thin.points.size() <= 10);
  CHECK(thin.peak() == 9 * kGiB);
  CHECK(thin.duration_s == 100);
  // Never below the original anywhere.
  for (double t = 0; t < 100; t += 0.5) CHECK(thin.at(t) >= p.at(t));
  CHECK(spike().thinned(10).points == spike().points);
}

TEST_CASE("Profile::widened holds each value a window either side") {
  Profile p = spike();  // 1 GiB, 4 GiB over [10, 20), 2 GiB to 100
  Profile w = p.widened(2);
  CHECK(w.at(7.9) == 1 * kGiB);
  CHECK(w.at(8) == 4 * kGiB);
  CHECK(w.at(21.9) == 4 * kGiB);
  CHECK(w.at(22) == 2 * kGiB);
  CHECK(w.at(99.9) == 2 * kGiB);
  CHECK(w.at(100) == 0);
  CHECK(w.peak() == p.peak());
  CHECK(w.duration_s == p.duration_s);
  for (double t = 0; t < 100; t += 0.25) CHECK(w.at(t) >= p.at(t));
  CHECK(p.widened(0).points == p.points);

  // Two spikes laid just apart on paper meet once either unit runs a little off
  // its timeline; widened, the pair is seen to meet.
  Profile later = spike();
  CHECK(p.peak_with(later, 10.5) == 6 * kGiB);
  CHECK(p.peak_with(later.widened(1), 10.5) == 8 * kGiB);
}

TEST_CASE("Profile serialize and parse round trip") {
  Profile p = spike();
  p.points.emplace_back(33.25, 123456789012ull);
  auto text = p.serialize();
  auto back = Profile::parse(text);
  REQUIRE(back.ok());
  CHECK(back->points == p.points);
  CHECK(back->duration_s == p.duration_s);

  auto empty = Profile::parse(Profile::flat(0, 0).thinned(1).serialize());
  REQUIRE(empty.ok());
  CHECK(Profile::parse(";12.5")->duration_s == 12.5);
  CHECK(Profile::parse(";12.5")->points.empty());
}

TEST_CASE("Profile::parse rejects malformed text with a message") {
  for (const char* bad : {"", "1:2", "1:2;x", "a:2;3", "1:b;3", "2:1,1:1;3", "1;3", "1:2;-1"}) {
    auto res = Profile::parse(bad);
    CHECK_FALSE(res.ok());
    if (!res.ok()) CHECK(res.error().find("invalid profile") != std::string::npos);
  }
}

TEST_CASE("Profile::max_of is the pointwise maximum") {
  Profile a = Profile::flat(2, 10);
  Profile b;
  b.points = {{0, 1}, {5, 3}};
  b.duration_s = 20;
  Profile m = Profile::max_of(a, b);
  CHECK(m.at(0) == 2);
  CHECK(m.at(6) == 3);
  CHECK(m.at(15) == 3);
  CHECK(m.duration_s == 20);
  CHECK(Profile::max_of(Profile(), a).at(1) == 2);
}

TEST_CASE("Profile::sum, plus and peak_with build loads") {
  Profile a = spike();                  // 1, 4 at [10,20), 2 after, ends 100
  Profile b = Profile::flat(kGiB, 50);  // 1 until 50
  Profile load = Profile::sum({a, b});
  CHECK(load.at(0) == 2 * kGiB);
  CHECK(load.at(15) == 5 * kGiB);
  CHECK(load.at(60) == 2 * kGiB);
  CHECK(load.at(100) == 0);
  CHECK(load.duration_s == 100);

  Profile later = b.plus(a, 30);  // a starts at 30
  CHECK(later.at(0) == kGiB);
  CHECK(later.at(35) == 2 * kGiB);
  CHECK(later.at(45) == 5 * kGiB);
  CHECK(later.at(55) == 2 * kGiB);
  CHECK(later.duration_s == 130);

  // Peaks of b + a shifted: at 10..20 a spikes while b holds 1.
  CHECK(b.peak_with(a, 0) == 5 * kGiB);
  CHECK(b.peak_with(a, 45) == 4 * kGiB);  // spike at 55..65, b ended at 50
  CHECK(b.peak_with(a, 35) == 5 * kGiB);  // spike at 45..55 meets b until 50
  CHECK(a.peak_with(a, 15) == 6 * kGiB);  // a's spike [25,35) over a's plateau
  CHECK(a.peak_with(Profile(), 0) == 0);
  CHECK(a.breakpoints() == std::vector<double>{0, 10, 20, 100});
}

TEST_CASE("Profile::peak_with agrees with evaluating every breakpoint") {
  std::uint64_t state = 12345;
  auto next = [&](std::uint64_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % n;
  };
  auto random_profile = [&] {
    Profile p;
    double t = static_cast<double>(next(3));
    for (std::uint64_t k = next(6) + 1; k > 0; --k) {
      p.points.emplace_back(t, next(10));
      t += static_cast<double>(next(4));
    }
    p.duration_s = t + static_cast<double>(next(5));
    return p;
  };
  for (int round = 0; round < 500; ++round) {
    Profile a = random_profile(), b = random_profile();
    double offset = static_cast<double>(next(20)) / 2;
    std::uint64_t expected = 0;
    std::vector<double> times = a.breakpoints();
    for (double t : b.breakpoints()) times.push_back(t + offset);
    times.push_back(offset);
    for (double t : times)
      if (t >= offset && t < offset + b.duration_s) expected = std::max(expected, a.at(t) + b.at(t - offset));
    INFO("a=" << a.serialize() << " b=" << b.serialize() << " offset=" << offset);
    REQUIRE(a.peak_with(b, offset) == expected);
    REQUIRE(a.plus(b, offset).peak_from(offset) >= expected);
  }
}

TEST_CASE("Profile::widened keeps the peak and the duration of any measured timeline") {
  // The forecast users see is the unwidened estimate's peak and duration;
  // admission plans with the widened one. They must agree.
  std::uint64_t state = 777;
  auto next = [&](std::uint64_t n) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % n;
  };
  for (int round = 0; round < 500; ++round) {
    Profile p;
    double t = static_cast<double>(next(3));
    for (std::uint64_t k = next(8) + 1; k > 0; --k) {
      p.points.emplace_back(t, (next(10) + 1) * kGiB / 4);
      t += static_cast<double>(next(4) + 1);  // samples are strictly apart in time
    }
    p.duration_s = t;
    const double window = static_cast<double>(next(6)) / 2;
    const Profile w = p.widened(window);
    INFO("p=" << p.serialize() << " window=" << window);
    REQUIRE(w.peak() == p.peak());
    REQUIRE(w.duration_s == p.duration_s);
    for (double at = 0; at < p.duration_s; at += 0.5) REQUIRE(w.at(at) >= p.at(at));
  }
}

}  // namespace
}  // namespace fad
