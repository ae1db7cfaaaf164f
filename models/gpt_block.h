// The pieces of a GPT transformer block, with GPT-2's parameter names: CausalSelfAttention (c_attn, c_proj),
// the feed-forward GPTMLP (c_fc, c_proj) and the pre-LayerNorm Block (ln_1, attn, ln_2, mlp).
#pragma once

#include <memory>

#include "models/gpt_config.h"
#include "nn/linear.h"
#include "nn/module.h"
#include "nn/normalization.h"
#include "tensor/generator.h"

namespace syncgrad::models {

// Multi-head self-attention in which position t sees positions <= t. q, k and v come from one Linear
// (n_embd -> 3 n_embd, in that order); heads have n_embd / n_head channels.
class CausalSelfAttention : public nn::Module {
 public:
  CausalSelfAttention(const GPTConfig& config, Generator* gen);
  // (B, T, C) -> (B, T, C)
  Tensor forward(const Tensor& x) override;

  int64_t n_head, n_embd;
  double dropout;
  // false: the unfused composition (q k^T, masked softmax, dropout, @ v) instead of the fused kernel; it is
  // also what runs while training with dropout > 0, since the fused kernel has no attention dropout.
  bool fused = true;
  std::shared_ptr<nn::Linear> c_attn, c_proj;
};

// Linear(n_embd -> 4 n_embd), GELU (tanh approximation, as GPT-2), Linear(4 n_embd -> n_embd), dropout.
class GPTMLP : public nn::Module {
 public:
  GPTMLP(const GPTConfig& config, Generator* gen);
  // (B, T, C) -> (B, T, C)
  Tensor forward(const Tensor& x) override;

  double dropout;
  // false: c_fc then GELU as two ops instead of the fused linear_gelu (the same values; for comparisons).
  bool fused = true;
  std::shared_ptr<nn::Linear> c_fc, c_proj;
};

// x + attn(ln_1(x)), then + mlp(ln_2(x)).
class Block : public nn::Module {
 public:
  Block(const GPTConfig& config, Generator* gen);
  // (B, T, C) -> (B, T, C)
  Tensor forward(const Tensor& x) override;

  std::shared_ptr<nn::LayerNorm> ln_1;
  std::shared_ptr<CausalSelfAttention> attn;
  std::shared_ptr<nn::LayerNorm> ln_2;
  std::shared_ptr<GPTMLP> mlp;
};

}  // namespace syncgrad::models
