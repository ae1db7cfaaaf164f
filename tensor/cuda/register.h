// The kernel families of the CUDA module, registered into the dispatch table by syncgrad_backend_init()
// (tensor/cuda/backend.cpp) once a device is known to exist. One function per family file.
#pragma once

namespace syncgrad::cuda {

void register_copy_kernels();  // copy_ops.cpp: kernels::fill, kernels::copy

}  // namespace syncgrad::cuda
