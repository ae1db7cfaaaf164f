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
using autograd::NodeOf;
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

struct SumBackward final : NodeOf<SumBackward> {
  static constexpr const char* kName = "SumBackward";
  ReducedDims reduced;
  DType input_dtype = DType::f32;
  GradList apply(GradList&& g) override { return {raw::to(reduced.broadcast(g[0]), input_dtype)}; }
};

struct MeanBackward final : NodeOf<MeanBackward> {
  static constexpr const char* kName = "MeanBackward";
  ReducedDims reduced;
  DType input_dtype = DType::f32;
  GradList apply(GradList&& g) override {
    Tensor grad = raw::to(reduced.broadcast(g[0]), input_dtype);
    return {raw::div(grad, scalar_tensor(static_cast<double>(reduced.count()), input_dtype, grad.device()))};
  }
};

// max()/min() over all elements.
struct MaxMinAllBackward final : NodeOf<MaxMinAllBackward> {
  static constexpr const char* kName = "MaxMinAllBackward";
  SavedTensor input, result;
  GradList apply(GradList&& g) override { return {raw::extremum_backward(g[0], input.get(*this), result.get(*this))}; }
  void release_saved() override {
    input.reset();
    result.reset();
  }
};

// max(dim)/min(dim): the values' gradient goes to the saved indices.
struct MaxMinDimBackward final : NodeOf<MaxMinDimBackward> {
  static constexpr const char* kName = "MaxMinDimBackward";
  SavedTensor indices;
  Shape input_shape;
  int64_t dim = 0;
  bool keepdim = false;
  GradList apply(GradList&& g) override {
    return {raw::index_backward(g[0], indices.get(*this), input_shape, dim, keepdim)};
  }
  void release_saved() override { indices.reset(); }
};

// x - mean(x) over the reduced dims, and count - correction.
Tensor deviations(const Tensor& x, const ReducedDims& reduced) {
  return raw::sub(x, raw::mean(x, dims_of(reduced.mask), true));
}

struct VarBackward final : NodeOf<VarBackward> {
  static constexpr const char* kName = "VarBackward";
  SavedTensor input;
  ReducedDims reduced;
  int64_t correction = 1;
  GradList apply(GradList&& g) override {
    Tensor x = input.get(*this);
    double scale = 2.0 / static_cast<double>(std::max<int64_t>(reduced.count() - correction, 0));
    return {raw::mul(raw::mul(deviations(x, reduced), scale), reduced.broadcast(raw::to(g[0], x.dtype())))};
  }
  void release_saved() override { input.reset(); }
};

struct StdBackward final : NodeOf<StdBackward> {
  static constexpr const char* kName = "StdBackward";
  SavedTensor input, result;
  ReducedDims reduced;
  int64_t correction = 1;
  GradList apply(GradList&& g) override {
    Tensor x = input.get(*this);
    double divisor = static_cast<double>(std::max<int64_t>(reduced.count() - correction, 0));
    Tensor denominator = reduced.broadcast(raw::mul(result.get(*this), divisor));
    Tensor numerator = raw::mul(deviations(x, reduced), reduced.broadcast(raw::to(g[0], x.dtype())));
    return {raw::div(numerator, denominator)};
  }
  void release_saved() override {
    input.reset();
    result.reset();
  }
};

struct LogsumexpBackward final : NodeOf<LogsumexpBackward> {
  static constexpr const char* kName = "LogsumexpBackward";
  SavedTensor input;
  Shape dims;
  GradList apply(GradList&& g) override { return {raw::logsumexp_backward(g[0], input.get(*this), dims)}; }
  void release_saved() override { input.reset(); }
};

template <class NodeT>
std::shared_ptr<NodeT> reduce_node(const Tensor& t, const Shape& dims, bool keepdim, const char* op) {
  auto node = std::make_shared<NodeT>();
  node->reduced = reduced_dims(t, dims, keepdim, op);
  return node;
}

Tensor record_extremum(const Tensor& t, Tensor out) {
  if (autograd::any_requires_grad({&t})) {
    auto node = std::make_shared<MaxMinAllBackward>();
    node->input = t;
    node->result = out;
    autograd::record(node, {&t}, {&out});
  }
  return out;
}

ValuesIndices record_extremum_dim(const Tensor& t, ValuesIndices out, int64_t dim, bool keepdim) {
  if (autograd::any_requires_grad({&t})) {
    auto node = std::make_shared<MaxMinDimBackward>();
    node->indices = out.indices;
    node->input_shape = t.sizes();
    node->dim = wrap_dim(dim, t.dim(), "max/min");
    node->keepdim = keepdim;
    autograd::record(node, {&t}, {&out.values});
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
    auto node = reduce_node<SumBackward>(t, dims, keepdim, "sum");
    node->input_dtype = t.dtype();
    autograd::record(node, {&t}, {&out});
  }
  return out;
}

Tensor mean(const Tensor& t, const Shape& dims, bool keepdim, std::optional<DType> dtype) {
  if (!dtype) {
    if (auto c = autograd::autocast_operands(autograd::CastPolicy::fp32, {&t})) return mean(c[0], dims, keepdim, dtype);
  }
  Tensor out = raw::mean(t, dims, keepdim, dtype);
  if (autograd::any_requires_grad({&t})) {
    auto node = reduce_node<MeanBackward>(t, dims, keepdim, "mean");
    node->input_dtype = t.dtype();
    autograd::record(node, {&t}, {&out});
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
    auto node = reduce_node<VarBackward>(t, dims, keepdim, "var");
    node->input = t;
    node->correction = correction;
    autograd::record(node, {&t}, {&out});
  }
  return out;
}

Tensor std(const Tensor& t, const Shape& dims, int64_t correction, bool keepdim) {
  Tensor out = raw::std(t, dims, correction, keepdim);
  if (autograd::any_requires_grad({&t})) {
    auto node = reduce_node<StdBackward>(t, dims, keepdim, "std");
    node->input = t;
    node->result = out;
    node->correction = correction;
    autograd::record(node, {&t}, {&out});
  }
  return out;
}

Tensor logsumexp(const Tensor& t, const Shape& dims, bool keepdim) {
  Tensor out = raw::logsumexp(t, dims, keepdim);
  if (autograd::any_requires_grad({&t})) {
    auto node = std::make_shared<LogsumexpBackward>();
    node->input = t;
    node->dims = dims;
    autograd::record(node, {&t}, {&out});
  }
  return out;
}

// Tensor's reduction conveniences forward to the differentiable ops.
Tensor Tensor::sum() const { return syncgrad::sum(*this); }
Tensor Tensor::mean() const { return syncgrad::mean(*this); }

}  // namespace syncgrad
