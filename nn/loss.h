// Loss modules: CrossEntropyLoss, NLLLoss and MSELoss holding PyTorch's options (reduction mean,
// ignore_index -100, label_smoothing 0) and forwarding to the differentiable losses. They take two inputs, so
// call forward(input, target) or loss(input, target); the single-input forward throws.
#pragma once

#include "nn/module.h"
#include "tensor/ops/loss.h"

namespace syncgrad::nn {

class CrossEntropyLoss : public Module {
 public:
  explicit CrossEntropyLoss(Reduction reduction = Reduction::mean, int64_t ignore_index = -100,
                            double label_smoothing = 0.0);
  using Module::forward;
  // logits (N, C) / (N, C, d1, ...) / (C); target int64 (N) / (N, d1, ...) / ()
  Tensor forward(const Tensor& input, const Tensor& target);
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }

  CrossEntropyOptions options;
};

class NLLLoss : public Module {
 public:
  explicit NLLLoss(Reduction reduction = Reduction::mean, int64_t ignore_index = -100);
  using Module::forward;
  // log-probabilities laid out like CrossEntropyLoss's logits; target int64 class indices
  Tensor forward(const Tensor& input, const Tensor& target);
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }

  NLLLossOptions options;
};

class MSELoss : public Module {
 public:
  explicit MSELoss(Reduction reduction = Reduction::mean);
  using Module::forward;
  // input and target of the same shape
  Tensor forward(const Tensor& input, const Tensor& target);
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }

  Reduction reduction;
};

}  // namespace syncgrad::nn
