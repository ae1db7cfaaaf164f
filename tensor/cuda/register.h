// The kernel families of the CUDA module, registered into the dispatch table by syncgrad_backend_init()
// (tensor/cuda/backend.cpp) once a device is known to exist. One function per family file.
#pragma once

namespace syncgrad::cuda {

void register_copy_kernels();  // copy_ops.cpp: kernels::fill, kernels::copy
// The "nccl" process-group backend: nccl_process_group.cpp, or nccl_unavailable.cpp (a factory that says why
// there is none) when the module is built without NCCL.
void register_nccl_process_group();

}  // namespace syncgrad::cuda
