// Held-out evaluation of a syncgrad-train run, shared by the ranks: each evaluates its share of the task's
// fixed evaluation batches (batch b on rank b mod world), the per-batch tallies are all-reduced and summed in
// batch order, so every rank gets the Evaluation that one process evaluating every batch gives, bit for bit,
// in about 1/world of the time (and no rank waits at a barrier for rank 0 to evaluate alone).
#pragma once

#include "distributed/process_group.h"
#include "nn/module.h"
#include "tools/train/task.h"

namespace syncgrad::train {

// Evaluates `model` (in eval mode, without gradients; put back in train mode after) on all of the task's
// held-out batches; with a group, every rank of it must call this with the same weights (buffers included).
Evaluation evaluate(const Task& task, nn::Module& model, distributed::ProcessGroup* group = nullptr);

class TrainingRun;
// The run's model on every rank of the run: under DDP rank 0's buffers (BatchNorm statistics) are copied to all
// first, so the ranks evaluate the weights rank 0 saves.
Evaluation evaluate(TrainingRun& run);

}  // namespace syncgrad::train
