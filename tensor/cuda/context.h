// Per-process CUDA state of the backend module (private to tensor/cuda/): how many devices the runtime sees
// (and why none), one compute stream per device, and a guard that switches the calling thread's current
// device for the duration of a scope.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace syncgrad::cuda {

// Number of devices the CUDA runtime sees; 0 when the runtime reports any error (no driver: error 35).
// Queried once; never throws.
int device_count();
// Why device_count() is 0 ("" when it is not): the failing call and its error text.
const std::string& device_count_problem();

// Runtime and driver versions as "13.0" ("none" for the driver when there is no driver).
std::string runtime_version();
std::string driver_version();

// Throws DeviceError("<what>: device index N out of range (M CUDA device(s) visible) ...") unless
// 0 <= index < device_count().
void check_device_index(int index, const char* what);

// The compute stream of `device`, created on first use (a blocking stream: it is ordered with work on the
// legacy default stream, so libraries that use stream 0 stay correct). Every kernel and copy of the module
// runs on it, which also makes the caching allocator's reuse of freed blocks stream-ordered.
cudaStream_t compute_stream(int device);

// Makes `device` the calling thread's current device until the end of the scope.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace syncgrad::cuda
