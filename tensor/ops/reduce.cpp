// Raw reductions: dims handling, dtype rules, output allocation and dispatch.
#include "tensor/ops/reduce.h"

#include "tensor/check.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/softmax.h"
#include "tensor/ops/views.h"

namespace syncgrad {

namespace kernels {
constinit KernelSlot<void(const Tensor&, const Tensor&)> sum_into("sum");
constinit KernelSlot<void(const Tensor&, const Tensor&, const Tensor&, int64_t, bool)> minmax_dim("max/min");
constinit KernelSlot<void(const Tensor&, const Tensor&, const Tensor&, int64_t)> index_backward("max/min backward");
constinit KernelSlot<void(const Tensor&, const Tensor&, const Tensor&, const Tensor&)> ties_backward(
    "max/min backward");
constinit KernelSlot<void(const Tensor&, const Tensor&, int64_t, bool)> var_rows("var/std");
constinit KernelSlot<void(const Tensor&, const Tensor&)> logsumexp_rows("logsumexp");
}  // namespace kernels

DimLayout dim_layout(const Shape& sizes, int64_t dim) {
  DimLayout layout;
  for (int64_t i = 0; i < static_cast<int64_t>(sizes.size()); ++i) {
    if (i < dim) layout.outer *= sizes[i];
    else if (i == dim) layout.size = sizes[i];
    else layout.inner *= sizes[i];
  }
  return layout;
}

std::vector<bool> reduction_mask(const Shape& dims, int64_t ndim, const char* op) {
  std::vector<bool> mask(static_cast<size_t>(ndim), dims.empty());
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, ndim, op);
    if (ndim == 0) continue;
    SYNCGRAD_CHECK(!mask[w], ShapeError, op, ": dim ", w, " appears more than once in ", shape_str(dims));
    mask[w] = true;
  }
  return mask;
}

Shape reduced_shape(const Shape& sizes, const std::vector<bool>& mask, bool keepdim) {
  Shape out;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (!mask[i]) out.push_back(sizes[i]);
    else if (keepdim) out.push_back(1);
  }
  return out;
}

int64_t reduced_count(const Shape& sizes, const std::vector<bool>& mask) {
  int64_t count = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (mask[i]) count *= sizes[i];
  }
  return count;
}

