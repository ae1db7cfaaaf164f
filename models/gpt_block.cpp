// GPT block pieces: attention through the fused causal kernel (or its unfused composition), GELU MLP,
// pre-LayerNorm residual block.
#include "models/gpt_block.h"

#include <cmath>
#include <limits>

#include "autograd/ops/attention.h"
#include "autograd/ops/dropout.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/join.h"
#include "autograd/ops/linalg.h"
#include "autograd/ops/linear_gelu.h"
#include "autograd/ops/softmax.h"
#include "autograd/ops/views.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad::models {
namespace {

// softmax(q k^T / sqrt(D) masked to keys <= query) -> dropout -> @ v, from separate differentiable ops.
// q, k, v (B, H, T, D) -> (B, H, T, D)
Tensor unfused_causal_attention(const Tensor& q, const Tensor& k, const Tensor& v, double dropout_p, bool training) {
  const int64_t len = q.size(2);
  Tensor scores =
      mul(matmul(q, transpose(k, -2, -1)), 1.0 / std::sqrt(static_cast<double>(q.size(3))));  // (B, H, T, T)
  Tensor positions = arange(len);
  Tensor visible = ge(raw::view(positions, {len, 1}), raw::view(positions, {1, len}));  // (T, T) key <= query
  Tensor probs = softmax(where(visible, scores, -std::numeric_limits<double>::infinity()), -1);
  return matmul(dropout(probs, dropout_p, training), v);
}

}  // namespace

CausalSelfAttention::CausalSelfAttention(const GPTConfig& config, Generator* gen)
    : Module("CausalSelfAttention"),
      n_head(config.n_head),
      n_embd(config.n_embd),
      dropout(config.dropout),
      c_attn(
          register_module("c_attn", std::make_shared<nn::Linear>(config.n_embd, 3 * config.n_embd, config.bias, gen))),
      c_proj(register_module("c_proj", std::make_shared<nn::Linear>(config.n_embd, config.n_embd, config.bias, gen))) {}

Tensor CausalSelfAttention::forward(const Tensor& x) {
  const int64_t batch = x.size(0), len = x.size(1), head_size = n_embd / n_head;
  const std::vector<Tensor> qkv = split(c_attn->forward(x), n_embd, 2);  // 3 x (B, T, C)
  auto heads = [&](int64_t part) {  // (B, n_head, T, head_size) views of q, k or v
    return transpose(view(qkv[part], {batch, len, n_head, head_size}), 1, 2);
  };
  const bool attention_dropout = is_training() && dropout > 0;
  Tensor y = fused && !attention_dropout
                 ? scaled_dot_product_attention(heads(0), heads(1), heads(2), true)
                 : unfused_causal_attention(heads(0), heads(1), heads(2), dropout, is_training());
  y = reshape(transpose(y, 1, 2), {batch, len, n_embd});  // heads side by side again (a view after the fused op)
  return syncgrad::dropout(c_proj->forward(y), dropout, is_training());
}

GPTMLP::GPTMLP(const GPTConfig& config, Generator* gen)
    : Module("MLP"),
      dropout(config.dropout),
      c_fc(register_module("c_fc", std::make_shared<nn::Linear>(config.n_embd, 4 * config.n_embd, config.bias, gen))),
      c_proj(register_module("c_proj",
                             std::make_shared<nn::Linear>(4 * config.n_embd, config.n_embd, config.bias, gen))) {}

Tensor GPTMLP::forward(const Tensor& x) {
  Tensor hidden = fused ? linear_gelu(x, c_fc->weight, c_fc->bias, GeluApproximate::tanh)
                        : gelu(c_fc->forward(x), GeluApproximate::tanh);  // (B, T, 4C)
  return syncgrad::dropout(c_proj->forward(hidden), dropout, is_training());
}

Block::Block(const GPTConfig& config, Generator* gen)
    : Module("Block"),
      ln_1(register_module("ln_1", std::make_shared<nn::LayerNorm>(Shape{config.n_embd}, 1e-5, true, config.bias))),
      attn(register_module("attn", std::make_shared<CausalSelfAttention>(config, gen))),
      ln_2(register_module("ln_2", std::make_shared<nn::LayerNorm>(Shape{config.n_embd}, 1e-5, true, config.bias))),
      mlp(register_module("mlp", std::make_shared<GPTMLP>(config, gen))) {}

Tensor Block::forward(const Tensor& x) {
  Tensor h = add(x, attn->forward(ln_1->forward(x)));
  return add(h, mlp->forward(ln_2->forward(h)));
}

}  // namespace syncgrad::models
