// Raw gradient unscaling: argument checks, the per-device found-inf flag and the kernel calls.
#include "tensor/ops/grad_scale.h"

#include <string>

#include "tensor/check.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"

namespace syncgrad {

namespace kernels {
constinit KernelSlot<void(const Tensor&, const Tensor&, double)> unscale_and_check("unscale_grads_");
}  // namespace kernels

namespace raw {

bool unscale_grads_(const std::vector<Tensor>& grads, double inv_scale) {
  if (grads.empty()) return false;
  const Device device = grads[0].device();
  Tensor found_inf = zeros({1}, {.dtype = DType::f32, .device = device});
  for (size_t i = 0; i < grads.size(); ++i) {
    const Tensor& grad = grads[i];
    SYNCGRAD_CHECK(is_floating(grad.dtype()), DTypeError, "unscale_grads_: gradient ", i, " has dtype ",
                   dtype_name(grad.dtype()), "; gradients are floating point");
    check_same_device("unscale_grads_", grads[0], grad);
    if (grad.numel() == 0) continue;
    if (grad.is_contiguous()) {
      kernels::unscale_and_check(device, grad, found_inf, inv_scale);
    } else {
      Tensor dense = contiguous(grad);
      kernels::unscale_and_check(device, dense, found_inf, inv_scale);
      copy_(grad, dense);
    }
  }
  return found_inf.item<float>() != 0.0f;
}

}  // namespace raw
}  // namespace syncgrad
