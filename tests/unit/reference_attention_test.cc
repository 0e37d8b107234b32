// Unit tests for the CPU attention reference (kernels/reference/).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "reference_attention.h"

using fad_ref::AttentionShape;

namespace {

std::vector<float> random_vec(std::size_t n, unsigned seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

AttentionShape make_shape(int b, int h, int sq, int sk, int d, float scale, bool causal) {
  AttentionShape s;
  s.batch = b;
  s.heads = h;
  s.seqlen_q = sq;
  s.seqlen_k = sk;
  s.head_dim = d;
  s.scale = scale;
  s.causal = causal;
  return s;
}

struct Fwd {
  std::vector<float> o, lse;
};

Fwd run_fwd(const AttentionShape& s, const std::vector<float>& q, const std::vector<float>& k,
            const std::vector<float>& v) {
  Fwd r;
  r.o.assign(fad_ref::q_elems(s), 0.0f);
  r.lse.assign(fad_ref::lse_elems(s), 0.0f);
  fad_ref::attention_forward(s, q.data(), k.data(), v.data(), r.o.data(), r.lse.data());
  return r;
}

double weighted_loss(const AttentionShape& s, const std::vector<float>& q, const std::vector<float>& k,
                     const std::vector<float>& v, const std::vector<float>& w) {
  Fwd f = run_fwd(s, q, k, v);
  double l = 0.0;
  for (std::size_t i = 0; i < w.size(); ++i) l += static_cast<double>(w[i]) * f.o[i];
  return l;
}

}  // namespace

TEST_CASE("reference attention: a single key returns its value row", "[reference_attention]") {
  const int d = 8, sq = 5;
  AttentionShape s = make_shape(2, 3, sq, 1, d, 0.7f, false);
  auto q = random_vec(fad_ref::q_elems(s), 1);
  auto k = random_vec(fad_ref::kv_elems(s), 2);
  auto v = random_vec(fad_ref::kv_elems(s), 3);
  Fwd f = run_fwd(s, q, k, v);
  for (int bh = 0; bh < s.batch * s.heads; ++bh) {
    for (int i = 0; i < sq; ++i) {
      for (int t = 0; t < d; ++t) {
        REQUIRE(f.o[(static_cast<std::size_t>(bh) * sq + i) * d + t] ==
                Approx(v[static_cast<std::size_t>(bh) * d + t]).margin(1e-6));
      }
      // lse of one key is just its score.
      double dot = 0.0;
      for (int t = 0; t < d; ++t)
        dot += static_cast<double>(q[(static_cast<std::size_t>(bh) * sq + i) * d + t]) *
               k[static_cast<std::size_t>(bh) * d + t];
      REQUIRE(f.lse[static_cast<std::size_t>(bh) * sq + i] == Approx(dot * s.scale).margin(1e-5));
    }
  }
}

TEST_CASE("reference attention: uniform scores average the values", "[reference_attention]") {
  const int d = 4, sq = 3, sk = 7;
  AttentionShape s = make_shape(1, 2, sq, sk, d, 0.5f, false);
  std::vector<float> q(fad_ref::q_elems(s), 0.0f);  // zero queries -> all scores 0
  auto k = random_vec(fad_ref::kv_elems(s), 4);
  auto v = random_vec(fad_ref::kv_elems(s), 5);
  Fwd f = run_fwd(s, q, k, v);
  for (int h = 0; h < s.heads; ++h) {
    for (int t = 0; t < d; ++t) {
      double mean = 0.0;
      for (int j = 0; j < sk; ++j) mean += v[(static_cast<std::size_t>(h) * sk + j) * d + t];
      mean /= sk;
      for (int i = 0; i < sq; ++i)
        REQUIRE(f.o[(static_cast<std::size_t>(h) * sq + i) * d + t] == Approx(mean).margin(1e-6));
    }
    for (int i = 0; i < sq; ++i)
      REQUIRE(f.lse[static_cast<std::size_t>(h) * sq + i] == Approx(std::log(7.0)).margin(1e-6));
  }
}

TEST_CASE("reference attention: causal masking", "[reference_attention]") {
  const int d = 6;
  SECTION("square: first query sees only key 0, last query sees everything") {
    const int n = 9;
    AttentionShape s = make_shape(1, 1, n, n, d, 0.4f, true);
    auto q = random_vec(fad_ref::q_elems(s), 6);
    auto k = random_vec(fad_ref::kv_elems(s), 7);
    auto v = random_vec(fad_ref::kv_elems(s), 8);
    Fwd f = run_fwd(s, q, k, v);
    for (int t = 0; t < d; ++t) REQUIRE(f.o[t] == Approx(v[t]).margin(1e-6));
    AttentionShape nc = s;
    nc.causal = false;
    Fwd g = run_fwd(nc, q, k, v);
    for (int t = 0; t < d; ++t)
      REQUIRE(f.o[static_cast<std::size_t>(n - 1) * d + t] ==
              Approx(g.o[static_cast<std::size_t>(n - 1) * d + t]).margin(1e-6));
    // Changing a future key must not change earlier outputs.
    auto k2 = k;
    auto v2 = v;
    for (int t = 0; t < d; ++t) {
      k2[static_cast<std::size_t>(5) * d + t] += 3.0f;
      v2[static_cast<std::size_t>(5) * d + t] -= 2.0f;
    }
    Fwd h = run_fwd(s, q, k2, v2);
    for (int i = 0; i < 5; ++i)
      for (int t = 0; t < d; ++t)
        REQUIRE(h.o[static_cast<std::size_t>(i) * d + t] == f.o[static_cast<std::size_t>(i) * d + t]);
  }
  SECTION("bottom-right alignment when seqlen_k > seqlen_q") {
    AttentionShape s = make_shape(1, 1, 2, 5, d, 0.4f, true);
    REQUIRE(fad_ref::key_visible(s, 0, 3));
    REQUIRE_FALSE(fad_ref::key_visible(s, 0, 4));
    REQUIRE(fad_ref::key_visible(s, 1, 4));
    auto q = random_vec(fad_ref::q_elems(s), 9);
    auto k = random_vec(fad_ref::kv_elems(s), 10);
    auto v = random_vec(fad_ref::kv_elems(s), 11);
    Fwd f = run_fwd(s, q, k, v);
    // Last query sees all keys: identical to non-causal.
    AttentionShape nc = s;
    nc.causal = false;
    Fwd g = run_fwd(nc, q, k, v);
    for (int t = 0; t < d; ++t) REQUIRE(f.o[d + t] == Approx(g.o[d + t]).margin(1e-6));
  }
  SECTION("seqlen_q > seqlen_k: fully masked rows give O = 0 and lse = -inf") {
    AttentionShape s = make_shape(1, 1, 4, 2, d, 0.4f, true);
    auto q = random_vec(fad_ref::q_elems(s), 12);
    auto k = random_vec(fad_ref::kv_elems(s), 13);
    auto v = random_vec(fad_ref::kv_elems(s), 14);
    Fwd f = run_fwd(s, q, k, v);
    for (int i = 0; i < 2; ++i) {
      REQUIRE(std::isinf(f.lse[i]));
      REQUIRE(f.lse[i] < 0.0f);
      for (int t = 0; t < d; ++t) REQUIRE(f.o[static_cast<std::size_t>(i) * d + t] == 0.0f);
    }
    // query 2 sees key 0 only
    for (int t = 0; t < d; ++t) REQUIRE(f.o[static_cast<std::size_t>(2) * d + t] == Approx(v[t]).margin(1e-6));
  }
}

TEST_CASE("reference attention: lse equals a directly computed log-sum-exp", "[reference_attention]") {
  const int d = 5, sq = 4, sk = 6;
  for (bool causal : {false, true}) {
    AttentionShape s = make_shape(2, 1, sq, sk, d, 0.9f, causal);
    auto q = random_vec(fad_ref::q_elems(s), 15, -2.0f, 2.0f);
    auto k = random_vec(fad_ref::kv_elems(s), 16, -2.0f, 2.0f);
    auto v = random_vec(fad_ref::kv_elems(s), 17);
    Fwd f = run_fwd(s, q, k, v);
    for (int b = 0; b < 2; ++b) {
      for (int i = 0; i < sq; ++i) {
        double sum = 0.0;
        for (int j = 0; j < sk; ++j) {
          if (!fad_ref::key_visible(s, i, j)) continue;
          double dot = 0.0;
          for (int t = 0; t < d; ++t)
            dot += static_cast<double>(q[(static_cast<std::size_t>(b) * sq + i) * d + t]) *
                   k[(static_cast<std::size_t>(b) * sk + j) * d + t];
          sum += std::exp(dot * s.scale);
        }
        REQUIRE(f.lse[static_cast<std::size_t>(b) * sq + i] == Approx(std::log(sum)).epsilon(1e-5));
      }
    }
  }
}

TEST_CASE("reference attention: backward matches central finite differences", "[reference_attention]") {
  const int d = 3;
  for (bool causal : {false, true}) {
    for (int sq : {3, 4}) {
      const int sk = 4;
      AttentionShape s = make_shape(1, 2, sq, sk, d, 0.8f, causal);
      auto q = random_vec(fad_ref::q_elems(s), 20 + sq);
      auto k = random_vec(fad_ref::kv_elems(s), 30 + sq);
      auto v = random_vec(fad_ref::kv_elems(s), 40 + sq);
      auto w = random_vec(fad_ref::q_elems(s), 50 + sq);  // L = sum(w * O) => dO = w
      std::vector<float> dq(q.size()), dk(k.size()), dv(v.size());
      fad_ref::attention_backward(s, q.data(), k.data(), v.data(), w.data(), dq.data(), dk.data(), dv.data());

      const float eps = 1e-2f;
      auto check = [&](std::vector<float>& x, const std::vector<float>& grad) {
        for (std::size_t i = 0; i < x.size(); ++i) {
          const float orig = x[i];
          x[i] = orig + eps;
          const double lp = weighted_loss(s, q, k, v, w);
          x[i] = orig - eps;
          const double lm = weighted_loss(s, q, k, v, w);
          x[i] = orig;
          const double fd = (lp - lm) / (2.0 * eps);
          REQUIRE(grad[i] == Approx(fd).margin(2e-4));
        }
      };
      check(q, dq);
      check(k, dk);
      check(v, dv);
    }
  }
}

TEST_CASE("reference attention: gradients of fully masked queries are zero", "[reference_attention]") {
  const int d = 4;
  AttentionShape s = make_shape(1, 1, 5, 3, d, 0.5f, true);  // queries 0,1 see nothing
  auto q = random_vec(fad_ref::q_elems(s), 60);
  auto k = random_vec(fad_ref::kv_elems(s), 61);
  auto v = random_vec(fad_ref::kv_elems(s), 62);
  auto w = random_vec(fad_ref::q_elems(s), 63);
  std::vector<float> dq(q.size()), dk(k.size()), dv(v.size());
  fad_ref::attention_backward(s, q.data(), k.data(), v.data(), w.data(), dq.data(), dk.data(), dv.data());
  for (int i = 0; i < 2 * d; ++i) REQUIRE(dq[i] == 0.0f);
  // Sum over keys of dV equals sum over visible queries of dO (rows of P sum to 1).
  for (int t = 0; t < d; ++t) {
    double sdv = 0.0, sdo = 0.0;
    for (int j = 0; j < 3; ++j) sdv += dv[static_cast<std::size_t>(j) * d + t];
    for (int i = 2; i < 5; ++i) sdo += w[static_cast<std::size_t>(i) * d + t];
    REQUIRE(sdv == Approx(sdo).margin(1e-5));
  }
}

TEST_CASE("reference attention: Philox4x32-10 matches Random123's known answers", "[reference_attention]") {
  struct Kat {
    std::uint32_t ctr[4], key[2], out[4];
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (const Kat& k : kats) {
    std::uint32_t out[4];
    fad_ref::philox4x32_10(k.ctr, k.key, out);
    for (int i = 0; i < 4; ++i) CHECK(out[i] == k.out[i]);
  }
}

TEST_CASE("reference attention: dropout keeps about 1 - p, and its mask depends on the seed", "[reference_attention]") {
  AttentionShape s = make_shape(2, 3, 64, 128, 8, 0.5f, false);
  s.dropout_p = 0.25f;
  s.seed = 42;
  s.offset = 7;
  int kept = 0, differ = 0, total = 0;
  AttentionShape other = s;
  other.seed = 43;
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < s.heads; ++h)
      for (int i = 0; i < s.seqlen_q; ++i)
        for (int j = 0; j < s.seqlen_k; ++j, ++total) {
          kept += fad_ref::dropout_keep(s, b, h, i, j);
          differ += fad_ref::dropout_keep(s, b, h, i, j) != fad_ref::dropout_keep(other, b, h, i, j);
        }
  CHECK(static_cast<double>(kept) / total == Approx(0.75).margin(0.01));
  CHECK(differ > total / 4);
}

namespace {
// Central finite differences of L = sum(w * O) against attention_backward.
void check_gradients(const AttentionShape& s, unsigned seed, double margin = 2e-4) {
  auto q = random_vec(fad_ref::q_elems(s), seed);
  auto k = random_vec(fad_ref::kv_elems(s), seed + 1);
  auto v = random_vec(fad_ref::kv_elems(s), seed + 2);
  auto w = random_vec(fad_ref::q_elems(s), seed + 3);
  std::vector<float> dq(q.size()), dk(k.size()), dv(v.size());
  fad_ref::attention_backward(s, q.data(), k.data(), v.data(), w.data(), dq.data(), dk.data(), dv.data());
  const float eps = 1e-2f;
  auto check = [&](std::vector<float>& x, const std::vector<float>& grad) {
    for (std::size_t i = 0; i < x.size(); ++i) {
      const float orig = x[i];
      x[i] = orig + eps;
      const double lp = weighted_loss(s, q, k, v, w);
      x[i] = orig - eps;
      const double lm = weighted_loss(s, q, k, v, w);
      x[i] = orig;
      REQUIRE(grad[i] == Approx((lp - lm) / (2.0 * eps)).margin(margin));
    }
  };
  check(q, dq);
  check(k, dk);
  check(v, dv);
}
}  // namespace

TEST_CASE("reference attention: every feature's backward matches finite differences", "[reference_attention]") {
  AttentionShape s = make_shape(2, 2, 5, 6, 3, 0.8f, false);
  SECTION("sliding window") {
    s.window_left = 1;
    s.window_right = 1;
    check_gradients(s, 100);
  }
  SECTION("causal with a left window") {
    s.causal = true;
    s.window_left = 2;
    check_gradients(s, 110);
  }
  SECTION("softcap") {
    s.softcap = 0.7f;
    check_gradients(s, 120);
  }
  SECTION("ALiBi per batch") {
    s.alibi_slopes = {0.3f, 0.1f, 0.5f, 0.2f};
    check_gradients(s, 130);
  }
  SECTION("dropout (the mask is fixed by seed and offset)") {
    s.dropout_p = 0.3f;
    s.seed = 9;
    check_gradients(s, 140);
  }
  SECTION("GQA") {
    s.heads = 4;
    s.heads_k = 2;
    check_gradients(s, 150);
  }
  SECTION("variable lengths") {
    s.seqlens_q = {3, 5};
    s.seqlens_k = {6, 2};
    check_gradients(s, 160);
  }
}

TEST_CASE("reference attention: MQA equals each head reading a copy of the shared K and V", "[reference_attention]") {
  const int d = 4, sq = 3, sk = 5, heads = 3;
  AttentionShape mqa = make_shape(1, heads, sq, sk, d, 0.6f, false);
  mqa.heads_k = 1;
  AttentionShape full = mqa;
  full.heads_k = heads;
  auto q = random_vec(fad_ref::q_elems(mqa), 170);
  auto k = random_vec(fad_ref::kv_elems(mqa), 171);
  auto v = random_vec(fad_ref::kv_elems(mqa), 172);
  std::vector<float> k3, v3;
  for (int h = 0; h < heads; ++h) k3.insert(k3.end(), k.begin(), k.end()), v3.insert(v3.end(), v.begin(), v.end());
  Fwd a = run_fwd(mqa, q, k, v), b = run_fwd(full, q, k3, v3);
  for (std::size_t i = 0; i < a.o.size(); ++i) CHECK(a.o[i] == Approx(b.o[i]).margin(1e-6));
  // dK of the shared head is the sum of the copies' dK.
  auto w = random_vec(fad_ref::q_elems(mqa), 173);
  std::vector<float> dq(q.size()), dk(k.size()), dv(v.size()), dq3(q.size()), dk3(k3.size()), dv3(v3.size());
  fad_ref::attention_backward(mqa, q.data(), k.data(), v.data(), w.data(), dq.data(), dk.data(), dv.data());
  fad_ref::attention_backward(full, q.data(), k3.data(), v3.data(), w.data(), dq3.data(), dk3.data(), dv3.data());
  for (std::size_t e = 0; e < dk.size(); ++e) {
    double sk3 = 0.0, sv3 = 0.0;
    for (int h = 0; h < heads; ++h) sk3 += dk3[h * dk.size() + e], sv3 += dv3[h * dk.size() + e];
    CHECK(dk[e] == Approx(sk3).margin(1e-5));
    CHECK(dv[e] == Approx(sv3).margin(1e-5));
  }
}

TEST_CASE("reference attention: a variable-length batch equals its sequences run alone", "[reference_attention]") {
  const int d = 4;
  AttentionShape s = make_shape(2, 1, 6, 7, d, 0.5f, true);
  s.seqlens_q = {4, 6};
  s.seqlens_k = {7, 3};
  auto q = random_vec(fad_ref::q_elems(s), 180);
  auto k = random_vec(fad_ref::kv_elems(s), 181);
  auto v = random_vec(fad_ref::kv_elems(s), 182);
  Fwd f = run_fwd(s, q, k, v);
  for (int b = 0; b < 2; ++b) {
    const int lq = s.seqlens_q[b], lk = s.seqlens_k[b];
    AttentionShape one = make_shape(1, 1, lq, lk, d, 0.5f, true);
    std::vector<float> qb(q.begin() + b * 6 * d, q.begin() + (b * 6 + lq) * d);
    std::vector<float> kb(k.begin() + b * 7 * d, k.begin() + (b * 7 + lk) * d);
    std::vector<float> vb(v.begin() + b * 7 * d, v.begin() + (b * 7 + lk) * d);
    Fwd g = run_fwd(one, qb, kb, vb);
    for (int i = 0; i < lq; ++i) {
      CHECK(f.lse[b * 6 + i] == Approx(g.lse[i]).margin(1e-6));
      for (int t = 0; t < d; ++t) CHECK(f.o[(b * 6 + i) * d + t] == Approx(g.o[i * d + t]).margin(1e-6));
    }
    for (int i = lq; i < 6; ++i) CHECK(f.o[(b * 6 + i) * d] == 0.0f);  // rows past the length
  }
}

TEST_CASE("reference attention: ALiBi of slope 0 and a huge softcap change nothing", "[reference_attention]") {
  AttentionShape s = make_shape(1, 2, 4, 6, 4, 0.5f, false);
  auto q = random_vec(fad_ref::q_elems(s), 190);
  auto k = random_vec(fad_ref::kv_elems(s), 191);
  auto v = random_vec(fad_ref::kv_elems(s), 192);
  Fwd plain = run_fwd(s, q, k, v);
  AttentionShape a = s;
  a.alibi_slopes = {0.0f, 0.0f};
  AttentionShape c = s;
  c.softcap = 1e6f;
  Fwd fa = run_fwd(a, q, k, v), fc = run_fwd(c, q, k, v);
  for (std::size_t i = 0; i < plain.o.size(); ++i) {
    CHECK(fa.o[i] == Approx(plain.o[i]).margin(1e-6));
    CHECK(fc.o[i] == Approx(plain.o[i]).margin(1e-5));
  }
}
