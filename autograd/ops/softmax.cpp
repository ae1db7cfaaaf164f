// Differentiable softmax / log_softmax: the backward reads only the saved output
// (softmax: y * (g - sum(g * y)); log_softmax: g - exp(y) * sum(g)), through the fused kernels.
#include "autograd/ops/softmax.h"

#include "autograd/autocast.h"
#include "autograd/meta.h"
#include "autograd/ops/views.h"
#include "tensor/ops/softmax.h"

namespace syncgrad {
namespace {

using autograd::GradList;
using autograd::Node;
using autograd::SavedTensor;

template <bool Log, autograd::NodeName Name>
Tensor softmax_op(const Tensor& t, int64_t dim, std::optional<DType> dtype) {
  if (!dtype) {
    if (auto c = autograd::autocast_operands(autograd::CastPolicy::fp32, {&t})) {
      return softmax_op<Log, Name>(c[0], dim, dtype);
    }
  }
  Tensor in = dtype ? syncgrad::to(t, *dtype) : t;
  Tensor out = Log ? raw::log_softmax(in, dim) : raw::softmax(in, dim);
  if (autograd::any_requires_grad({&in})) {
    auto backward = [result = SavedTensor(out), dim](const Node& node, GradList&& g) {
      return GradList{raw::softmax_backward(g[0], result.get(node), dim, Log)};
    };
    autograd::record<Name>({&in}, {&out}, std::move(backward));
  }
  return out;
}

}  // namespace

Tensor softmax(const Tensor& t, int64_t dim, std::optional<DType> dtype) {
  return softmax_op<false, "SoftmaxBackward">(t, dim, dtype);
}

Tensor log_softmax(const Tensor& t, int64_t dim, std::optional<DType> dtype) {
  return softmax_op<true, "LogSoftmaxBackward">(t, dim, dtype);
}

}  // namespace syncgrad
