// Host glue of the CUDA normalisation kernels (norm.cu): registers kernels::batch_norm_forward,
// batch_norm_backward, layer_norm_forward and layer_norm_backward.
#include "tensor/cuda/norm_kernels.h"
#include "tensor/cuda/op_support.h"
#include "tensor/cuda/register.h"
#include "tensor/ops/norm.h"

namespace syncgrad::cuda {
namespace {

// A 1-D floating operand, or absent when undefined.
VectorArg vector_arg(const Tensor& t) {
  if (!t.defined()) return {};
  return {t.data_ptr(), t.dtype(), t.numel() > 1 ? t.stride(0) : 1};
}

void* data_or_null(const Tensor& t) { return t.defined() ? t.data_ptr() : nullptr; }

BatchNormDims batch_dims(const Tensor& t) { return {t.sizes()[0], t.sizes()[1], t.sizes()[2]}; }

void batch_norm_forward_kernel(const Tensor& out, const Tensor& save_mean, const Tensor& save_invstd,
                               const Tensor& input, const Tensor& weight, const Tensor& bias,
                               const Tensor& running_mean, const Tensor& running_var, bool training, double momentum,
                               double eps) {
  require_floating("batch_norm", input.dtype());
  on_device("batch_norm", input.device(), [&](cudaStream_t stream) {
    launch_batch_norm_forward(input.dtype(), out.data_ptr(), save_mean.data_ptr(), save_invstd.data_ptr(),
                              input.data_ptr(), vector_arg(weight), vector_arg(bias), vector_arg(running_mean),
                              vector_arg(running_var), batch_dims(input), training, momentum, eps, stream);
  });
}

void batch_norm_backward_kernel(const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias,
                                const Tensor& grad_out, const Tensor& input, const Tensor& save_mean,
                                const Tensor& save_invstd, const Tensor& weight, bool training) {
  require_floating("batch_norm_backward", input.dtype());
  on_device("batch_norm_backward", input.device(), [&](cudaStream_t stream) {
    launch_batch_norm_backward(input.dtype(), data_or_null(grad_input), vector_arg(grad_weight), vector_arg(grad_bias),
                               grad_out.data_ptr(), input.data_ptr(), save_mean.data_ptr(), save_invstd.data_ptr(),
                               vector_arg(weight), batch_dims(input), training, stream);
  });
}

void layer_norm_forward_kernel(const Tensor& out, const Tensor& save_mean, const Tensor& save_rstd, const Tensor& input,
                               const Tensor& weight, const Tensor& bias, double eps) {
  require_floating("layer_norm", input.dtype());
  on_device("layer_norm", input.device(), [&](cudaStream_t stream) {
    launch_layer_norm_forward(input.dtype(), out.data_ptr(), save_mean.data_ptr(), save_rstd.data_ptr(),
                              input.data_ptr(), vector_arg(weight), vector_arg(bias), input.sizes()[0],
                              input.sizes()[1], eps, stream);
  });
}

void layer_norm_backward_kernel(const Tensor& grad_input, const Tensor& grad_weight, const Tensor& grad_bias,
                                const Tensor& grad_out, const Tensor& input, const Tensor& save_mean,
                                const Tensor& save_rstd, const Tensor& weight) {
  require_floating("layer_norm_backward", input.dtype());
  on_device("layer_norm_backward", input.device(), [&](cudaStream_t stream) {
    launch_layer_norm_backward(input.dtype(), data_or_null(grad_input), vector_arg(grad_weight), vector_arg(grad_bias),
                               grad_out.data_ptr(), input.data_ptr(), save_mean.data_ptr(), save_rstd.data_ptr(),
                               vector_arg(weight), input.sizes()[0], input.sizes()[1], stream);
  });
}

}  // namespace

void register_norm_kernels() {
  kernels::batch_norm_forward.set(DeviceType::kCUDA, &batch_norm_forward_kernel);
  kernels::batch_norm_backward.set(DeviceType::kCUDA, &batch_norm_backward_kernel);
  kernels::layer_norm_forward.set(DeviceType::kCUDA, &layer_norm_forward_kernel);
  kernels::layer_norm_backward.set(DeviceType::kCUDA, &layer_norm_backward_kernel);
}

}  // namespace syncgrad::cuda
