// attention_cases.cc - see attention_cases.h.
#include "attention_cases.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "reference_attention.h"

namespace fad_cases {

// ------------------------------------------------------------ conversions
uint16_t to_bits(float f, fad_dtype dt) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if (dt == FAD_DTYPE_BF16) {
    if (std::isnan(f)) return 0x7fc0;
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
  }
  const uint32_t sign = (x >> 16) & 0x8000u, mant = x & 0x7fffffu;
  const int exp = (int)((x >> 23) & 0xffu);
  if (exp == 0xff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0u));
  const int e = exp - 127 + 15;
  if (e >= 31) return (uint16_t)(sign | 0x7c00u);
  if (e <= 0) {  // subnormal half: m * 2^-24
    if (e < -10) return (uint16_t)sign;
    const uint32_t m = mant | 0x800000u;
    const int shift = 14 - e;
    uint32_t h = m >> shift;
    const uint32_t rem = m & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (h & 1u))) ++h;
    return (uint16_t)(sign | h);
  }
  uint32_t h = sign | ((uint32_t)e << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry rounds up the exponent, to inf at most
  return (uint16_t)h;
}

float from_bits(uint16_t b, fad_dtype dt) {
  uint32_t x;
  if (dt == FAD_DTYPE_BF16) {
    x = (uint32_t)b << 16;
  } else {
    const uint32_t sign = (uint32_t)(b & 0x8000u) << 16, e = (b >> 10) & 31u, m = b & 1023u;
    if (e == 0) {
      const float v = std::ldexp((float)m, -24);
      return sign ? -v : v;
    }
    x = e == 31 ? (sign | 0x7f800000u | (m << 13)) : (sign | ((e + 112) << 23) | (m << 13));
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

Tol tolerance(fad_dtype dt) {
  return dt == FAD_DTYPE_FP16 ? Tol{2e-3, 1e-2, 1e-3, 1e-2, 2e-2} : Tol{1e-2, 3e-2, 1e-2, 5e-2, 5e-2};
}

void Outcome::fail(const std::string& why) {
  pass = false;
  detail += " " + why;
}

namespace {

const float kPoison = 12345.0f;

bool ok(cudaError_t e, Outcome& out, const char* what) {
  if (e == cudaSuccess) return true;
  out.fail(std::string(what) + ": CUDA error " + std::to_string((int)e));
  return false;
}

template <typename T>
T* dev_copy(const std::vector<T>& v) {
  void* p = nullptr;
  if (cudaMalloc(&p, std::max<size_t>(v.size(), 1) * sizeof(T)) != cudaSuccess) return nullptr;
  if (!v.empty()) cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
  return static_cast<T*>(p);
}

template <typename T>
std::vector<T> host_copy(const T* p, size_t n) {
  std::vector<T> v(n);
  if (n) cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost);
  return v;
}

// A [batch, heads, len_b, d] tensor in device memory: [B,S,H,D] or [B,H,S,D]
// with padded rows, or packed [total, H, D] for varlen. Every element not
// written with data holds a poison value.
struct DevTensor {
  fad_dtype dt;
  int batch, heads, maxlen, d;
  std::vector<int> lens, starts;  // per batch entry; varlen when !starts.empty()
  int64_t sb = 0, sh = 0, sr = 0;
  size_t elems = 0;
  uint16_t* dev = nullptr;

  DevTensor(const Case& c, int h, int maxlen_, const std::vector<int>& varlen)
      : dt(c.dt), batch(c.batch), heads(h), maxlen(maxlen_), d(c.d) {
    const int64_t w = d + c.pad;
    if (!varlen.empty()) {
      int total = 0;
      for (int l : varlen) starts.push_back(total), total += l, lens.push_back(l);
      sb = 0, sh = w, sr = heads * w;
      elems = (size_t)std::max(total, 1) * heads * w;
    } else {
      lens.assign(batch, maxlen);
      if (c.bshd)
        sb = (int64_t)maxlen * heads * w, sh = w, sr = heads * w;
      else
        sb = (int64_t)heads * maxlen * w, sh = (int64_t)maxlen * w, sr = w;
      elems = (size_t)std::max(batch * maxlen, 1) * heads * w;
    }
    dev = dev_copy(std::vector<uint16_t>(elems, to_bits(kPoison, dt)));
  }
  ~DevTensor() { cudaFree(dev); }
  DevTensor(const DevTensor&) = delete;
  DevTensor& operator=(const DevTensor&) = delete;
  size_t at(int b, int h, int i) const {
    return starts.empty() ? (size_t)(b * sb + h * sh + (int64_t)i * sr) : (size_t)((starts[b] + i) * sr + h * sh);
  }
  // Logical fp32 [batch, heads, maxlen, d] (rows past a length are ignored).
  void upload(const std::vector<float>& x) {
    std::vector<uint16_t> host = host_copy(dev, elems);
    for (int b = 0; b < batch; ++b)
      for (int h = 0; h < heads; ++h)
        for (int i = 0; i < lens[b]; ++i)
          for (int e = 0; e < d; ++e) host[at(b, h, i) + e] = to_bits(x[(((size_t)b * heads + h) * maxlen + i) * d + e], dt);
    cudaMemcpy(dev, host.data(), elems * 2, cudaMemcpyHostToDevice);
  }
  std::vector<float> download() const {
    const std::vector<uint16_t> host = host_copy(dev, elems);
    std::vector<float> x((size_t)batch * heads * maxlen * d, 0.0f);
    for (int b = 0; b < batch; ++b)
      for (int h = 0; h < heads; ++h)
        for (int i = 0; i < lens[b]; ++i)
          for (int e = 0; e < d; ++e)
            x[(((size_t)b * heads + h) * maxlen + i) * d + e] = from_bits(host[at(b, h, i) + e], dt);
    return x;
  }
  std::vector<uint16_t> raw() const { return host_copy(dev, elems); }
  // Every element the call may not write still holds the poison.
  bool padding_intact() const {
    const std::vector<uint16_t> host = host_copy(dev, elems);
    std::vector<char> used(elems, 0);
    for (int b = 0; b < batch; ++b)
      for (int h = 0; h < heads; ++h)
        for (int i = 0; i < lens[b]; ++i) std::fill_n(used.begin() + at(b, h, i), d, 1);
    const uint16_t p = to_bits(kPoison, dt);
    for (size_t e = 0; e < elems; ++e)
      if (!used[e] && host[e] != p) return false;
    return true;
  }
};

std::vector<float> rand_rounded(size_t n, std::mt19937& g, fad_dtype dt) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = from_bits(to_bits(dist(g), dt), dt);
  return v;
}

struct Err {
  double err = 0, ref = 0;
};
Err compare(const std::vector<float>& got, const std::vector<float>& ref) {
  Err e;
  for (size_t i = 0; i < ref.size(); ++i) {
    double d = std::fabs((double)got[i] - ref[i]);
    if (!(d == d)) d = 1e30;
    e.err = std::max(e.err, d);
    e.ref = std::max(e.ref, (double)std::fabs(ref[i]));
  }
  return e;
}

void fill(fad_attention_fwd_params& p, const DevTensor& q, const DevTensor& k, const DevTensor& v, const DevTensor& o) {
  p.q_batch_stride = q.sb, p.q_head_stride = q.sh, p.q_row_stride = q.sr;
  p.k_batch_stride = k.sb, p.k_head_stride = k.sh, p.k_row_stride = k.sr;
  p.v_batch_stride = v.sb, p.v_head_stride = v.sh, p.v_row_stride = v.sr;
  p.o_batch_stride = o.sb, p.o_head_stride = o.sh, p.o_row_stride = o.sr;
}

}  // namespace

