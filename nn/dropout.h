// Dropout: zeroes elements with probability p while training (scaling the rest by 1 / (1 - p)); the identity
// in eval mode. PyTorch's torch.nn.Dropout.
#pragma once

#include "nn/module.h"
#include "tensor/generator.h"

namespace syncgrad::nn {

class Dropout : public Module {
 public:
  // p outside [0, 1] is a ValueError. Masks are drawn from `gen` (default: the process generator), which must
  // outlive the module.
  explicit Dropout(double p = 0.5, Generator* gen = nullptr);
  Tensor forward(const Tensor& input) override;

  double p;
  Generator* generator;

 protected:
  std::string extra_repr() const override;
};

}  // namespace syncgrad::nn
