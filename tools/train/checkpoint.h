// Trainer checkpoints. --checkpoint-dir ROOT holds one directory per saved step (tensor/io/checkpoint_directory.h:
// written into a temporary sibling and renamed into place, complete only with its manifest.json):
//   ROOT/step-000123/model.safetensors           the model's state_dict under PyTorch's key names (loads with
//                                                safetensors.torch.load_file + model.load_state_dict in Python)
//   ROOT/step-000123/training_state.safetensors  "optimizer.<key>" tensors, and in __metadata__ the training
//                                                position (epoch, step, batch; the world size and the epoch's
//                                                global position), the default generator's state,
//                                                the GradScaler's state ("grad_scaler.<key>", --amp fp16), the
//                                                optimizer's hyperparameters and the run's config
//   ROOT/step-000123/comm_state.safetensors      under DDP: every rank's communication state (its step count,
//                                                PowerSGD's error feedback and warm-start factors), "rank<R>.<key>"
//                                                (gathered to rank 0)
//   ROOT/step-000123/manifest.json               each file's size and CRC32, written last
//   ROOT/latest -> step-000123                   the newest complete one
// Model and training state always come from the same step. Checkpoints of the older layout (model.safetensors
// and checkpoint.safetensors at the top of the directory) still load, with a note.
//
// Test hook: SYNCGRAD_TEST_SAVE_DELAY_MS=N makes every save sleep N ms after its files are written and before
// the manifest and the rename (so a test can kill the process in the middle of a save). For tests only.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "nn/module.h"
#include "optim/optimizer.h"
#include "tensor/io/directory_lock.h"
#include "tensor/io/safetensors.h"
#include "tools/train/train_config.h"

namespace syncgrad::train {

struct TrainingPosition {
  int epoch = 0;               // 0-based epoch the next batch belongs to
  int64_t batch_in_epoch = 0;  // index of the next batch within that epoch
  int64_t step = 0;            // optimizer steps taken so far
  uint64_t rng_seed = 0;       // default generator state (dropout and other random ops)
  uint64_t rng_offset = 0;
  std::map<std::string, double> grad_scaler;  // GradScaler::state_dict() (--amp fp16); empty otherwise
  // Where the data stood across ranks (data/data_position.h), so that a job of another world size can continue
  // the epoch (--elastic): the saving job's world size (0 in checkpoints written before it was recorded), where
  // the epoch began in its order and how many of its entries all ranks consumed together.
  int64_t world_size = 0;
  int64_t epoch_start = 0;
  int64_t samples_consumed = 0;
  bool distributed_order = false;  // the data came from a DistributedSampler (several processes, or --elastic)
  io::NamedTensors comm_state;     // every rank's DDP communication state, "rank<R>.<key>" (empty: none)
};

inline constexpr const char* kModelFileName = "model.safetensors";
inline constexpr const char* kTrainingStateFileName = "training_state.safetensors";
inline constexpr const char* kCommStateFileName = "comm_state.safetensors";
// The older layout's file at the top of the checkpoint directory (model and optimizer tensors together).
inline constexpr const char* kLegacyCheckpointFileName = "checkpoint.safetensors";

// Creates `dir` if needed and checks that files can be written there (before any training time is spent).
void ensure_writable_directory(const std::string& dir);

// Saves ROOT/step-<position.step>/ in the locked root, then keeps only the newest `keep` complete checkpoints
// (keep <= 0: all). Returns the checkpoint's directory.
std::string save_checkpoint(const io::DirectoryLock& root, const std::string& model_name, const nn::Module& model,
                            const optim::Optimizer& optimizer, const TrainingPosition& position,
                            const TrainConfig& config, int keep);

// Where a checkpoint path leads: `path` is a step directory, a file in one, a ROOT of them (the newest complete
// one; newer incomplete or damaged ones are skipped and listed in `skipped`), or a directory or
// checkpoint.safetensors of the older layout.
struct CheckpointLocation {
  std::string directory;        // the step directory, or the older layout's directory
  bool legacy_layout = false;
  std::string model_file;       // DIR/model.safetensors
  std::string state_file;       // DIR/training_state.safetensors (legacy: DIR/checkpoint.safetensors)
  std::vector<std::string> skipped;
};

// IOError when `path` does not exist; CorruptCheckpointError (io) naming the file and the reason when the
// checkpoint it names is incomplete or damaged, or when ROOT holds no complete checkpoint; ValueError for a
// directory that is no checkpoint (naming the layouts it could be).
CheckpointLocation locate_checkpoint(const std::string& path);

// Restores model and optimizer in place from the checkpoint `path` leads to (locate_checkpoint) and returns the
// position; the skipped checkpoints and a note on the older layout go to `notes`. Errors name the file and what
// differs (another model, missing keys, shapes, malformed metadata).
TrainingPosition load_checkpoint(const std::string& path, const std::string& model_name, nn::Module& model,
                                 optim::Optimizer& optimizer, std::ostream& notes);
TrainingPosition load_checkpoint(const CheckpointLocation& location, const std::string& model_name,
                                 nn::Module& model, optim::Optimizer& optimizer, std::ostream& notes);

// The run config recorded in a checkpoint's training state file; ValueError naming the file when it is missing
// or malformed.
TrainConfig recorded_config(const std::string& state_file);

// Loads model weights from a safetensors file with PyTorch key names (e.g. written by PyTorch).
void load_weights(const std::string& file, nn::Module& model);

}  // namespace syncgrad::train
