// reference_attention.h - CPU reference for fad attention (plain C++17, no CUDA).
//
// All tensors are contiguous host fp32 arrays, padded to the longest sequence:
//   q, o, dout, dq : [batch, heads,   seqlen_q, head_dim]
//   k, v, dk, dv   : [batch, heads_k, seqlen_k, head_dim]
//   lse            : [batch, heads,   seqlen_q]   (natural log)
// With per-sequence lengths (seqlens_q / seqlens_k), rows past a sequence's
// length are ignored on input and written as 0 (lse: -infinity). Everything is
// accumulated in double.
//
// Semantics (identical to the CUDA library, see kernels/include/fad_attention.h):
//   off = sk_b - sq_b (bottom-right alignment); query i sees key j iff
//     j < sk_b, (window_left < 0 || j >= i + off - window_left) and
//     (right < 0 || j <= i + off + right), right = causal ? 0 : window_right
//   s_ij = scale * q_i.k_j; softcap c > 0: s = c * tanh(s / c);
//   ALiBi slope m: s -= m * |i + off - j|
//   P = softmax over visible keys, lse_i = log sum_j exp(s_ij)
//   dropout p: Z_ij = keep_ij / (1 - p), O_i = sum_j P_ij Z_ij v_j
//   A query with no visible key gets O_i = 0, lse_i = -infinity and zero
//   gradients. Query head h reads KV head h / (heads / heads_k); dk, dv sum
//   over the query heads of each KV head.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fad_ref {

struct AttentionShape {
  int batch = 1;
  int heads = 1;
  int seqlen_q = 1;  // the padded length (the longest sequence)
  int seqlen_k = 1;
  int head_dim = 1;
  float scale = 1.0f;
  bool causal = false;
  int heads_k = 0;  // 0: heads
  int window_left = -1, window_right = -1;
  float softcap = 0.0f;
  std::vector<float> alibi_slopes;  // [heads] or [batch * heads]; empty: none
  float dropout_p = 0.0f;
  std::uint64_t seed = 0, offset = 0;
  std::vector<int> seqlens_q, seqlens_k;  // per batch entry; empty: all seqlen_q / seqlen_k
};

inline int kv_heads(const AttentionShape& s) { return s.heads_k > 0 ? s.heads_k : s.heads; }
inline int len_q(const AttentionShape& s, int b) { return s.seqlens_q.empty() ? s.seqlen_q : s.seqlens_q[b]; }
inline int len_k(const AttentionShape& s, int b) { return s.seqlens_k.empty() ? s.seqlen_k : s.seqlens_k[b]; }

// True if query i of batch entry b may attend key j.
bool key_visible(const AttentionShape& s, int b, int i, int j);
// The original two-argument form (batch entry 0), kept for the old callers.
inline bool key_visible(const AttentionShape& s, int i, int j) { return key_visible(s, 0, i, j); }

inline std::size_t q_elems(const AttentionShape& s) {
  return static_cast<std::size_t>(s.batch) * s.heads * s.seqlen_q * s.head_dim;
}
inline std::size_t kv_elems(const AttentionShape& s) {
  return static_cast<std::size_t>(s.batch) * kv_heads(s) * s.seqlen_k * s.head_dim;
}
inline std::size_t lse_elems(const AttentionShape& s) {
  return static_cast<std::size_t>(s.batch) * s.heads * s.seqlen_q;
}

// Philox4x32-10 (Salmon et al., SC'11): 10 rounds, key bumped between rounds.
void philox4x32_10(const std::uint32_t ctr[4], const std::uint32_t key[2], std::uint32_t out[4]);
// Whether dropout keeps entry (i, j) of (b, h) (see fad_attention.h for the
// counter and key layout).
bool dropout_keep(const AttentionShape& s, int b, int h, int i, int j);

// Forward: writes o (q_elems) and, if non-null, lse (lse_elems).
void attention_forward(const AttentionShape& s, const float* q, const float* k, const float* v, float* o, float* lse);

// Backward: given dout = dL/dO, writes dq (q_elems), dk, dv (kv_elems).
// Probabilities are recomputed from q, k (no O / LSE needed).
void attention_backward(const AttentionShape& s, const float* q, const float* k, const float* v, const float* dout,
                        float* dq, float* dk, float* dv);

}  // namespace fad_ref
