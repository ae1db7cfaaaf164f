// cuBLAS handles of the CUDA module: one per device, on the device's compute stream.
#include "tensor/cuda/blas.h"

#include <array>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tensor/check.h"
#include "tensor/cuda/check.h"
#include "tensor/cuda/context.h"
#include "tensor/errors.h"

namespace syncgrad::cuda {
namespace {

constexpr int kMaxDevices = 64;

}  // namespace

void check_cublas(cublasStatus_t status, const char* what, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  const char* base = std::strrchr(file, '/');
  const char* text = cublasGetStatusString(status);
  throw DeviceError(std::string(what) + " failed: " + (text ? text : "unknown cuBLAS status") + " (status " +
                    std::to_string(static_cast<int>(status)) + ") [" + (base ? base + 1 : file) + ":" +
                    std::to_string(line) + "]");
}

BlasHandle& blas_handle(int device) {
  static std::mutex creation;
  static std::array<BlasHandle*, kMaxDevices> handles{};
  check_device_index(device, "cuBLAS handle");
  SYNCGRAD_CHECK(device < kMaxDevices, DeviceError, "cuBLAS handle: device index ", device, " exceeds the supported ",
                 kMaxDevices, " devices");
  std::lock_guard<std::mutex> lock(creation);
  if (handles[device] == nullptr) {
    DeviceGuard guard(device);
    auto* h = new BlasHandle();  // never destroyed: the runtime may be gone when static destructors run
    SG_CUBLAS_CHECK(cublasCreate(&h->handle));
    SG_CUBLAS_CHECK(cublasSetStream(h->handle, compute_stream(device)));
    if (tf32_allowed()) SG_CUBLAS_CHECK(cublasSetMathMode(h->handle, CUBLAS_TF32_TENSOR_OP_MATH));
    handles[device] = h;
  }
  return *handles[device];
}

bool tf32_allowed() {
  static const bool allowed = [] {
    const char* env = std::getenv("SYNCGRAD_CUDA_ALLOW_TF32");
    return env != nullptr && std::strcmp(env, "1") == 0;
  }();
  return allowed;
}

}  // namespace syncgrad::cuda
