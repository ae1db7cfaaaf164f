// Sampling text from a GPT: autoregressive generation with temperature and top-k.
#pragma once

#include <cstdint>
#include <vector>

#include "models/gpt.h"

namespace syncgrad::models {

struct SamplingOptions {
  double temperature = 1.0;  // > 0; logits are divided by it (below 1: more predictable text)
  int64_t top_k = 0;         // > 0: sample only among the k most likely tokens; 0: among all
  uint64_t seed = 0;         // the same seed, model and prompt give the same text
};

// Appends max_new_tokens tokens to `prompt`, one at a time: each comes from softmax(logits / temperature) of
// the last position, the context cropped to the model's last block_size tokens. Runs in eval mode without
// gradients (the model's mode is restored). Returns only the new tokens. ValueError for an empty prompt,
// max_new_tokens < 0, temperature <= 0 or top_k < 0.
std::vector<int64_t> generate(GPT& model, const std::vector<int64_t>& prompt, int64_t max_new_tokens,
                              const SamplingOptions& options = {});

}  // namespace syncgrad::models
