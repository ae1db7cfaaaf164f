// cuDNN for the CUDA module (private to tensor/cuda/): one handle per device, bound to the device's compute
// stream and used under a lock; errors as DeviceError naming the call.
#pragma once

#include <cudnn.h>

#include <mutex>

namespace syncgrad::cuda {

struct DnnHandle {
  cudnnHandle_t handle = nullptr;
  std::mutex mutex;  // held for the duration of each call sequence on the handle
};
// The device's handle, created on first use (with the device current) and never destroyed.
DnnHandle& dnn_handle(int device);

// Throws DeviceError("<what> failed: <cuDNN status> [file:line]") unless status is CUDNN_STATUS_SUCCESS.
void check_cudnn(cudnnStatus_t status, const char* what, const char* file, int line);

}  // namespace syncgrad::cuda

#define SG_CUDNN_CHECK(expr) ::syncgrad::cuda::check_cudnn((expr), #expr, __FILE__, __LINE__)
