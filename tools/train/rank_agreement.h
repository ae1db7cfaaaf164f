// What the ranks of a multi-process syncgrad-train job must agree on, checked at start (distributed/
// consistency.h) so that ranks started with different command lines (by hand, or one launcher per node) fail at
// once, on every rank, naming the first difference ("rank 1 has --lr 0.1, rank 0 has 0.05"), instead of
// training silently apart or blaming a peer that "exited or crashed" when their step counts differ.
//
// Every option must agree except kPerRankOptions: the ones that name this machine's resources or rank 0's
// outputs. An option added to TrainConfig::to_json is compared unless it is added to that list.
#pragma once

#include <string>
#include <vector>

#include "distributed/consistency.h"
#include "distributed/process_group.h"
#include "tools/train/train_config.h"

namespace syncgrad::train {

class TrainingRun;

// The options (by their TrainConfig::to_json names) that may differ per rank: --threads, --workers, --data-dir
// (paths differ between nodes; the data's size is compared by the sampler check). --checkpoint-dir, --log-file,
// --log-every, --resume and --init-from are not in the JSON (rank 0's outputs; the resumed position is
// compared after loading; --init-from weights are rank 0's, broadcast by DDP). --device is compared by its
// type only (cpu or cuda), so each rank may name its own GPU.
extern const std::vector<std::string> kPerRankOptions;

// The options every rank must share, as ("--lr", "0.05") pairs in TrainConfig::to_json's order.
distributed::Settings shared_options(const TrainConfig& config);

// DesyncError on every rank when the ranks' options differ, naming the first difference.
void check_ranks_agree_on_options(distributed::ProcessGroup& group, const TrainConfig& config);

// After --resume: DesyncError when the ranks resumed at different positions or hold different optimizers
// (kind, param groups, options).
void check_ranks_agree_on_state(const TrainingRun& run);

}  // namespace syncgrad::train
