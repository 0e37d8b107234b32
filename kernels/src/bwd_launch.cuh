// bwd_launch.cuh - host launcher of the backward units: preprocess, the main
// kernel (large or small tiles by the device's shared memory), then either the
// dQ conversion or, for a deterministic backward, the dQ kernel.
#pragma once

#include "bwd_kernel.cuh"
#include "fwd_launch.cuh"

namespace fad {

// Calls f(drop, even, alibi, cap, local) with the switches of one backward call.
template <bool CAUSAL, typename F>
fad_status bwd_switches(const Params& p, bool even, F&& f) {
  return bool_switch(p.dropout, [&](auto drop) {
    return bool_switch(even, [&](auto ev) {
      return bool_switch(p.alibi != nullptr, [&](auto alibi) {
        return bool_switch(p.softcap_in > 0.0f, [&](auto cap) {
          return local_switch<CAUSAL>(is_local(p), [&](auto local) { return f(drop, ev, alibi, cap, local); });
        });
      });
    });
  });
}

template <typename K, bool CAUSAL>
fad_status run_bwd_main(const Params& p, cudaStream_t stream) {
  const bool even = fixed_lengths(p) && p.seqlen_q % K::BM == 0 && p.seqlen_k % K::BN == 0;
  const dim3 grid((p.seqlen_k + K::BN - 1) / K::BN, p.heads_k, p.batch);
  return bwd_switches<CAUSAL>(p, even, [&](auto drop, auto ev, auto alibi, auto cap, auto local) {
    auto kernel = bwd_kernel<K, CAUSAL, decltype(local)::value, decltype(ev)::value, decltype(alibi)::value,
                             decltype(cap)::value, decltype(drop)::value>;
    return launch_kernel(kernel, grid, K::kThreads, K::kSmem, stream, p);
  });
}

template <typename T, int D, bool CAUSAL>
fad_status run_bwd(const Params& p, const DeviceInfo& dev, cudaStream_t stream) {
  const dim3 rows((p.seqlen_q + 3) / 4, p.heads, p.batch);
  fad_status st = launch_kernel(bwd_preprocess<T, D>, rows, 128, 0, stream, p);
  if (st != FAD_OK) return st;
  using Big = typename BwdCfg<T, D, true>::K;
  using Small = typename BwdCfg<T, D, false>::K;
  st = Big::kSmem <= dev.smem_optin ? run_bwd_main<Big, CAUSAL>(p, stream) : run_bwd_main<Small, CAUSAL>(p, stream);
  if (st != FAD_OK) return st;
  if (!p.deterministic) return launch_kernel(bwd_convert_dq<T, D>, rows, 128, 0, stream, p);

  using K = typename DqCfg<T, D>::K;
  const bool even = fixed_lengths(p) && p.seqlen_q % K::BM == 0 && p.seqlen_k % K::BN == 0;
  const dim3 grid((p.seqlen_q + K::BM - 1) / K::BM, p.heads, p.batch);
  return bwd_switches<CAUSAL>(p, even, [&](auto drop, auto ev, auto alibi, auto cap, auto local) {
    auto kernel = bwd_dq_kernel<K, CAUSAL, decltype(local)::value, decltype(ev)::value, decltype(alibi)::value,
                                decltype(cap)::value, decltype(drop)::value>;
    return launch_kernel(kernel, grid, K::kThreads, K::kSmem, stream, p);
  });
}

}  // namespace fad
