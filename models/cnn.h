// models::CNN: the LeNet-style classifier for 28x28 single-channel images: conv(1->32, 5x5, pad 2) - ReLU -
// maxpool 2 - conv(32->64, 5x5, pad 2) - ReLU - maxpool 2 - flatten - fc(3136->128) - ReLU - fc(128->10).
#pragma once

#include <memory>

#include "nn/conv.h"
#include "nn/linear.h"
#include "nn/module.h"
#include "tensor/generator.h"

namespace syncgrad::models {

class CNN : public nn::Module {
 public:
  // Children exactly conv1, conv2, fc1, fc2 (PyTorch's state_dict keys), initialised from `gen`.
  explicit CNN(Generator* gen = nullptr);
  // (N, 1, 28, 28) -> logits (N, 10)
  Tensor forward(const Tensor& input) override;

  std::shared_ptr<nn::Conv2d> conv1, conv2;
  std::shared_ptr<nn::Linear> fc1, fc2;
};

}  // namespace syncgrad::models
