// Rank 0's solo work in a syncgrad-train run (saving a checkpoint): the other ranks wait on rank 0's heartbeat
// in the job's store (distributed/rank0_work.h) instead of a barrier, so a save that takes longer than the
// collective timeout does not kill the job, while a rank 0 that hangs or dies is still noticed within it, and a
// save that fails on rank 0 fails every rank with rank 0's error text.
#pragma once

#include <functional>
#include <string>

namespace syncgrad::train {

class TrainingRun;

// Runs `work` on rank 0 while the other ranks wait for it; in a single-process run just runs it. `what` names
// it for the waiters' errors ("saving the checkpoint").
void on_rank0_while_others_wait(const TrainingRun& run, const std::string& what, const std::function<void()>& work);

}  // namespace syncgrad::train
