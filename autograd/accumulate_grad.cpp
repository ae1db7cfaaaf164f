// AccumulateGrad: leaf hooks, accumulation into .grad, post-accumulate hooks.
#include "autograd/accumulate_grad.h"

#include "autograd/grad_mode.h"
#include "autograd/meta.h"
#include "tensor/check.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/views.h"

namespace syncgrad::autograd {

AccumulateGrad::AccumulateGrad(const Tensor& leaf) : leaf_(leaf.impl_ptr()) {}

Tensor AccumulateGrad::leaf() const { return Tensor(leaf_.lock()); }

GradList AccumulateGrad::apply(GradList&& grads) {
  Tensor param = leaf();
  if (!param.defined() || grads.empty() || !grads[0].defined()) return {};
  AutogradMeta& m = ensure_meta(param);
  Tensor incoming = std::move(grads[0]);
  for (auto& hook : m.leaf_hooks) {
    Tensor replaced = hook(incoming);
    if (replaced.defined()) incoming = replaced;
  }
  SYNCGRAD_CHECK(incoming.sizes() == param.sizes(), ShapeError, "AccumulateGrad: gradient of shape ",
                 shape_str(incoming.sizes()), " does not match the parameter's shape ", shape_str(param.sizes()));
  NoGradGuard no_grad;
  if (!m.grad.defined()) {
    // Own a contiguous buffer of the parameter's dtype: the engine's temporaries may be shared or strided.
    // Steal the incoming buffer when nothing else references it (the common case: a fresh op result).
    Tensor g = raw::to(incoming, param.dtype());
    bool exclusive = g.impl_ptr().use_count() <= 2 && g.impl()->storage().use_count() == 1 &&
                     g.storage_offset() == 0;
    m.grad = (exclusive && g.is_contiguous()) ? g : raw::clone(g);
  } else {
    raw::add_(m.grad, incoming);
  }
  for (auto& hook : m.post_accumulate_hooks) hook(param);
  return {};
}

}  // namespace syncgrad::autograd