Outcome run_case(const Case& c, const Hooks& hooks, bool repeat_bwd_bitwise) {
  Outcome out;
  const Tol tol = tolerance(c.dt);
  const int hk = c.heads_k > 0 ? c.heads_k : c.heads;
  std::mt19937 g(std::hash<std::string>{}(c.name) & 0xffffffffu);

  fad_ref::AttentionShape rs;
  rs.batch = c.batch, rs.heads = c.heads, rs.heads_k = hk, rs.seqlen_q = c.sq, rs.seqlen_k = c.sk, rs.head_dim = c.d;
  rs.scale = 1.0f / std::sqrt((float)c.d), rs.causal = c.causal, rs.window_left = c.wl, rs.window_right = c.wr;
  rs.softcap = c.softcap, rs.dropout_p = c.dropout, rs.seed = 0x1234567890abcdefull + c.d, rs.offset = 77ull << 32 | 5;
  rs.seqlens_q = c.lq, rs.seqlens_k = c.lk;
  std::vector<int> seqused;
  if (c.seqused) {
    for (int b = 0; b < c.batch; ++b) seqused.push_back(std::max(0, c.sk - 37 * b));
    rs.seqlens_k = seqused;
  }
  if (c.alibi)
    for (int i = 0; i < (c.alibi_per_batch ? c.batch : 1) * c.heads; ++i) rs.alibi_slopes.push_back(0.05f * (1 + i % 5));

  auto q = rand_rounded(fad_ref::q_elems(rs), g, c.dt), k = rand_rounded(fad_ref::kv_elems(rs), g, c.dt),
       v = rand_rounded(fad_ref::kv_elems(rs), g, c.dt), dout = rand_rounded(fad_ref::q_elems(rs), g, c.dt);
  DevTensor tq(c, c.heads, c.sq, c.lq), to(c, c.heads, c.sq, c.lq), tdo(c, c.heads, c.sq, c.lq),
      tdq(c, c.heads, c.sq, c.lq);
  DevTensor tk(c, hk, c.sk, c.lk), tv(c, hk, c.sk, c.lk), tdk(c, hk, c.sk, c.lk), tdv(c, hk, c.sk, c.lk);
  tq.upload(q), tk.upload(k), tv.upload(v), tdo.upload(dout);
  std::vector<int> cuq, cuk;
  int total_q = 0;
  if (!c.lq.empty()) {
    cuq.push_back(0), cuk.push_back(0);
    for (int b = 0; b < c.batch; ++b) cuq.push_back(cuq.back() + c.lq[b]), cuk.push_back(cuk.back() + c.lk[b]);
    total_q = cuq.back();
  }
  int* d_cuq = c.lq.empty() ? nullptr : dev_copy(cuq);
  int* d_cuk = c.lq.empty() ? nullptr : dev_copy(cuk);
  int* d_used = c.seqused ? dev_copy(seqused) : nullptr;
  float* d_alibi = c.alibi ? dev_copy(rs.alibi_slopes) : nullptr;
  const size_t lse_n = c.lq.empty() ? fad_ref::lse_elems(rs) : (size_t)c.heads * std::max(total_q, 1);
  float* d_lse = dev_copy(std::vector<float>(lse_n, 777.0f));
  uint64_t* d_rng = dev_copy(std::vector<uint64_t>(2, 0));
  auto lse_at = [&](int b, int h, int i) {
    return c.lq.empty() ? ((size_t)b * c.heads + h) * c.sq + i : (size_t)h * total_q + cuq[b] + i;
  };

  // Paged cache: pages of `page` keys, handed out in a shuffled order.
  uint16_t *kc = nullptr, *vc = nullptr;
  int* d_table = nullptr;
  int max_pages = 0;
  int64_t page_stride = 0;
  if (c.page > 0) {
    max_pages = (c.sk + c.page - 1) / c.page;
    const int pages = c.batch * max_pages + 3;
    std::vector<int> order(pages);
    for (int i = 0; i < pages; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), g);
    std::vector<int> table(order.begin(), order.begin() + c.batch * max_pages);
    d_table = dev_copy(table);
    const int64_t w = c.d + c.pad;
    page_stride = (int64_t)c.page * hk * w;
    std::vector<uint16_t> hk_cache(pages * page_stride, to_bits(kPoison, c.dt)), hv_cache(hk_cache);
    for (int b = 0; b < c.batch; ++b)
      for (int h = 0; h < hk; ++h)
        for (int j = 0; j < c.sk; ++j) {
          const size_t at = table[b * max_pages + j / c.page] * page_stride + (int64_t)(j % c.page) * hk * w + h * w;
          for (int e = 0; e < c.d; ++e) {
            const size_t src = (((size_t)b * hk + h) * c.sk + j) * c.d + e;
            hk_cache[at + e] = to_bits(k[src], c.dt);
            hv_cache[at + e] = to_bits(v[src], c.dt);
          }
        }
    kc = dev_copy(hk_cache);
    vc = dev_copy(hv_cache);
  }

  // ---- forward
  if (hooks.before_fwd) hooks.before_fwd(c);
  fad_status st;
  if (c.abi == 1) {
    fad_attention_fwd_params p{};
    p.q = tq.dev, p.k = tk.dev, p.v = tv.dev, p.o = to.dev, p.lse = d_lse, p.dtype = c.dt;
    p.batch = c.batch, p.heads = c.heads, p.seqlen_q = c.sq, p.seqlen_k = c.sk, p.head_dim = c.d;
    fill(p, tq, tk, tv, to);
    p.softmax_scale = rs.scale, p.causal = c.causal;
    st = fad_attention_fwd(&p, nullptr);
  } else {
    fad_attention_fwd_args a;
    fad_attention_fwd_args_init(&a);
    a.dtype = c.dt, a.q = tq.dev, a.o = to.dev, a.lse = d_lse;
    a.k = c.page ? (const void*)kc : (const void*)tk.dev, a.v = c.page ? (const void*)vc : (const void*)tv.dev;
    a.batch = c.batch, a.heads = c.heads, a.heads_k = hk, a.seqlen_q = c.sq, a.seqlen_k = c.sk, a.head_dim = c.d;
    a.q_batch_stride = tq.sb, a.q_head_stride = tq.sh, a.q_row_stride = tq.sr;
    if (c.page) {
      const int64_t w = c.d + c.pad;
      a.k_batch_stride = a.v_batch_stride = page_stride, a.k_head_stride = a.v_head_stride = w;
      a.k_row_stride = a.v_row_stride = hk * w;
      a.block_table = d_table, a.block_table_batch_stride = max_pages, a.page_block_size = c.page;
    } else {
      a.k_batch_stride = tk.sb, a.k_head_stride = tk.sh, a.k_row_stride = tk.sr;
      a.v_batch_stride = tv.sb, a.v_head_stride = tv.sh, a.v_row_stride = tv.sr;
    }
    a.o_batch_stride = to.sb, a.o_head_stride = to.sh, a.o_row_stride = to.sr;
    a.softmax_scale = rs.scale, a.causal = c.causal, a.window_left = c.wl, a.window_right = c.wr;
    a.softcap = c.softcap, a.alibi_slopes = d_alibi, a.alibi_batch_stride = c.alibi_per_batch ? c.heads : 0;
    a.dropout_p = c.dropout, a.philox_seed = rs.seed, a.philox_offset = rs.offset, a.rng_state = d_rng;
    a.cu_seqlens_q = d_cuq, a.cu_seqlens_k = d_cuk, a.total_q = total_q, a.seqused_k = d_used;
    a.num_splits = c.splits;
    st = fad_attention_fwd_v2(&a, nullptr);
  }
  const auto cleanup = [&] {
    for (void* p : {(void*)d_cuq, (void*)d_cuk, (void*)d_used, (void*)d_alibi, (void*)d_lse, (void*)d_rng,
                    (void*)d_table, (void*)kc, (void*)vc})
      if (p) cudaFree(p);
  };
  if (st == FAD_ERR_NOT_BUILT) {
    out.skipped = true;
    cleanup();
    return out;
  }
  if (st != FAD_OK) out.fail(std::string("forward returned ") + fad_status_string(st));
  if (!ok(cudaDeviceSynchronize(), out, "forward")) {
    cleanup();
    return out;
  }
  if (hooks.after) hooks.after(c, false, out);

  std::vector<float> ro(fad_ref::q_elems(rs)), rl(fad_ref::lse_elems(rs));
  fad_ref::attention_forward(rs, q.data(), k.data(), v.data(), ro.data(), rl.data());
  const Err eo = compare(to.download(), ro);
  if (!(eo.err <= tol.fwd_atol + tol.fwd_rtol * eo.ref)) out.fail("O err " + std::to_string(eo.err));
  const std::vector<float> glse = host_copy(d_lse, lse_n);
  double el = 0;
  for (int b = 0; b < c.batch; ++b)
    for (int h = 0; h < c.heads; ++h)
      for (int i = 0; i < (c.lq.empty() ? c.sq : c.lq[b]); ++i) {
        const float r = rl[((size_t)b * c.heads + h) * c.sq + i], got = glse[lse_at(b, h, i)];
        double e = std::isinf(r) ? (std::isinf(got) && got < 0 ? 0.0 : 1e30) : std::fabs((double)got - r);
        if (!(e == e)) e = 1e30;
        el = std::max(el, e);
      }
  if (el > tol.lse_atol) out.fail("LSE err " + std::to_string(el));
  if (!to.padding_intact()) out.fail("O padding overwritten");
  const std::vector<uint64_t> rng = host_copy(d_rng, 2);
  if (c.dropout > 0 && (rng[0] != rs.seed || rng[1] != rs.offset)) out.fail("rng_state not written");
  char buf[256];
  std::snprintf(buf, sizeof buf, " O %.1e LSE %.1e", eo.err, el);
  out.detail = buf + out.detail;

  // ---- backward, from the reference's O and LSE
  if (c.bwd) {
    to.upload(ro);
    std::vector<float> lse_in = glse;
    for (int b = 0; b < c.batch; ++b)
      for (int h = 0; h < c.heads; ++h)
        for (int i = 0; i < (c.lq.empty() ? c.sq : c.lq[b]); ++i) lse_in[lse_at(b, h, i)] = rl[((size_t)b * c.heads + h) * c.sq + i];
    cudaMemcpy(d_lse, lse_in.data(), lse_n * 4, cudaMemcpyHostToDevice);
    auto backward = [&]() {
      if (c.abi == 1) {
        fad_attention_bwd_params p{};
        p.q = tq.dev, p.k = tk.dev, p.v = tv.dev, p.o = to.dev, p.dout = tdo.dev, p.lse = d_lse;
        p.dq = tdq.dev, p.dk = tdk.dev, p.dv = tdv.dev, p.dtype = c.dt;
        p.batch = c.batch, p.heads = c.heads, p.seqlen_q = c.sq, p.seqlen_k = c.sk, p.head_dim = c.d;
        p.q_batch_stride = tq.sb, p.q_head_stride = tq.sh, p.q_row_stride = tq.sr;
        p.k_batch_stride = tk.sb, p.k_head_stride = tk.sh, p.k_row_stride = tk.sr;
        p.v_batch_stride = tv.sb, p.v_head_stride = tv.sh, p.v_row_stride = tv.sr;
        p.o_batch_stride = to.sb, p.o_head_stride = to.sh, p.o_row_stride = to.sr;
        p.do_batch_stride = tdo.sb, p.do_head_stride = tdo.sh, p.do_row_stride = tdo.sr;
        p.dq_batch_stride = tdq.sb, p.dq_head_stride = tdq.sh, p.dq_row_stride = tdq.sr;
        p.dk_batch_stride = tdk.sb, p.dk_head_stride = tdk.sh, p.dk_row_stride = tdk.sr;
        p.dv_batch_stride = tdv.sb, p.dv_head_stride = tdv.sh, p.dv_row_stride = tdv.sr;
        p.softmax_scale = rs.scale, p.causal = c.causal;
        return fad_attention_bwd(&p, nullptr);
      }
      fad_attention_bwd_args a;
      fad_attention_bwd_args_init(&a);
      a.dtype = c.dt, a.q = tq.dev, a.k = tk.dev, a.v = tv.dev, a.o = to.dev, a.dout = tdo.dev, a.lse = d_lse;
      a.dq = tdq.dev, a.dk = tdk.dev, a.dv = tdv.dev;
      a.batch = c.batch, a.heads = c.heads, a.heads_k = hk, a.seqlen_q = c.sq, a.seqlen_k = c.sk, a.head_dim = c.d;
      a.q_batch_stride = tq.sb, a.q_head_stride = tq.sh, a.q_row_stride = tq.sr;
      a.k_batch_stride = tk.sb, a.k_head_stride = tk.sh, a.k_row_stride = tk.sr;
      a.v_batch_stride = tv.sb, a.v_head_stride = tv.sh, a.v_row_stride = tv.sr;
      a.o_batch_stride = to.sb, a.o_head_stride = to.sh, a.o_row_stride = to.sr;
      a.do_batch_stride = tdo.sb, a.do_head_stride = tdo.sh, a.do_row_stride = tdo.sr;
      a.dq_batch_stride = tdq.sb, a.dq_head_stride = tdq.sh, a.dq_row_stride = tdq.sr;
      a.dk_batch_stride = tdk.sb, a.dk_head_stride = tdk.sh, a.dk_row_stride = tdk.sr;
      a.dv_batch_stride = tdv.sb, a.dv_head_stride = tdv.sh, a.dv_row_stride = tdv.sr;
      a.softmax_scale = rs.scale, a.causal = c.causal, a.window_left = c.wl, a.window_right = c.wr;
      a.softcap = c.softcap, a.alibi_slopes = d_alibi, a.alibi_batch_stride = c.alibi_per_batch ? c.heads : 0;
      a.dropout_p = c.dropout, a.rng_state = d_rng;
      a.cu_seqlens_q = d_cuq, a.cu_seqlens_k = d_cuk, a.total_q = total_q;
      a.deterministic = c.deterministic;
      return fad_attention_bwd_v2(&a, nullptr);
    };
    if (hooks.before_bwd) hooks.before_bwd(c);
    st = backward();
    if (st == FAD_ERR_NOT_BUILT) {  // a library of forward units only: the forward was checked
      out.detail += " (backward not built)";
      cleanup();
      return out;
    }
    if (st != FAD_OK) out.fail(std::string("backward returned ") + fad_status_string(st));
    if (!ok(cudaDeviceSynchronize(), out, "backward")) {
      cleanup();
      return out;
    }
    if (hooks.after) hooks.after(c, true, out);
    std::vector<float> rdq(fad_ref::q_elems(rs)), rdk(fad_ref::kv_elems(rs)), rdv(fad_ref::kv_elems(rs));
    fad_ref::attention_backward(rs, q.data(), k.data(), v.data(), dout.data(), rdq.data(), rdk.data(), rdv.data());
    const Err eq = compare(tdq.download(), rdq), ek = compare(tdk.download(), rdk), ev = compare(tdv.download(), rdv);
    if (!(eq.err <= tol.bwd_atol + tol.bwd_rtol * eq.ref)) out.fail("dQ err " + std::to_string(eq.err));
    if (!(ek.err <= tol.bwd_atol + tol.bwd_rtol * ek.ref)) out.fail("dK err " + std::to_string(ek.err));
    if (!(ev.err <= tol.bwd_atol + tol.bwd_rtol * ev.ref)) out.fail("dV err " + std::to_string(ev.err));
    if (!tdq.padding_intact() || !tdk.padding_intact() || !tdv.padding_intact()) out.fail("gradient padding overwritten");
    if (repeat_bwd_bitwise) {
      const auto dq1 = tdq.raw(), dk1 = tdk.raw(), dv1 = tdv.raw();
      st = backward();
      cudaDeviceSynchronize();
      if (st != FAD_OK || tdq.raw() != dq1 || tdk.raw() != dk1 || tdv.raw() != dv1)
        out.fail("a second backward gave different bits");
    }
    std::snprintf(buf, sizeof buf, " dQ %.1e dK %.1e dV %.1e", eq.err, ek.err, ev.err);
    out.detail += buf;
  }
  cleanup();
  return out;
}

