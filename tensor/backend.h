// The device-backend seam: what a non-CPU backend module (the CUDA module) provides beyond its kernels, and
// how the library finds it. The module is a shared object loaded with dlopen on first use of its device, so
// CPU-only programs never load cuBLAS/cuDNN. No CUDA header is ever included from here.
#pragma once

#include <string>

#include "tensor/allocator.h"
#include "tensor/device.h"

namespace syncgrad {

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  virtual std::string name() const = 0;  // "CUDA 13.0 (driver ...)"
  virtual int device_count() const = 0;  // 0 when there is no usable device
  virtual Allocator& allocator(int index) = 0;
  // Copies nbytes between host and device or device and device; `non_blocking` from/to pinned memory.
  virtual void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes,
                          bool non_blocking) = 0;
  virtual void synchronize(int index) = 0;
  // Page-locked (pinned) host memory, from which copy_bytes to a device can run asynchronously; 64-byte
  // aligned; nullptr when it cannot be had. The default is plain aligned host memory (nothing to pin).
  virtual void* host_alloc(size_t nbytes);
  // Gives back a pointer from host_alloc.
  virtual void host_free(void* ptr);
};

// Called by a backend module's init function.
void register_device_backend(DeviceType type, DeviceBackend* backend);

// The backend for `type`, loading its module on first call; nullptr when it is unavailable. The reason it
// is unavailable (not built, module failed to load, no device) is given by backend_unavailable_reason().
DeviceBackend* device_backend(DeviceType type);
std::string backend_unavailable_reason(DeviceType type);

// True when a CUDA backend module was loaded and sees at least one device.
bool cuda_is_available();
int cuda_device_count();

// Name of the exported C function a backend module must define; it registers the backend and its kernels.
inline constexpr const char* kBackendInitSymbol = "syncgrad_backend_init";

}  // namespace syncgrad
