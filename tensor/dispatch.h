// The op -> kernel dispatch table. Every raw op owns one KernelSlot per kernel signature; backends fill the
// slots for their device type (the CPU kernels at library load, the CUDA module when it is loaded on the
// first use of a CUDA device). An empty slot raises "<op>: no CUDA backend (built without CUDA / no device)".
#pragma once

#include <utility>

#include "tensor/device.h"

namespace syncgrad {

namespace detail {
// Loads the backend module for `type` once (no-op for the CPU). Defined in tensor/backend.cpp.
void ensure_backend_loaded(DeviceType type);
[[noreturn]] void throw_missing_kernel(const char* op, DeviceType type);
}  // namespace detail

template <class Sig> class KernelSlot;

template <class R, class... Args>
class KernelSlot<R(Args...)> {
 public:
  using Fn = R (*)(Args...);

  // constexpr so slots are constant-initialised before any registrar runs.
  constexpr explicit KernelSlot(const char* op) : op_(op) {}

  void set(DeviceType type, Fn fn) { fns_[static_cast<int>(type)] = fn; }
  const char* op() const { return op_; }
  // Whether a kernel is registered for `type` now (loads no backend): for optional fused kernels, whose callers
  // compose unfused ops where a device has none.
  bool has(DeviceType type) const { return fns_[static_cast<int>(type)] != nullptr; }

  Fn get(DeviceType type) const {
    Fn fn = fns_[static_cast<int>(type)];
    if (fn == nullptr) {
      detail::ensure_backend_loaded(type);
      fn = fns_[static_cast<int>(type)];
      if (fn == nullptr) detail::throw_missing_kernel(op_, type);
    }
    return fn;
  }

  template <class... CallArgs>
  R operator()(Device device, CallArgs&&... args) const {
    return get(device.type)(std::forward<CallArgs>(args)...);
  }

 private:
  const char* op_;
  Fn fns_[kNumDeviceTypes] = {};
};

// Registers `fn` into `slot` for `type` during static initialisation:
//   static const KernelRegistrar reg_add(kernels::binary, DeviceType::kCPU, &cpu_binary);
struct KernelRegistrar {
  template <class Slot, class Fn>
  KernelRegistrar(Slot& slot, DeviceType type, Fn fn) {
    slot.set(type, fn);
  }
};

}  // namespace syncgrad