// ------------------------------------------------------------------ cases
std::string describe(const Case& c) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "%s d%d %s b%d h%d/%d sq%d sk%d", c.dt == FAD_DTYPE_FP16 ? "fp16" : "bf16", c.d,
                c.causal ? "causal" : "full", c.batch, c.heads, c.heads_k > 0 ? c.heads_k : c.heads, c.sq, c.sk);
  std::string s = buf;
  if (!c.lq.empty()) s += " varlen";
  if (c.wl >= 0 || c.wr >= 0) s += " window(" + std::to_string(c.wl) + "," + std::to_string(c.wr) + ")";
  if (c.softcap > 0) s += " softcap";
  if (c.alibi) s += c.alibi_per_batch ? " alibi/batch" : " alibi";
  if (c.dropout > 0) s += " dropout";
  if (c.page) s += " paged" + std::to_string(c.page);
  if (c.seqused) s += " seqused";
  if (c.splits != 1) s += " splits" + std::to_string(c.splits);
  if (c.deterministic) s += " deterministic";
  if (!c.bshd) s += " bhsd";
  if (c.pad) s += " pad" + std::to_string(c.pad);
  if (c.abi == 1) s += " abi1";
  if (c.small_smem) s += " smem99k";
  if (!c.bwd) s += " fwd-only";
  return s;
}

