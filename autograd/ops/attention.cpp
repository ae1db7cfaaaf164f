// Differentiable scaled dot-product attention: one node saving q, k, v, the output and the row log-sum-exps;
// its backward is the fused raw backward.
#include "autograd/ops/attention.h"

#include "autograd/autocast.h"
#include "autograd/meta.h"
#include "tensor/ops/attention.h"

namespace syncgrad {
namespace {

using autograd::GradList;
using autograd::NodeOf;
using autograd::SavedTensor;

struct ScaledDotProductAttentionBackward final : NodeOf<ScaledDotProductAttentionBackward> {
  static constexpr const char* kName = "ScaledDotProductAttentionBackward";
  SavedTensor q, k, v, out, lse;
  bool is_causal = false;
  std::optional<double> scale;
  GradList apply(GradList&& g) override {
    if (!g[0].defined()) return GradList(3);
    raw::AttentionGrads grads = raw::scaled_dot_product_attention_backward(
        g[0], q.get(*this), k.get(*this), v.get(*this), {out.get(*this), lse.get(*this)}, is_causal, scale);
    return {grads.q, grads.k, grads.v};
  }
  void release_saved() override {
    q.reset();
    k.reset();
    v.reset();
    out.reset();
    lse.reset();
  }
};

}  // namespace

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, bool is_causal,
                                    std::optional<double> scale) {
  if (auto c = autograd::autocast_operands(autograd::CastPolicy::fp32, {&q, &k, &v})) {
    return scaled_dot_product_attention(c[0], c[1], c[2], is_causal, scale);
  }
  raw::AttentionResult result = raw::scaled_dot_product_attention(q, k, v, is_causal, scale);
  if (autograd::any_requires_grad({&q, &k, &v})) {
    auto node = std::make_shared<ScaledDotProductAttentionBackward>();
    node->q = q;
    node->k = k;
    node->v = v;
    node->out = result.out;
    node->lse = result.lse;
    node->is_causal = is_causal;
    node->scale = scale;
    autograd::record(node, {&q, &k, &v}, {&result.out});
  }
  return result.out;
}

}  // namespace syncgrad
