# A small PyTorch CUDA extension of our own, built the way PyTorch users build
# theirs (torch.utils.cpp_extension with ninja), so a test can show that every
# nvcc call of such a build goes through fad. The kernels live in .cu files
# that need no torch headers; the torch glue is one C++ file.
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="fad_torch_probe",
    ext_modules=[
        CUDAExtension(
            "fad_torch_probe",
            ["probe.cpp", "row_softmax.cu", "rms_norm.cu"],
            extra_compile_args={"cxx": ["-O2"], "nvcc": ["-O3"]},
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
