// attn_common.cuh - what the forward and backward kernels share: where a
// batch entry's rows are, which keys a query sees, the score transform
// (softcap, ALiBi, mask), the Philox dropout mask, and warp-level row
// reductions over m16n8 accumulator fragments.
//
// Fragment conventions (PTX ISA, mma.m16n8k16 accumulator): lane l = 4g + t
// holds rows g and g + 8 of an m16n8 atom, columns 2t and 2t + 1; element e of
// the fragment is row g + 8 * (e >> 1), column 2t + (e & 1). A row is spread
// over the 4 lanes of a quad, so row reductions are two shfl_xor (1, 2).
#pragma once

#include "params.h"
#include "primitives.cuh"

namespace fad {

constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;
constexpr float kNegInf = -__builtin_huge_valf();

// Rows of batch entry b: lengths and first token in the packed tensors.
struct SeqInfo {
  int sq, sk;
  int64_t q_row0, k_row0;
};

__device__ __forceinline__ SeqInfo seq_info(const Params& p, int b) {
  SeqInfo s;
  if (p.cu_q != nullptr) {
    const int a = ldg(p.cu_q + b);
    s.sq = ldg(p.cu_q + b + 1) - a;
    s.q_row0 = a;
  } else {
    s.sq = p.seqlen_q;
    s.q_row0 = 0;
  }
  if (p.cu_k != nullptr) {
    const int a = ldg(p.cu_k + b);
    s.sk = ldg(p.cu_k + b + 1) - a;
    s.k_row0 = a;
  } else {
    s.sk = p.seqlen_k;
    s.k_row0 = 0;
  }
  if (p.seqused_k != nullptr) s.sk = ldg(p.seqused_k + b);
  return s;
}

// Index of (b, h, row i) in LSE, Dsum and the dQ accumulator: [batch, heads,
// seqlen_q], or [heads, total_q] with cu_seqlens.
__device__ __forceinline__ int64_t row_index(const Params& p, int b, int h, const SeqInfo& s, int i) {
  return p.cu_q != nullptr ? (int64_t)h * p.total_q + s.q_row0 + i : ((int64_t)b * p.heads + h) * p.seqlen_q + i;
}

// Offset of element 0 of (b, h, row 0) in a tensor with the given strides.
__device__ __forceinline__ int64_t q_offset(const Params& p, int b, int h, const SeqInfo& s, int64_t bs, int64_t hs,
                                            int64_t rs) {
  return (p.cu_q != nullptr ? 0 : (int64_t)b * bs) + (int64_t)h * hs + s.q_row0 * rs;
}
__device__ __forceinline__ int64_t k_offset(const Params& p, int b, int h, const SeqInfo& s, int64_t bs, int64_t hs,
                                            int64_t rs) {
  return (p.cu_k != nullptr ? 0 : (int64_t)b * bs) + (int64_t)h * hs + s.k_row0 * rs;
}

// ------------------------------------------------------------------ masking
// Which keys [key_lo, key_hi) any row in [m0, m0 + rows) can see.
template <bool CAUSAL, bool LOCAL>
__device__ __forceinline__ void key_range(const Params& p, const SeqInfo& s, int m0, int rows, int* key_lo,
                                          int* key_hi) {
  const int off = s.sk - s.sq;
  int hi = s.sk, lo = 0;
  if (CAUSAL) hi = min(hi, m0 + rows + off);
  if (LOCAL && p.window_right >= 0) hi = min(hi, m0 + rows + off + p.window_right);
  if (LOCAL && p.window_left >= 0) lo = max(0, m0 + off - p.window_left);
  *key_lo = lo;
  *key_hi = max(hi, lo);
}

template <bool CAUSAL, bool LOCAL, bool EVEN>
struct Mask {
  int sk, off, left, right;
  __device__ __forceinline__ Mask(const Params& p, const SeqInfo& s)
      : sk(s.sk), off(s.sk - s.sq), left(p.window_left), right(p.window_right) {}

