// models::GPT: a decoder-only transformer language model in GPT-2's layout: token and position embeddings,
// n_layer pre-LayerNorm blocks (causal multi-head self-attention, GELU MLP), a final LayerNorm and an output
// layer tied to the token embedding. Parameter names follow the common GPT-2 definition (nanoGPT's):
//   transformer.wte.weight, transformer.wpe.weight, transformer.h.N.ln_1.{weight,bias},
//   transformer.h.N.attn.c_attn.{weight,bias}, transformer.h.N.attn.c_proj.*, transformer.h.N.ln_2.*,
//   transformer.h.N.mlp.c_fc.*, transformer.h.N.mlp.c_proj.*, transformer.ln_f.*, lm_head.weight (the same
//   tensor as transformer.wte.weight)
// so a state dict saved as safetensors loads into a PyTorch model of that definition and back.
#pragma once

#include <memory>
#include <vector>

#include "models/gpt_block.h"
#include "models/gpt_config.h"
#include "nn/container.h"
#include "nn/embedding.h"
#include "nn/module.h"
#include "nn/normalization.h"
#include "tensor/generator.h"

namespace syncgrad::models {

// The "transformer" child: embeddings wte (vocab_size, n_embd) and wpe (block_size, n_embd), the blocks
// h.0 .. h.{n_layer - 1}, and the final LayerNorm ln_f.
class GPTTransformer : public nn::Module {
 public:
  GPTTransformer(const GPTConfig& config, Generator* gen);

  std::shared_ptr<nn::Embedding> wte, wpe;
  std::shared_ptr<nn::ModuleList> h;
  std::vector<std::shared_ptr<Block>> blocks;  // the entries of h
  std::shared_ptr<nn::LayerNorm> ln_f;
};

// logits = x @ weight^T with a weight owned elsewhere (the token embedding): no parameter of its own.
class TiedLinear : public nn::Module {
 public:
  explicit TiedLinear(const Tensor& weight);
  // (*, in_features) -> (*, out_features)
  Tensor forward(const Tensor& x) override;

  Tensor weight;  // (out_features, in_features), shared with its owner

 protected:
  std::string extra_repr() const override;
};

class GPT : public nn::Module {
 public:
  // GPT-2 initialisation from `gen`: Linear weights and both embeddings ~ N(0, 0.02^2), the residual
  // projections (attn.c_proj, mlp.c_proj) ~ N(0, (0.02 / sqrt(2 n_layer))^2), biases 0, LayerNorms 1 and 0.
  // The config is validated (ValueError).
  explicit GPT(const GPTConfig& config = {}, Generator* gen = nullptr);
  // Token ids (B, T) of int64 (or int32) with 1 <= T <= block_size -> logits (B, T, vocab_size). Other shapes
  // are a ShapeError; ids outside [0, vocab_size) an IndexError.
  Tensor forward(const Tensor& tokens) override;

  // The parameter count with the tied embedding counted once; non_embedding leaves out the position
  // embedding (whose lookups cost no FLOPs; the token embedding still counts as the output layer).
  int64_t num_parameters(bool non_embedding = false) const;
  // Training FLOPs (forward and backward) per token at full context: 6 N + 12 n_layer n_embd block_size,
  // with N = num_parameters(true): 2 FLOPs per weight and token forward, 4 backward, and the attention
  // scores and weighted sums (q k^T and p v: 2 x 2 n_embd block_size forward, twice that backward), counted
  // without the causal mask's saving, as the PaLM paper's MFU does.
  double flops_per_token() const;

  GPTConfig config;
  std::shared_ptr<GPTTransformer> transformer;
  std::shared_ptr<TiedLinear> lm_head;
  // Each Block's activations but the last's (backward needs those first) are recomputed in backward instead of
  // kept (nn/checkpoint.h); the gradients are the same bit for bit. Under DistributedDataParallel with
  // find_unused_parameters, or a parameter shared with a checkpointed block, use DDPOptions::static_graph.
  bool activation_checkpointing = false;
};

}  // namespace syncgrad::models
