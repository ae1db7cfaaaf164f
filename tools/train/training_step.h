// One optimizer step of a run, as the loop sees it: `--accumulate` micro-batches (fewer at the end of an epoch),
// each run forward under autocast (--amp) and backward with its loss scaled by the GradScaler and divided by
// --accumulate; DDP reduces the gradients in the last micro-batch's backward only (no_sync before). Then the
// step's learning rate (lr_schedule.h) and the optimizer step, which --amp fp16 skips on inf/NaN gradients.
#pragma once

#include <cstdint>

#include "data/collate.h"
#include "data/loader.h"
#include "tools/train/training_run.h"

namespace syncgrad::train {

// Where a micro-batch sits in its optimizer step.
struct MicroBatchPlace {
  bool begins_step = false;
  bool ends_step = false;
  int64_t batches_consumed = 0;  // of the epoch, this one included (the loader's count)
};

// The place of the micro-batch of `epoch` just handed out, from the loader's state after it.
MicroBatchPlace place_in_step(const TrainingRun& run, const data::LoaderState& after, int epoch);

// Forward, loss and backward of one micro-batch (zeroing the gradients first when it begins a step); its loss
// goes to run.losses.
void train_micro_batch(TrainingRun& run, const data::Batch& batch, const MicroBatchPlace& place, int epoch);

// The optimizer step after the last micro-batch of a step, at the step's learning rate.
void optimizer_step(TrainingRun& run);

// The memory tag (tensor/memory_tag.h) of the optimizer steps: what stays allocated under it is the optimizer's
// state (1/W of it per rank with --zero), reported in the summary.
inline constexpr int kOptimizerMemoryTag = 255;

}  // namespace syncgrad::train