std::vector<Case> all_cases() {
  std::vector<Case> cs;
  const int dims[] = {32, 64, 96, 128, 160, 192, 256};
  // Every unit's base path: each head dim, dtype and mask, ragged multi-tile
  // shapes (two query blocks, several key tiles, bottom-right causal rows with
  // no visible key), layouts and ABIs alternating.
  int n = 0;
  for (int d : dims)
    for (fad_dtype dt : {FAD_DTYPE_FP16, FAD_DTYPE_BF16})
      for (bool causal : {false, true}) {
        Case c;
        c.dt = dt, c.d = d, c.causal = causal;
        c.sq = causal ? 170 : 150, c.sk = causal ? 140 : 200;
        c.bshd = n % 3 != 1;
        c.pad = n % 4 == 3 ? 8 : 0;
        c.abi = n % 5 == 4 ? 1 : 2;
        ++n;
        c.base = true;
        cs.push_back(c);
      }
  // Tile-multiple lengths take the kernels without bounds checks.
  for (int d : {64, 128, 256}) {
    Case c;
    c.d = d, c.sq = 256, c.sk = 256, c.heads = 1;
    cs.push_back(c);
    c.causal = true, c.dt = FAD_DTYPE_BF16;
    cs.push_back(c);
  }
  // Tiles for 99 KiB devices (the emulator plays such a device).
  for (int d : {32, 96, 128, 160, 192, 256}) {
    Case c;
    c.d = d, c.small_smem = true, c.causal = d % 64 == 0, c.sq = 100, c.sk = 130, c.heads = 1;
    if (d == 128) c.dt = FAD_DTYPE_BF16;
    cs.push_back(c);
  }
  {  // element path: strides that are not multiples of 8
    Case c;
    c.d = 64, c.pad = 3, c.sq = 70, c.sk = 90;
    cs.push_back(c);
  }
  {  // GQA and MQA
    Case c;
    c.d = 128, c.heads = 4, c.heads_k = 2, c.sq = 100, c.sk = 160;
    cs.push_back(c);
    c.heads_k = 1, c.causal = true, c.d = 64, c.dt = FAD_DTYPE_BF16;
    cs.push_back(c);
  }
  {  // variable lengths, including an empty sequence
    Case c;
    c.d = 64, c.batch = 3, c.heads = 2, c.lq = {70, 0, 150}, c.lk = {90, 30, 140}, c.sq = 150, c.sk = 140;
    cs.push_back(c);
    c.causal = true, c.d = 128, c.dt = FAD_DTYPE_BF16, c.heads_k = 1;
    cs.push_back(c);
  }
  for (auto w : {std::pair<int, int>{40, 20}, {-1, 30}, {50, -1}}) {  // sliding windows
    Case c;
    c.d = 64, c.wl = w.first, c.wr = w.second, c.sq = 150, c.sk = 220;
    cs.push_back(c);
  }
  {  // causal with a left window: the sliding-window kernels with right = 0
    Case c;
    c.d = 128, c.causal = true, c.wl = 60, c.sq = 200, c.sk = 200, c.dt = FAD_DTYPE_BF16;
    cs.push_back(c);
  }
  {
    Case c;
    c.d = 96, c.softcap = 5.0f;
    cs.push_back(c);
    c.d = 160, c.causal = true, c.dt = FAD_DTYPE_BF16;
    cs.push_back(c);
  }
  {
    Case c;
    c.d = 64, c.alibi = true, c.batch = 2;
    cs.push_back(c);
    c.d = 128, c.causal = true, c.alibi_per_batch = true, c.dt = FAD_DTYPE_BF16;
    cs.push_back(c);
  }
  {
    Case c;
    c.d = 64, c.dropout = 0.17f;
    cs.push_back(c);
    c.d = 128, c.causal = true, c.dt = FAD_DTYPE_BF16, c.heads = 2, c.heads_k = 1;
    cs.push_back(c);
  }
  {
    Case c;
    c.d = 64, c.deterministic = true;
    cs.push_back(c);
    c.d = 256, c.causal = true, c.dt = FAD_DTYPE_BF16, c.dropout = 0.1f, c.heads = 2, c.heads_k = 1;
    cs.push_back(c);
  }
  {  // split-KV and paged KV (decoding)
    Case c;
    c.bwd = false, c.d = 128, c.sq = 3, c.sk = 700, c.heads = 4, c.heads_k = 1, c.splits = 3;
    cs.push_back(c);
    c.splits = 0, c.sq = 1, c.d = 64;  // automatic splits, GQA heads folded into rows
    cs.push_back(c);
    c.splits = 1, c.page = 64, c.sq = 2, c.d = 128, c.seqused = true, c.batch = 2, c.causal = true;
    cs.push_back(c);
    c.splits = 4, c.page = 48, c.d = 256, c.dt = FAD_DTYPE_BF16, c.wl = 100, c.causal = false, c.softcap = 3.0f;
    cs.push_back(c);
    c.splits = 2, c.page = 16, c.d = 32, c.alibi = true, c.wl = -1, c.softcap = 0, c.seqused = false, c.sq = 70;
    c.dt = FAD_DTYPE_FP16;
    cs.push_back(c);
  }
  for (auto& c : cs) c.name = describe(c);
  return cs;
}

}  // namespace fad_cases
