// bwd_launch.cuh - host launcher template for the bwd kernels (see bwd_kernel.cuh).
// Kept separate from the device code so bwd_kernel.cuh can also be compiled by
// the CPU emulation test (kernels/emulation/).
#pragma once

#include "bwd_kernel.cuh"

namespace fad {

// Host launcher for one variant. Arguments are validated by dispatch.cu;
// `workspace` holds at least fad_attention_bwd_workspace_size() bytes.
template <typename T, int D, bool CAUSAL>
fad_status run_bwd(const fad_attention_bwd_params& p, void* workspace, cudaStream_t stream) {
  auto pre = bwd_preprocess<T, D>;
  auto main_kernel = bwd_kernel<T, D, CAUSAL>;
  auto conv = bwd_convert_dq<T, D>;
  fad_status st = check_kernel_image(main_kernel);
  if (st != FAD_OK) return st;

  auto al16 = [](const void* ptr) { return (reinterpret_cast<uintptr_t>(ptr) & 15u) == 0; };
  BwdArgs<T> a;
  a.q = static_cast<const T*>(p.q);
  a.k = static_cast<const T*>(p.k);
  a.v = static_cast<const T*>(p.v);
  a.o = static_cast<const T*>(p.o);
  a.dout = static_cast<const T*>(p.dout);
  a.lse = p.lse;
  a.dq = static_cast<T*>(p.dq);
  a.dk = static_cast<T*>(p.dk);
  a.dv = static_cast<T*>(p.dv);
  const int64_t rows = (int64_t)p.batch * p.heads * p.seqlen_q;
  a.dq_accum = static_cast<float*>(workspace);
  a.dsum = a.dq_accum + rows * D;
  a.seqlen_q = p.seqlen_q;
  a.seqlen_k = p.seqlen_k;
  a.heads = p.heads;
  a.q_b = p.q_batch_stride; a.q_h = p.q_head_stride; a.q_r = p.q_row_stride;
  a.k_b = p.k_batch_stride; a.k_h = p.k_head_stride; a.k_r = p.k_row_stride;
  a.v_b = p.v_batch_stride; a.v_h = p.v_head_stride; a.v_r = p.v_row_stride;
  a.o_b = p.o_batch_stride; a.o_h = p.o_head_stride; a.o_r = p.o_row_stride;
  a.do_b = p.do_batch_stride; a.do_h = p.do_head_stride; a.do_r = p.do_row_stride;
  a.dq_b = p.dq_batch_stride; a.dq_h = p.dq_head_stride; a.dq_r = p.dq_row_stride;
  a.dk_b = p.dk_batch_stride; a.dk_h = p.dk_head_stride; a.dk_r = p.dk_row_stride;
  a.dv_b = p.dv_batch_stride; a.dv_h = p.dv_head_stride; a.dv_r = p.dv_row_stride;
  a.scale = p.softmax_scale > 0.0f ? p.softmax_scale : 1.0f / sqrtf((float)D);
  a.scale_log2 = a.scale * kLog2e;
  a.vec = al16(p.q) && al16(p.k) && al16(p.v) && al16(p.dout) &&
          (p.q_batch_stride % 8 == 0) && (p.q_head_stride % 8 == 0) && (p.q_row_stride % 8 == 0) &&
          (p.k_batch_stride % 8 == 0) && (p.k_head_stride % 8 == 0) && (p.k_row_stride % 8 == 0) &&
          (p.v_batch_stride % 8 == 0) && (p.v_head_stride % 8 == 0) && (p.v_row_stride % 8 == 0) &&
          (p.do_batch_stride % 8 == 0) && (p.do_head_stride % 8 == 0) && (p.do_row_stride % 8 == 0);

  const dim3 row_grid((p.seqlen_q + kWarps - 1) / kWarps, p.heads, p.batch);
  if (p.seqlen_q > 0) {
    pre<<<row_grid, kThreads, 0, stream>>>(a);
    if ((st = check_launch()) != FAD_OK) return st;
  }
  if (p.seqlen_k > 0) {
    constexpr int BN = BwdCfg<D>::BN;
    const dim3 grid((p.seqlen_k + BN - 1) / BN, p.heads, p.batch);
    main_kernel<<<grid, kThreads, 0, stream>>>(a);
    if ((st = check_launch()) != FAD_OK) return st;
  }
  if (p.seqlen_q > 0) {
    conv<<<row_grid, kThreads, 0, stream>>>(a);
    if ((st = check_launch()) != FAD_OK) return st;
  }
  return FAD_OK;
}

}  // namespace fad
