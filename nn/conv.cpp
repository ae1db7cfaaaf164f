// Conv2d layer: parameters, PyTorch's default initialisation, forward through syncgrad::conv2d.
#include "nn/conv.h"

#include <cmath>

#include "autograd/ops/conv.h"
#include "nn/init.h"
#include "nn/linear.h"
#include "tensor/check.h"
#include "tensor/ops/factories.h"

namespace syncgrad::nn {

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, Size2 kernel_size, Size2 stride, Size2 padding,
               Size2 dilation, int64_t groups, bool bias, Generator* gen)
    : Module("Conv2d"), in_channels(in_channels), out_channels(out_channels), kernel_size(kernel_size),
      params{.stride = stride, .padding = padding, .dilation = dilation, .groups = groups} {
  SYNCGRAD_CHECK(groups > 0 && in_channels % groups == 0 && out_channels % groups == 0, ValueError,
                 "Conv2d: in_channels=", in_channels, " and out_channels=", out_channels,
                 " must both be divisible by groups=", groups, " (a positive number)");
  SYNCGRAD_CHECK(in_channels > 0 && out_channels > 0 && kernel_size.h > 0 && kernel_size.w > 0, ValueError,
                 "Conv2d: channel counts and kernel_size must be positive, got in_channels=", in_channels,
                 ", out_channels=", out_channels, ", kernel_size=", size2_str(kernel_size));
  weight = register_parameter("weight", empty({out_channels, in_channels / groups, kernel_size.h, kernel_size.w}));
  init::kaiming_uniform_(weight, std::sqrt(5.0), init::FanMode::fan_in, init::Nonlinearity::leaky_relu, gen);
  if (bias) {
    this->bias = register_parameter("bias", empty({out_channels}));
    init_bias_from_weight(this->bias, weight, gen);
  }
}

Tensor Conv2d::forward(const Tensor& input) {
  return conv2d(input, weight, bias, params.stride, params.padding, params.dilation, params.groups);
}

std::string Conv2d::extra_repr() const {
  std::string out = std::to_string(in_channels) + ", " + std::to_string(out_channels) +
                    ", kernel_size=" + size2_str(kernel_size) + ", stride=" + size2_str(params.stride);
  if (params.padding != Size2(0)) out += ", padding=" + size2_str(params.padding);
  if (params.dilation != Size2(1)) out += ", dilation=" + size2_str(params.dilation);
  if (params.groups != 1) out += ", groups=" + std::to_string(params.groups);
  if (!bias.defined()) out += ", bias=False";
  return out;
}

}  // namespace syncgrad::nn
