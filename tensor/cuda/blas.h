// cuBLAS for the CUDA module (private to tensor/cuda/): one handle per device, bound to the device's compute
// stream, used under a lock (handles are not safe to share between threads); the TF32 opt-in; errors as
// DeviceError naming the call.
#pragma once

#include <cublas_v2.h>

#include <mutex>

namespace syncgrad::cuda {

// The device's handle, created on first use (with the device current) and never destroyed.
struct BlasHandle {
  cublasHandle_t handle = nullptr;
  std::mutex mutex;  // held for the duration of each call sequence on the handle
};
BlasHandle& blas_handle(int device);

// Whether float32 GEMMs may run on TF32 tensor cores (10-bit mantissa products, f32 accumulation):
// off unless the environment sets SYNCGRAD_CUDA_ALLOW_TF32=1 (read once), as PyTorch's matmul default.
bool tf32_allowed();

// Throws DeviceError("<what> failed: <cuBLAS status> [file:line]") unless status is CUBLAS_STATUS_SUCCESS.
void check_cublas(cublasStatus_t status, const char* what, const char* file, int line);

}  // namespace syncgrad::cuda

#define SG_CUBLAS_CHECK(expr) ::syncgrad::cuda::check_cublas((expr), #expr, __FILE__, __LINE__)
