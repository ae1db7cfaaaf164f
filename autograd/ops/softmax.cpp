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
using autograd::NodeOf;
using autograd::SavedTensor;

struct SoftmaxBackward final : NodeOf<SoftmaxBackward> {
  static constexpr const char* kName = "SoftmaxBackward";
  SavedTensor result;
  int64_t dim = 0;
  GradList apply(GradList&& g) override { return {raw::softmax_backward(g[0], result.get(*this), dim, false)}; }
  void release_saved() override { result.reset(); }
};

struct LogSoftmaxBackward final : NodeOf<LogSoftmaxBackward> {
  static constexpr const char* kName = "LogSoftmaxBackward";
  SavedTensor result;
  int64_t dim = 0;
  GradList apply(GradList&& g) override { return {raw::softmax_backward(g[0], result.get(*this), dim, true)}; }
  void release_saved() override { result.reset(); }
};

template <class NodeT>
Tensor softmax_op(const Tensor& t, int64_t dim, std::optional<DType> dtype, bool log) {
  if (!dtype) {
    if (auto c = autograd::autocast_operands(autograd::CastPolicy::fp32, {&t})) {
      return softmax_op<NodeT>(c[0], dim, dtype, log);
    }
  }
  Tensor in = dtype ? syncgrad::to(t, *dtype) : t;
  Tensor out = log ? raw::log_softmax(in, dim) : raw::softmax(in, dim);
  if (autograd::any_requires_grad({&in})) {
    auto node = std::make_shared<NodeT>();
    node->result = out;
    node->dim = dim;
    autograd::record(node, {&in}, {&out});
  }
  return out;
}

}  // namespace

Tensor softmax(const Tensor& t, int64_t dim, std::optional<DType> dtype) {
  return softmax_op<SoftmaxBackward>(t, dim, dtype, false);
}

Tensor log_softmax(const Tensor& t, int64_t dim, std::optional<DType> dtype) {
  return softmax_op<LogSoftmaxBackward>(t, dim, dtype, true);
}

}  // namespace syncgrad
