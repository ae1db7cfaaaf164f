// Differentiable scaled dot-product attention: one node saving q, k, v, the output and the row log-sum-exps;
// its backward is the fused raw backward.
#include "autograd/ops/attention.h"

#include "autograd/autocast.h"
#include "autograd/meta.h"
#include "tensor/ops/attention.h"

namespace syncgrad {
namespace {

using autograd::GradList;
using autograd::Node;
using autograd::SavedTensor;

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool is_causal,
                                    std::optional<double> scale) {
  if (auto c = autograd::autocast_operands(autograd::CastPolicy::fp32, {&q, &k, &v})) {
    return scaled_dot_product_attention(c[0], c[1], c[2], is_causal, scale);
  }
  raw::AttentionResult result = raw::scaled_dot_product_attention(q, k, v, is_causal, scale);
  if (autograd::any_requires_grad({&q, &k, &v})) {
    auto backward = [q = SavedTensor(q), k = SavedTensor(k), v = SavedTensor(v), out = SavedTensor(result.out),
                     lse = SavedTensor(result.lse), is_causal, scale](const Node& node, GradList&& g) {
      if (!g[0].defined()) return GradList(3);
      raw::AttentionGrads grads = raw::scaled_dot_product_attention_backward(
          g[0], q.get(node), k.get(node), v.get(node), {out.get(node), lse.get(node)}, is_causal, scale);
      return GradList{grads.q, grads.k, grads.v};
    };
    autograd::record<"ScaledDotProductAttentionBackward">({&q, &k, &v}, {&result.out}, std::move(backward));
  }
  return result.out;
}

}  // namespace syncgrad
