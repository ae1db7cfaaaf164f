// A run's checkpoints (the files: checkpoint.h): --resume restores the model, the optimizer, the position and
// the default generator before the run's loader is built (--resume auto: the newest complete checkpoint of
// --checkpoint-dir, if any); every --checkpoint-every steps and at the end of every epoch (or at --max-steps)
// the position is brought up to date and, with --checkpoint-dir on rank 0, rank 0 saves while the other ranks
// wait on its heartbeat (rank0_work.h), then keeps the newest --keep-checkpoints.
#pragma once

#include "tools/train/training_run.h"

namespace syncgrad::train {

// The value of --resume that picks the newest complete checkpoint of --checkpoint-dir.
inline constexpr const char* kResumeAuto = "auto";

// Loads --resume into the run's model and optimizer; sets its position and the default generator's state.
void resume_from_checkpoint(TrainingRun& run);

// After an optimizer step: saves when --checkpoint-every divides the step, unless the step ends the epoch or
// the run (end_epoch saves those).
void save_if_due(TrainingRun& run);

// Records where the loader, the default generator and the GradScaler are, checks the losses (weights trained on
// a non-finite loss are never saved) and saves to --checkpoint-dir when given.
void end_epoch(TrainingRun& run);

}  // namespace syncgrad::train
