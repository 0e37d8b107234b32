// dispatch.cu - the C ABI of libfad_attention: checks arguments, turns the
// public args into the kernels' Params, picks the forward path (plain or
// split-KV/paged), handles workspaces, and routes to the unit that holds the
// variant. ABI 1 calls are translated to ABI 2 and take the same path.
#include <cuda_runtime.h>
#include <math.h>
#include <string.h>

#include "fad_attention.h"
#include "launchers.h"

namespace fad {
namespace {

constexpr int kHeadDims[] = {32, 64, 96, 128, 160, 192, 256};
constexpr int kDirFwd = 0, kDirSplit = 1, kDirBwd = 2;

bool head_dim_ok(int d) {
  for (int h : kHeadDims)
    if (h == d) return true;
  return false;
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }
bool strides8(int64_t a, int64_t b, int64_t c) { return a % 8 == 0 && b % 8 == 0 && c % 8 == 0; }

// Checks shared by both directions; *causal_unit says which unit serves the
// mask (a causal call with a left window is a sliding window with right 0).
fad_status check_common(fad_dtype dtype, int batch, int heads, int heads_k, int sq, int sk, int head_dim, float scale,
                        int causal, int* window_left, int* window_right, float softcap, float dropout,
                        const int* cu_q, const int* cu_k, int total_q, bool* causal_unit) {
  if (dtype != FAD_DTYPE_FP16 && dtype != FAD_DTYPE_BF16) return FAD_ERR_UNSUPPORTED_DTYPE;
  if (!head_dim_ok(head_dim)) return FAD_ERR_UNSUPPORTED_HEAD_DIM;
  if (batch < 0 || heads < 0 || heads_k < 0 || sq < 0 || sk < 0) return FAD_ERR_INVALID_ARGUMENT;
  if (batch > 65535 || heads > 65535) return FAD_ERR_INVALID_ARGUMENT;
  if (heads_k == 0 || heads_k > heads || (heads > 0 && heads % heads_k != 0)) return FAD_ERR_INVALID_ARGUMENT;
  if (!isfinite(scale) || !isfinite(softcap) || softcap < 0.0f) return FAD_ERR_INVALID_ARGUMENT;
  if (!(dropout >= 0.0f && dropout < 1.0f)) return FAD_ERR_INVALID_ARGUMENT;
  if (*window_left < -1 || *window_right < -1) return FAD_ERR_INVALID_ARGUMENT;
  if ((cu_q == nullptr) != (cu_k == nullptr) || (cu_q != nullptr && total_q < 0)) return FAD_ERR_INVALID_ARGUMENT;
  // With one query row causal masks nothing (bottom-right alignment).
  if (causal && sq == 1 && cu_q == nullptr) causal = 0;
  if (causal) *window_right = 0;
  *causal_unit = causal && *window_left < 0;
  if (*causal_unit) *window_right = -1;  // the causal unit masks by itself
  return FAD_OK;
}

void fill_common(Params& p, int batch, int heads, int heads_k, int sq, int sk, int d, float scale, int wl, int wr,
                 float softcap, const float* alibi, int64_t alibi_bs, float dropout, const int* cu_q,
                 const int* cu_k, int total_q) {
  p.batch = batch;
  p.heads = heads;
  p.heads_k = heads_k;
  p.group = heads_k > 0 ? heads / heads_k : 1;
  p.seqlen_q = sq;
  p.seqlen_k = sk;
  p.cu_q = cu_q;
  p.cu_k = cu_k;
  p.total_q = total_q;
  p.scale = scale > 0.0f ? scale : 1.0f / sqrtf((float)d);
  p.scale_log2 = p.scale * 1.4426950408889634f;
  p.window_left = wl;
  p.window_right = wr;
  p.softcap_in = softcap > 0.0f ? p.scale / softcap : 0.0f;
  p.softcap_out = softcap > 0.0f ? softcap / p.scale : 0.0f;
  p.alibi = alibi;
  p.alibi_batch = alibi_bs;
  p.dropout = dropout > 0.0f;
  const double keep = 1.0 - (double)dropout;
  const double thr = floor(keep * 4294967296.0);
  p.keep_threshold = thr >= 4294967295.0 ? 0xffffffffu : (uint32_t)thr;
  p.rp_keep = (float)(1.0 / keep);
}

int dtype_index(fad_dtype d) { return d == FAD_DTYPE_FP16 ? 0 : 1; }

// Workspace the caller passed or one allocated on the stream and freed after.
struct Workspace {
  void* ptr = nullptr;
  bool owned = false;
  cudaStream_t stream = nullptr;
  fad_status acquire(void* given, size_t given_bytes, size_t need, cudaStream_t s) {
    stream = s;
    if (need == 0) return FAD_OK;
    if (given != nullptr) {
      if (given_bytes < need || !aligned16(given)) return FAD_ERR_INVALID_ARGUMENT;
      ptr = given;
      return FAD_OK;
    }
    if (cudaMallocAsync(&ptr, need, s) != cudaSuccess) {
      (void)cudaGetLastError();
      return FAD_ERR_CUDA;
    }
    owned = true;
    return FAD_OK;
  }
  fad_status release(fad_status st) {
    if (owned && cudaFreeAsync(ptr, stream) != cudaSuccess && st == FAD_OK) st = FAD_ERR_CUDA;
    return st;
  }
};

size_t round256(size_t n) { return (n + 255) & ~(size_t)255; }

// -------------------------------------------------------------- forward
constexpr int kSplitBlockM = 64;
int split_block_n(int d) { return d <= 128 ? 128 : 64; }

// Splits for a split-KV forward: enough blocks to fill the GPU once, each
// split keeping at least one key tile, at most 64.
int choose_splits(const fad_attention_fwd_args& a, int sm_count) {
  const int64_t blocks = (int64_t)a.batch * a.heads * ((a.seqlen_q + kSplitBlockM - 1) / kSplitBlockM);
  const int n_blocks = (a.seqlen_k + split_block_n(a.head_dim) - 1) / split_block_n(a.head_dim);
  if (blocks <= 0 || blocks * 5 >= (int64_t)sm_count * 4 || n_blocks < 2) return 1;
  int64_t s = ((int64_t)sm_count + blocks - 1) / blocks;
  if (s > n_blocks) s = n_blocks;
  if (s > 64) s = 64;
  return s < 2 ? 1 : (int)s;
}

struct FwdPlan {
  bool split_path = false;
  int num_splits = 1;
};

FwdPlan plan_fwd(const fad_attention_fwd_args& a, int sm_count) {
  FwdPlan plan;
  const bool paged = a.block_table != nullptr;
  int splits = a.num_splits;
  if (splits == 0) splits = (a.dropout_p > 0.0f || a.cu_seqlens_q != nullptr) ? 1 : choose_splits(a, sm_count);
  plan.num_splits = splits < 1 ? 1 : splits;
  plan.split_path = paged || plan.num_splits > 1;
  return plan;
}

size_t fwd_workspace(const fad_attention_fwd_args& a, const FwdPlan& plan) {
  if (!plan.split_path || plan.num_splits <= 1) return 0;
  const size_t rows = (size_t)a.batch * (size_t)a.heads * (size_t)a.seqlen_q;
  return round256(plan.num_splits * rows * (size_t)a.head_dim * 4) + round256(plan.num_splits * rows * 4);
}

// Copies the caller's struct over the defaults, reading no byte past its
// struct_size, so that callers built against an older header keep working.
template <typename Args>
bool read_args(const Args* in, Args* out, void (*init)(Args*), size_t min_size) {
  init(out);
  if (in == nullptr || in->struct_size < min_size) return false;
  const size_t n = in->struct_size < sizeof(Args) ? in->struct_size : sizeof(Args);
  memcpy(out, in, n);
  return true;
}

fad_status fwd_v2(const fad_attention_fwd_args& a, cudaStream_t stream) {
  int wl = a.window_left, wr = a.window_right;
  bool causal_unit = false;
  const int heads_k = a.heads_k == 0 ? a.heads : a.heads_k;
  fad_status st = check_common(a.dtype, a.batch, a.heads, heads_k, a.seqlen_q, a.seqlen_k, a.head_dim,
                               a.softmax_scale, a.causal, &wl, &wr, a.softcap, a.dropout_p, a.cu_seqlens_q,
                               a.cu_seqlens_k, a.total_q, &causal_unit);
  if (st != FAD_OK) return st;
  const bool paged = a.block_table != nullptr;
  if (paged && (a.page_block_size <= 0 || a.cu_seqlens_k != nullptr || a.block_table_batch_stride < 0))
    return FAD_ERR_INVALID_ARGUMENT;
  if (a.num_splits < 0 || a.num_splits > 256 || a.alibi_batch_stride < 0) return FAD_ERR_INVALID_ARGUMENT;
  if ((paged || a.num_splits > 1) && (a.dropout_p > 0.0f || a.cu_seqlens_q != nullptr))
    return FAD_ERR_INVALID_ARGUMENT;  // split-KV and paged KV serve decoding: no dropout, fixed q lengths
  if ((int64_t)a.batch * a.heads * a.seqlen_q == 0) return FAD_OK;
  if (a.q == nullptr || a.o == nullptr) return FAD_ERR_INVALID_ARGUMENT;
  if ((a.seqlen_k > 0 || a.cu_seqlens_k != nullptr) && (a.k == nullptr || a.v == nullptr)) return FAD_ERR_INVALID_ARGUMENT;

  DeviceInfo dev;
  if ((st = device_info(&dev)) != FAD_OK) return st;
  FwdPlan plan = plan_fwd(a, dev.sm_count);

  Params p;
  memset(&p, 0, sizeof p);
  fill_common(p, a.batch, a.heads, heads_k, a.seqlen_q, a.seqlen_k, a.head_dim, a.softmax_scale, wl, wr, a.softcap,
              a.alibi_slopes, a.alibi_batch_stride, a.dropout_p, a.cu_seqlens_q, a.cu_seqlens_k, a.total_q);
  p.q = a.q;
  p.k = a.k;
  p.v = a.v;
  p.o = a.o;
  p.lse = a.lse;
  p.q_batch = a.q_batch_stride, p.q_head = a.q_head_stride, p.q_row = a.q_row_stride;
  p.k_batch = a.k_batch_stride, p.k_head = a.k_head_stride, p.k_row = a.k_row_stride;
  p.v_batch = a.v_batch_stride, p.v_head = a.v_head_stride, p.v_row = a.v_row_stride;
  p.o_batch = a.o_batch_stride, p.o_head = a.o_head_stride, p.o_row = a.o_row_stride;
  p.seqused_k = a.seqused_k;
  p.seed = a.philox_seed;
  p.offset = a.philox_offset;
  p.rng_out = a.rng_state;
  p.block_table = a.block_table;
  p.block_table_batch = a.block_table_batch_stride;
  p.page_size = a.page_block_size;
  p.num_splits = plan.num_splits;
  p.vec = aligned16(a.q) && aligned16(a.k) && aligned16(a.v) && aligned16(a.o) &&
          strides8(a.q_batch_stride, a.q_head_stride, a.q_row_stride) &&
          strides8(a.k_batch_stride, a.k_head_stride, a.k_row_stride) &&
          strides8(a.v_batch_stride, a.v_head_stride, a.v_row_stride) &&
          strides8(a.o_batch_stride, a.o_head_stride, a.o_row_stride);

  // Decoding with grouped heads: one query per head, no position-dependent
  // mask or bias, so the group's query heads become rows of one KV head and
  // share its K/V tiles (FlashAttention-2 does the same).
  if (plan.split_path && a.seqlen_q == 1 && p.group > 1 && wl < 0 && wr < 0 && a.alibi_slopes == nullptr &&
      a.cu_seqlens_q == nullptr) {
    p.seqlen_q = p.group;
    p.q_row = a.q_head_stride;
    p.q_head = a.q_head_stride * p.group;
    p.o_row = a.o_head_stride;
    p.o_head = a.o_head_stride * p.group;
    p.heads = heads_k;
    p.group = 1;
    p.vec = p.vec && a.q_head_stride % 8 == 0 && a.o_head_stride % 8 == 0;
  }

  const int dir = plan.split_path ? kDirSplit : kDirFwd;
  const Launcher fn = find_launcher(dir, dtype_index(a.dtype), a.head_dim, causal_unit);
  if (fn == nullptr) return FAD_ERR_NOT_BUILT;
  Workspace ws;
  if ((st = ws.acquire(a.workspace, a.workspace_bytes, fwd_workspace(a, plan), stream)) != FAD_OK) return st;
  if (ws.ptr != nullptr) {
    const size_t rows = (size_t)a.batch * (size_t)a.heads * (size_t)a.seqlen_q;
    p.o_accum = static_cast<float*>(ws.ptr);
    p.lse_accum = reinterpret_cast<float*>(static_cast<char*>(ws.ptr) +
                                           round256(plan.num_splits * rows * (size_t)a.head_dim * 4));
  }
  return ws.release(fn(p, dev, stream));
}

// ------------------------------------------------------------- backward
size_t bwd_workspace(const fad_attention_bwd_args& a) {
  if (a.batch <= 0 || a.heads <= 0 || a.head_dim <= 0) return 0;
  const size_t rows = a.cu_seqlens_q != nullptr ? (size_t)a.heads * (size_t)(a.total_q > 0 ? a.total_q : 0)
                                                : (size_t)a.batch * a.heads * (size_t)(a.seqlen_q > 0 ? a.seqlen_q : 0);
  if (rows == 0) return 0;
  const size_t dq = a.deterministic ? 0 : rows * (size_t)a.head_dim * 4;
  return round256(dq + rows * 4);
}

fad_status bwd_v2(const fad_attention_bwd_args& a, cudaStream_t stream) {
  int wl = a.window_left, wr = a.window_right;
  bool causal_unit = false;
  const int heads_k = a.heads_k == 0 ? a.heads : a.heads_k;
  fad_status st = check_common(a.dtype, a.batch, a.heads, heads_k, a.seqlen_q, a.seqlen_k, a.head_dim,
                               a.softmax_scale, a.causal, &wl, &wr, a.softcap, a.dropout_p, a.cu_seqlens_q,
                               a.cu_seqlens_k, a.total_q, &causal_unit);
  if (st != FAD_OK) return st;
  if (a.alibi_batch_stride < 0) return FAD_ERR_INVALID_ARGUMENT;
  if ((int64_t)a.batch * a.heads == 0) return FAD_OK;
  const bool any_q = a.seqlen_q > 0 || a.cu_seqlens_q != nullptr;
  const bool any_k = a.seqlen_k > 0 || a.cu_seqlens_k != nullptr;
  if (!any_q && !any_k) return FAD_OK;
  if (any_q && (a.q == nullptr || a.o == nullptr || a.dout == nullptr || a.dq == nullptr || a.lse == nullptr))
    return FAD_ERR_INVALID_ARGUMENT;
  if (any_k && (a.k == nullptr || a.v == nullptr || a.dk == nullptr || a.dv == nullptr))
    return FAD_ERR_INVALID_ARGUMENT;
  if (a.dropout_p > 0.0f && a.rng_state == nullptr) return FAD_ERR_INVALID_ARGUMENT;

  DeviceInfo dev;
  if ((st = device_info(&dev)) != FAD_OK) return st;
  const Launcher fn = find_launcher(kDirBwd, dtype_index(a.dtype), a.head_dim, causal_unit);
  if (fn == nullptr) return FAD_ERR_NOT_BUILT;

  Params p;
  memset(&p, 0, sizeof p);
  fill_common(p, a.batch, a.heads, heads_k, a.seqlen_q, a.seqlen_k, a.head_dim, a.softmax_scale, wl, wr, a.softcap,
              a.alibi_slopes, a.alibi_batch_stride, a.dropout_p, a.cu_seqlens_q, a.cu_seqlens_k, a.total_q);
  p.q = a.q;
  p.k = a.k;
  p.v = a.v;
  p.o_in = a.o;
  p.dout = a.dout;
  p.lse = const_cast<float*>(a.lse);
  p.dq = a.dq;
  p.dk = a.dk;
  p.dv = a.dv;
  p.q_batch = a.q_batch_stride, p.q_head = a.q_head_stride, p.q_row = a.q_row_stride;
  p.k_batch = a.k_batch_stride, p.k_head = a.k_head_stride, p.k_row = a.k_row_stride;
  p.v_batch = a.v_batch_stride, p.v_head = a.v_head_stride, p.v_row = a.v_row_stride;
  p.o_batch = a.o_batch_stride, p.o_head = a.o_head_stride, p.o_row = a.o_row_stride;
  p.do_batch = a.do_batch_stride, p.do_head = a.do_head_stride, p.do_row = a.do_row_stride;
  p.dq_batch = a.dq_batch_stride, p.dq_head = a.dq_head_stride, p.dq_row = a.dq_row_stride;
  p.dk_batch = a.dk_batch_stride, p.dk_head = a.dk_head_stride, p.dk_row = a.dk_row_stride;
  p.dv_batch = a.dv_batch_stride, p.dv_head = a.dv_head_stride, p.dv_row = a.dv_row_stride;
  p.rng_in = a.rng_state;
  p.deterministic = a.deterministic != 0;
  p.vec = aligned16(a.q) && aligned16(a.k) && aligned16(a.v) && aligned16(a.dout) && aligned16(a.dq) &&
          aligned16(a.dk) && aligned16(a.dv) && strides8(a.q_batch_stride, a.q_head_stride, a.q_row_stride) &&
          strides8(a.k_batch_stride, a.k_head_stride, a.k_row_stride) &&
          strides8(a.v_batch_stride, a.v_head_stride, a.v_row_stride) &&
          strides8(a.do_batch_stride, a.do_head_stride, a.do_row_stride) &&
          strides8(a.dq_batch_stride, a.dq_head_stride, a.dq_row_stride) &&
          strides8(a.dk_batch_stride, a.dk_head_stride, a.dk_row_stride) &&
          strides8(a.dv_batch_stride, a.dv_head_stride, a.dv_row_stride);

  Workspace ws;
  const size_t need = bwd_workspace(a);
  if ((st = ws.acquire(a.workspace, a.workspace_bytes, need, stream)) != FAD_OK) return st;
  if (ws.ptr != nullptr) {
    const size_t rows = a.cu_seqlens_q != nullptr ? (size_t)a.heads * a.total_q : (size_t)a.batch * a.heads * a.seqlen_q;
    p.dq_accum = a.deterministic ? nullptr : static_cast<float*>(ws.ptr);
    p.dsum = static_cast<float*>(ws.ptr) + (a.deterministic ? 0 : rows * a.head_dim);
  }
  return ws.release(fn(p, dev, stream));
}

// ------------------------------------------------------------------ ABI 1
void v1_to_v2(const fad_attention_fwd_params& v1, fad_attention_fwd_args* a) {
  fad_attention_fwd_args_init(a);
  a->dtype = v1.dtype;
  a->q = v1.q, a->k = v1.k, a->v = v1.v, a->o = v1.o, a->lse = v1.lse;
  a->batch = v1.batch, a->heads = v1.heads, a->heads_k = v1.heads;
  a->seqlen_q = v1.seqlen_q, a->seqlen_k = v1.seqlen_k, a->head_dim = v1.head_dim;
  a->q_batch_stride = v1.q_batch_stride, a->q_head_stride = v1.q_head_stride, a->q_row_stride = v1.q_row_stride;
  a->k_batch_stride = v1.k_batch_stride, a->k_head_stride = v1.k_head_stride, a->k_row_stride = v1.k_row_stride;
  a->v_batch_stride = v1.v_batch_stride, a->v_head_stride = v1.v_head_stride, a->v_row_stride = v1.v_row_stride;
  a->o_batch_stride = v1.o_batch_stride, a->o_head_stride = v1.o_head_stride, a->o_row_stride = v1.o_row_stride;
  a->softmax_scale = v1.softmax_scale;
  a->causal = v1.causal;
  a->num_splits = 1;  // ABI 1 took no workspace
}

void v1_to_v2(const fad_attention_bwd_params& v1, fad_attention_bwd_args* a) {
  fad_attention_bwd_args_init(a);
  a->dtype = v1.dtype;
  a->q = v1.q, a->k = v1.k, a->v = v1.v, a->o = v1.o, a->dout = v1.dout, a->lse = v1.lse;
  a->dq = v1.dq, a->dk = v1.dk, a->dv = v1.dv;
  a->batch = v1.batch, a->heads = v1.heads, a->heads_k = v1.heads;
  a->seqlen_q = v1.seqlen_q, a->seqlen_k = v1.seqlen_k, a->head_dim = v1.head_dim;
  a->q_batch_stride = v1.q_batch_stride, a->q_head_stride = v1.q_head_stride, a->q_row_stride = v1.q_row_stride;
  a->k_batch_stride = v1.k_batch_stride, a->k_head_stride = v1.k_head_stride, a->k_row_stride = v1.k_row_stride;
  a->v_batch_stride = v1.v_batch_stride, a->v_head_stride = v1.v_head_stride, a->v_row_stride = v1.v_row_stride;
  a->o_batch_stride = v1.o_batch_stride, a->o_head_stride = v1.o_head_stride, a->o_row_stride = v1.o_row_stride;
  a->do_batch_stride = v1.do_batch_stride, a->do_head_stride = v1.do_head_stride, a->do_row_stride = v1.do_row_stride;
  a->dq_batch_stride = v1.dq_batch_stride, a->dq_head_stride = v1.dq_head_stride, a->dq_row_stride = v1.dq_row_stride;
  a->dk_batch_stride = v1.dk_batch_stride, a->dk_head_stride = v1.dk_head_stride, a->dk_row_stride = v1.dk_row_stride;
  a->dv_batch_stride = v1.dv_batch_stride, a->dv_head_stride = v1.dv_head_stride, a->dv_row_stride = v1.dv_row_stride;
  a->softmax_scale = v1.softmax_scale;
  a->causal = v1.causal;
  a->workspace = v1.workspace;
  a->workspace_bytes = v1.workspace_bytes;
}

// The first ABI 2 struct sizes; a caller may pass these or larger.
constexpr size_t kFwdArgsMin = sizeof(fad_attention_fwd_args);
constexpr size_t kBwdArgsMin = sizeof(fad_attention_bwd_args);

}  // namespace
}  // namespace fad

