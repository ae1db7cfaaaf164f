// Character-level language modelling (--dataset text, model gpt): the bytes of a text (tools/train/
// text_corpus.h) are the tokens (vocabulary 256); the first 90% train and the last 10% validate. A training
// example is a window of block_size + 1 bytes at a multiple of block_size: the model reads the first
// block_size and predicts each next byte (the last block_size). The loss is the mean cross-entropy over the
// (B * block_size, 256) logits; the evaluation the mean validation loss over up to kEvalTokens tokens of
// evenly spaced validation windows. Throughput is in tokens (the MFU of the progress line counts
// GPT::flops_per_token(): tools/train/mfu.h).
#pragma once

#include "tools/train/task.h"

namespace syncgrad::train {

// Validation tokens scored by one evaluation.
inline constexpr int64_t kEvalTokens = 32768;

// The text from config.data_dir (default kDefaultTextPath), the GPT from config.model_config
// (models::GPTConfig::parse, checked before any data is read).
std::unique_ptr<Task> make_text_task(const TrainConfig& config);

}  // namespace syncgrad::train
