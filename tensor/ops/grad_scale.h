// Raw gradient unscaling for mixed-precision training (optim/grad_scaler.h): each gradient is multiplied by
// 1 / scale in place and checked for inf/NaN in the same pass over its elements. Backends fill the kernel slot.
#pragma once

#include <vector>

#include "tensor/dispatch.h"
#include "tensor/tensor.h"

namespace syncgrad {

namespace kernels {
// grad (contiguous, floating) *= inv_scale in place; found_inf (one float32 element on grad's device) is set
// to 1 when an element of grad, before scaling, is inf or NaN, and left alone otherwise.
extern KernelSlot<void(const Tensor& grad, const Tensor& found_inf, double inv_scale)> unscale_and_check;
}  // namespace kernels

namespace raw {
// Unscales every gradient in place (one pass each; a non-contiguous one through a contiguous copy) and
// returns whether any of them held an inf or NaN. All gradients must be floating and on one device.
bool unscale_grads_(const std::vector<Tensor>& grads, double inv_scale);
}  // namespace raw

}  // namespace syncgrad
