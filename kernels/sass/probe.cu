// probe.cu - the kernels check_sass.py compiles in CI: per direction, the
// switch combination with the most live state (sliding window, ragged
// lengths, ALiBi, softcap, dropout) at the head dims whose tiles differ most,
// plus the plainest forward. Explicit instantiations of the library's own
// templates; the real units instantiate the same kernels among others.
#include "bwd_launch.cuh"

namespace fad {

#define FAD_FWD(T, D, BIG, C, L, E, A, S, DR, SP, PG) \
  template __global__ void fwd_kernel<typename FwdCfg<T, D, BIG>::K, C, L, E, A, S, DR, SP, PG>(const Params);
#define FAD_SPLIT(T, D, C, L, E, A, S, SP, PG) \
  template __global__ void fwd_kernel<typename SplitCfg<T, D>::K, C, L, E, A, S, false, SP, PG>(const Params);
#define FAD_BWD(T, D, BIG, C, L, E, A, S, DR) \
  template __global__ void bwd_kernel<typename BwdCfg<T, D, BIG>::K, C, L, E, A, S, DR>(const Params);
#define FAD_DQ(T, D, C, L, E, A, S, DR) \
  template __global__ void bwd_dq_kernel<typename DqCfg<T, D>::K, C, L, E, A, S, DR>(const Params);

FAD_FWD(__half, 128, true, false, false, false, false, false, false, false, false)
FAD_FWD(__half, 64, true, false, true, false, true, true, true, false, false)
FAD_FWD(__nv_bfloat16, 128, true, false, true, false, true, true, true, false, false)
FAD_FWD(__half, 256, true, false, true, false, true, true, true, false, false)
FAD_SPLIT(__half, 128, false, true, false, true, true, true, true)
FAD_BWD(__half, 64, true, false, true, false, true, true, true)
FAD_BWD(__nv_bfloat16, 128, true, false, true, false, true, true, true)
FAD_BWD(__half, 128, false, true, false, false, true, true, true)
FAD_BWD(__half, 256, true, false, true, false, true, true, true)
FAD_DQ(__half, 128, false, true, false, true, true, true)

}  // namespace fad
