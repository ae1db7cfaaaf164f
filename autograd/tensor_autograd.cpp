// Tensor's autograd methods (declared in tensor/tensor.h; this is the link-time dependency of tensor/ on
// autograd/ written down in ARCHITECTURE.md §3).
#include "autograd/accumulate_grad.h"
#include "autograd/engine.h"
#include "autograd/grad_mode.h"
#include "autograd/meta.h"
#include "tensor/check.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/views.h"

namespace syncgrad {

using autograd::AutogradMeta;
using autograd::meta_of;

bool Tensor::requires_grad() const {
  AutogradMeta* m = meta_of(*this);
  return m != nullptr && m->requires_grad;
}

Tensor& Tensor::requires_grad_(bool value) {
  AutogradMeta* m = meta_of(*this);
  if (m != nullptr && m->grad_fn) {
    SYNCGRAD_CHECK(value, AutogradError,
                   "requires_grad_(false): this tensor is the result of an op (a non-leaf); use detach() to get a "
                   "tensor without history");
    return *this;
  }
  SYNCGRAD_CHECK(!value || is_floating(dtype()), AutogradError,
                 "requires_grad_: only floating-point tensors can require gradients, this one is ",
                 dtype_name(dtype()));
  autograd::ensure_meta(*this).requires_grad = value;
  return *this;
}

bool Tensor::is_leaf() const {
  AutogradMeta* m = meta_of(*this);
  return m == nullptr || !m->grad_fn;
}

Tensor Tensor::grad() const {
  AutogradMeta* m = meta_of(*this);
  return m == nullptr ? Tensor() : m->grad;
}

void Tensor::set_grad(const Tensor& grad) const {
  SYNCGRAD_CHECK(!grad.defined() || grad.sizes() == sizes(), ShapeError, "set_grad: gradient shape ",
                 shape_str(grad.sizes()), " differs from the tensor's ", shape_str(sizes()));
  autograd::ensure_meta(*this).grad = grad;
}

std::shared_ptr<autograd::Node> Tensor::grad_fn() const {
  AutogradMeta* m = meta_of(*this);
  return m == nullptr ? nullptr : m->grad_fn;
}

void Tensor::backward(const Tensor& gradient, bool retain_graph) const {
  autograd::backward({*this}, gradient.defined() ? std::vector<Tensor>{gradient} : std::vector<Tensor>{},
                     retain_graph);
}

Tensor Tensor::detach() const { return raw::alias(*this); }

void Tensor::retain_grad() const {
  AutogradMeta* m = meta_of(*this);
  SYNCGRAD_CHECK(m != nullptr && m->requires_grad, AutogradError, "retain_grad: the tensor does not require grad");
  if (!m->grad_fn || m->retains_grad) return;  // leaves keep .grad anyway
  m->retains_grad = true;
  std::weak_ptr<TensorImpl> weak = impl_ptr();
  m->grad_fn->pre_hooks.emplace_back(m->output_nr, [weak](const Tensor& g) {
    if (auto impl = weak.lock()) {
      Tensor self(impl);
      AutogradMeta& meta = autograd::ensure_meta(self);
      meta.grad = meta.grad.defined() ? raw::add(meta.grad, g) : raw::clone(g);
    }
    return Tensor();
  });
}

void Tensor::register_hook(std::function<Tensor(const Tensor&)> hook) const {
  AutogradMeta* m = meta_of(*this);
  SYNCGRAD_CHECK(m != nullptr && m->requires_grad, AutogradError,
                 "register_hook: cannot register a hook on a tensor that does not require grad");
  if (m->grad_fn) {
    m->grad_fn->pre_hooks.emplace_back(m->output_nr, std::move(hook));
  } else {
    m->leaf_hooks.push_back(std::move(hook));
  }
}

void Tensor::register_post_accumulate_grad_hook(std::function<void(const Tensor&)> hook) const {
  AutogradMeta* m = meta_of(*this);
  SYNCGRAD_CHECK(
      m != nullptr && m->requires_grad && !m->grad_fn, AutogradError,
      "register_post_accumulate_grad_hook: only leaf tensors that require grad accumulate gradients; this tensor is ",
      m != nullptr && m->grad_fn ? "a non-leaf" : "not requiring grad");
  m->post_accumulate_hooks.push_back(std::move(hook));
}

}  // namespace syncgrad
