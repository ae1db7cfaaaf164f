// Differentiable losses. cross_entropy records one fused node whose backward is
// weights * (softmax - (1 - s) one_hot - s / C) from the saved logits and per-position logsumexp.
#include "autograd/ops/loss.h"

#include "autograd/autocast.h"
#include "autograd/meta.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/elementwise.h"

namespace syncgrad {
namespace {

using autograd::GradList;
using autograd::Node;
using autograd::SavedTensor;

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& target, const CrossEntropyOptions& options) {
  if (auto c = autograd::autocast_operands(autograd::CastPolicy::fp32, {&logits})) {
    return cross_entropy(c[0], target, options);
  }
  raw::CrossEntropyResult result = raw::cross_entropy_forward(logits, target, options);
  Tensor out = result.loss;
  if (autograd::any_requires_grad({&logits})) {
    // The forward's lse and count of valid targets (the loss itself not kept).
    auto backward = [logits = SavedTensor(logits), target = SavedTensor(target),
                     forward = raw::CrossEntropyResult{Tensor(), result.lse, result.valid},
                     options](const Node& node, GradList&& g) {
      return GradList{raw::cross_entropy_backward(g[0], logits.get(node), target.get(node), forward, options),
                      Tensor()};
    };
    autograd::record<"CrossEntropyBackward">({&logits, &target}, {&out}, std::move(backward));
  }
  return out;
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const NLLLossOptions& options) {
  if (auto c = autograd::autocast_operands(autograd::CastPolicy::fp32, {&log_probs})) {
    return nll_loss(c[0], target, options);
  }
  raw::NLLLossResult result = raw::nll_loss_forward(log_probs, target, options);
  Tensor out = result.loss;
  if (autograd::any_requires_grad({&log_probs})) {
    auto backward = [target = SavedTensor(target), input_shape = log_probs.sizes(),
                     forward = raw::NLLLossResult{Tensor(), result.valid}, options](const Node& node, GradList&& g) {
      return GradList{raw::nll_loss_backward(g[0], input_shape, target.get(node), forward, options), Tensor()};
    };
    autograd::record<"NllLossBackward">({&log_probs, &target}, {&out}, std::move(backward));
  }
  return out;
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  if (auto c = autograd::autocast_operands(autograd::CastPolicy::fp32, {&input, &target})) {
    return mse_loss(c[0], c[1], reduction);
  }
  Tensor out = raw::mse_loss(input, target, reduction);
  if (autograd::any_requires_grad({&input, &target})) {
    auto backward = [input = SavedTensor(input), target = SavedTensor(target), reduction](const Node& node,
                                                                                         GradList&& g) {
      Tensor x = input.get(node), y = target.get(node);
      Tensor grad_input = raw::mse_loss_backward(g[0], x, y, reduction);
      return GradList{raw::to(grad_input, x.dtype()), raw::to(raw::mul(grad_input, -1), y.dtype())};
    };
    autograd::record<"MseLossBackward">({&input, &target}, {&out}, std::move(backward));
  }
  return out;
}

Tensor one_hot(const Tensor& indices, int64_t num_classes) { return raw::one_hot(indices, num_classes); }

}  // namespace syncgrad
