"""PyTorch (pytorch/pytorch): `errkb serve` harvests the release the reproducers pin and run
as installed (taken from the installed distribution when it is that release, so the 0.5 GB
wheel is not downloaded again), then the last patch of every older 2.x minor in the
background; its `torch._check*` functions raise when a condition fails."""

import re

from app.upstreams.base import CudaErrorReport, UpstreamProject, releases

# Its compiled libraries, as its wheels lay them out (a CPU build lacks the CUDA ones).
LIBRARIES = tuple(
    f"torch/lib/{name}.so"
    for name in (
        "libc10",
        "libtorch_cpu",
        "libtorch_python",
        "libc10_cuda",
        "libtorch_cuda",
        "libtorch_cuda_linalg",  # cuSOLVER/MAGMA's linear algebra, loaded on first use
    )
)

PROJECT = UpstreamProject(
    package="torch",
    repo="pytorch/pytorch",
    distribution="torch",
    # The wheel's headers, each where the repository keeps it; their inline checks raise
    # in every program that includes them (the compiled libraries' messages are read apart).
    native_sources={
        "torch/include/ATen": "aten/src/ATen",
        "torch/include/c10": "c10",
        "torch/include/torch/csrc": "torch/csrc",
        "torch/include/torch/headeronly": "torch/headeronly",
    },
    # Its checks in .cpp/.cu files are only in these: the installed build's (the CPU wheel's
    # say what only a CPU build says, "Torch not compiled with CUDA enabled"), then the Linux
    # CUDA wheel's, which every release has on the index and the CPU and macOS wheels lack
    # the CUDA-only messages of (a message both give is drafted once, from the first).
    native_libraries=LIBRARIES,
    build_libraries=LIBRARIES,
    build_platform=re.compile(r"manylinux\w*_x86_64"),  # manylinux1 for 2.0, 2_28 since
    # C10_CUDA_CHECK: `CUDA error: ` + cudaGetErrorString(code), an AcceleratorError since
    # 2.8 (torch/_C/__init__.pyi), a RuntimeError before.
    cuda_errors=CudaErrorReport(
        file="c10/cuda/CUDAException.cpp",
        prefix="CUDA error: ",
        error_class="torch.AcceleratorError",
        since="2.8",
        older_class="RuntimeError",
    ),
    # C10D_NCCL_CHECK and its kin: `NCCL error in: FILE:LINE, ` + ncclGetErrorString(code)...
    nccl_check="torch/csrc/distributed/c10d/NCCLUtils.hpp",
    current_release="torch==2.13.0",
    # People paste from every torch 2 release (2023 onwards). Newest first.
    older_releases=releases(
        "torch", "2.12.1 2.11.0 2.10.0 2.9.1 2.8.0 2.7.1 2.6.0 2.5.1 2.4.1 2.3.1 2.2.2 2.1.2 2.0.1"
    ),
    # Linux's wheels carry CUDA (0.7-0.9 GB each); macOS arm64's hold the same Python
    # sources in 55-90 MB. The tag is pip's newest wanted: it takes a wheel for any macOS
    # from 11.0 up to it (torch 2.0-2.4 were built for 11.0, later ones for 14.0 only).
    sources_platform="macosx_14_0_arm64",
    # torch/__init__.py: the exception each check raises when its condition is false.
    parameters_are_settings=True,
    public_api_entry_points=True,
    installed=True,
    checks={
        "torch._check": "RuntimeError",
        "torch._check_index": "IndexError",
        "torch._check_value": "ValueError",
        "torch._check_type": "TypeError",
        "torch._check_not_implemented": "NotImplementedError",
    },
    plain_values={"params": "[torch.nn.Parameter(torch.zeros(2))]"},
    # torch/_C/__init__.pyi and torch/_C/_distributed_c10d.pyi: a CUDA error is an
    # AcceleratorError since 2.8, a RuntimeError before; NCCL's are DistBackendErrors.
    native_exceptions={
        "AcceleratorError": ("RuntimeError",),
        "OutOfMemoryError": ("RuntimeError",),
        "DistError": ("RuntimeError",),
        "DistBackendError": ("DistError",),
        "DistNetworkError": ("DistError",),
        "DistStoreError": ("DistError",),
    },
)
