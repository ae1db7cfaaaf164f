// GPTConfig: the sizes of models::GPT, and their text form "n_layer=4,n_embd=128,..." (syncgrad-train's
// --model-config). The defaults are a small character-level model that trains in minutes on one CPU core.
#pragma once

#include <cstdint>
#include <string>

namespace syncgrad::models {

struct GPTConfig {
  int64_t vocab_size = 256;  // byte-level tokens
  int64_t block_size = 128;  // longest context (position embeddings)
  int64_t n_layer = 4;
  int64_t n_head = 4;
  int64_t n_embd = 128;      // a multiple of n_head
  double dropout = 0.0;      // on embeddings, attention probabilities and residual branches while training
  bool bias = true;          // biases in the Linear and LayerNorm layers

  // Starts from the defaults and applies comma-separated key=value pairs (spaces around them are ignored;
  // booleans are true/false or 1/0). An unknown key or a bad value is a ValueError naming it and the keys
  // allowed; the result is validated.
  static GPTConfig parse(const std::string& text);
  // The pairs of every field in parse's format, e.g. "vocab_size=256,block_size=128,...".
  std::string to_string() const;
  // ValueError unless all sizes are positive, n_embd % n_head == 0 and 0 <= dropout < 1.
  void validate() const;
  int64_t head_size() const { return n_embd / n_head; }
};

}  // namespace syncgrad::models
