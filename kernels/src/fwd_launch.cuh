// fwd_launch.cuh - host launchers of the forward units. Each turns the
// runtime features of one call into the template switches of the kernel it
// launches; every combination the dispatch can reach is instantiated in the
// unit, and none that it cannot (a causal unit has no sliding-window kernels,
// the paged path always bounds-checks, dropout never splits).
#pragma once

#include "fwd_kernel.cuh"
#include "launch.cuh"

namespace fad {

// Sliding-window kernels exist in the non-causal units only: a causal call
// with a left window is routed there with window_right = 0.
template <bool CAUSAL, typename F>
inline fad_status local_switch(bool local, F&& f) {
  if constexpr (CAUSAL) {
    (void)local;
    return f(std::false_type{});
  } else {
    return bool_switch(local, f);
  }
}

inline bool is_local(const Params& p) { return p.window_left >= 0 || p.window_right >= 0; }
inline bool fixed_lengths(const Params& p) {
  return p.cu_q == nullptr && p.cu_k == nullptr && p.seqused_k == nullptr;
}

template <typename K, bool CAUSAL>
fad_status run_fwd_cfg(const Params& p, cudaStream_t stream) {
  const bool even = fixed_lengths(p) && p.seqlen_q % K::BM == 0 && p.seqlen_k % K::BN == 0;
  const dim3 grid((p.seqlen_q + K::BM - 1) / K::BM, p.heads, p.batch);
  return bool_switch(p.dropout, [&](auto drop) {
    return bool_switch(even, [&](auto ev) {
      return bool_switch(p.alibi != nullptr, [&](auto alibi) {
        return bool_switch(p.softcap_in > 0.0f, [&](auto cap) {
          return local_switch<CAUSAL>(is_local(p), [&](auto local) {
            auto kernel = fwd_kernel<K, CAUSAL, decltype(local)::value, decltype(ev)::value, decltype(alibi)::value,
                                     decltype(cap)::value, decltype(drop)::value, false, false>;
            return launch_kernel(kernel, grid, K::kThreads, K::kSmem, stream, p);
          });
        });
      });
    });
  });
}

// The plain forward of one (dtype, head dim, causal) unit.
template <typename T, int D, bool CAUSAL>
fad_status run_fwd(const Params& p, const DeviceInfo& dev, cudaStream_t stream) {
  using Big = typename FwdCfg<T, D, true>::K;
  using Small = typename FwdCfg<T, D, false>::K;
  if (Big::kSmem <= dev.smem_optin) return run_fwd_cfg<Big, CAUSAL>(p, stream);
  return run_fwd_cfg<Small, CAUSAL>(p, stream);
}

// The split-KV / paged forward: num_splits > 1 writes partial results to
// p.o_accum / p.lse_accum and merges them with combine_kernel.
template <typename T, int D, bool CAUSAL>
fad_status run_fwd_split(const Params& p, const DeviceInfo& dev, cudaStream_t stream) {
  (void)dev;
  using K = typename SplitCfg<T, D>::K;
  const bool paged = p.block_table != nullptr;
  const bool split = p.num_splits > 1;
  const bool even = !paged && fixed_lengths(p) && p.seqlen_q % K::BM == 0 && p.seqlen_k % K::BN == 0;
  const int m_blocks = (p.seqlen_q + K::BM - 1) / K::BM;
  const dim3 grid(m_blocks * (split ? p.num_splits : 1), p.heads, p.batch);
  fad_status st = bool_switch(split, [&](auto sp) {
    // Paged keys are read row by row through the block table and always
    // bounds-checked: no even-length kernels for them.
    auto layout = [&](auto f) {
      return paged ? f(std::true_type{}, std::false_type{})
                   : bool_switch(even, [&](auto ev) { return f(std::false_type{}, ev); });
    };
    return layout([&](auto pg, auto ev) {
      return bool_switch(p.alibi != nullptr, [&](auto alibi) {
        return bool_switch(p.softcap_in > 0.0f, [&](auto cap) {
          return local_switch<CAUSAL>(is_local(p), [&](auto local) {
            auto kernel = fwd_kernel<K, CAUSAL, decltype(local)::value, decltype(ev)::value, decltype(alibi)::value,
                                     decltype(cap)::value, false, decltype(sp)::value, decltype(pg)::value>;
            return launch_kernel(kernel, grid, K::kThreads, K::kSmem, stream, p);
          });
        });
      });
    });
  });
  if (st != FAD_OK || !split) return st;
  const int64_t rows = (int64_t)p.batch * p.heads * p.seqlen_q;
  return launch_kernel(combine_kernel<T, D>, dim3((unsigned)((rows + 3) / 4)), 128, 0, stream, p);
}

}  // namespace fad
