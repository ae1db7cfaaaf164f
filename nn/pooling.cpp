// Pooling layers: stored options forwarded to the differentiable pooling ops.
#include "nn/pooling.h"

#include "autograd/ops/pool.h"

namespace syncgrad::nn {

namespace {
const char* bool_str(bool b) { return b ? "True" : "False"; }
}  // namespace

MaxPool2d::MaxPool2d(Size2 kernel_size, std::optional<Size2> stride, Size2 padding, Size2 dilation, bool ceil_mode)
    : Module("MaxPool2d"), kernel_size(kernel_size), stride(stride.value_or(kernel_size)), padding(padding),
      dilation(dilation), ceil_mode(ceil_mode) {}

Tensor MaxPool2d::forward(const Tensor& input) {
  return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode);
}

std::string MaxPool2d::extra_repr() const {
  return "kernel_size=" + size2_str(kernel_size) + ", stride=" + size2_str(stride) + ", padding=" +
         size2_str(padding) + ", dilation=" + size2_str(dilation) + ", ceil_mode=" + bool_str(ceil_mode);
}

AvgPool2d::AvgPool2d(Size2 kernel_size, std::optional<Size2> stride, Size2 padding, bool ceil_mode,
                     bool count_include_pad)
    : Module("AvgPool2d"), kernel_size(kernel_size), stride(stride.value_or(kernel_size)), padding(padding),
      ceil_mode(ceil_mode), count_include_pad(count_include_pad) {}

Tensor AvgPool2d::forward(const Tensor& input) {
  return avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad);
}

std::string AvgPool2d::extra_repr() const {
  return "kernel_size=" + size2_str(kernel_size) + ", stride=" + size2_str(stride) + ", padding=" +
         size2_str(padding);
}

AdaptiveAvgPool2d::AdaptiveAvgPool2d(Size2 output_size) : Module("AdaptiveAvgPool2d"), output_size(output_size) {}

Tensor AdaptiveAvgPool2d::forward(const Tensor& input) { return adaptive_avg_pool2d(input, output_size); }

std::string AdaptiveAvgPool2d::extra_repr() const { return "output_size=" + size2_str(output_size); }

}  // namespace syncgrad::nn
