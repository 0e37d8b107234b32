// reference_attention.cc - CPU reference implementation (see header).
#include "reference_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace fad_ref {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

float alibi_slope(const AttentionShape& s, int b, int h) {
  if (s.alibi_slopes.empty()) return 0.0f;
  const std::size_t per_batch = s.alibi_slopes.size() == static_cast<std::size_t>(s.heads) ? 0 : s.heads;
  return s.alibi_slopes[b * per_batch + h];
}

// Scores of one query row (double) over keys [0, sk): -inf where hidden.
// tanh_out receives tanh(scale * q.k / c) for the softcap derivative.
void row_scores(const AttentionShape& s, int b, int h, int i, const float* qi, const float* kh, std::vector<double>& sc,
                std::vector<double>& tanh_out) {
  const int sk = len_k(s, b), d = s.head_dim;
  const int off = sk - len_q(s, b);
  const double slope = alibi_slope(s, b, h);
  for (int j = 0; j < sk; ++j) {
    if (!key_visible(s, b, i, j)) {
      sc[j] = kNegInf;
      continue;
    }
    double dot = 0.0;
    for (int t = 0; t < d; ++t) dot += static_cast<double>(qi[t]) * kh[static_cast<std::size_t>(j) * d + t];
    double x = dot * s.scale;
    if (s.softcap > 0.0f) {
      tanh_out[j] = std::tanh(x / s.softcap);
      x = s.softcap * tanh_out[j];
    }
    x -= slope * std::abs(static_cast<double>(i + off - j));
    sc[j] = x;
  }
}

// Softmax of a row of scores in place; returns the LSE (-inf if none visible).
double softmax(std::vector<double>& p, int sk) {
  double mx = kNegInf;
  for (int j = 0; j < sk; ++j) mx = std::max(mx, p[j]);
  if (mx == kNegInf) {
    std::fill(p.begin(), p.begin() + sk, 0.0);
    return kNegInf;
  }
  double sum = 0.0;
  for (int j = 0; j < sk; ++j) {
    p[j] = p[j] == kNegInf ? 0.0 : std::exp(p[j] - mx);
    sum += p[j];
  }
  for (int j = 0; j < sk; ++j) p[j] /= sum;
  return mx + std::log(sum);
}

std::size_t q_index(const AttentionShape& s, int b, int h, int i) {
  return ((static_cast<std::size_t>(b) * s.heads + h) * s.seqlen_q + i) * s.head_dim;
}
std::size_t k_index(const AttentionShape& s, int b, int hk, int j) {
  return ((static_cast<std::size_t>(b) * kv_heads(s) + hk) * s.seqlen_k + j) * s.head_dim;
}

}  // namespace

bool key_visible(const AttentionShape& s, int b, int i, int j) {
  const int sk = len_k(s, b);
  if (j < 0 || j >= sk) return false;
  const int off = sk - len_q(s, b);
  const int right = s.causal ? 0 : s.window_right;
  if (s.window_left >= 0 && j < i + off - s.window_left) return false;
  if (right >= 0 && j > i + off + right) return false;
  return true;
}

