// Differentiable dropout: the backward multiplies the output gradient by the saved mask (0 or 1 / (1 - p)).
#include "autograd/ops/dropout.h"

#include "autograd/meta.h"
#include "tensor/ops/dropout.h"
#include "tensor/ops/elementwise.h"

namespace syncgrad {

Tensor dropout(const Tensor& input, double p, bool training, Generator* gen) {
  raw::check_dropout_probability(p);
  if (!training || p == 0.0) return input;
  raw::DropoutResult result = raw::dropout(input, p, gen);
  if (autograd::any_requires_grad({&input})) {
    auto backward = [mask = autograd::SavedTensor(result.mask)](const autograd::Node& node, autograd::GradList&& g) {
      return autograd::GradList{raw::mul(g[0], mask.get(node))};
    };
    autograd::record<"DropoutBackward">({&input}, {&result.output}, std::move(backward));
  }
  return result.output;
}

}  // namespace syncgrad
