// Loss modules: stored options forwarded to the differentiable losses.
#include "nn/loss.h"

#include "autograd/ops/loss.h"

namespace syncgrad::nn {

CrossEntropyLoss::CrossEntropyLoss(Reduction reduction, int64_t ignore_index, double label_smoothing)
    : Module("CrossEntropyLoss"),
      options{.reduction = reduction, .ignore_index = ignore_index, .label_smoothing = label_smoothing} {}

Tensor CrossEntropyLoss::forward(const Tensor& input, const Tensor& target) {
  return cross_entropy(input, target, options);
}

NLLLoss::NLLLoss(Reduction reduction, int64_t ignore_index)
    : Module("NLLLoss"), options{.reduction = reduction, .ignore_index = ignore_index} {}

Tensor NLLLoss::forward(const Tensor& input, const Tensor& target) { return nll_loss(input, target, options); }

MSELoss::MSELoss(Reduction reduction) : Module("MSELoss"), reduction(reduction) {}

Tensor MSELoss::forward(const Tensor& input, const Tensor& target) { return mse_loss(input, target, reduction); }

}  // namespace syncgrad::nn
