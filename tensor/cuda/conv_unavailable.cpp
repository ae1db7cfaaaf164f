// The CUDA convolution slots of a module built without cuDNN (tensor/cuda/meson.build): each says what is
// missing rather than leaving the slot empty (which would report "no CUDA backend").
#include <string>

#include "tensor/cuda/register.h"
#include "tensor/errors.h"
#include "tensor/ops/conv.h"

namespace syncgrad::cuda {
namespace {

[[noreturn]] void missing(const char* op) {
  throw DeviceError(
      std::string(op) +
      " on CUDA: this CUDA module was built without cuDNN, which the CUDA "
      "convolution needs; install cuDNN for the CUDA toolkit and rebuild, or run the convolution on the CPU");
}

void conv2d_kernel(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Conv2dParams&) {
  missing("conv2d");
}
void conv2d_backward_input_kernel(const Tensor&, const Tensor&, const Tensor&, const Conv2dParams&) {
  missing("conv2d_backward_input");
}
void conv2d_backward_weight_kernel(const Tensor&, const Tensor&, const Tensor&, const Conv2dParams&) {
  missing("conv2d_backward_weight");
}

}  // namespace

void register_conv_kernels() {
  kernels::conv2d.set(DeviceType::kCUDA, &conv2d_kernel);
  kernels::conv2d_backward_input.set(DeviceType::kCUDA, &conv2d_backward_input_kernel);
  kernels::conv2d_backward_weight.set(DeviceType::kCUDA, &conv2d_backward_weight_kernel);
}

}  // namespace syncgrad::cuda
