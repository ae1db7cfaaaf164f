// The shared, reference-counted block of bytes behind one or more tensor views, with its device,
// allocator and a version counter that in-place writes bump (autograd checks saved tensors against it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "tensor/allocator.h"
#include "tensor/device.h"

namespace syncgrad {

class Storage {
 public:
  // Allocates `nbytes` on `device` from that device's allocator.
  Storage(size_t nbytes, Device device);
  // Wraps memory owned elsewhere; `release` runs when the last view goes away.
  Storage(void* data, size_t nbytes, Device device, std::function<void(void*)> release);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  uint64_t version() const { return version_; }
  void bump_version() { ++version_; }

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_;
  Allocator* allocator_ = nullptr;
  std::function<void(void*)> release_;
  uint64_t version_ = 0;
};

}  // namespace syncgrad
