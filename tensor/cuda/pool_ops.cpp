// Host glue of the CUDA pooling kernels (pool.cu): registers kernels::max_pool2d(_backward),
// avg_pool2d(_backward) and adaptive_avg_pool2d(_backward).
#include "tensor/cuda/check.h"
#include "tensor/cuda/op_support.h"
#include "tensor/cuda/pool_kernels.h"
#include "tensor/cuda/register.h"
#include "tensor/ops/pool.h"

namespace syncgrad::cuda {
namespace {

// input (N, C, H, W), output (N, C, OH, OW).
PoolDims pool_dims(const Shape& input, const Shape& output) {
  return {input[0] * input[1], input[2], input[3], output[2], output[3]};
}

PoolWindow pool_window(const Pool2dParams& p) {
  return {p.kernel.h,  p.kernel.w,   p.stride.h,   p.stride.w,         p.padding.h,
          p.padding.w, p.dilation.h, p.dilation.w, p.count_include_pad};
}

void max_pool2d_kernel(const Tensor& out, const Tensor& indices, const Tensor& input, const Pool2dParams& params) {
  require_floating("max_pool2d", input.dtype());
  on_device("max_pool2d", input.device(), [&](cudaStream_t stream) {
    launch_max_pool2d(input.dtype(), out.data_ptr(), indices.data_ptr<int64_t>(), input.data_ptr(),
                      pool_dims(input.sizes(), out.sizes()), pool_window(params), stream);
  });
}

void max_pool2d_backward_kernel(const Tensor& grad_input, const Tensor& grad_out, const Tensor& indices) {
  require_floating("max_pool2d_backward", grad_out.dtype());
  on_device("max_pool2d_backward", grad_out.device(), [&](cudaStream_t stream) {
    SG_CUDA_CHECK(cudaMemsetAsync(grad_input.data_ptr(), 0, grad_input.nbytes(), stream));  // the scatter adds
    launch_max_pool2d_backward(grad_out.dtype(), grad_input.data_ptr(), grad_out.data_ptr(),
                               indices.data_ptr<int64_t>(), pool_dims(grad_input.sizes(), grad_out.sizes()), stream);
  });
}

void avg_pool2d_kernel(const Tensor& out, const Tensor& input, const Pool2dParams& params) {
  require_floating("avg_pool2d", input.dtype());
  on_device("avg_pool2d", input.device(), [&](cudaStream_t stream) {
    launch_avg_pool2d(input.dtype(), out.data_ptr(), input.data_ptr(), pool_dims(input.sizes(), out.sizes()),
                      pool_window(params), stream);
  });
}

void avg_pool2d_backward_kernel(const Tensor& grad_input, const Tensor& grad_out, const Pool2dParams& params) {
  require_floating("avg_pool2d_backward", grad_out.dtype());
  on_device("avg_pool2d_backward", grad_out.device(), [&](cudaStream_t stream) {
    launch_avg_pool2d_backward(grad_out.dtype(), grad_input.data_ptr(), grad_out.data_ptr(),
                               pool_dims(grad_input.sizes(), grad_out.sizes()), pool_window(params), stream);
  });
}

void adaptive_avg_pool2d_kernel(const Tensor& out, const Tensor& input) {
  require_floating("adaptive_avg_pool2d", input.dtype());
  on_device("adaptive_avg_pool2d", input.device(), [&](cudaStream_t stream) {
    launch_adaptive_avg_pool2d(input.dtype(), out.data_ptr(), input.data_ptr(), pool_dims(input.sizes(), out.sizes()),
                               stream);
  });
}

void adaptive_avg_pool2d_backward_kernel(const Tensor& grad_input, const Tensor& grad_out) {
  require_floating("adaptive_avg_pool2d_backward", grad_out.dtype());
  on_device("adaptive_avg_pool2d_backward", grad_out.device(), [&](cudaStream_t stream) {
    launch_adaptive_avg_pool2d_backward(grad_out.dtype(), grad_input.data_ptr(), grad_out.data_ptr(),
                                        pool_dims(grad_input.sizes(), grad_out.sizes()), stream);
  });
}

}  // namespace

void register_pool_kernels() {
  kernels::max_pool2d.set(DeviceType::kCUDA, &max_pool2d_kernel);
  kernels::max_pool2d_backward.set(DeviceType::kCUDA, &max_pool2d_backward_kernel);
  kernels::avg_pool2d.set(DeviceType::kCUDA, &avg_pool2d_kernel);
  kernels::avg_pool2d_backward.set(DeviceType::kCUDA, &avg_pool2d_backward_kernel);
  kernels::adaptive_avg_pool2d.set(DeviceType::kCUDA, &adaptive_avg_pool2d_kernel);
  kernels::adaptive_avg_pool2d_backward.set(DeviceType::kCUDA, &adaptive_avg_pool2d_backward_kernel);
}

}  // namespace syncgrad::cuda
