// Parameter initialisation: random values are drawn into a fresh contiguous tensor by the factories' random
// kernels, then copied into the target (so strided targets and every device work alike).
#include "nn/init.h"

#include <cmath>
#include <string>

#include "autograd/grad_mode.h"
#include "tensor/check.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad::nn::init {
namespace {

void check_floating(const Tensor& t, const char* op) {
  SYNCGRAD_CHECK(t.defined(), ValueError, "nn::init::", op, ": the tensor is undefined");
  SYNCGRAD_CHECK(is_floating(t.dtype()), DTypeError, "nn::init::", op, ": needs a floating tensor, got ",
                 dtype_name(t.dtype()));
}

Generator& pick(Generator* gen) { return gen != nullptr ? *gen : default_generator(); }

template <class Kernel>
const Tensor& fill_random(const Tensor& t, const Kernel& kernel, double a, double b, Generator* gen) {
  NoGradGuard no_grad;
  Tensor fresh = empty(t.sizes(), {.dtype = t.dtype(), .device = t.device()});
  Generator& g = pick(gen);
  kernel(t.device(), fresh, a, b, g.seed(), g.reserve(static_cast<uint64_t>(fresh.numel())));
  raw::copy_(t, fresh);
  return t;
}

int64_t fan(const Tensor& t, FanMode mode) {
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  return mode == FanMode::fan_in ? fan_in : fan_out;
}

}  // namespace

double calculate_gain(Nonlinearity nonlinearity, double negative_slope) {
  switch (nonlinearity) {
    case Nonlinearity::linear:
    case Nonlinearity::conv2d:
    case Nonlinearity::sigmoid: return 1.0;
    case Nonlinearity::tanh: return 5.0 / 3.0;
    case Nonlinearity::relu: return std::sqrt(2.0);
    case Nonlinearity::leaky_relu: return std::sqrt(2.0 / (1.0 + negative_slope * negative_slope));
    case Nonlinearity::selu: return 0.75;
  }
  throw ValueError("nn::init::calculate_gain: unknown nonlinearity");
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t) {
  SYNCGRAD_CHECK(t.dim() >= 2, ValueError, "nn::init::calculate_fan_in_and_fan_out: the tensor of shape ",
                 shape_str(t.sizes()), " has fewer than 2 dimensions; fans are defined for weights (out, in, *)");
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

const Tensor& uniform_(const Tensor& t, double low, double high, Generator* gen) {
  check_floating(t, "uniform_");
  SYNCGRAD_CHECK(low <= high, ValueError, "nn::init::uniform_: low ", std::to_string(low), " exceeds high ",
                 std::to_string(high));
  return fill_random(t, kernels::uniform, low, high, gen);
}

const Tensor& normal_(const Tensor& t, double mean, double std, Generator* gen) {
  check_floating(t, "normal_");
  SYNCGRAD_CHECK(std >= 0.0, ValueError, "nn::init::normal_: std must be >= 0, got ", std::to_string(std));
  return fill_random(t, kernels::normal, mean, std, gen);
}

const Tensor& zeros_(const Tensor& t) {
  NoGradGuard no_grad;
  raw::fill_(t, 0);
  return t;
}

const Tensor& ones_(const Tensor& t) {
  NoGradGuard no_grad;
  raw::fill_(t, 1);
  return t;
}

const Tensor& kaiming_uniform_(const Tensor& t, double a, FanMode mode, Nonlinearity nonlinearity,
                               Generator* gen) {
  check_floating(t, "kaiming_uniform_");
  if (t.numel() == 0) return t;
  double bound = calculate_gain(nonlinearity, a) * std::sqrt(3.0 / static_cast<double>(fan(t, mode)));
  return uniform_(t, -bound, bound, gen);
}

const Tensor& kaiming_normal_(const Tensor& t, double a, FanMode mode, Nonlinearity nonlinearity, Generator* gen) {
  check_floating(t, "kaiming_normal_");
  if (t.numel() == 0) return t;
  double std = calculate_gain(nonlinearity, a) / std::sqrt(static_cast<double>(fan(t, mode)));
  return normal_(t, 0.0, std, gen);
}

const Tensor& xavier_uniform_(const Tensor& t, double gain, Generator* gen) {
  check_floating(t, "xavier_uniform_");
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  double bound = gain * std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  return uniform_(t, -bound, bound, gen);
}

}  // namespace syncgrad::nn::init
