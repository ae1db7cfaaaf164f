// The learning rate of each optimizer step: the peak is --lr, or with --scale-lr linear lr x world size reached
// linearly from lr over --warmup-steps (Goyal et al.'s gradual warm-up); with --lr-schedule cosine the peak is
// then annealed to zero at the last step of --epochs (half a cosine wave; --max-steps stops a run early without
// changing its schedule, so a resumed run continues the same curve).
#pragma once

#include <cstdint>

#include "tools/train/train_config.h"

namespace syncgrad::train {

// The lr of optimizer step `step` (0-based) of `total_steps` (those of all --epochs).
double lr_at(const TrainConfig& config, int world_size, int64_t step, int64_t total_steps);

}  // namespace syncgrad::train
