// Parameter initialisation with PyTorch's torch.nn.init formulas. Every function fills its tensor in place
// (any strides, dtype and device; no autograd history), draws from `gen` (default: the process generator)
// and returns the tensor.
#pragma once

#include <utility>

#include "tensor/generator.h"
#include "tensor/tensor.h"

namespace syncgrad::nn::init {

enum class FanMode : uint8_t { fan_in, fan_out };
enum class Nonlinearity : uint8_t { linear, conv2d, sigmoid, tanh, relu, leaky_relu, selu };

// The recommended gain of torch.nn.init.calculate_gain: 1 for linear/conv/sigmoid, 5/3 for tanh, sqrt(2) for
// relu, sqrt(2 / (1 + negative_slope^2)) for leaky_relu, 3/4 for selu.
double calculate_gain(Nonlinearity nonlinearity, double negative_slope = 0.01);
// (fan_in, fan_out) of a weight with at least 2 dims: (size(1) * receptive, size(0) * receptive), where
// receptive is the product of the dims after the first two. Fewer dims are a ValueError.
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t);

const Tensor& uniform_(const Tensor& t, double low = 0.0, double high = 1.0, Generator* gen = nullptr);
const Tensor& normal_(const Tensor& t, double mean = 0.0, double std = 1.0, Generator* gen = nullptr);
const Tensor& zeros_(const Tensor& t);
const Tensor& ones_(const Tensor& t);
// U(-bound, bound), bound = gain * sqrt(3 / fan), gain = calculate_gain(nonlinearity, a); an empty tensor is
// left as it is.
const Tensor& kaiming_uniform_(const Tensor& t, double a = 0.0, FanMode mode = FanMode::fan_in,
                               Nonlinearity nonlinearity = Nonlinearity::leaky_relu, Generator* gen = nullptr);
// N(0, std^2), std = gain / sqrt(fan).
const Tensor& kaiming_normal_(const Tensor& t, double a = 0.0, FanMode mode = FanMode::fan_in,
                              Nonlinearity nonlinearity = Nonlinearity::leaky_relu, Generator* gen = nullptr);
// U(-bound, bound), bound = gain * sqrt(6 / (fan_in + fan_out)).
const Tensor& xavier_uniform_(const Tensor& t, double gain = 1.0, Generator* gen = nullptr);

}  // namespace syncgrad::nn::init
