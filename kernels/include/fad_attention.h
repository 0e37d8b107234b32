/*
 * fad_attention.h - C ABI of libfad_attention (FlashAttention-2 style attention).
 *
 * Plain C header; it includes no CUDA header. CUDA streams are passed as
 * `void*` (a cudaStream_t cast to void*; NULL = legacy default stream). All
 * calls are asynchronous on that stream.
 *
 * Two generations of the API live side by side:
 *   - ABI 1 (library 0.1): fad_attention_fwd / fad_attention_bwd with the
 *     fixed structs fad_attention_fwd_params / fad_attention_bwd_params.
 *     They keep working unchanged.
 *   - ABI 2 (library 0.2): fad_attention_fwd_v2 / fad_attention_bwd_v2 with
 *     fad_attention_fwd_args / fad_attention_bwd_args. Each struct begins with
 *     `struct_size`; fill it with the *_args_init() function, which zeroes the
 *     struct and sets every default, then set what you need. Later versions
 *     only append fields, and a caller built against this header keeps
 *     working because the library reads no field past struct_size.
 *
 * Tensor layout: every tensor is addressed as
 *     ptr[b * batch_stride + h * head_stride + row * row_stride + d]
 * with strides in ELEMENTS and the head dimension contiguous. This covers
 * [B, H, S, D] and [B, S, H, D]. With variable-length batches (cu_seqlens),
 * row is the token index in the packed tensor and batch_stride is unused.
 * 16-byte aligned pointers and strides that are multiples of 8 elements take
 * the asynchronous-copy path; anything else takes a slower element path.
 *
 * Masking is BOTTOM-RIGHT aligned, as in FlashAttention 2.1+: with
 * off = seqlen_k - seqlen_q, query i sees key j iff
 *     (window_left  < 0 || j >= i + off - window_left) &&
 *     (window_right < 0 || j <= i + off + window_right).
 * causal = 1 means window_right = 0. Rows with no visible key get O = 0,
 * LSE = -INFINITY and zero gradients.
 *
 * Scores, in this order: s = softmax_scale * q.k; with softcap c > 0,
 * s = c * tanh(s / c); with ALiBi slope m (per head), s -= m * |i + off - j|;
 * masked entries are -inf; P = softmax(s); O = dropout(P) V, where dropout
 * keeps an entry with probability 1 - dropout_p and scales it by
 * 1 / (1 - dropout_p). LSE is log(sum_j exp(s_ij)) (natural log, fp32, before
 * dropout).
 *
 * Dropout decisions: Philox4x32-10 (Salmon et al., SC'11) with
 *     key     = (lo32(seed), hi32(seed) ^ hi32(offset))
 *     counter = (j >> 1, (i >> 4) * 8 + (i & 7), b * heads + h, lo32(offset))
 * for query row i (within its sequence), key column j, batch b, head h; word
 * ((i >> 3) & 1) * 2 + (j & 1) of the output is compared with
 * floor((1 - dropout_p) * 2^32): below keeps. The forward writes
 * {seed, offset} to rng_state (device memory) so the backward pass, which
 * reads them from there, regenerates the same mask.
 *
 * LSE layout: [batch, heads, seqlen_q] fp32 contiguous; with cu_seqlens_q,
 * [heads, total_q].
 *
 * Supported: fp16 / bf16; head_dim 32, 64, 96, 128, 160, 192, 256; GPUs of
 * compute capability 8.0 or newer (older ones get FAD_ERR_UNSUPPORTED_ARCH).
 */
#ifndef FAD_ATTENTION_H
#define FAD_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FAD_ATTENTION_VERSION_MAJOR 0
#define FAD_ATTENTION_VERSION_MINOR 2
#define FAD_ATTENTION_VERSION_PATCH 0
#define FAD_ATTENTION_ABI 2

typedef enum {
  FAD_OK = 0,
  FAD_ERR_UNSUPPORTED_HEAD_DIM = 1,
  FAD_ERR_UNSUPPORTED_DTYPE = 2,
  FAD_ERR_UNSUPPORTED_ARCH = 3, /* no kernel image for the current device, or compute capability < 8.0 */
  FAD_ERR_INVALID_ARGUMENT = 4,
  FAD_ERR_CUDA = 5,             /* any other CUDA runtime error */
  FAD_ERR_NOT_BUILT = 6         /* this library was built without the unit this call needs */
} fad_status;

typedef enum {
  FAD_DTYPE_FP16 = 0,
  FAD_DTYPE_BF16 = 1
} fad_dtype;

/* ------------------------------------------------------------------ ABI 1 */

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

fad_status fad_attention_fwd(const fad_attention_fwd_params* params, void* stream);
size_t fad_attention_bwd_workspace_size(const fad_attention_bwd_params* params);
fad_status fad_attention_bwd(const fad_attention_bwd_params* params, void* stream);

/* ------------------------------------------------------------------ ABI 2 */

