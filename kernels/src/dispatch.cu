// dispatch.cu - C ABI of libfad_attention: validates arguments and routes to
// the per-variant launchers defined in the generated compile units.
#include <cuda_runtime.h>
#include <math.h>

#include "fad_attention.h"
#include "launchers.h"

namespace fad {
namespace {

using FwdFn = fad_status (*)(const fad_attention_fwd_params&, cudaStream_t);
using BwdFn = fad_status (*)(const fad_attention_bwd_params&, void*, cudaStream_t);

constexpr int kNumHeadDims = 6;
constexpr int kHeadDims[kNumHeadDims] = {32, 64, 96, 128, 192, 256};

// [dtype][head dim index][causal]
const FwdFn kFwd[2][kNumHeadDims][2] = {
    {{launch_fwd_h32_fp16_noncausal, launch_fwd_h32_fp16_causal},
     {launch_fwd_h64_fp16_noncausal, launch_fwd_h64_fp16_causal},
     {launch_fwd_h96_fp16_noncausal, launch_fwd_h96_fp16_causal},
     {launch_fwd_h128_fp16_noncausal, launch_fwd_h128_fp16_causal},
     {launch_fwd_h192_fp16_noncausal, launch_fwd_h192_fp16_causal},
     {launch_fwd_h256_fp16_noncausal, launch_fwd_h256_fp16_causal}},
    {{launch_fwd_h32_bf16_noncausal, launch_fwd_h32_bf16_causal},
     {launch_fwd_h64_bf16_noncausal, launch_fwd_h64_bf16_causal},
     {launch_fwd_h96_bf16_noncausal, launch_fwd_h96_bf16_causal},
     {launch_fwd_h128_bf16_noncausal, launch_fwd_h128_bf16_causal},
     {launch_fwd_h192_bf16_noncausal, launch_fwd_h192_bf16_causal},
     {launch_fwd_h256_bf16_noncausal, launch_fwd_h256_bf16_causal}},
};

const BwdFn kBwd[2][kNumHeadDims][2] = {
    {{launch_bwd_h32_fp16_noncausal, launch_bwd_h32_fp16_causal},
     {launch_bwd_h64_fp16_noncausal, launch_bwd_h64_fp16_causal},
     {launch_bwd_h96_fp16_noncausal, launch_bwd_h96_fp16_causal},
     {launch_bwd_h128_fp16_noncausal, launch_bwd_h128_fp16_causal},
     {launch_bwd_h192_fp16_noncausal, launch_bwd_h192_fp16_causal},
     {launch_bwd_h256_fp16_noncausal, launch_bwd_h256_fp16_causal}},
    {{launch_bwd_h32_bf16_noncausal, launch_bwd_h32_bf16_causal},
     {launch_bwd_h64_bf16_noncausal, launch_bwd_h64_bf16_causal},
     {launch_bwd_h96_bf16_noncausal, launch_bwd_h96_bf16_causal},
     {launch_bwd_h128_bf16_noncausal, launch_bwd_h128_bf16_causal},
     {launch_bwd_h192_bf16_noncausal, launch_bwd_h192_bf16_causal},
     {launch_bwd_h256_bf16_noncausal, launch_bwd_h256_bf16_causal}},
};

int head_dim_index(int d) {
  for (int i = 0; i < kNumHeadDims; ++i)
    if (kHeadDims[i] == d) return i;
  return -1;
}

// Common checks; returns FAD_OK and sets *hd_idx / *dt_idx on success.
fad_status check_common(fad_dtype dtype, int batch, int heads, int sq, int sk, int head_dim,
                        float scale, int* hd_idx, int* dt_idx) {
  if (dtype != FAD_DTYPE_FP16 && dtype != FAD_DTYPE_BF16) return FAD_ERR_UNSUPPORTED_DTYPE;
  const int hi = head_dim_index(head_dim);
  if (hi < 0) return FAD_ERR_UNSUPPORTED_HEAD_DIM;
  if (batch < 0 || heads < 0 || sq < 0 || sk < 0) return FAD_ERR_INVALID_ARGUMENT;
  if (batch > 65535 || heads > 65535) return FAD_ERR_INVALID_ARGUMENT;
  if (!(isfinite(scale))) return FAD_ERR_INVALID_ARGUMENT;
  *hd_idx = hi;
  *dt_idx = dtype == FAD_DTYPE_FP16 ? 0 : 1;
  return FAD_OK;
}

}  // namespace
}  // namespace fad

