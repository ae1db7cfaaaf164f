// Conv2d: 2-D convolution over (N, C, H, W), PyTorch's torch.nn.Conv2d (argument order, defaults, initialisation).
#pragma once

#include "nn/module.h"
#include "tensor/generator.h"
#include "tensor/ops/conv.h"

namespace syncgrad::nn {

class Conv2d : public Module {
 public:
  // weight (out_channels, in_channels / groups, kH, kW) ~ kaiming_uniform_(a = sqrt(5)); bias (out_channels) ~
  // U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = in_channels / groups * kH * kW. Both channel counts must
  // be divisible by groups.
  Conv2d(int64_t in_channels, int64_t out_channels, Size2 kernel_size, Size2 stride = 1, Size2 padding = 0,
         Size2 dilation = 1, int64_t groups = 1, bool bias = true, Generator* gen = nullptr);

  // (N, in_channels, H, W) -> (N, out_channels, OH, OW)
  Tensor forward(const Tensor& input) override;

  int64_t in_channels, out_channels;
  Size2 kernel_size;
  Conv2dParams params;
  Tensor weight;
  Tensor bias;  // undefined when constructed with bias = false

 protected:
  std::string extra_repr() const override;
};

}  // namespace syncgrad::nn