typedef struct {
  uint32_t struct_size; /* sizeof(fad_attention_fwd_args); set by fad_attention_fwd_args_init */
  fad_dtype dtype;
  const void* q;        /* [batch, heads, seqlen_q, head_dim]                        */
  const void* k;        /* [batch, heads_k, seqlen_k, head_dim]; with block_table, the */
  const void* v;        /*   cache [num_pages, page_block_size, heads_k, head_dim]     */
  void* o;              /* like q */
  float* lse;           /* optional, see LSE layout above */
  int batch, heads, heads_k; /* heads_k divides heads (MQA/GQA); 0 means heads */
  int seqlen_q, seqlen_k;    /* with cu_seqlens: the maxima over the batch */
  int head_dim;
  int64_t q_batch_stride, q_head_stride, q_row_stride;
  int64_t k_batch_stride, k_head_stride, k_row_stride; /* paged: batch stride = page stride */
  int64_t v_batch_stride, v_head_stride, v_row_stride;
  int64_t o_batch_stride, o_head_stride, o_row_stride;
  float softmax_scale;  /* <= 0 means 1/sqrt(head_dim) */
  int causal;
  int window_left, window_right; /* sliding window; -1 = unbounded (the init default) */
  float softcap;                 /* > 0 enables c * tanh(s / c) */
  const float* alibi_slopes;     /* device [heads] or [batch, heads] fp32; NULL = off */
  int64_t alibi_batch_stride;    /* 0: one row of slopes for the whole batch */
  float dropout_p;               /* in [0, 1) */
  uint64_t philox_seed, philox_offset;
  uint64_t* rng_state;           /* device, 2 x uint64: receives {seed, offset}; may be NULL */
  /* Variable-length batches: device int32 [batch + 1] prefix sums of the
   * sequence lengths; q/o (k/v) rows are tokens of the packed tensors. */
  const int* cu_seqlens_q;
  const int* cu_seqlens_k;
  int total_q;                   /* cu_seqlens_q[batch]: rows of the packed q (for LSE) */
  const int* seqused_k;          /* device int32 [batch]: keys used per sequence (KV cache); NULL = all */
  /* Paged KV cache (forward only): device int32 [batch, max_pages_per_seq]. */
  const int* block_table;
  int64_t block_table_batch_stride;
  int page_block_size;           /* keys per page */
  /* Split-KV (decoding: few queries, many keys): 0 = chosen from the shape and
   * the device's SM count, 1 = off, n = n splits combined by a second kernel. */
  int num_splits;
  void* workspace;               /* >= fad_attention_fwd_workspace_size() bytes; NULL = allocated on the stream */
  size_t workspace_bytes;
} fad_attention_fwd_args;

typedef struct {
  uint32_t struct_size; /* sizeof(fad_attention_bwd_args); set by fad_attention_bwd_args_init */
  fad_dtype dtype;
  const void* q;
  const void* k;
  const void* v;
  const void* o;
  const void* dout;
  const float* lse;
  void* dq;
  void* dk;             /* [batch, heads_k, seqlen_k, head_dim]: summed over each GQA group */
  void* dv;
  int batch, heads, heads_k, seqlen_q, seqlen_k, head_dim;
  int64_t q_batch_stride, q_head_stride, q_row_stride;
  int64_t k_batch_stride, k_head_stride, k_row_stride;
  int64_t v_batch_stride, v_head_stride, v_row_stride;
  int64_t o_batch_stride, o_head_stride, o_row_stride;
  int64_t do_batch_stride, do_head_stride, do_row_stride;
  int64_t dq_batch_stride, dq_head_stride, dq_row_stride;
  int64_t dk_batch_stride, dk_head_stride, dk_row_stride;
  int64_t dv_batch_stride, dv_head_stride, dv_row_stride;
  float softmax_scale;
  int causal;
  int window_left, window_right;
  float softcap;
  const float* alibi_slopes;
  int64_t alibi_batch_stride;
  float dropout_p;
  const uint64_t* rng_state;     /* device {seed, offset} written by the forward; required with dropout */
  const int* cu_seqlens_q;
  const int* cu_seqlens_k;
  int total_q;
  int deterministic;             /* non-zero: dQ without atomics, bit-identical across runs */
  void* workspace;               /* >= fad_attention_bwd_workspace_size_v2() bytes; NULL = allocated on the stream */
  size_t workspace_bytes;
} fad_attention_bwd_args;

/* Zero the struct and set struct_size, heads_k = 0 (= heads), window_left =
 * window_right = -1, num_splits = 0. */
void fad_attention_fwd_args_init(fad_attention_fwd_args* args);
void fad_attention_bwd_args_init(fad_attention_bwd_args* args);

fad_status fad_attention_fwd_v2(const fad_attention_fwd_args* args, void* stream);
/* Device bytes the forward needs for split-KV partial results (0 when it will not split). */
size_t fad_attention_fwd_workspace_size(const fad_attention_fwd_args* args);
fad_status fad_attention_bwd_v2(const fad_attention_bwd_args* args, void* stream);
size_t fad_attention_bwd_workspace_size_v2(const fad_attention_bwd_args* args);

/* ------------------------------------------------------------- both ABIs */

const char* fad_status_string(fad_status status);

/* Returns "MAJOR.MINOR.PATCH". */
const char* fad_attention_version(void);

/* Returns FAD_ATTENTION_ABI of the library (2 for this one). */
int fad_attention_abi(void);

/* Whether this library holds the compiled units for a variant: direction 0 =
 * forward, 1 = split-KV/paged forward, 2 = backward. A build of a subset of the
 * units answers 0 for the others, and calls that need them return
 * FAD_ERR_NOT_BUILT. */
int fad_attention_has_variant(int direction, fad_dtype dtype, int head_dim, int causal);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* FAD_ATTENTION_H */
