// Linear layer: parameters, PyTorch's default initialisation, forward through syncgrad::linear.
#include "nn/linear.h"

#include <cmath>

#include "autograd/ops/linalg.h"
#include "nn/init.h"
#include "tensor/check.h"
#include "tensor/ops/factories.h"

namespace syncgrad::nn {

void init_bias_from_weight(const Tensor& bias, const Tensor& weight, Generator* gen) {
  int64_t fan_in = init::calculate_fan_in_and_fan_out(weight).first;
  double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
  init::uniform_(bias, -bound, bound, gen);
}

Linear::Linear(int64_t in_features, int64_t out_features, bool bias, Generator* gen)
    : Module("Linear"), in_features(in_features), out_features(out_features) {
  SYNCGRAD_CHECK(in_features >= 0 && out_features >= 0, ValueError,
                 "Linear: feature counts must be non-negative, got in_features=", in_features,
                 ", out_features=", out_features);
  weight = register_parameter("weight", empty({out_features, in_features}));
  init::kaiming_uniform_(weight, std::sqrt(5.0), init::FanMode::fan_in, init::Nonlinearity::leaky_relu, gen);
  if (bias) {
    this->bias = register_parameter("bias", empty({out_features}));
    init_bias_from_weight(this->bias, weight, gen);
  }
}

Tensor Linear::forward(const Tensor& input) { return linear(input, weight, bias); }

std::string Linear::extra_repr() const {
  return "in_features=" + std::to_string(in_features) + ", out_features=" + std::to_string(out_features) +
         ", bias=" + (bias.defined() ? "True" : "False");
}

}  // namespace syncgrad::nn
