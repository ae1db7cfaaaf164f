// Raw copy/conversion front-ends: broadcasting, dtype and device conversion, version bumps.
#include "tensor/ops/copy.h"

#include "tensor/backend.h"
#include "tensor/check.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad {

namespace kernels {
constinit KernelSlot<void(const Tensor&, const Tensor&)> copy("copy_");
constinit KernelSlot<void(const Tensor&, const Scalar&)> fill("fill_");
}  // namespace kernels

namespace raw {

void copy_(const Tensor& dst, const Tensor& src, bool non_blocking) {
  Tensor expanded = src.sizes() == dst.sizes() ? src : expand(src, dst.sizes());
  if (dst.device() == src.device()) {
    kernels::copy(dst.device(), dst, expanded);
  } else {
    // Across devices: make a contiguous source of dst's dtype, move the bytes, then copy into dst's layout.
    Tensor staged = contiguous(to(expanded, dst.dtype()));
    Device backend_device = dst.device().is_cpu() ? src.device() : dst.device();
    DeviceBackend* backend = device_backend(backend_device.type);
    SYNCGRAD_CHECK(backend != nullptr, DeviceError, "copy_ from ", src.device().str(), " to ", dst.device().str(), ": ",
                   backend_unavailable_reason(backend_device.type));
    Tensor target = dst.is_contiguous() ? dst : empty(dst.sizes(), {.dtype = dst.dtype(), .device = dst.device()});
    backend->copy_bytes(target.data_ptr(), target.device(), staged.data_ptr(), staged.device(), staged.nbytes(),
                        non_blocking);
    if (!target.is_same(dst)) kernels::copy(dst.device(), dst, target);
  }
  dst.impl()->storage()->bump_version();
}

void fill_(const Tensor& dst, const Scalar& value) {
  kernels::fill(dst.device(), dst, value);
  dst.impl()->storage()->bump_version();
}

Tensor contiguous(const Tensor& t) {
  if (t.is_contiguous()) return t;
  return clone(t);
}

Tensor clone(const Tensor& t) {
  Tensor out = empty(t.sizes(), {.dtype = t.dtype(), .device = t.device()});
  kernels::copy(t.device(), out, t);
  return out;
}

Tensor to(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor out = empty(t.sizes(), {.dtype = dtype, .device = t.device()});
  kernels::copy(t.device(), out, t);
  return out;
}

Tensor to(const Tensor& t, Device device, bool non_blocking) {
  if (t.device() == device) return t;
  Tensor out = empty(t.sizes(), {.dtype = t.dtype(), .device = device});
  copy_(out, t, non_blocking);
  return out;
}

}  // namespace raw
}  // namespace syncgrad
