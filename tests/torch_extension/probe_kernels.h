// Launchers of the probe's kernels: plain pointers and a stream, so the .cu
// files compile without torch's headers.
#pragma once

#include <cuda_runtime.h>

cudaError_t launch_row_softmax(const float* in, float* out, int rows, int cols, cudaStream_t stream);
cudaError_t launch_rms_norm(const float* in, const float* weight, float* out, int rows, int cols, float eps,
                            cudaStream_t stream);
