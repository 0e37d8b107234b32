// fwd_launch.cuh - host launcher template for the fwd kernels (see fwd_kernel.cuh).
// Kept separate from the device code so fwd_kernel.cuh can also be compiled by
// the CPU emulation test (kernels/emulation/).
#pragma once

#include "fwd_kernel.cuh"

namespace fad {

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// Host launcher for one variant. Arguments are validated by dispatch.cu.
template <typename T, int D, bool CAUSAL>
fad_status run_fwd(const fad_attention_fwd_params& p, cudaStream_t stream) {
  auto kernel = fwd_kernel<T, D, CAUSAL>;
  fad_status st = check_kernel_image(kernel);
  if (st != FAD_OK) return st;

  FwdArgs<T> a;
  a.q = static_cast<const T*>(p.q);
  a.k = static_cast<const T*>(p.k);
  a.v = static_cast<const T*>(p.v);
  a.o = static_cast<T*>(p.o);
  a.lse = p.lse;
  a.seqlen_q = p.seqlen_q;
  a.seqlen_k = p.seqlen_k;
  a.q_b = p.q_batch_stride; a.q_h = p.q_head_stride; a.q_r = p.q_row_stride;
  a.k_b = p.k_batch_stride; a.k_h = p.k_head_stride; a.k_r = p.k_row_stride;
  a.v_b = p.v_batch_stride; a.v_h = p.v_head_stride; a.v_r = p.v_row_stride;
  a.o_b = p.o_batch_stride; a.o_h = p.o_head_stride; a.o_r = p.o_row_stride;
  const float scale = p.softmax_scale > 0.0f ? p.softmax_scale : 1.0f / sqrtf((float)D);
  a.scale_log2 = scale * kLog2e;
  a.heads = p.heads;
  a.vec = aligned16(p.q) && aligned16(p.k) && aligned16(p.v) &&
          (p.q_batch_stride % 8 == 0) && (p.q_head_stride % 8 == 0) && (p.q_row_stride % 8 == 0) &&
          (p.k_batch_stride % 8 == 0) && (p.k_head_stride % 8 == 0) && (p.k_row_stride % 8 == 0) &&
          (p.v_batch_stride % 8 == 0) && (p.v_head_stride % 8 == 0) && (p.v_row_stride % 8 == 0);

  constexpr int BM = FwdCfg<D>::BM;
  dim3 grid((p.seqlen_q + BM - 1) / BM, p.heads, p.batch);
  kernel<<<grid, kThreads, 0, stream>>>(a);
  return check_launch();
}

}  // namespace fad
