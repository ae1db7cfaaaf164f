// models::MLP: the 784-256-256-10 ReLU classifier for 28x28 single-channel images (MNIST-style).
#pragma once

#include <memory>

#include "nn/linear.h"
#include "nn/module.h"
#include "tensor/generator.h"

namespace syncgrad::models {

class MLP : public nn::Module {
 public:
  // Children fc1 (784 -> 256), fc2 (256 -> 256), fc3 (256 -> 10), initialised from `gen` (default generator).
  explicit MLP(Generator* gen = nullptr);
  // (N, 1, 28, 28) or (N, 784) -> logits (N, 10)
  Tensor forward(const Tensor& input) override;

  std::shared_ptr<nn::Linear> fc1, fc2, fc3;
};

}  // namespace syncgrad::models
