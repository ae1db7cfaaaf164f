// Activation layers (no parameters): ReLU, GELU, Tanh, Sigmoid, and Flatten, which reshapes rather than
// activates but is used the same way between layers.
#pragma once

#include "nn/module.h"
#include "tensor/ops/unary.h"

namespace syncgrad::nn {

class ReLU : public Module {
 public:
  ReLU() : Module("ReLU") {}
  Tensor forward(const Tensor& input) override;
};

class GELU : public Module {
 public:
  explicit GELU(GeluApproximate approximate = GeluApproximate::none) : Module("GELU"), approximate(approximate) {}
  Tensor forward(const Tensor& input) override;

  GeluApproximate approximate;

 protected:
  std::string extra_repr() const override;
};

class Tanh : public Module {
 public:
  Tanh() : Module("Tanh") {}
  Tensor forward(const Tensor& input) override;
};

class Sigmoid : public Module {
 public:
  Sigmoid() : Module("Sigmoid") {}
  Tensor forward(const Tensor& input) override;
};

// Merges dims start_dim..end_dim (negative counts from the end): (N, C, H, W) -> (N, C * H * W) by default.
class Flatten : public Module {
 public:
  explicit Flatten(int64_t start_dim = 1, int64_t end_dim = -1)
      : Module("Flatten"), start_dim(start_dim), end_dim(end_dim) {}
  Tensor forward(const Tensor& input) override;

  int64_t start_dim, end_dim;

 protected:
  std::string extra_repr() const override;
};

}  // namespace syncgrad::nn
