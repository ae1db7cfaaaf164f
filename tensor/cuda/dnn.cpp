// cuDNN handles of the CUDA module: one per device, on the device's compute stream.
#include "tensor/cuda/dnn.h"

#include <array>
#include <cstring>
#include <string>

#include "tensor/check.h"
#include "tensor/cuda/context.h"
#include "tensor/errors.h"

namespace syncgrad::cuda {
namespace {

constexpr int kMaxDevices = 64;

}  // namespace

void check_cudnn(cudnnStatus_t status, const char* what, const char* file, int line) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  const char* base = std::strrchr(file, '/');
  const char* text = cudnnGetErrorString(status);
  throw DeviceError(std::string(what) + " failed: " + (text ? text : "unknown cuDNN status") + " (status " +
                    std::to_string(static_cast<int>(status)) + ") [" + (base ? base + 1 : file) + ":" +
                    std::to_string(line) + "]");
}

DnnHandle& dnn_handle(int device) {
  static std::mutex creation;
  static std::array<DnnHandle*, kMaxDevices> handles{};
  check_device_index(device, "cuDNN handle");
  SYNCGRAD_CHECK(device < kMaxDevices, DeviceError, "cuDNN handle: device index ", device, " exceeds the supported ",
                 kMaxDevices, " devices");
  std::lock_guard<std::mutex> lock(creation);
  if (handles[device] == nullptr) {
    DeviceGuard guard(device);
    auto* h = new DnnHandle();  // never destroyed: the runtime may be gone when static destructors run
    SG_CUDNN_CHECK(cudnnCreate(&h->handle));
    SG_CUDNN_CHECK(cudnnSetStream(h->handle, compute_stream(device)));
    handles[device] = h;
  }
  return *handles[device];
}

}  // namespace syncgrad::cuda