extern "C" {

void fad_attention_fwd_args_init(fad_attention_fwd_args* a) {
  if (a == nullptr) return;
  memset(a, 0, sizeof *a);
  a->struct_size = sizeof *a;
  a->window_left = a->window_right = -1;
}

void fad_attention_bwd_args_init(fad_attention_bwd_args* a) {
  if (a == nullptr) return;
  memset(a, 0, sizeof *a);
  a->struct_size = sizeof *a;
  a->window_left = a->window_right = -1;
}

fad_status fad_attention_fwd_v2(const fad_attention_fwd_args* args, void* stream) {
  fad_attention_fwd_args a;
  if (!fad::read_args(args, &a, fad_attention_fwd_args_init, fad::kFwdArgsMin)) return FAD_ERR_INVALID_ARGUMENT;
  return fad::fwd_v2(a, static_cast<cudaStream_t>(stream));
}

size_t fad_attention_fwd_workspace_size(const fad_attention_fwd_args* args) {
  fad_attention_fwd_args a;
  if (!fad::read_args(args, &a, fad_attention_fwd_args_init, fad::kFwdArgsMin)) return 0;
  fad::DeviceInfo dev;
  if (fad::device_info(&dev) != FAD_OK) dev.sm_count = 1;
  return fad::fwd_workspace(a, fad::plan_fwd(a, dev.sm_count));
}

fad_status fad_attention_bwd_v2(const fad_attention_bwd_args* args, void* stream) {
  fad_attention_bwd_args a;
  if (!fad::read_args(args, &a, fad_attention_bwd_args_init, fad::kBwdArgsMin)) return FAD_ERR_INVALID_ARGUMENT;
  return fad::bwd_v2(a, static_cast<cudaStream_t>(stream));
}

size_t fad_attention_bwd_workspace_size_v2(const fad_attention_bwd_args* args) {
  fad_attention_bwd_args a;
  if (!fad::read_args(args, &a, fad_attention_bwd_args_init, fad::kBwdArgsMin)) return 0;
  return fad::bwd_workspace(a);
}

fad_status fad_attention_fwd(const fad_attention_fwd_params* p, void* stream) {
  if (p == nullptr) return FAD_ERR_INVALID_ARGUMENT;
  fad_attention_fwd_args a;
  fad::v1_to_v2(*p, &a);
  return fad::fwd_v2(a, static_cast<cudaStream_t>(stream));
}

size_t fad_attention_bwd_workspace_size(const fad_attention_bwd_params* p) {
  if (p == nullptr || p->batch <= 0 || p->heads <= 0 || p->seqlen_q <= 0 || p->head_dim <= 0) return 0;
  fad_attention_bwd_args a;
  fad::v1_to_v2(*p, &a);
  return fad::bwd_workspace(a);
}

fad_status fad_attention_bwd(const fad_attention_bwd_params* p, void* stream) {
  if (p == nullptr) return FAD_ERR_INVALID_ARGUMENT;
  fad_attention_bwd_args a;
  fad::v1_to_v2(*p, &a);
  return fad::bwd_v2(a, static_cast<cudaStream_t>(stream));
}

const char* fad_status_string(fad_status status) {
  switch (status) {
    case FAD_OK: return "FAD_OK";
    case FAD_ERR_UNSUPPORTED_HEAD_DIM: return "FAD_ERR_UNSUPPORTED_HEAD_DIM: head_dim must be 32, 64, 96, 128, 160, 192 or 256";
    case FAD_ERR_UNSUPPORTED_DTYPE: return "FAD_ERR_UNSUPPORTED_DTYPE: dtype must be FAD_DTYPE_FP16 or FAD_DTYPE_BF16";
    case FAD_ERR_UNSUPPORTED_ARCH: return "FAD_ERR_UNSUPPORTED_ARCH: no kernel image for the current device (needs compute capability 8.0+)";
    case FAD_ERR_INVALID_ARGUMENT: return "FAD_ERR_INVALID_ARGUMENT";
    case FAD_ERR_CUDA: return "FAD_ERR_CUDA: CUDA runtime error";
    case FAD_ERR_NOT_BUILT: return "FAD_ERR_NOT_BUILT: this library was built without the unit for this variant";
  }
  return "unknown fad_status";
}

const char* fad_attention_version(void) {
#define FAD_STR2(x) #x
#define FAD_STR(x) FAD_STR2(x)
  return FAD_STR(FAD_ATTENTION_VERSION_MAJOR) "." FAD_STR(FAD_ATTENTION_VERSION_MINOR) "." FAD_STR(
      FAD_ATTENTION_VERSION_PATCH);
}

int fad_attention_abi(void) { return FAD_ATTENTION_ABI; }

int fad_attention_has_variant(int direction, fad_dtype dtype, int head_dim, int causal) {
  if (direction < 0 || direction > 2 || (dtype != FAD_DTYPE_FP16 && dtype != FAD_DTYPE_BF16)) return 0;
  return fad::find_launcher(direction, fad::dtype_index(dtype), head_dim, causal != 0) != nullptr;
}

}  // extern "C"
