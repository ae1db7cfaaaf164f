// Differentiable reductions. Backward formulas (g = output gradient broadcast back over the reduced dims):
// sum: g; mean: g / count; max/min: g at the extremum (shared among ties for the all-element form);
// var: g * 2 (x - mean) / (count - correction); std: g * (x - mean) / ((count - correction) * std);
// logsumexp: g * softmax(x) over the reduced dims.
#include "autograd/ops/reduce.h"

#include "autograd/autocast.h"
#include "autograd/meta.h"
#include "autograd/ops/views.h"
#include "tensor/ops/copy.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad {
namespace {

using autograd::GradList;
using autograd::Node;
using autograd::SavedTensor;

// What a reduction over some dims needs to send its output gradient back over the input's shape.
struct ReducedDims {
  Shape input_shape;
  std::vector<bool> mask;
  bool keepdim = false;

  // g (the reduction's output shape) viewed with size-1 reduced dims and expanded to the input shape.
  Tensor broadcast(const Tensor& g) const {
    return raw::expand(raw::reshape(g, reduced_shape(input_shape, mask, true)), input_shape);
  }
  int64_t count() const { return reduced_count(input_shape, mask); }
};

ReducedDims reduced_dims(const Tensor& t, const Shape& dims, bool keepdim, const char* op) {
  return {t.sizes(), reduction_mask(dims, t.dim(), op), keepdim};
}

Shape dims_of(const std::vector<bool>& mask) {
  Shape dims;
  for (size_t i = 0; i < mask.size(); ++i) {
    if (mask[i]) dims.push_back(static_cast<int64_t>(i));
  }
  return dims;
}

// x - mean(x) over the reduced dims.
Tensor deviations(const Tensor& x, const ReducedDims& reduced) {
  return raw::sub(x, raw::mean(x, dims_of(reduced.mask), true));
}

// max()/min() over all elements: the gradient is shared evenly among the tied extrema.
Tensor record_extremum(const Tensor& t, Tensor out) {
  if (autograd::any_requires_grad({&t})) {
    auto backward = [input = SavedTensor(t), result = SavedTensor(out)](const Node& node, GradList&& g) {
      return GradList{raw::extremum_backward(g[0], input.get(node), result.get(node))};
    };
    autograd::record<"MaxMinAllBackward">({&t}, {&out}, std::move(backward));
  }
  return out;
}

// max(dim)/min(dim): the values' gradient goes to the saved indices.
ValuesIndices record_extremum_dim(const Tensor& t, ValuesIndices out, int64_t dim, bool keepdim) {
  if (autograd::any_requires_grad({&t})) {
    auto backward = [indices = SavedTensor(out.indices), input_shape = t.sizes(),
                     dim = wrap_dim(dim, t.dim(), "max/min"), keepdim](const Node& node, GradList&& g) {
      return GradList{raw::index_backward(g[0], indices.get(node), input_shape, dim, keepdim)};
    };
    autograd::record<"MaxMinDimBackward">({&t}, {&out.values}, std::move(backward));
  }
  return out;
}

}  // namespace

Tensor sum(const Tensor& t, const Shape& dims, bool keepdim, std::optional<DType> dtype) {
  if (!dtype) {
    if (auto c = autograd::autocast_operands(autograd::CastPolicy::fp32, {&t})) return sum(c[0], dims, keepdim, dtype);
  }
  Tensor out = raw::sum(t, dims, keepdim, dtype);
  if (autograd::any_requires_grad({&t})) {
    auto backward = [reduced = reduced_dims(t, dims, keepdim, "sum"), input_dtype = t.dtype()](GradList&& g) {
      return GradList{raw::to(reduced.broadcast(g[0]), input_dtype)};
    };
    autograd::record<"SumBackward">({&t}, {&out}, std::move(backward));
  }
  return out;
}