  __device__ __forceinline__ bool hidden(int i, int j) const {
    bool h = !EVEN && j >= sk;
    if (CAUSAL) h = h || j > i + off;
    if (LOCAL) h = h || (right >= 0 && j > i + off + right) || (left >= 0 && j < i + off - left);
    return h;
  }
  // Whether some entry of rows [m0, m0 + rows) x keys [n0, n0 + cols) is hidden.
  __device__ __forceinline__ bool partial(int m0, int rows, int n0, int cols) const {
    bool m = !EVEN && n0 + cols > sk;
    if (CAUSAL) m = m || n0 + cols - 1 > m0 + off;
    if (LOCAL)
      m = m || (right >= 0 && n0 + cols - 1 > m0 + off + right) || (left >= 0 && n0 < m0 + rows - 1 + off - left);
    return m;
  }
};

// Raw scores (q.k, before the softmax scale) of MA x NA m16n8 atoms whose
// top-left entry is (row0, col0): softcap, ALiBi, then the mask, all in
// raw-score units so that scale_log2 still turns them into base-2 logits.
template <bool CAUSAL, bool LOCAL, bool EVEN, bool ALIBI, bool SOFTCAP, int MA, int NA>
__device__ __forceinline__ void transform_scores(float (&s)[MA][NA][4], const Params& p,
                                                 const Mask<CAUSAL, LOCAL, EVEN>& mask, bool masked, int row0,
                                                 int col0, float alibi_raw) {
  const int l = lane_id();
  const int g = l >> 2, t = l & 3;
#pragma unroll
  for (int a = 0; a < MA; ++a)
#pragma unroll
    for (int n = 0; n < NA; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        float x = s[a][n][e];
        if (SOFTCAP) x = p.softcap_out * tanh_approx(x * p.softcap_in);
        const int i = row0 + a * 16 + g + 8 * (e >> 1);
        const int j = col0 + n * 8 + 2 * t + (e & 1);
        if (ALIBI) x -= alibi_raw * fabsf((float)(i + mask.off - j));
        s[a][n][e] = x;
      }
  if (masked) {
#pragma unroll
    for (int a = 0; a < MA; ++a)
#pragma unroll
      for (int n = 0; n < NA; ++n)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int i = row0 + a * 16 + g + 8 * (e >> 1);
          const int j = col0 + n * 8 + 2 * t + (e & 1);
          if (mask.hidden(i, j)) s[a][n][e] = kNegInf;
        }
  }
}

// ALiBi slope of (b, h) divided by the softmax scale (raw-score units).
__device__ __forceinline__ float alibi_raw_slope(const Params& p, int b, int h) {
  return ldg(p.alibi + b * p.alibi_batch + h) / p.scale;
}

// ------------------------------------------------------------------ dropout
__device__ __forceinline__ void philox(uint32_t (&c)[4], uint32_t k0, uint32_t k1) {
#pragma unroll
  for (int r = 0; r < 10; ++r) {
    const uint32_t lo0 = 0xD2511F53u * c[0], hi0 = __umulhi(0xD2511F53u, c[0]);
    const uint32_t lo1 = 0xCD9E8D57u * c[2], hi1 = __umulhi(0xCD9E8D57u, c[2]);
    const uint32_t n0 = hi1 ^ c[1] ^ k0, n2 = hi0 ^ c[3] ^ k1;
    c[0] = n0;
    c[1] = lo1;
    c[2] = n2;
    c[3] = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
}

// Keep bits of MA x NA atoms at (row0, col0) of head bh: bit 4 * (a * NA +
// n) + e for fragment element e of atom (a, n). Atom rows are multiples of 16,
// so fragment element e is Philox word e. One Philox at a time (the loop is
// not unrolled): ten rounds of live state per atom would otherwise be
// interleaved with the accumulators and spill.
template <int MA, int NA>
__device__ __forceinline__ uint64_t dropout_bits(const Params& p, uint64_t seed, uint64_t offset, int bh, int row0,
                                                 int col0) {
  static_assert(MA * NA * 4 <= 64, "keep bits of one softmax step fit 64 bits");
  const int l = lane_id();
  const int g = l >> 2, t = l & 3;
  const uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32) ^ (uint32_t)(offset >> 32);
  uint64_t bits = 0;
#pragma unroll 1
  for (int idx = 0; idx < MA * NA; ++idx) {
    const int i = row0 + (idx / NA) * 16 + g, j = col0 + (idx % NA) * 8 + 2 * t;
    uint32_t c[4] = {(uint32_t)j >> 1, (uint32_t)((i >> 4) * 8 + (i & 7)), (uint32_t)bh, (uint32_t)offset};
    philox(c, k0, k1);
    const uint64_t nib = (c[0] < p.keep_threshold) | (c[1] < p.keep_threshold) << 1 | (c[2] < p.keep_threshold) << 2 |
                         (uint64_t)(c[3] < p.keep_threshold) << 3;
    bits |= nib << (4 * idx);
  }
  return bits;
}

