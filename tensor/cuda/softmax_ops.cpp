// Host glue of the CUDA softmax kernels (softmax.cu): registers kernels::softmax and softmax_backward.
#include "tensor/cuda/op_support.h"
#include "tensor/cuda/reduce_kernels.h"
#include "tensor/cuda/register.h"
#include "tensor/ops/reduce.h"
#include "tensor/ops/softmax.h"

namespace syncgrad::cuda {
namespace {

void softmax_kernel(const Tensor& out, const Tensor& in, int64_t dim, bool log) {
  require_floating("softmax", in.dtype());
  const DimLayout l = dim_layout(in.sizes(), dim);
  on_device(log ? "log_softmax" : "softmax", in.device(), [&](cudaStream_t stream) {
    launch_softmax(in.dtype(), out.data_ptr(), in.data_ptr(), l.outer, l.size, l.inner, log, stream);
  });
}

void softmax_backward_kernel(const Tensor& grad_in, const Tensor& grad_out, const Tensor& out, int64_t dim, bool log) {
  require_floating("softmax backward", out.dtype());
  const DimLayout l = dim_layout(out.sizes(), dim);
  on_device("softmax backward", out.device(), [&](cudaStream_t stream) {
    launch_softmax_backward(out.dtype(), grad_in.data_ptr(), grad_out.data_ptr(), out.data_ptr(), l.outer, l.size,
                            l.inner, log, stream);
  });
}

}  // namespace

void register_softmax_kernels() {
  kernels::softmax.set(DeviceType::kCUDA, &softmax_kernel);
  kernels::softmax_backward.set(DeviceType::kCUDA, &softmax_backward_kernel);
}

}  // namespace syncgrad::cuda
