// Finding and loading backend modules. The CUDA module (libsyncgrad_cuda.so) is looked up beside
// libsyncgrad itself (or at $SYNCGRAD_CUDA_MODULE) and dlopen'ed on the first use of a CUDA device.
#include "tensor/backend.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

#include "syncgrad_config.h"
#include "tensor/dispatch.h"
#include "tensor/errors.h"

namespace syncgrad {
namespace {

struct BackendState {
  std::once_flag loaded;
  DeviceBackend* backend = nullptr;
  std::string reason = "not loaded";
};

BackendState& cuda_state() {
  static BackendState state;
  return state;
}

// Why CUDA requests fail: "no CUDA backend (built without CUDA / no device)", then ": <detail>" if any.
std::string no_cuda_backend(const std::string& detail = "") {
  std::string reason = "no CUDA backend (built without CUDA / no device)";
  if (!detail.empty()) reason += ": " + detail;
  return reason;
}

std::string directory_of_this_library() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&directory_of_this_library), &info) == 0 || info.dli_fname == nullptr) {
    return ".";
  }
  std::string path = info.dli_fname;
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

void load_cuda_module(BackendState& state) {
  if (!SYNCGRAD_HAVE_CUDA && std::getenv("SYNCGRAD_CUDA_MODULE") == nullptr) {
    state.reason = no_cuda_backend();
    return;
  }
  std::string path;
  if (const char* env = std::getenv("SYNCGRAD_CUDA_MODULE")) {
    path = env;
  } else {
    // Build tree: <build>/tensor/cuda/module/<module> (tensor/cuda/module/meson.build); installed: beside libsyncgrad.
    std::string dir = directory_of_this_library();
    path = dir + "/tensor/cuda/module/" + SYNCGRAD_CUDA_MODULE_NAME;
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
      std::fclose(f);
    } else {
      path = dir + "/" + SYNCGRAD_CUDA_MODULE_NAME;
    }
  }
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    state.reason = no_cuda_backend("could not load " + path + ": " + (why ? why : "unknown error"));
    return;
  }
  using InitFn = void (*)();
  auto init = reinterpret_cast<InitFn>(dlsym(handle, kBackendInitSymbol));
  if (init == nullptr) {
    state.reason = no_cuda_backend(path + " lacks " + kBackendInitSymbol);
    return;
  }
  init();
  if (state.backend == nullptr) {
    state.reason = no_cuda_backend("module did not register");
  } else if (state.backend->device_count() == 0) {
    state.reason = no_cuda_backend(state.backend->name() + " sees no CUDA device");
  } else {
    state.reason.clear();
  }
}

}  // namespace

void* DeviceBackend::host_alloc(size_t nbytes) {
  return std::aligned_alloc(64, (std::max<size_t>(nbytes, 1) + 63) / 64 * 64);
}

void DeviceBackend::host_free(void* ptr) { std::free(ptr); }

void register_device_backend(DeviceType type, DeviceBackend* backend) {
  if (type == DeviceType::kCUDA) cuda_state().backend = backend;
}

DeviceBackend* device_backend(DeviceType type) {
  if (type == DeviceType::kCPU) return nullptr;
  BackendState& state = cuda_state();
  std::call_once(state.loaded, [&] { load_cuda_module(state); });
  if (state.backend == nullptr || state.backend->device_count() == 0) return nullptr;
  return state.backend;
}

std::string backend_unavailable_reason(DeviceType type) {
  if (type == DeviceType::kCPU) return "";
  device_backend(type);
  return cuda_state().reason;
}

bool cuda_is_available() { return device_backend(DeviceType::kCUDA) != nullptr; }

int cuda_device_count() {
  DeviceBackend* backend = device_backend(DeviceType::kCUDA);
  return backend == nullptr ? 0 : backend->device_count();
}

namespace detail {

void ensure_backend_loaded(DeviceType type) {
  if (type != DeviceType::kCPU) device_backend(type);
}

void throw_missing_kernel(const char* op, DeviceType type) {
  if (type == DeviceType::kCUDA) {
    std::string reason = backend_unavailable_reason(type);
    if (reason.empty()) reason = "the CUDA backend has no kernel for this op";
    throw DeviceError(std::string(op) + ": " + reason);
  }
  throw DeviceError(std::string(op) + ": no CPU kernel registered (library built incompletely)");
}

}  // namespace detail
}  // namespace syncgrad