// Zeroes the dropped entries of MA x NA atoms (see dropout_bits).
template <int MA, int NA>
__device__ __forceinline__ void apply_dropout(float (&s)[MA][NA][4], uint64_t bits) {
#pragma unroll
  for (int a = 0; a < MA; ++a)
#pragma unroll
    for (int n = 0; n < NA; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (!((bits >> (4 * (a * NA + n) + e)) & 1)) s[a][n][e] = 0.0f;
}

// --------------------------------------------------------- row reductions
__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, shfl_xor(x, 1));
  return fmaxf(x, shfl_xor(x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x += shfl_xor(x, 1);
  return x + shfl_xor(x, 2);
}

// Online softmax over one K/V tile of scores (raw units, masked = -inf).
// Updates the running max (raw units) and the per-lane partial row sums,
// rescales the output accumulator, and leaves exp2 probabilities in s.
template <int MA, int NA, int DA>
__device__ __forceinline__ void online_softmax(float (&s)[MA][NA][4], float (&o)[MA][DA][4], float (&row_max)[MA][2],
                                               float (&row_sum)[MA][2], float scale_log2) {
#pragma unroll
  for (int a = 0; a < MA; ++a)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float mx = row_max[a][h];
#pragma unroll
      for (int n = 0; n < NA; ++n) mx = fmaxf(mx, fmaxf(s[a][n][2 * h], s[a][n][2 * h + 1]));
      mx = quad_max(mx);
      // A row that has seen no visible key keeps max -inf; use 0 so that
      // exp2(-inf - 0) = 0 rather than NaN.
      const float m_use = mx == kNegInf ? 0.0f : mx;
      const float alpha = exp2_approx((row_max[a][h] - m_use) * scale_log2);
      row_max[a][h] = mx;
      const float ms = m_use * scale_log2;
      float sum = 0.0f;
#pragma unroll
      for (int n = 0; n < NA; ++n)
#pragma unroll
        for (int e = 2 * h; e < 2 * h + 2; ++e) {
          const float pr = exp2_approx(s[a][n][e] * scale_log2 - ms);
          s[a][n][e] = pr;
          sum += pr;
        }
      row_sum[a][h] = row_sum[a][h] * alpha + sum;
#pragma unroll
      for (int d = 0; d < DA; ++d) {
        o[a][d][2 * h] *= alpha;
        o[a][d][2 * h + 1] *= alpha;
      }
    }
}

// Converts probabilities of atoms (2k, 2k+1) into the A fragment of k-step k
// (m16 x k16), the register-resident P of FlashAttention-2.
template <typename T, int NA>
__device__ __forceinline__ void probs_to_a(const float (&s)[NA][4], int k, uint32_t (&a)[4]) {
  a[0] = pack2<T>(s[2 * k][0], s[2 * k][1]);
  a[1] = pack2<T>(s[2 * k][2], s[2 * k][3]);
  a[2] = pack2<T>(s[2 * k + 1][0], s[2 * k + 1][1]);
  a[3] = pack2<T>(s[2 * k + 1][2], s[2 * k + 1][3]);
}

template <int MA, int NA>
__device__ __forceinline__ void zero(float (&x)[MA][NA][4]) {
#pragma unroll
  for (int a = 0; a < MA; ++a)
#pragma unroll
    for (int n = 0; n < NA; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) x[a][n][e] = 0.0f;
}

}  // namespace fad