void philox4x32_10(const std::uint32_t ctr[4], const std::uint32_t key[2], std::uint32_t out[4]) {
  std::uint32_t c[4] = {ctr[0], ctr[1], ctr[2], ctr[3]};
  std::uint32_t k0 = key[0], k1 = key[1];
  for (int r = 0; r < 10; ++r) {
    const std::uint64_t p0 = static_cast<std::uint64_t>(0xD2511F53u) * c[0];
    const std::uint64_t p1 = static_cast<std::uint64_t>(0xCD9E8D57u) * c[2];
    const std::uint32_t n[4] = {static_cast<std::uint32_t>(p1 >> 32) ^ c[1] ^ k0, static_cast<std::uint32_t>(p1),
                                static_cast<std::uint32_t>(p0 >> 32) ^ c[3] ^ k1, static_cast<std::uint32_t>(p0)};
    std::copy(n, n + 4, c);
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  std::copy(c, c + 4, out);
}

bool dropout_keep(const AttentionShape& s, int b, int h, int i, int j) {
  if (s.dropout_p <= 0.0f) return true;
  const std::uint32_t ctr[4] = {static_cast<std::uint32_t>(j) >> 1, static_cast<std::uint32_t>((i >> 4) * 8 + (i & 7)),
                                static_cast<std::uint32_t>(b * s.heads + h), static_cast<std::uint32_t>(s.offset)};
  const std::uint32_t key[2] = {static_cast<std::uint32_t>(s.seed),
                                static_cast<std::uint32_t>(s.seed >> 32) ^ static_cast<std::uint32_t>(s.offset >> 32)};
  std::uint32_t out[4];
  philox4x32_10(ctr, key, out);
  const double thr = std::floor((1.0 - static_cast<double>(s.dropout_p)) * 4294967296.0);
  const std::uint32_t threshold = thr >= 4294967295.0 ? 0xffffffffu : static_cast<std::uint32_t>(thr);
  return out[((i >> 3) & 1) * 2 + (j & 1)] < threshold;
}

void attention_forward(const AttentionShape& s, const float* q, const float* k, const float* v, float* o, float* lse) {
  const int d = s.head_dim, group = s.heads / kv_heads(s);
  const double rp = 1.0 / (1.0 - static_cast<double>(s.dropout_p));
  std::vector<double> p(static_cast<std::size_t>(std::max(s.seqlen_k, 1))), th(p.size());
  std::fill(o, o + q_elems(s), 0.0f);
  if (lse) std::fill(lse, lse + lse_elems(s), -std::numeric_limits<float>::infinity());
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < s.heads; ++h) {
      const int sq = len_q(s, b), sk = len_k(s, b), hk = h / group;
      const float* kh = k + k_index(s, b, hk, 0);
      const float* vh = v + k_index(s, b, hk, 0);
      for (int i = 0; i < sq; ++i) {
        row_scores(s, b, h, i, q + q_index(s, b, h, i), kh, p, th);
        const double l = softmax(p, sk);
        for (int j = 0; j < sk; ++j)
          if (p[j] != 0.0 && s.dropout_p > 0.0f) p[j] = dropout_keep(s, b, h, i, j) ? p[j] * rp : 0.0;
        float* oi = o + q_index(s, b, h, i);
        for (int t = 0; t < d; ++t) {
          double acc = 0.0;
          for (int j = 0; j < sk; ++j) acc += p[j] * vh[static_cast<std::size_t>(j) * d + t];
          oi[t] = static_cast<float>(acc);
        }
        if (lse) lse[(static_cast<std::size_t>(b) * s.heads + h) * s.seqlen_q + i] = static_cast<float>(l);
      }
    }
}

void attention_backward(const AttentionShape& s, const float* q, const float* k, const float* v, const float* dout,
                        float* dq, float* dk, float* dv) {
  const int d = s.head_dim, group = s.heads / kv_heads(s);
  const double rp = 1.0 / (1.0 - static_cast<double>(s.dropout_p));
  const std::size_t n = static_cast<std::size_t>(std::max(s.seqlen_k, 1));
  std::vector<double> p(n), th(n), z(n), dp(n), dqi(d);
  std::vector<double> dkh(kv_elems(s), 0.0), dvh(kv_elems(s), 0.0);
  std::fill(dq, dq + q_elems(s), 0.0f);
  for (int b = 0; b < s.batch; ++b)
    for (int h = 0; h < s.heads; ++h) {
      const int sq = len_q(s, b), sk = len_k(s, b), hk = h / group;
      const std::size_t k0 = k_index(s, b, hk, 0);
      for (int i = 0; i < sq; ++i) {
        const float* qi = q + q_index(s, b, h, i);
        const float* doi = dout + q_index(s, b, h, i);
        row_scores(s, b, h, i, qi, k + k0, p, th);
        softmax(p, sk);
        // dP'_ij = dO_i . v_j; with dropout the gradient reaching P is dP' * Z.
        double dsum = 0.0;
        for (int j = 0; j < sk; ++j) {
          z[j] = s.dropout_p > 0.0f ? (dropout_keep(s, b, h, i, j) ? rp : 0.0) : 1.0;
          double acc = 0.0;
          for (int t = 0; t < d; ++t) acc += static_cast<double>(doi[t]) * v[k0 + static_cast<std::size_t>(j) * d + t];
          dp[j] = acc * z[j];
          dsum += p[j] * dp[j];
        }
        std::fill(dqi.begin(), dqi.end(), 0.0);
        for (int j = 0; j < sk; ++j) {
          if (p[j] == 0.0) continue;
          double ds = p[j] * (dp[j] - dsum) * s.scale;  // dL/d(q.k)
          if (s.softcap > 0.0f) ds *= 1.0 - th[j] * th[j];
          for (int t = 0; t < d; ++t) {
            const std::size_t jt = k0 + static_cast<std::size_t>(j) * d + t;
            dqi[t] += ds * k[jt];
            dkh[jt] += ds * qi[t];
            dvh[jt] += p[j] * z[j] * doi[t];
          }
        }
        float* dqp = dq + q_index(s, b, h, i);
        for (int t = 0; t < d; ++t) dqp[t] = static_cast<float>(dqi[t]);
      }
    }
  for (std::size_t e = 0; e < kv_elems(s); ++e) {
    dk[e] = static_cast<float>(dkh[e]);
    dv[e] = static_cast<float>(dvh[e]);
  }
}

}  // namespace fad_ref
