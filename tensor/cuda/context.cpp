// Device discovery, compute streams and the current-device guard of the CUDA backend module.
#include "tensor/cuda/context.h"

#include <array>
#include <cstring>
#include <mutex>
#include <string>

#include "tensor/check.h"
#include "tensor/cuda/check.h"
#include "tensor/errors.h"

namespace syncgrad::cuda {

std::string cuda_error_text(cudaError_t err) {
  const char* name = cudaGetErrorName(err);
  const char* text = cudaGetErrorString(err);
  return std::string(text ? text : "unknown error") + " (" + (name ? name : "cudaError") + " " +
         std::to_string(static_cast<int>(err)) + ")";
}

void throw_cuda_error(cudaError_t err, const char* what, const char* file, int line) {
  cudaGetLastError();  // clear a non-sticky error so it is not reported twice
  const char* base = std::strrchr(file, '/');
  throw DeviceError(std::string(what) + " failed: " + cuda_error_text(err) + " [" + (base ? base + 1 : file) + ":" +
                    std::to_string(line) + "]");
}

namespace {

struct DeviceInfo {
  int count = 0;
  std::string problem;
};

const DeviceInfo& device_info() {
  static const DeviceInfo info = [] {
    DeviceInfo d;
    int count = 0;  // left unwritten by the runtime when there is no driver
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
      cudaGetLastError();
      d.count = 0;
      d.problem = "cudaGetDeviceCount: " + cuda_error_text(err);
    } else if (count <= 0) {
      d.count = 0;
      d.problem = "cudaGetDeviceCount: 0 devices";
    } else {
      d.count = count;
    }
    return d;
  }();
  return info;
}

std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

constexpr int kMaxDevices = 64;

}  // namespace

int device_count() { return device_info().count; }

const std::string& device_count_problem() { return device_info().problem; }

std::string runtime_version() {
  int v = 0;
  if (cudaRuntimeGetVersion(&v) != cudaSuccess) {
    cudaGetLastError();
    return "unknown";
  }
  return version_text(v);
}

std::string driver_version() {
  int v = 0;
  if (cudaDriverGetVersion(&v) != cudaSuccess) {
    cudaGetLastError();
    return "none";
  }
  return v == 0 ? "none" : version_text(v);
}

void check_device_index(int index, const char* what) {
  int n = device_count();
  SYNCGRAD_CHECK(index >= 0 && index < n, DeviceError, what, ": device index ", index, " out of range (", n,
                 " CUDA device(s) visible); check CUDA_VISIBLE_DEVICES");
}

cudaStream_t compute_stream(int device) {
  static std::mutex mutex;
  static std::array<cudaStream_t, kMaxDevices> streams{};
  static std::array<bool, kMaxDevices> created{};
  check_device_index(device, "compute stream");
  SYNCGRAD_CHECK(device < kMaxDevices, DeviceError, "compute stream: device index ", device, " exceeds the supported ",
                 kMaxDevices, " devices");
  std::lock_guard<std::mutex> lock(mutex);
  if (!created[device]) {
    DeviceGuard guard(device);
    cudaStream_t s = nullptr;
    SG_CUDA_CHECK(cudaStreamCreate(&s));
    streams[device] = s;  // never destroyed: tensors may be freed after main returns
    created[device] = true;
  }
  return streams[device];
}

DeviceGuard::DeviceGuard(int device) {
  int current = -1;
  SG_CUDA_CHECK(cudaGetDevice(&current));
  if (current != device) {
    SG_CUDA_CHECK(cudaSetDevice(device));
    previous_ = current;
  }
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0 && cudaSetDevice(previous_) != cudaSuccess) cudaGetLastError();
}

}  // namespace syncgrad::cuda
