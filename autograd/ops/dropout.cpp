// Differentiable dropout: the backward multiplies the output gradient by the saved mask (0 or 1 / (1 - p)).
#include "autograd/ops/dropout.h"

#include "autograd/meta.h"
#include "tensor/ops/dropout.h"
#include "tensor/ops/elementwise.h"

namespace syncgrad {
namespace {

using autograd::GradList;
using autograd::NodeOf;
using autograd::SavedTensor;

struct DropoutBackward final : NodeOf<DropoutBackward> {
  static constexpr const char* kName = "DropoutBackward";
  SavedTensor mask;
  GradList apply(GradList&& g) override { return {raw::mul(g[0], mask.get(*this))}; }
  void release_saved() override { mask.reset(); }
};

}  // namespace

Tensor dropout(const Tensor& input, double p, bool training, Generator* gen) {
  raw::check_dropout_probability(p);
  if (!training || p == 0.0) return input;
  raw::DropoutResult result = raw::dropout(input, p, gen);
  if (autograd::any_requires_grad({&input})) {
    auto node = std::make_shared<DropoutBackward>();
    node->mask = result.mask;
    autograd::record(node, {&input}, {&result.output});
  }
  return result.output;
}

}  // namespace syncgrad