extern "C" {

fad_status fad_attention_fwd(const fad_attention_fwd_params* p, void* stream) {
  if (p == nullptr) return FAD_ERR_INVALID_ARGUMENT;
  int hi = 0, di = 0;
  fad_status st = fad::check_common(p->dtype, p->batch, p->heads, p->seqlen_q, p->seqlen_k,
                                    p->head_dim, p->softmax_scale, &hi, &di);
  if (st != FAD_OK) return st;
  if ((int64_t)p->batch * p->heads * p->seqlen_q == 0) return FAD_OK;  // nothing to write
  if (p->q == nullptr || p->o == nullptr) return FAD_ERR_INVALID_ARGUMENT;
  if (p->seqlen_k > 0 && (p->k == nullptr || p->v == nullptr)) return FAD_ERR_INVALID_ARGUMENT;
  return fad::kFwd[di][hi][p->causal ? 1 : 0](*p, static_cast<cudaStream_t>(stream));
}

size_t fad_attention_bwd_workspace_size(const fad_attention_bwd_params* p) {
  if (p == nullptr || p->batch <= 0 || p->heads <= 0 || p->seqlen_q <= 0 || p->head_dim <= 0) return 0;
  const size_t rows = (size_t)p->batch * (size_t)p->heads * (size_t)p->seqlen_q;
  const size_t bytes = rows * (size_t)p->head_dim * sizeof(float) + rows * sizeof(float);
  return (bytes + 255) & ~(size_t)255;
}

fad_status fad_attention_bwd(const fad_attention_bwd_params* p, void* stream) {
  if (p == nullptr) return FAD_ERR_INVALID_ARGUMENT;
  int hi = 0, di = 0;
  fad_status st = fad::check_common(p->dtype, p->batch, p->heads, p->seqlen_q, p->seqlen_k,
                                    p->head_dim, p->softmax_scale, &hi, &di);
  if (st != FAD_OK) return st;
  if ((int64_t)p->batch * p->heads == 0) return FAD_OK;
  if (p->seqlen_q == 0 && p->seqlen_k == 0) return FAD_OK;
  if (p->seqlen_q > 0 && (p->q == nullptr || p->o == nullptr || p->dout == nullptr ||
                          p->dq == nullptr || (p->seqlen_k > 0 && p->lse == nullptr)))
    return FAD_ERR_INVALID_ARGUMENT;
  if (p->seqlen_k > 0 && (p->k == nullptr || p->v == nullptr || p->dk == nullptr || p->dv == nullptr))
    return FAD_ERR_INVALID_ARGUMENT;

  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const size_t need = fad_attention_bwd_workspace_size(p);
  void* ws = p->workspace;
  bool owned = false;
  if (need > 0) {
    if (ws == nullptr) {
      cudaError_t e = cudaMallocAsync(&ws, need, s);
      if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return FAD_ERR_CUDA;
      }
      owned = true;
    } else if (p->workspace_bytes < need || (reinterpret_cast<uintptr_t>(ws) & 15u) != 0) {
      return FAD_ERR_INVALID_ARGUMENT;
    }
  }
  st = fad::kBwd[di][hi][p->causal ? 1 : 0](*p, ws, s);
  if (owned) {
    cudaError_t e = cudaFreeAsync(ws, s);
    if (e != cudaSuccess && st == FAD_OK) st = FAD_ERR_CUDA;
  }
  return st;
}

const char* fad_status_string(fad_status status) {
  switch (status) {
    case FAD_OK: return "FAD_OK";
    case FAD_ERR_UNSUPPORTED_HEAD_DIM: return "FAD_ERR_UNSUPPORTED_HEAD_DIM: head_dim must be 32, 64, 96, 128, 192 or 256";
    case FAD_ERR_UNSUPPORTED_DTYPE: return "FAD_ERR_UNSUPPORTED_DTYPE: dtype must be FAD_DTYPE_FP16 or FAD_DTYPE_BF16";
    case FAD_ERR_UNSUPPORTED_ARCH: return "FAD_ERR_UNSUPPORTED_ARCH: no kernel image for the current device";
    case FAD_ERR_INVALID_ARGUMENT: return "FAD_ERR_INVALID_ARGUMENT";
    case FAD_ERR_CUDA: return "FAD_ERR_CUDA: CUDA runtime error";
  }
  return "unknown fad_status";
}

const char* fad_attention_version(void) {
#define FAD_STR2(x) #x
#define FAD_STR(x) FAD_STR2(x)
  return FAD_STR(FAD_ATTENTION_VERSION_MAJOR) "." FAD_STR(FAD_ATTENTION_VERSION_MINOR) "." FAD_STR(
      FAD_ATTENTION_VERSION_PATCH);
}

}  // extern "C"
