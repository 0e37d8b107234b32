// Torch bindings of the probe's kernels: checks the tensors, launches on
// PyTorch's current stream and turns a CUDA error into a Python exception.
#include <torch/extension.h>

#include <ATen/cuda/CUDAContext.h>

#include "probe_kernels.h"

namespace {

void check_input(const torch::Tensor& t, const char* name) {
  TORCH_CHECK(t.is_cuda(), name, " must be a CUDA tensor");
  TORCH_CHECK(t.scalar_type() == torch::kFloat32, name, " must be float32");
  TORCH_CHECK(t.dim() == 2 && t.is_contiguous(), name, " must be a contiguous 2-D tensor");
}

torch::Tensor row_softmax(const torch::Tensor& x) {
  check_input(x, "x");
  auto out = torch::empty_like(x);
  const auto err = launch_row_softmax(x.data_ptr<float>(), out.data_ptr<float>(), static_cast<int>(x.size(0)),
                                      static_cast<int>(x.size(1)), at::cuda::getCurrentCUDAStream());
  TORCH_CHECK(err == cudaSuccess, "row_softmax launch failed: ", cudaGetErrorString(err));
  return out;
}

torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  check_input(x, "x");
  TORCH_CHECK(weight.is_cuda() && weight.scalar_type() == torch::kFloat32 && weight.dim() == 1 &&
                  weight.size(0) == x.size(1) && weight.is_contiguous(),
              "weight must be a contiguous float32 CUDA vector of x.size(1) elements");
  auto out = torch::empty_like(x);
  const auto err = launch_rms_norm(x.data_ptr<float>(), weight.data_ptr<float>(), out.data_ptr<float>(),
                                   static_cast<int>(x.size(0)), static_cast<int>(x.size(1)),
                                   static_cast<float>(eps), at::cuda::getCurrentCUDAStream());
  TORCH_CHECK(err == cudaSuccess, "rms_norm launch failed: ", cudaGetErrorString(err));
  return out;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("row_softmax", &row_softmax, "softmax over the last dimension of a 2-D float32 tensor");
  m.def("rms_norm", &rms_norm, "RMS norm of each row times weight", py::arg("x"), py::arg("weight"),
        py::arg("eps") = 1e-6);
}
