// Turning on activation checkpointing in a model built by name (syncgrad-train's --activation-checkpointing):
// GPT checkpoints each transformer block, ResNet each stage (but the last: models/gpt.h, models/resnet.h).
#pragma once

#include "nn/module.h"

namespace syncgrad::models {

// Whether `model` has blocks to checkpoint (a GPT or a ResNet).
bool supports_activation_checkpointing(const nn::Module& model);
// Sets the model's activation_checkpointing flag; a ValueError naming the model's type for a model without
// checkpointable blocks (an MLP or the CNN: checkpointing their few layers would only add recomputation).
void set_activation_checkpointing(nn::Module& model, bool enabled);

}  // namespace syncgrad::models