namespace raw {
namespace {

DType half_to_float(DType t) { return (t == DType::f16 || t == DType::bf16) ? DType::f32 : t; }

void require_floating(const Tensor& t, const char* op) {
  SYNCGRAD_CHECK(is_floating(t.dtype()), DTypeError, op, ": only floating dtypes are supported, got ",
                 dtype_name(t.dtype()), "; convert first, e.g. t.to(DType::f32)");
}

// The order of dims that moves the reduced ones last.
Shape reduced_last(const std::vector<bool>& mask) {
  Shape perm;
  for (size_t i = 0; i < mask.size(); ++i) {
    if (!mask[i]) perm.push_back(static_cast<int64_t>(i));
  }
  for (size_t i = 0; i < mask.size(); ++i) {
    if (mask[i]) perm.push_back(static_cast<int64_t>(i));
  }
  return perm;
}

// `t` with the reduced dims moved last, as a contiguous (rows, cols) tensor: one row per output element.
Tensor as_rows(const Tensor& t, const std::vector<bool>& mask) {
  int64_t cols = reduced_count(t.sizes(), mask);
  int64_t rows = 1;
  for (size_t i = 0; i < mask.size(); ++i) {
    if (!mask[i]) rows *= t.sizes()[i];
  }
  return contiguous(reshape(permute(t, reduced_last(mask)), {rows, cols}));
}

ValuesIndices minmax(const Tensor& t, int64_t dim, bool keepdim, bool largest, const char* op) {
  int64_t d = wrap_dim(dim, t.dim(), op);
  Tensor in = t.dim() == 0 ? reshape(t, {1}) : contiguous(t);
  SYNCGRAD_CHECK(in.sizes()[d] != 0, IndexError, op, ": cannot reduce dim ", d, " of size 0 (input shape ",
                 shape_str(t.sizes()), "); the reduction has no identity value");
  Shape kept = in.sizes();
  kept[d] = 1;
  ValuesIndices out{empty(kept, {.dtype = t.dtype(), .device = t.device()}),
                    empty(kept, {.dtype = DType::i64, .device = t.device()})};
  kernels::minmax_dim(t.device(), out.values, out.indices, in, d, largest);
  if (t.dim() == 0) return {view(out.values, {}), view(out.indices, {})};
  if (!keepdim) {
    out.values = squeeze(out.values, d);
    out.indices = squeeze(out.indices, d);
  }
  return out;
}

Tensor extremum(const Tensor& t, bool largest, const char* op) {
  SYNCGRAD_CHECK(t.numel() != 0, ValueError, op, ": the input of shape ", shape_str(t.sizes()),
                 " has no elements; pass a dim to reduce along, or check the input is not empty");
  return minmax(reshape(t, {t.numel()}), 0, false, largest, op).values;
}

Tensor arg_extremum(const Tensor& t, std::optional<int64_t> dim, bool keepdim, bool largest, const char* op) {
  if (dim) return minmax(t, *dim, keepdim, largest, op).indices;
  SYNCGRAD_CHECK(t.numel() != 0, ValueError, op, ": the input of shape ", shape_str(t.sizes()),
                 " has no elements; pass a dim to reduce along, or check the input is not empty");
  Tensor index = minmax(reshape(t, {t.numel()}), 0, false, largest, op).indices;
  return keepdim ? reshape(index, Shape(t.sizes().size(), 1)) : index;
}

}  // namespace

Tensor sum(const Tensor& t, const Shape& dims, bool keepdim, std::optional<DType> dtype) {
  std::vector<bool> mask = reduction_mask(dims, t.dim(), "sum");
  DType out_dtype = dtype ? *dtype : (is_floating(t.dtype()) ? t.dtype() : DType::i64);
  // Half types accumulate in f32 and are rounded once at the end.
  Tensor acc = zeros(reduced_shape(t.sizes(), mask, true), {.dtype = half_to_float(out_dtype), .device = t.device()});
  if (t.numel() > 0) kernels::sum_into(t.device(), acc, t);
  Tensor result = to(acc, out_dtype);
  return keepdim ? result : view(result, reduced_shape(t.sizes(), mask, false));
}

Tensor sum_to(const Tensor& t, const Shape& shape) {
  if (t.sizes() == shape) return t;
  int64_t lead = t.dim() - static_cast<int64_t>(shape.size());
  SYNCGRAD_CHECK(lead >= 0, ShapeError, "sum_to: cannot reduce shape ", shape_str(t.sizes()), " to the larger shape ",
                 shape_str(shape));
  Shape dims;
  for (int64_t i = 0; i < t.dim(); ++i) {
    if (i < lead) {
      dims.push_back(i);
    } else if (shape[i - lead] == 1 && t.sizes()[i] != 1) {
      dims.push_back(i);
    } else if (shape[i - lead] != t.sizes()[i]) {
      throw ShapeError("sum_to: shape " + shape_str(t.sizes()) + " does not broadcast from " + shape_str(shape));
    }
  }
  if (dims.empty()) return view(t, shape);
  return reshape(sum(t, dims, true, t.dtype()), shape);
}

Tensor mean(const Tensor& t, const Shape& dims, bool keepdim, std::optional<DType> dtype) {
  DType out_dtype = dtype ? *dtype : t.dtype();
  SYNCGRAD_CHECK(is_floating(out_dtype), DTypeError, "mean: could not infer the output dtype: the input dtype is ",
                 dtype_name(t.dtype()),
                 (dtype ? std::string(" and the requested dtype is ") + dtype_name(*dtype) : std::string()),
                 "; mean needs a floating dtype: convert the input or pass dtype (e.g. DType::f32)");
  std::vector<bool> mask = reduction_mask(dims, t.dim(), "mean");
  DType acc_dtype = half_to_float(out_dtype);
  Tensor total = sum(t, dims, keepdim, acc_dtype);
  // An empty reduction divides 0 by 0 and gives NaN, as in PyTorch.
  Tensor count = scalar_tensor(static_cast<double>(reduced_count(t.sizes(), mask)), acc_dtype, t.device());
  return to(div(total, count), out_dtype);
}

Tensor max(const Tensor& t) { return extremum(t, true, "max"); }
Tensor min(const Tensor& t) { return extremum(t, false, "min"); }
ValuesIndices max(const Tensor& t, int64_t dim, bool keepdim) { return minmax(t, dim, keepdim, true, "max"); }
ValuesIndices min(const Tensor& t, int64_t dim, bool keepdim) { return minmax(t, dim, keepdim, false, "min"); }

Tensor argmax(const Tensor& t, std::optional<int64_t> dim, bool keepdim) {
  return arg_extremum(t, dim, keepdim, true, "argmax");
}
Tensor argmin(const Tensor& t, std::optional<int64_t> dim, bool keepdim) {
  return arg_extremum(t, dim, keepdim, false, "argmin");
}

namespace {

Tensor variance(const Tensor& t, const Shape& dims, int64_t correction, bool keepdim, bool root, const char* op) {
  require_floating(t, op);
  SYNCGRAD_CHECK(correction >= 0, ValueError, op, ": correction must be >= 0, got ", correction);
  std::vector<bool> mask = reduction_mask(dims, t.dim(), op);
  Tensor rows = as_rows(t, mask);
  Tensor out = empty({rows.sizes()[0]}, {.dtype = t.dtype(), .device = t.device()});
  kernels::var_rows(t.device(), out, rows, correction, root);
  return view(out, reduced_shape(t.sizes(), mask, keepdim));
}

}  // namespace

Tensor var(const Tensor& t, const Shape& dims, int64_t correction, bool keepdim) {
  return variance(t, dims, correction, keepdim, false, "var");
}

Tensor std(const Tensor& t, const Shape& dims, int64_t correction, bool keepdim) {
  return variance(t, dims, correction, keepdim, true, "std");
}

Tensor logsumexp(const Tensor& t, const Shape& dims, bool keepdim) {
  Tensor in = is_floating(t.dtype()) ? t : to(t, default_float_dtype());
  std::vector<bool> mask = reduction_mask(dims, in.dim(), "logsumexp");
  Tensor rows = as_rows(in, mask);
  Tensor out = empty({rows.sizes()[0]}, {.dtype = in.dtype(), .device = in.device()});
  kernels::logsumexp_rows(in.device(), out, rows);
  return view(out, reduced_shape(in.sizes(), mask, keepdim));
}

Tensor logsumexp_backward(const Tensor& grad, const Tensor& input, const Shape& dims) {
  std::vector<bool> mask = reduction_mask(dims, input.dim(), "logsumexp backward");
  // d logsumexp / d x = exp(x - logsumexp) = softmax of x over the reduced dims.
  Shape perm = reduced_last(mask);
  Shape permuted_sizes, inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    permuted_sizes.push_back(input.sizes()[perm[i]]);
    inverse[perm[i]] = static_cast<int64_t>(i);
  }
  Tensor probs = permute(reshape(softmax(as_rows(input, mask), 1), permuted_sizes), inverse);
  Tensor g = expand(reshape(to(grad, input.dtype()), reduced_shape(input.sizes(), mask, true)), input.sizes());
  return mul(probs, g);
}

Tensor extremum_backward(const Tensor& grad, const Tensor& input, const Tensor& value) {
  Tensor grad_in = zeros(input.sizes(), {.dtype = grad.dtype(), .device = grad.device()});
  if (input.numel() > 0) kernels::ties_backward(grad.device(), grad_in, contiguous(input), value, grad);
  return grad_in;
}

Tensor index_backward(const Tensor& grad, const Tensor& indices, const Shape& input_shape, int64_t dim,
                      bool keepdim) {
  Tensor grad_in = zeros(input_shape, {.dtype = grad.dtype(), .device = grad.device()});
  if (input_shape.empty()) {
    copy_(grad_in, grad);
    return grad_in;
  }
  Tensor g = keepdim ? grad : unsqueeze(grad, dim);
  Tensor i = keepdim ? indices : unsqueeze(indices, dim);
  kernels::index_backward(grad.device(), grad_in, contiguous(g), contiguous(i), dim);
  return grad_in;
}

}  // namespace raw
}  // namespace syncgrad
