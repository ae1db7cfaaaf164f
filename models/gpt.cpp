// models::GPT: module tree, GPT-2 initialisation, forward, parameter and FLOP counts.
#include "models/gpt.h"

#include <cmath>

#include "autograd/grad_mode.h"
#include "autograd/ops/dropout.h"
#include "autograd/ops/elementwise.h"
#include "autograd/ops/linalg.h"
#include "nn/checkpoint.h"
#include "nn/init.h"
#include "tensor/check.h"
#include "tensor/ops/factories.h"
#include "tensor/ops/views.h"

namespace syncgrad::models {
namespace {

constexpr double kInitStd = 0.02;

void init_linear(nn::Linear& layer, double std, Generator* gen) {
  nn::init::normal_(layer.weight, 0.0, std, gen);
  if (layer.bias.defined()) nn::init::zeros_(layer.bias);
}

}  // namespace

GPTTransformer::GPTTransformer(const GPTConfig& config, Generator* gen)
    : Module("GPTTransformer"),
      wte(register_module("wte", std::make_shared<nn::Embedding>(config.vocab_size, config.n_embd, std::nullopt, gen))),
      wpe(register_module("wpe", std::make_shared<nn::Embedding>(config.block_size, config.n_embd, std::nullopt, gen))),
      h(register_module("h", std::make_shared<nn::ModuleList>())) {
  for (int64_t i = 0; i < config.n_layer; ++i) {
    blocks.push_back(std::make_shared<Block>(config, gen));
    h->push_back(blocks.back());
  }
  ln_f = register_module("ln_f", std::make_shared<nn::LayerNorm>(Shape{config.n_embd}, 1e-5, true, config.bias));
}

TiedLinear::TiedLinear(const Tensor& weight) : Module("TiedLinear"), weight(register_parameter("weight", weight)) {}

Tensor TiedLinear::forward(const Tensor& x) { return linear(x, weight); }

std::string TiedLinear::extra_repr() const {
  return "in_features=" + std::to_string(weight.size(1)) + ", out_features=" + std::to_string(weight.size(0)) +
         ", bias=False, tied";
}

GPT::GPT(const GPTConfig& cfg, Generator* gen) : Module("GPT"), config(cfg) {
  config.validate();
  transformer = register_module("transformer", std::make_shared<GPTTransformer>(config, gen));
  lm_head = register_module("lm_head", std::make_shared<TiedLinear>(transformer->wte->weight));
  NoGradGuard no_grad;
  const double residual_std = kInitStd / std::sqrt(2.0 * static_cast<double>(config.n_layer));
  nn::init::normal_(transformer->wte->weight, 0.0, kInitStd, gen);
  nn::init::normal_(transformer->wpe->weight, 0.0, kInitStd, gen);
  for (const std::shared_ptr<Block>& block : transformer->blocks) {
    init_linear(*block->attn->c_attn, kInitStd, gen);
    init_linear(*block->attn->c_proj, residual_std, gen);
    init_linear(*block->mlp->c_fc, kInitStd, gen);
    init_linear(*block->mlp->c_proj, residual_std, gen);
  }
}

Tensor GPT::forward(const Tensor& tokens) {
  SYNCGRAD_CHECK(tokens.dim() == 2 && tokens.size(1) >= 1 && tokens.size(1) <= config.block_size &&
                     (tokens.dtype() == DType::i64 || tokens.dtype() == DType::i32),
                 ShapeError,
                 "GPT.forward: expected token ids (B, T) of int64 with 1 <= T <= block_size = ", config.block_size,
                 ", got ", shape_str(tokens.sizes()), " of ", dtype_name(tokens.dtype()),
                 " (crop longer contexts to their last block_size tokens)");
  const int64_t len = tokens.size(1);
  Tensor positions = arange(0, len, 1, {.dtype = DType::i64, .device = tokens.device()});  // (T)
  Tensor x = add(transformer->wte->forward(tokens), transformer->wpe->forward(positions));  // (B, T, C)
  x = dropout(x, config.dropout, is_training());
  const auto& blocks = transformer->blocks;
  for (size_t i = 0; i < blocks.size(); ++i) {
    // Not the last block: backward needs its activations first, so recomputing them would only cost time.
    const bool checkpointed = activation_checkpointing && i + 1 < blocks.size();
    x = checkpointed ? nn::checkpoint(*blocks[i], x) : blocks[i]->forward(x);
  }
  return lm_head->forward(transformer->ln_f->forward(x));  // (B, T, vocab_size)
}

int64_t GPT::num_parameters(bool non_embedding) const {
  int64_t count = 0;
  for (const Tensor& p : parameters()) count += p.numel();
  return non_embedding ? count - transformer->wpe->weight.numel() : count;
}

double GPT::flops_per_token() const {
  return 6.0 * static_cast<double>(num_parameters(true)) +
         12.0 * static_cast<double>(config.n_layer * config.n_embd * config.block_size);
}

}  // namespace syncgrad::models
