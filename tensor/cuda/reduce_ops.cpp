// Host glue of the CUDA reduction kernels (reduce.cu): splits sum_into's dims into kept and reduced ones and
// picks how to spread the work, shapes the other reductions, and registers kernels::sum_into, minmax_dim,
// index_backward, ties_backward, var_rows and logsumexp_rows.
#include "tensor/cuda/op_support.h"
#include "tensor/cuda/reduce_kernels.h"
#include "tensor/cuda/register.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/reduce.h"
#include "tensor/ops/views.h"

namespace syncgrad::cuda {
namespace {

// Reduced elements per output below which a thread per output beats a block per output.
constexpr int64_t kSmallReduction = 16;
// Outputs below which a block per output is used even when its reduced elements are far apart.
constexpr int64_t kFewOutputs = 4096;

// `in`'s dims moved so that those `out` reduces (size 1 in out, more in in) come last, in order.
Shape kept_then_reduced(const Tensor& out, const Tensor& in) {
  Shape perm;
  for (int64_t d = 0; d < in.dim(); ++d) {
    if (!(out.sizes()[d] == 1 && in.sizes()[d] > 1)) perm.push_back(d);
  }
  for (int64_t d = 0; d < in.dim(); ++d) {
    if (out.sizes()[d] == 1 && in.sizes()[d] > 1) perm.push_back(d);
  }
  return perm;
}

void sum_into_kernel(const Tensor& out, const Tensor& in) {
  require_numeric("sum", out.dtype());
  if (in.numel() == 0) return;
  Shape kept_sizes, kept_out_strides, kept_in_strides, reduced_sizes, reduced_strides;
  for (int64_t d = 0; d < in.dim(); ++d) {
    if (in.sizes()[d] == 1) continue;
    if (out.sizes()[d] == 1) {
      reduced_sizes.push_back(in.sizes()[d]);
      reduced_strides.push_back(in.strides()[d]);
    } else {
      kept_sizes.push_back(in.sizes()[d]);
      kept_out_strides.push_back(out.strides()[d]);
      kept_in_strides.push_back(in.strides()[d]);
    }
  }
  const Tensor kept_out = raw::as_strided(out, kept_sizes, kept_out_strides, out.storage_offset());
  const Tensor kept_in = raw::as_strided(in, kept_sizes, kept_in_strides, in.storage_offset());
  const Tensor reduced_in = raw::as_strided(in, reduced_sizes, reduced_strides, in.storage_offset());
  Geometry<2> kept;
  Geometry<1> reduced;
  if (!single_geometry<2>(kept_sizes, {&kept_out, &kept_in}, kept) ||
      !single_geometry<1>(reduced_sizes, {&reduced_in}, reduced)) {
    // More than kMaxDims dims in either part: a contiguous copy with the reduced dims last has one of each.
    const Shape perm = kept_then_reduced(out, in);
    sum_into_kernel(raw::permute(out, perm), raw::contiguous(raw::permute(in, perm)));
    return;
  }
  const bool near = reduced.strides[0][reduced.ndim - 1] == 1;
  const SumStrategy strategy = reduced.numel <= kSmallReduction     ? SumStrategy::thread_per_output
                               : (near || kept.numel < kFewOutputs) ? SumStrategy::block_per_output
                                                                    : SumStrategy::thread_per_output;
  on_device("sum", out.device(), [&](cudaStream_t stream) {
    launch_sum(out.dtype(), in.dtype(), out.data_ptr(), in.data_ptr(), kept, reduced, strategy, stream);
  });
}

void minmax_dim_kernel(const Tensor& values, const Tensor& indices, const Tensor& in, int64_t dim, bool largest) {
  const DimLayout l = dim_layout(in.sizes(), dim);
  on_device("max/min", in.device(), [&](cudaStream_t stream) {
    launch_minmax_dim(in.dtype(), values.data_ptr(), indices.data_ptr<int64_t>(), in.data_ptr(), l.outer, l.size,
                      l.inner, largest, stream);
  });
}

void index_backward_kernel(const Tensor& grad_in, const Tensor& grad, const Tensor& indices, int64_t dim) {
  require_floating("max/min backward", grad_in.dtype());
  const DimLayout l = dim_layout(grad_in.sizes(), dim);
  on_device("max/min backward", grad_in.device(), [&](cudaStream_t stream) {
    launch_index_backward(grad_in.dtype(), grad_in.data_ptr(), grad.data_ptr(), indices.data_ptr<int64_t>(), l.outer,
                          l.size, l.inner, stream);
  });
}

void ties_backward_kernel(const Tensor& grad_in, const Tensor& in, const Tensor& value, const Tensor& grad) {
  require_floating("max/min backward", grad_in.dtype());
  on_device("max/min backward", grad_in.device(), [&](cudaStream_t stream) {
    launch_ties_backward(in.dtype(), grad_in.dtype(), grad_in.data_ptr(), in.data_ptr(), in.numel(), value.data_ptr(),
                         grad.data_ptr(), stream);
  });
}

void var_rows_kernel(const Tensor& out, const Tensor& in, int64_t correction, bool root) {
  require_floating("var", in.dtype());
  on_device("var", in.device(), [&](cudaStream_t stream) {
    launch_var_rows(in.dtype(), out.data_ptr(), in.data_ptr(), in.sizes()[0], in.sizes()[1], correction, root, stream);
  });
}

void logsumexp_rows_kernel(const Tensor& out, const Tensor& in) {
  require_floating("logsumexp", in.dtype());
  on_device("logsumexp", in.device(), [&](cudaStream_t stream) {
    launch_logsumexp_rows(in.dtype(), out.data_ptr(), in.data_ptr(), in.sizes()[0], in.sizes()[1], stream);
  });
}

}  // namespace

void register_reduce_kernels() {
  kernels::sum_into.set(DeviceType::kCUDA, &sum_into_kernel);
  kernels::minmax_dim.set(DeviceType::kCUDA, &minmax_dim_kernel);
  kernels::index_backward.set(DeviceType::kCUDA, &index_backward_kernel);
  kernels::ties_backward.set(DeviceType::kCUDA, &ties_backward_kernel);
  kernels::var_rows.set(DeviceType::kCUDA, &var_rows_kernel);
  kernels::logsumexp_rows.set(DeviceType::kCUDA, &logsumexp_rows_kernel);
}

}  // namespace syncgrad::cuda
