// clip_grad_norm_: per-gradient norms reduced on the gradients' device, one host read of the total.
#include "optim/clip_grad.h"

#include <cmath>

#include "autograd/grad_mode.h"
#include "tensor/check.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/reduce.h"
#include "tensor/ops/unary.h"

namespace syncgrad::optim {
namespace {

// 0-dim float64: sum(|g|^p) for finite p, max(|g|) for infinity.
// Half gradients are squared in float32, so large values cannot overflow.
Tensor partial_norm(const Tensor& grad, double norm_type) {
  const bool half = grad.dtype() == DType::f16 || grad.dtype() == DType::bf16;
  const Tensor g = half ? raw::to(grad, DType::f32) : grad;
  if (std::isinf(norm_type)) return raw::to(raw::max(raw::abs(g)), DType::f64);
  if (norm_type == 2.0) return raw::sum(raw::square(g), {}, false, DType::f64);
  if (norm_type == 1.0) return raw::sum(raw::abs(g), {}, false, DType::f64);
  return raw::sum(raw::pow(raw::abs(raw::to(g, DType::f64)), norm_type), {}, false, DType::f64);
}

}  // namespace

double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type,
                       bool error_if_nonfinite) {
  SYNCGRAD_CHECK(norm_type > 0.0, ValueError, "clip_grad_norm_: invalid norm_type ", norm_type,
                 " (must be > 0, or infinity for the max norm)");
  SYNCGRAD_CHECK(max_norm >= 0.0, ValueError, "clip_grad_norm_: invalid max_norm ", max_norm, " (must be >= 0)");
  NoGradGuard no_grad;
  const bool infinity = std::isinf(norm_type);
  std::vector<Tensor> grads;
  Tensor total;  // 0-dim float64 on the first gradient's device
  for (const Tensor& p : params) {
    Tensor g = p.defined() ? p.grad() : Tensor();
    if (!g.defined()) continue;
    grads.push_back(g);
    if (g.numel() == 0) continue;
    Tensor part = partial_norm(g, norm_type);
    if (!total.defined()) {
      total = part;
    } else {
      part = raw::to(part, total.device());
      total = infinity ? raw::maximum(total, part) : raw::add(total, part);
    }
  }
  if (!total.defined()) return 0.0;
  const double accumulated = total.item<double>();
  const double total_norm = infinity || norm_type == 1.0 ? accumulated : std::pow(accumulated, 1.0 / norm_type);
  SYNCGRAD_CHECK(!error_if_nonfinite || std::isfinite(total_norm), ValueError,
                 "clip_grad_norm_: the total norm of order ", norm_type, " of the gradients is ", total_norm,
                 ", so they cannot be clipped; pass error_if_nonfinite = false to scale them by the non-finite norm "
                 "anyway");
  const double coefficient = max_norm / (total_norm + 1e-6);
  if (!(coefficient >= 1.0)) {
    for (const Tensor& g : grads) raw::mul_(g, coefficient);
  }
  return total_norm;
}

}  // namespace syncgrad::optim
