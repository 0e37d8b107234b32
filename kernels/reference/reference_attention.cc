// reference_attention.cc - CPU reference implementation (see header).
#include "reference_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace fad_ref {
namespace {

// Softmax probabilities of one query row (double). Returns false if no key is
// visible (all probabilities zero). `lse` receives log-sum-exp of the scores.
bool row_probs(const AttentionShape& s, const float* qi, const float* kh, int i,
               std::vector<double>& p, double* lse) {
  const int sk = s.seqlen_k, d = s.head_dim;
  double mx = -std::numeric_limits<double>::infinity();
  for (int j = 0; j < sk; ++j) {
    if (!key_visible(s, i, j)) {
      p[j] = -std::numeric_limits<double>::infinity();
      continue;
    }
    double dot = 0.0;
    for (int t = 0; t < d; ++t) dot += static_cast<double>(qi[t]) * kh[static_cast<std::size_t>(j) * d + t];
    p[j] = dot * s.scale;
    mx = std::max(mx, p[j]);
  }
  if (mx == -std::numeric_limits<double>::infinity()) {
    std::fill(p.begin(), p.end(), 0.0);
    *lse = -std::numeric_limits<double>::infinity();
    return false;
  }
  double sum = 0.0;
  for (int j = 0; j < sk; ++j) {
    p[j] = key_visible(s, i, j) ? std::exp(p[j] - mx) : 0.0;
    sum += p[j];
  }
  for (int j = 0; j < sk; ++j) p[j] /= sum;
  *lse = mx + std::log(sum);
  return true;
}

}  // namespace

void attention_forward(const AttentionShape& s, const float* q, const float* k, const float* v,
                       float* o, float* lse) {
  const int sq = s.seqlen_q, sk = s.seqlen_k, d = s.head_dim;
  std::vector<double> p(static_cast<std::size_t>(std::max(sk, 1)));
  for (int bh = 0; bh < s.batch * s.heads; ++bh) {
    const float* qh = q + static_cast<std::size_t>(bh) * sq * d;
    const float* kh = k + static_cast<std::size_t>(bh) * sk * d;
    const float* vh = v + static_cast<std::size_t>(bh) * sk * d;
    float* oh = o + static_cast<std::size_t>(bh) * sq * d;
    for (int i = 0; i < sq; ++i) {
      double l = 0.0;
      row_probs(s, qh + static_cast<std::size_t>(i) * d, kh, i, p, &l);
      for (int t = 0; t < d; ++t) {
        double acc = 0.0;
        for (int j = 0; j < sk; ++j) acc += p[j] * vh[static_cast<std::size_t>(j) * d + t];
        oh[static_cast<std::size_t>(i) * d + t] = static_cast<float>(acc);
      }
      if (lse) lse[static_cast<std::size_t>(bh) * sq + i] = static_cast<float>(l);
    }
  }
}

void attention_backward(const AttentionShape& s, const float* q, const float* k, const float* v,
                        const float* dout, float* dq, float* dk, float* dv) {
  const int sq = s.seqlen_q, sk = s.seqlen_k, d = s.head_dim;
  std::vector<double> p(static_cast<std::size_t>(std::max(sk, 1)));
  std::vector<double> dp(static_cast<std::size_t>(std::max(sk, 1)));
  std::vector<double> dkh(static_cast<std::size_t>(sk) * d), dvh(static_cast<std::size_t>(sk) * d);
  for (int bh = 0; bh < s.batch * s.heads; ++bh) {
    const std::size_t qoff = static_cast<std::size_t>(bh) * sq * d;
    const std::size_t koff = static_cast<std::size_t>(bh) * sk * d;
    const float* qh = q + qoff;
    const float* kh = k + koff;
    const float* vh = v + koff;
    const float* doh = dout + qoff;
    std::fill(dkh.begin(), dkh.end(), 0.0);
    std::fill(dvh.begin(), dvh.end(), 0.0);
    for (int i = 0; i < sq; ++i) {
      const float* qi = qh + static_cast<std::size_t>(i) * d;
      const float* doi = doh + static_cast<std::size_t>(i) * d;
      double l = 0.0;
      row_probs(s, qi, kh, i, p, &l);
      // dP_ij = dO_i . v_j ; Dsum_i = sum_j P_ij dP_ij
      double dsum = 0.0;
      for (int j = 0; j < sk; ++j) {
        double acc = 0.0;
        for (int t = 0; t < d; ++t) acc += static_cast<double>(doi[t]) * vh[static_cast<std::size_t>(j) * d + t];
        dp[j] = acc;
        dsum += p[j] * acc;
      }
      std::vector<double> dqi(static_cast<std::size_t>(d), 0.0);
      for (int j = 0; j < sk; ++j) {
        if (p[j] == 0.0) continue;
        const double ds = p[j] * (dp[j] - dsum) * s.scale;  // dL/dS_ij including scale
        for (int t = 0; t < d; ++t) {
          const std::size_t jt = static_cast<std::size_t>(j) * d + t;
          dqi[t] += ds * kh[jt];
          dkh[jt] += ds * qi[t];
          dvh[jt] += p[j] * doi[t];
        }
      }
      for (int t = 0; t < d; ++t) dq[qoff + static_cast<std::size_t>(i) * d + t] = static_cast<float>(dqi[t]);
    }
    for (std::size_t e = 0; e < static_cast<std::size_t>(sk) * d; ++e) {
      dk[koff + e] = static_cast<float>(dkh[e]);
      dv[koff + e] = static_cast<float>(dvh[e]);
    }
  }
}

}  // namespace fad_ref
