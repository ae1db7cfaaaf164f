// Trainer checkpoints. A checkpoint directory holds two safetensors files, each written atomically:
//   model.safetensors       the model's state_dict under PyTorch's key names (loads with
//                           safetensors.torch.load_file + model.load_state_dict in Python);
//   checkpoint.safetensors  "model.<key>" and "optimizer.<key>" tensors, and in __metadata__ the training
//                           position (epoch, step, batch), the default generator's state, the GradScaler's
//                           state ("grad_scaler.<key>", --amp fp16), the optimizer's hyperparameters and the
//                           run's config.
#pragma once

#include <map>
#include <string>

#include "nn/module.h"
#include "optim/optimizer.h"
#include "tools/train/train_config.h"

namespace syncgrad::train {

struct TrainingPosition {
  int epoch = 0;               // 0-based epoch the next batch belongs to
  int64_t batch_in_epoch = 0;  // index of the next batch within that epoch
  int64_t step = 0;            // optimizer steps taken so far
  uint64_t rng_seed = 0;       // default generator state (dropout and other random ops)
  uint64_t rng_offset = 0;
  std::map<std::string, double> grad_scaler;  // GradScaler::state_dict() (--amp fp16); empty otherwise
};

// Creates `dir` if needed and checks that files can be written there (before any training time is spent).
void ensure_writable_directory(const std::string& dir);

void save_checkpoint(const std::string& dir, const std::string& model_name, const nn::Module& model,
                     const optim::Optimizer& optimizer, const TrainingPosition& position, const TrainConfig& config);

// Restores model and optimizer in place and returns the position; `path` is a checkpoint directory or its
// checkpoint.safetensors. Errors name the file and what differs (another model, missing keys, shapes).
TrainingPosition load_checkpoint(const std::string& path, const std::string& model_name, nn::Module& model,
                                 optim::Optimizer& optimizer);

// Loads model weights from a safetensors file with PyTorch key names (e.g. written by PyTorch).
void load_weights(const std::string& file, nn::Module& model);

}  // namespace syncgrad::train
