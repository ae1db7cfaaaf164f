// Differentiable views and copies. A view's backward maps the output gradient back to the input's shape:
// reshape back, permute by the inverse permutation, scatter a narrow/select into zeros, sum an expand.
#include "autograd/ops/views.h"

#include <numeric>

#include "autograd/meta.h"
#include "tensor/check.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/reduce.h"
#include "tensor/ops/views.h"

namespace syncgrad {
namespace {

using autograd::GradList;

// Backward of any view whose gradient is the output gradient reshaped to the input's shape.
Tensor record_reshape(const Tensor& in, Tensor out) {
  if (autograd::any_requires_grad({&in})) {
    autograd::record<"ReshapeBackward">({&in}, {&out}, [input_shape = in.sizes()](GradList&& g) {
      return GradList{raw::reshape(g[0], input_shape)};
    });
  }
  return out;
}

// Backward of narrow/slice/select: the gradient lands in the selected region of a zero tensor; `squeezed`:
// select, whose output lost `dim`.
Tensor record_slice(const Tensor& in, Tensor out, int64_t dim, int64_t start, int64_t end, int64_t step,
                    bool squeezed) {
  if (autograd::any_requires_grad({&in})) {
    auto backward = [input_shape = in.sizes(), dim, start, end, step, squeezed](GradList&& g) {
      Tensor grad_in = zeros(input_shape, {.dtype = g[0].dtype(), .device = g[0].device()});
      Tensor region = raw::slice(grad_in, dim, start, end, step);
      raw::copy_(region, squeezed ? raw::unsqueeze(g[0], dim) : g[0]);
      return GradList{grad_in};
    };
    autograd::record<"SliceBackward">({&in}, {&out}, std::move(backward));
  }
  return out;
}

int64_t clamp_index(int64_t i, int64_t size) {
  if (i < 0) i += size;
  return std::clamp<int64_t>(i, 0, size);
}

}  // namespace

Tensor view(const Tensor& t, const Shape& shape) { return record_reshape(t, raw::view(t, shape)); }
Tensor reshape(const Tensor& t, const Shape& shape) { return record_reshape(t, raw::reshape(t, shape)); }
Tensor squeeze(const Tensor& t) { return record_reshape(t, raw::squeeze(t)); }
Tensor squeeze(const Tensor& t, int64_t dim) { return record_reshape(t, raw::squeeze(t, dim)); }
Tensor unsqueeze(const Tensor& t, int64_t dim) { return record_reshape(t, raw::unsqueeze(t, dim)); }
Tensor flatten(const Tensor& t, int64_t start_dim, int64_t end_dim) {
  return record_reshape(t, raw::flatten(t, start_dim, end_dim));
}

Tensor permute(const Tensor& t, const Shape& dims) {
  Tensor out = raw::permute(t, dims);
  if (autograd::any_requires_grad({&t})) {
    Shape inverse(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) inverse[wrap_dim(dims[i], t.dim(), "permute")] = static_cast<int64_t>(i);
    autograd::record<"PermuteBackward">({&t}, {&out}, [inverse = std::move(inverse)](GradList&& g) {
      return GradList{raw::permute(g[0], inverse)};
    });
  }
  return out;
}

Tensor transpose(const Tensor& t, int64_t dim0, int64_t dim1) {
  if (t.dim() < 2) return record_reshape(t, raw::transpose(t, dim0, dim1));
  Shape dims(t.dim());
  std::iota(dims.begin(), dims.end(), 0);
  std::swap(dims[wrap_dim(dim0, t.dim(), "transpose")], dims[wrap_dim(dim1, t.dim(), "transpose")]);
  return permute(t, dims);
}

Tensor narrow(const Tensor& t, int64_t dim, int64_t start, int64_t length) {
  Tensor out = raw::narrow(t, dim, start, length);
  int64_t d = wrap_dim(dim, t.dim(), "narrow");
  int64_t s = start < 0 ? start + t.sizes()[d] : start;
  return record_slice(t, out, d, s, s + length, 1, false);
}

Tensor slice(const Tensor& t, int64_t dim, int64_t start, int64_t end, int64_t step) {
  Tensor out = raw::slice(t, dim, start, end, step);
  int64_t d = wrap_dim(dim, t.dim(), "slice");
  int64_t size = t.sizes()[d];
  int64_t s = clamp_index(start, size);
  int64_t e = std::max(s, clamp_index(end, size));
  return record_slice(t, out, d, s, e, step, false);
}

Tensor select(const Tensor& t, int64_t dim, int64_t index) {
  Tensor out = raw::select(t, dim, index);
  int64_t d = wrap_dim(dim, t.dim(), "select");
  int64_t i = index < 0 ? index + t.sizes()[d] : index;
  return record_slice(t, out, d, i, i + 1, 1, true);
}

Tensor expand(const Tensor& t, const Shape& shape) {
  Tensor out = raw::expand(t, shape);
  if (autograd::any_requires_grad({&t})) {
    autograd::record<"ExpandBackward">({&t}, {&out}, [input_shape = t.sizes()](GradList&& g) {
      return GradList{raw::sum_to(g[0], input_shape)};
    });
  }
  return out;
}

Tensor clone(const Tensor& t) {
  Tensor out = raw::clone(t);
  if (autograd::any_requires_grad({&t})) {
    autograd::record<"CloneBackward">({&t}, {&out}, [](GradList&& g) { return GradList{g[0]}; });
  }
  return out;
}

Tensor contiguous(const Tensor& t) { return t.is_contiguous() ? t : clone(t); }

Tensor to(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor out = raw::to(t, dtype);
  if (autograd::any_requires_grad({&t}) && is_floating(dtype)) {
    autograd::record<"ToDTypeBackward">({&t}, {&out}, [input_dtype = t.dtype()](GradList&& g) {
      return GradList{raw::to(g[0], input_dtype)};
    });
  }
  return out;
}

Tensor to(const Tensor& t, Device device, bool non_blocking) {
  if (t.device() == device) return t;
  Tensor out = raw::to(t, device, non_blocking);
  if (autograd::any_requires_grad({&t})) {
    autograd::record<"ToDeviceBackward">({&t}, {&out}, [input_device = t.device()](GradList&& g) {
      return GradList{raw::to(g[0], input_device)};
    });
  }
  return out;
}

void copy_(const Tensor& dst, const Tensor& src) {
  autograd::check_inplace(dst, "copy_");
  SYNCGRAD_CHECK(!autograd::any_requires_grad({&src}), AutogradError,
                 "copy_: copying a tensor that requires grad into another tensor in place is not differentiable here; "
                 "use clone() / to() (differentiable) or detach() the source");
  raw::copy_(dst, src);
}

// Tensor's convenience methods forward to the differentiable ops.
Tensor Tensor::view(const Shape& shape) const { return syncgrad::view(*this, shape); }
Tensor Tensor::reshape(const Shape& shape) const { return syncgrad::reshape(*this, shape); }
Tensor Tensor::transpose(int64_t dim0, int64_t dim1) const { return syncgrad::transpose(*this, dim0, dim1); }
Tensor Tensor::permute(const Shape& dims) const { return syncgrad::permute(*this, dims); }
Tensor Tensor::t() const {
  SYNCGRAD_CHECK(dim() <= 2, ShapeError, "t: expects a tensor with <= 2 dimensions, got ", dim(), " (shape ",
                 shape_str(sizes()), "); use transpose(dim0, dim1)");
  return dim() < 2 ? *this : syncgrad::transpose(*this, 0, 1);
}
Tensor Tensor::unsqueeze(int64_t dim) const { return syncgrad::unsqueeze(*this, dim); }
Tensor Tensor::squeeze(int64_t dim) const { return syncgrad::squeeze(*this, dim); }
Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const { return syncgrad::flatten(*this, start_dim, end_dim); }
Tensor Tensor::expand(const Shape& shape) const { return syncgrad::expand(*this, shape); }
Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
  return syncgrad::narrow(*this, dim, start, length);
}
Tensor Tensor::select(int64_t dim, int64_t index) const { return syncgrad::select(*this, dim, index); }
Tensor Tensor::contiguous() const { return syncgrad::contiguous(*this); }
Tensor Tensor::clone() const { return syncgrad::clone(*this); }
Tensor Tensor::to(DType dtype) const { return syncgrad::to(*this, dtype); }
Tensor Tensor::to(Device device, bool non_blocking) const { return syncgrad::to(*this, device, non_blocking); }

}  // namespace syncgrad
