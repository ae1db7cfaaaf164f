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
using autograd::NodeOf;
using autograd::SavedTensor;

struct CrossEntropyBackward final : NodeOf<CrossEntropyBackward> {
  static constexpr const char* kName = "CrossEntropyBackward";
  SavedTensor logits, target;
  raw::CrossEntropyResult forward;  // lse and the count of valid targets (loss itself not kept)
  CrossEntropyOptions options;
  GradList apply(GradList&& g) override {
    return {raw::cross_entropy_backward(g[0], logits.get(*this), target.get(*this), forward, options), Tensor()};
  }
  void release_saved() override {
    logits.reset();
    target.reset();
    forward.lse = Tensor();
  }
};

struct NllLossBackward final : NodeOf<NllLossBackward> {
  static constexpr const char* kName = "NllLossBackward";
  SavedTensor target;
  Shape input_shape;
  raw::NLLLossResult forward;
  NLLLossOptions options;
  GradList apply(GradList&& g) override {
    return {raw::nll_loss_backward(g[0], input_shape, target.get(*this), forward, options), Tensor()};
  }
  void release_saved() override { target.reset(); }
};

struct MseLossBackward final : NodeOf<MseLossBackward> {
  static constexpr const char* kName = "MseLossBackward";
  SavedTensor input, target;
  Reduction reduction = Reduction::mean;
  GradList apply(GradList&& g) override {
    Tensor x = input.get(*this), y = target.get(*this);
    Tensor grad_input = raw::mse_loss_backward(g[0], x, y, reduction);
    return {raw::to(grad_input, x.dtype()), raw::to(raw::mul(grad_input, -1), y.dtype())};
  }
  void release_saved() override {
    input.reset();
    target.reset();
  }
};

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& target, const CrossEntropyOptions& options) {
  if (auto c = autograd::autocast_operands(autograd::CastPolicy::fp32, {&logits})) {
    return cross_entropy(c[0], target, options);
  }
  raw::CrossEntropyResult result = raw::cross_entropy_forward(logits, target, options);
  Tensor out = result.loss;
  if (autograd::any_requires_grad({&logits})) {
    auto node = std::make_shared<CrossEntropyBackward>();
    node->logits = logits;
    node->target = target;
    node->forward = {Tensor(), result.lse, result.valid};
    node->options = options;
    autograd::record(node, {&logits, &target}, {&out});
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
    auto node = std::make_shared<NllLossBackward>();
    node->target = target;
    node->input_shape = log_probs.sizes();
    node->forward = {Tensor(), result.valid};
    node->options = options;
    autograd::record(node, {&log_probs, &target}, {&out});
  }
  return out;
}

Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction) {
  if (auto c = autograd::autocast_operands(autograd::CastPolicy::fp32, {&input, &target})) {
    return mse_loss(c[0], c[1], reduction);
  }
  Tensor out = raw::mse_loss(input, target, reduction);
  if (autograd::any_requires_grad({&input, &target})) {
    auto node = std::make_shared<MseLossBackward>();
    node->input = input;
    node->target = target;
    node->reduction = reduction;
    autograd::record(node, {&input, &target}, {&out});
  }
  return out;
}

Tensor one_hot(const Tensor& indices, int64_t num_classes) { return raw::one_hot(indices, num_classes); }

}  // namespace syncgrad