Tensor mean(const Tensor& t, const Shape& dims, bool keepdim, std::optional<DType> dtype) {
  if (!dtype) {
    if (auto c = autograd::autocast_operands(autograd::CastPolicy::fp32, {&t})) return mean(c[0], dims, keepdim, dtype);
  }
  Tensor out = raw::mean(t, dims, keepdim, dtype);
  if (autograd::any_requires_grad({&t})) {
    auto backward = [reduced = reduced_dims(t, dims, keepdim, "mean"), input_dtype = t.dtype()](GradList&& g) {
      Tensor grad = raw::to(reduced.broadcast(g[0]), input_dtype);
      return GradList{
          raw::div(grad, scalar_tensor(static_cast<double>(reduced.count()), input_dtype, grad.device()))};
    };
    autograd::record<"MeanBackward">({&t}, {&out}, std::move(backward));
  }
  return out;
}

Tensor max(const Tensor& t) { return record_extremum(t, raw::max(t)); }
Tensor min(const Tensor& t) { return record_extremum(t, raw::min(t)); }

ValuesIndices max(const Tensor& t, int64_t dim, bool keepdim) {
  return record_extremum_dim(t, raw::max(t, dim, keepdim), dim, keepdim);
}
ValuesIndices min(const Tensor& t, int64_t dim, bool keepdim) {
  return record_extremum_dim(t, raw::min(t, dim, keepdim), dim, keepdim);
}

Tensor argmax(const Tensor& t, std::optional<int64_t> dim, bool keepdim) { return raw::argmax(t, dim, keepdim); }
Tensor argmin(const Tensor& t, std::optional<int64_t> dim, bool keepdim) { return raw::argmin(t, dim, keepdim); }

Tensor var(const Tensor& t, const Shape& dims, int64_t correction, bool keepdim) {
  Tensor out = raw::var(t, dims, correction, keepdim);
  if (autograd::any_requires_grad({&t})) {
    auto backward = [input = SavedTensor(t), reduced = reduced_dims(t, dims, keepdim, "var"),
                     correction](const Node& node, GradList&& g) {
      Tensor x = input.get(node);
      double scale = 2.0 / static_cast<double>(std::max<int64_t>(reduced.count() - correction, 0));
      return GradList{raw::mul(raw::mul(deviations(x, reduced), scale), reduced.broadcast(raw::to(g[0], x.dtype())))};
    };
    autograd::record<"VarBackward">({&t}, {&out}, std::move(backward));
  }
  return out;
}

Tensor std(const Tensor& t, const Shape& dims, int64_t correction, bool keepdim) {
  Tensor out = raw::std(t, dims, correction, keepdim);
  if (autograd::any_requires_grad({&t})) {
    auto backward = [input = SavedTensor(t), result = SavedTensor(out), reduced = reduced_dims(t, dims, keepdim, "std"),
                     correction](const Node& node, GradList&& g) {
      Tensor x = input.get(node);
      double divisor = static_cast<double>(std::max<int64_t>(reduced.count() - correction, 0));
      Tensor denominator = reduced.broadcast(raw::mul(result.get(node), divisor));
      Tensor numerator = raw::mul(deviations(x, reduced), reduced.broadcast(raw::to(g[0], x.dtype())));
      return GradList{raw::div(numerator, denominator)};
    };
    autograd::record<"StdBackward">({&t}, {&out}, std::move(backward));
  }
  return out;
}

Tensor logsumexp(const Tensor& t, const Shape& dims, bool keepdim) {
  Tensor out = raw::logsumexp(t, dims, keepdim);
  if (autograd::any_requires_grad({&t})) {
    auto backward = [input = SavedTensor(t), dims](const Node& node, GradList&& g) {
      return GradList{raw::logsumexp_backward(g[0], input.get(node), dims)};
    };
    autograd::record<"LogsumexpBackward">({&t}, {&out}, std::move(backward));
  }
  return out;
}

// Tensor's reduction conveniences forward to the differentiable ops.
Tensor Tensor::sum() const { return syncgrad::sum(*this); }
Tensor Tensor::mean() const { return syncgrad::mean(*this); }

}  // namespace syncgrad
