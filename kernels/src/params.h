// params.h - the one parameter block every kernel receives (by value), filled
// by dispatch.cu from the public args. Plain data, no CUDA types, so the host
// code, the device code and the CPU emulation share it.
#pragma once

#include <stdint.h>

namespace fad {

struct Params {
  // ---- tensors (strides in elements)
  const void* q;
  const void* k;
  const void* v;
  void* o;
  float* lse;
  int64_t q_batch, q_head, q_row;
  int64_t k_batch, k_head, k_row;  // paged: k_batch is the page stride
  int64_t v_batch, v_head, v_row;
  int64_t o_batch, o_head, o_row;

  // ---- shape
  int batch, heads, heads_k, group;  // group = heads / heads_k
  int seqlen_q, seqlen_k;            // fixed lengths, or the maxima with cu_seqlens
  const int* cu_q;                   // varlen: [batch + 1] or null
  const int* cu_k;
  const int* seqused_k;  // [batch] or null
  int total_q;           // varlen: packed rows of q (LSE / dq workspace rows per head)

  // ---- score transform and mask
  float scale;       // softmax scale
  float scale_log2;  // scale * log2(e)
  int window_left, window_right;  // -1 unbounded; causal has window_right == 0
  float softcap_in;   // scale / cap: tanh argument per raw score
  float softcap_out;  // cap / scale: back to raw-score units
  const float* alibi;  // [heads] per batch row, or null
  int64_t alibi_batch;

  // ---- dropout
  bool dropout;
  uint32_t keep_threshold;  // keep iff philox word < threshold
  float rp_keep;            // 1 / (1 - p)
  uint64_t seed, offset;    // forward: the caller's; backward: read from rng_in
  uint64_t* rng_out;        // forward writes {seed, offset} here
  const uint64_t* rng_in;   // backward reads {seed, offset} from here

  // ---- paged KV (forward)
  const int* block_table;
  int64_t block_table_batch;
  int page_size;

  // ---- split-KV (forward)
  int num_splits;
  float* o_accum;    // [splits][rows][D] fp32
  float* lse_accum;  // [splits][rows]

  // ---- backward
  const void* o_in;
  const void* dout;
  void* dq;
  void* dk;
  void* dv;
  int64_t do_batch, do_head, do_row;
  int64_t dq_batch, dq_head, dq_row;
  int64_t dk_batch, dk_head, dk_row;
  int64_t dv_batch, dv_head, dv_row;
  float* dq_accum;  // [rows][D] fp32, rows as LSE
  float* dsum;      // [rows]: rowsum(dO * O)
  int deterministic;

  bool vec;  // every tensor 16-byte aligned with strides multiple of 8
};

}  // namespace fad
