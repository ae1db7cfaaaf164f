// set_activation_checkpointing: the models that have checkpointable blocks.
#include "models/activation_checkpointing.h"

#include "models/gpt.h"
#include "models/resnet.h"
#include "tensor/check.h"

namespace syncgrad::models {

bool supports_activation_checkpointing(const nn::Module& model) {
  return dynamic_cast<const GPT*>(&model) != nullptr || dynamic_cast<const ResNet*>(&model) != nullptr;
}

void set_activation_checkpointing(nn::Module& model, bool enabled) {
  if (auto* gpt = dynamic_cast<GPT*>(&model)) {
    gpt->activation_checkpointing = enabled;
  } else if (auto* resnet = dynamic_cast<ResNet*>(&model)) {
    resnet->activation_checkpointing = enabled;
  } else {
    throw ValueError("activation checkpointing: the model " + model.type_name() +
                     " has no blocks to checkpoint; it is supported for the GPT (each transformer block) and the "
                     "ResNets (each stage)");
  }
}

}  // namespace syncgrad::models
