// A run's checkpoints (the files: checkpoint.h): --resume restores the model, the optimizer, the position and
// the default generator before the run's loader is built (--resume auto: the newest complete checkpoint of
// --checkpoint-dir, if any); every --checkpoint-every steps, every --checkpoint-every-minutes (rank 0's clock,
// agreed after a step) and at the end of every epoch (or at --max-steps) the position is brought up to date and,
// with --checkpoint-dir on rank 0, rank 0 saves while the other ranks wait on its heartbeat (rank0_work.h), then
// keeps the newest --keep-checkpoints. Preemption (with --checkpoint-dir): SIGTERM or SIGUSR1 to any rank makes
// every rank finish its step, save that step together and end with Preempted (syncgrad-train exits with
// distributed::kPreemptedExitStatus, 75).
#pragma once

#include <cstdint>
#include <string>

#include "tools/train/training_run.h"

namespace syncgrad::train {

// The value of --resume that picks the newest complete checkpoint of --checkpoint-dir.
inline constexpr const char* kResumeAuto = "auto";

// Loads --resume into the run's model and optimizer; sets its position and the default generator's state.
void resume_from_checkpoint(TrainingRun& run);

// With --checkpoint-dir, on every rank: installs the run's PreemptionWatch (--checkpoint-every-minutes is its
// interval). ValueError for --checkpoint-every-minutes without --checkpoint-dir.
void watch_for_preemption(TrainingRun& run);

// Thrown on every rank by save_if_due once the checkpoint of a preempted run is written.
struct Preempted {
  int signal = 0;          // the signal this rank got; 0 when only other ranks got one
  int64_t step = 0;        // the last step taken, the one saved
  std::string checkpoint;  // the saved step directory (rank 0; empty on the others)
};

// After an optimizer step, on every rank (the preemption decision is collective): saves when --checkpoint-every
// divides the step or --checkpoint-every-minutes have passed, unless the step ends the epoch or the run
// (end_epoch saves those); when a rank got SIGTERM/SIGUSR1, saves and throws Preempted (not at the run's last
// step, which ends normally).
void save_if_due(TrainingRun& run);

// Records where the loader, the default generator and the GradScaler are, checks the losses (weights trained on
// a non-finite loss are never saved) and saves to --checkpoint-dir when given.
void end_epoch(TrainingRun& run);

}  // namespace syncgrad::train
