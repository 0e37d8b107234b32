/*
 * fad_attention.h - C ABI of libfad_attention (FlashAttention-2 style attention).
 *
 * Plain C header; it does not include any CUDA header. CUDA streams are passed
 * as `void*` (a cudaStream_t cast to void*; NULL = legacy default stream).
 *
 * Tensor layout: every tensor is addressed as
 *     ptr[b * batch_stride + h * head_stride + row * row_stride + d]
 * with strides given in ELEMENTS (not bytes) and the head dimension contiguous
 * (stride 1).  This covers both [B, H, S, D] and [B, S, H, D] layouts.
 * When all pointers are 16-byte aligned and all strides are multiples of 8,
 * vectorised 16-byte loads are used; otherwise a scalar load path is used.
 *
 * LSE: fp32, contiguous [batch, heads, seqlen_q], natural log:
 *     lse[i] = log(sum_j exp(softmax_scale * q_i . k_j))   over unmasked j.
 * Rows with no unmasked key (possible only when causal and seqlen_q > seqlen_k)
 * get O = 0 and lse = -INFINITY; their gradients are 0.
 *
 * Causal masking uses BOTTOM-RIGHT alignment: query i (0-based) attends key j
 * iff j <= i + (seqlen_k - seqlen_q).  For seqlen_q == seqlen_k this is the
 * usual lower-triangular mask.
 *
 * Supported: dtype fp16 / bf16, head_dim in {32, 64, 96, 128, 192, 256},
 * any batch/heads (each <= 65535), any seqlen_q/seqlen_k >= 0.
 * Tensor cores (WMMA 16x16x16, fp32 accumulate) are used on sm_80 and newer;
 * sm_75 uses a scalar FMA path.
 */
#ifndef FAD_ATTENTION_H
#define FAD_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FAD_ATTENTION_VERSION_MAJOR 0
#define FAD_ATTENTION_VERSION_MINOR 1
#define FAD_ATTENTION_VERSION_PATCH 0

typedef enum {
  FAD_OK = 0,
  FAD_ERR_UNSUPPORTED_HEAD_DIM = 1,
  FAD_ERR_UNSUPPORTED_DTYPE = 2,
  FAD_ERR_UNSUPPORTED_ARCH = 3, /* no kernel image for the current device */
  FAD_ERR_INVALID_ARGUMENT = 4,
  FAD_ERR_CUDA = 5              /* any other CUDA runtime error */
} fad_status;

typedef enum {
  FAD_DTYPE_FP16 = 0,
  FAD_DTYPE_BF16 = 1
} fad_dtype;

typedef struct {
  const void* q;   /* [batch, heads, seqlen_q, head_dim] (strided) */
  const void* k;   /* [batch, heads, seqlen_k, head_dim] (strided) */
  const void* v;   /* [batch, heads, seqlen_k, head_dim] (strided) */
  void* o;         /* [batch, heads, seqlen_q, head_dim] (strided) */
  float* lse;      /* [batch, heads, seqlen_q] contiguous fp32; may be NULL */
  fad_dtype dtype;
  int batch, heads, seqlen_q, seqlen_k, head_dim;
  int64_t q_batch_stride, q_head_stride, q_row_stride;
  int64_t k_batch_stride, k_head_stride, k_row_stride;
  int64_t v_batch_stride, v_head_stride, v_row_stride;
  int64_t o_batch_stride, o_head_stride, o_row_stride;
  float softmax_scale; /* <= 0 means 1/sqrt(head_dim) */
  int causal;          /* non-zero: bottom-right aligned causal mask */
} fad_attention_fwd_params;

typedef struct {
  const void* q;
  const void* k;
  const void* v;
  const void* o;     /* forward output */
  const void* dout;  /* gradient of the loss w.r.t. o */
  const float* lse;  /* forward's LSE, [batch, heads, seqlen_q] contiguous */
  void* dq;
  void* dk;
  void* dv;
  fad_dtype dtype;
  int batch, heads, seqlen_q, seqlen_k, head_dim;
  int64_t q_batch_stride, q_head_stride, q_row_stride;
  int64_t k_batch_stride, k_head_stride, k_row_stride;
  int64_t v_batch_stride, v_head_stride, v_row_stride;
  int64_t o_batch_stride, o_head_stride, o_row_stride;
  int64_t do_batch_stride, do_head_stride, do_row_stride;
  int64_t dq_batch_stride, dq_head_stride, dq_row_stride;
  int64_t dk_batch_stride, dk_head_stride, dk_row_stride;
  int64_t dv_batch_stride, dv_head_stride, dv_row_stride;
  float softmax_scale; /* must equal the forward's; <= 0 means 1/sqrt(head_dim) */
  int causal;
  /* Device scratch of at least fad_attention_bwd_workspace_size() bytes,
   * 16-byte aligned.  If NULL, the library allocates/frees it with
   * cudaMallocAsync/cudaFreeAsync on the given stream. */
  void* workspace;
  size_t workspace_bytes;
} fad_attention_bwd_params;

/* Launch the forward pass on `stream` (a cudaStream_t cast to void*). Asynchronous. */
fad_status fad_attention_fwd(const fad_attention_fwd_params* params, void* stream);

/* Bytes of device workspace the backward pass needs for these params:
 * fp32 dQ accumulator (batch*heads*seqlen_q*head_dim) + fp32 rowsum(dO*O). */
size_t fad_attention_bwd_workspace_size(const fad_attention_bwd_params* params);

/* Launch the backward pass (dQ, dK, dV) on `stream`. Asynchronous. */
fad_status fad_attention_bwd(const fad_attention_bwd_params* params, void* stream);

const char* fad_status_string(fad_status status);

/* Returns "MAJOR.MINOR.PATCH". */
const char* fad_attention_version(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FAD_ATTENTION_H */
