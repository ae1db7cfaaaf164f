// Linear: y = x W^T + b, PyTorch's torch.nn.Linear (argument order, default initialisation, state keys).
#pragma once

#include "nn/module.h"
#include "tensor/generator.h"

namespace syncgrad::nn {

class Linear : public Module {
 public:
  // weight (out_features, in_features) ~ kaiming_uniform_(a = sqrt(5)), i.e. U(-1/sqrt(in), 1/sqrt(in));
  // bias (out_features) ~ U(-1/sqrt(in), 1/sqrt(in)).
  Linear(int64_t in_features, int64_t out_features, bool bias = true, Generator* gen = nullptr);

  // (*, in_features) -> (*, out_features)
  Tensor forward(const Tensor& input) override;

  int64_t in_features, out_features;
  Tensor weight;
  Tensor bias;  // undefined when constructed with bias = false

 protected:
  std::string extra_repr() const override;
};

// The bias initialisation shared by Linear and Conv2d: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with the weight's fan_in.
void init_bias_from_weight(const Tensor& bias, const Tensor& weight, Generator* gen);

}  // namespace syncgrad::nn
