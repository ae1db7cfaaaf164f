// Pooling layers over (N, C, H, W): MaxPool2d, AvgPool2d, AdaptiveAvgPool2d with PyTorch's argument order and
// defaults (a stride left unset equals the kernel size). They hold no parameters.
#pragma once

#include <optional>

#include "nn/module.h"
#include "tensor/ops/conv.h"

namespace syncgrad::nn {

class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(Size2 kernel_size, std::optional<Size2> stride = std::nullopt, Size2 padding = 0,
                     Size2 dilation = 1, bool ceil_mode = false);
  // (N, C, H, W) -> (N, C, OH, OW)
  Tensor forward(const Tensor& input) override;

  Size2 kernel_size, stride, padding, dilation;
  bool ceil_mode;

 protected:
  std::string extra_repr() const override;
};

class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(Size2 kernel_size, std::optional<Size2> stride = std::nullopt, Size2 padding = 0,
                     bool ceil_mode = false, bool count_include_pad = true);
  // (N, C, H, W) -> (N, C, OH, OW)
  Tensor forward(const Tensor& input) override;

  Size2 kernel_size, stride, padding;
  bool ceil_mode, count_include_pad;

 protected:
  std::string extra_repr() const override;
};

class AdaptiveAvgPool2d : public Module {
 public:
  explicit AdaptiveAvgPool2d(Size2 output_size);
  // (N, C, H, W) -> (N, C, output_size.h, output_size.w)
  Tensor forward(const Tensor& input) override;

  Size2 output_size;

 protected:
  std::string extra_repr() const override;
};

}  // namespace syncgrad::nn
