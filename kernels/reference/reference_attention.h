// reference_attention.h - CPU reference for fad attention (plain C++17, no CUDA).
//
// All tensors are contiguous host fp32 arrays:
//   q, o, dout, dq : [batch, heads, seqlen_q, head_dim]
//   k, v, dk, dv   : [batch, heads, seqlen_k, head_dim]
//   lse            : [batch, heads, seqlen_q]   (natural log)
// Internally everything is accumulated in double.
//
// Semantics (identical to the CUDA library):
//   S_ij = scale * q_i . k_j
//   causal (bottom-right aligned): key j is visible to query i iff
//       j <= i + (seqlen_k - seqlen_q)
//   P = softmax over visible keys, O = P V, lse_i = log sum_j exp(S_ij).
//   A query with no visible key gets O_i = 0, lse_i = -infinity and zero
//   gradients.
#pragma once

#include <cstddef>

namespace fad_ref {

struct AttentionShape {
  int batch = 1;
  int heads = 1;
  int seqlen_q = 1;
  int seqlen_k = 1;
  int head_dim = 1;
  float scale = 1.0f;
  bool causal = false;
};

// True if query i may attend key j.
inline bool key_visible(const AttentionShape& s, int i, int j) {
  if (j < 0 || j >= s.seqlen_k) return false;
  return !s.causal || j <= i + (s.seqlen_k - s.seqlen_q);
}

inline std::size_t q_elems(const AttentionShape& s) {
  return static_cast<std::size_t>(s.batch) * s.heads * s.seqlen_q * s.head_dim;
}
inline std::size_t kv_elems(const AttentionShape& s) {
  return static_cast<std::size_t>(s.batch) * s.heads * s.seqlen_k * s.head_dim;
}
inline std::size_t lse_elems(const AttentionShape& s) {
  return static_cast<std::size_t>(s.batch) * s.heads * s.seqlen_q;
}

// Forward: writes o (q_elems) and, if non-null, lse (lse_elems).
void attention_forward(const AttentionShape& s, const float* q, const float* k, const float* v,
                       float* o, float* lse);

// Backward: given dout = dL/dO, writes dq (q_elems), dk, dv (kv_elems).
// Probabilities are recomputed from q, k (no O / LSE needed).
void attention_backward(const AttentionShape& s, const float* q, const float* k, const float* v,
                        const float* dout, float* dq, float* dk, float* dv);

}  // namespace fad_ref
