// Raw reductions: dims handling, output allocation and dispatch.
#include "tensor/ops/reduce.h"

#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad {

namespace kernels {
constinit KernelSlot<void(const Tensor&, const Tensor&)> sum_into("sum");
}  // namespace kernels

std::vector<bool> reduction_mask(const Shape& dims, int64_t ndim, const char* op) {
  std::vector<bool> mask(static_cast<size_t>(ndim), dims.empty());
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, ndim, op);
    if (ndim == 0) continue;
    if (mask[w]) {
      throw ShapeError(std::string(op) + ": dim " + std::to_string(w) + " appears more than once in " + shape_str(dims));
    }
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

namespace raw {

Tensor sum(const Tensor& t, const Shape& dims, bool keepdim, std::optional<DType> dtype) {
  std::vector<bool> mask = reduction_mask(dims, t.dim(), "sum");
  DType out_dtype = dtype ? *dtype : (is_floating(t.dtype()) ? t.dtype() : DType::i64);
  // Half types accumulate in f32 and are rounded once at the end.
  DType acc_dtype = (out_dtype == DType::f16 || out_dtype == DType::bf16) ? DType::f32 : out_dtype;
  Tensor acc = zeros(reduced_shape(t.sizes(), mask, true), {.dtype = acc_dtype, .device = t.device()});
  if (t.numel() > 0) kernels::sum_into(t.device(), acc, t);
  Tensor result = to(acc, out_dtype);
  return keepdim ? result : view(result, reduced_shape(t.sizes(), mask, false));
}

Tensor sum_to(const Tensor& t, const Shape& shape) {
  if (t.sizes() == shape) return t;
  int64_t lead = t.dim() - static_cast<int64_t>(shape.size());
  if (lead < 0) {
    throw ShapeError("sum_to: cannot reduce shape " + shape_str(t.sizes()) + " to the larger shape " + shape_str(shape));
  }
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

}  // namespace raw
}  // namespace syncgrad
